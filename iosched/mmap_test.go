package iosched_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// Requests with Map get a mapping from a store that maps (a local file),
// whole (neither split nor merged), and a copy from any other store; a
// range the store refuses fails as a read of it would.
func TestMapRequests(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(7, 4, 3<<20)
	for _, c := range []struct {
		name    string
		base    string
		mapping bool
	}{
		{"file", "file://" + writeDir(t, objects) + "/", true},
		{"http", fileServer(t, objects) + "/", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, prefix := openStore(t, c.base, store.Options{})
			s := newScheduler(t, iosched.Options{Parallelism: 4, RequestSize: 1 << 20})
			var mu sync.Mutex
			var maps [][]byte
			defer func() {
				for _, m := range maps {
					if err := store.Unmap(m); err != nil {
						t.Errorf("Unmap: %v", err)
					}
				}
			}()
			reqs := wholeReqs(st, prefix, objects, 1)
			for i := range reqs {
				reqs[i].Map = func(m []byte) {
					mu.Lock()
					maps = append(maps, m)
					mu.Unlock()
				}
			}
			b := s.Submit(context.Background(), reqs)
			data, err := b.Wait()
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range reqs {
				if !bytes.Equal(data[i], objects[r.Name[len(prefix):]]) {
					t.Fatalf("request %d: wrong bytes", i)
				}
			}
			st2 := b.Stats()
			if c.mapping {
				if len(maps) != len(reqs) || st2.Splits != 0 {
					t.Fatalf("%d mappings and %d splits, want %d and 0", len(maps), st2.Splits, len(reqs))
				}
			} else if len(maps) != 0 || st2.Splits == 0 {
				t.Fatalf("%d mappings and %d splits from a store that does not map, want 0 and some", len(maps), st2.Splits)
			}

			// Past the end: no mapping, and the read's error.
			bad := reqs[0]
			bad.Offset, bad.Length = 2<<20, 2<<20
			_, err = s.Fetch(context.Background(), []iosched.Request{bad})
			if !errors.Is(err, store.ErrOutOfRange) {
				t.Fatalf("a range past the end: %v, want ErrOutOfRange", err)
			}
			if len(maps) != map[bool]int{true: len(reqs), false: 0}[c.mapping] {
				t.Fatalf("a failed range was mapped: %d mappings", len(maps))
			}
		})
	}
}

// TestLocalReadAllocs guards the cost of a read of a local file, which a
// scan of many small files pays once per chunk: a store that reads local
// files (store.Local) gets no watch of its own (a context, a timer, a
// hedge) that could not act on a pread anyway, and one request is planned
// without the maps that merging several takes. The bound is generous: it
// fails only when those come back.
func TestLocalReadAllocs(t *testing.T) {
	leakCheck(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 512)
	dir := writeDir(t, map[string][]byte{"a.bin": data})
	st, name, err := store.Open(dir+"/a.bin", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(store.Local); !ok {
		t.Fatalf("the store of a local file (%T) is no store.Local", st)
	}
	s := newScheduler(t, iosched.Options{Parallelism: 2, NoHedge: true})
	buf := make([]byte, len(data))
	reqs := []iosched.Request{{Store: st, Name: name, Length: int64(len(data)), Buffer: buf}}
	n := testing.AllocsPerRun(200, func() {
		got, err := s.Fetch(context.Background(), reqs)
		if err != nil || !bytes.Equal(got[0], data) {
			t.Fatalf("Fetch: %v", err)
		}
	})
	t.Logf("%.1f allocations a read", n)
	if n > 24 {
		t.Errorf("a read of a local file: %.0f allocations, want at most 24", n)
	}
}

// TestSubmitFuncDone: SubmitFunc calls done once per batch, with the
// batch, when every request has its Result: after a success, a failure,
// a cancellation, and for an empty or invalid vector (before SubmitFunc
// returns, then).
func TestSubmitFuncDone(t *testing.T) {
	leakCheck(t)
	ms := &memStore{objects: randomObjects(21, 4, 1000)}
	s := newScheduler(t, iosched.Options{Parallelism: 2})
	type call struct {
		b    *iosched.Batch
		done bool // Done was closed when done ran
	}
	run := func(ctx context.Context, reqs []iosched.Request) (*iosched.Batch, []call) {
		var mu sync.Mutex
		var calls []call
		got := make(chan struct{}, 2)
		b := s.SubmitFunc(ctx, reqs, func(b *iosched.Batch) {
			c := call{b: b}
			select {
			case <-b.Done():
				c.done = true
			default:
			}
			mu.Lock()
			calls = append(calls, c)
			mu.Unlock()
			got <- struct{}{}
		})
		<-b.Done()
		<-got
		mu.Lock()
		defer mu.Unlock()
		return b, append([]call(nil), calls...)
	}
	check := func(what string, b *iosched.Batch, calls []call, wantErr error) {
		t.Helper()
		if len(calls) != 1 || calls[0].b != b || !calls[0].done {
			t.Errorf("%s: done called %d times (%+v), want once with the batch, after Done", what, len(calls), calls)
		}
		if _, err := b.Wait(); !errors.Is(err, wantErr) {
			t.Errorf("%s: Wait: %v, want %v", what, err, wantErr)
		}
	}

	b, calls := run(context.Background(), wholeReqs(ms, "", ms.objects, 0))
	check("success", b, calls, nil)

	missing := []iosched.Request{{Store: ms, Name: "absent", Length: 10}}
	b, calls = run(context.Background(), missing)
	check("failure", b, calls, store.ErrNotFound)

	ctx, cancel := context.WithCancel(context.Background())
	gated := &memStore{objects: ms.objects, gate: make(chan struct{})}
	defer close(gated.gate)
	go func() {
		if eventually(5e9, func() bool { _, _, gets := gated.snapshot(); return gets > 0 }) {
			cancel()
		}
	}()
	b, calls = run(ctx, wholeReqs(gated, "", gated.objects, 0))
	check("cancelled", b, calls, context.Canceled)

	b, calls = run(context.Background(), nil)
	check("empty", b, calls, nil)

	b, calls = run(context.Background(), []iosched.Request{{Store: ms, Name: "obj-000.bin", Offset: -1, Length: 10}})
	check("invalid", b, calls, iosched.ErrInvalid)
}
