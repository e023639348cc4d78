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
