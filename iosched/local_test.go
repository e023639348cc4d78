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
