package iosched_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// flakyMapStore is an in-process store that maps (store.Mapper) where the
// first mapFails MapRanges of each object fail and its first readFails
// GETs break (ECONNRESET) after cut body bytes. Its "mappings" are copies: a test
// must not store.Unmap them.
type flakyMapStore struct {
	memStore
	cut int // body bytes a broken GET delivers before the reset

	mu                  sync.Mutex
	mapFails, readFails int
	mapCalls, readCalls map[string]int
	maps                [][]byte // every mapping MapRange returned
}

func (f *flakyMapStore) MapRange(ctx context.Context, name string, off, length int64) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mapCalls[name]++
	if f.mapCalls[name] <= f.mapFails {
		return nil, &store.RequestError{Op: "MAP", URL: f.URL(name), Err: store.ErrUnsupported}
	}
	data := f.objects[name]
	if length < 0 {
		length = int64(len(data)) - off
	}
	m := bytes.Clone(data[off : off+length])
	f.maps = append(f.maps, m)
	return m, nil
}

func (f *flakyMapStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	body, err := f.memStore.GetRange(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.readCalls[name]++
	broken := f.readCalls[name] <= f.readFails
	f.mu.Unlock()
	if broken {
		return io.NopCloser(io.MultiReader(io.LimitReader(body, int64(f.cut)), errReader{syscall.ECONNRESET})), nil
	}
	return body, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestMapFallbackBytes: a request that asked for a mapping, whose mapping
// failed and whose read then broke, is retried and delivers the object's
// bytes, never the garbage of the buffer its Alloc handed out (a pooled
// buffer holding another chunk). A span's memory is chosen once: once it
// fell back to reading, it is never mapped, so no mapping is made that is
// not the one delivered.
func TestMapFallbackBytes(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(41, 2, 64<<10)
	for _, c := range []struct {
		name      string
		mapFails  int
		readFails int
		cut       int
		mapped    bool // the bytes delivered are the store's mapping
	}{
		{"map fails, read breaks at once", 1, 1, 0, false},
		{"map fails, read breaks mid-body", 1, 1, 1000, false},
		{"map fails, read breaks twice", 1, 2, 0, false},
		{"map fails, read works", 1, 0, 0, false},
		{"map works", 0, 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := &flakyMapStore{memStore: memStore{objects: objects}, cut: c.cut,
				mapFails: c.mapFails, readFails: c.readFails, mapCalls: map[string]int{}, readCalls: map[string]int{}}
			s := newScheduler(t, iosched.Options{Parallelism: 2, NoHedge: true, Backoff: 1e6, RequestSize: 16 << 10})
			var mu sync.Mutex
			var delivered [][]byte
			var reqs []iosched.Request
			for i := range 2 {
				name := fmt.Sprintf("obj-%03d.bin", i)
				reqs = append(reqs, iosched.Request{Store: fs, Name: name, Length: int64(len(objects[name])),
					Priority: iosched.Priority{Query: 1, Seq: int64(i)},
					Alloc: func(n int) []byte {
						// A pooled buffer: what another chunk left in it.
						return bytes.Repeat([]byte{0xAB}, n)
					},
					Map: func(m []byte) {
						mu.Lock()
						delivered = append(delivered, m)
						mu.Unlock()
					}})
			}
			data, err := s.Fetch(context.Background(), reqs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range reqs {
				if !bytes.Equal(data[i], objects[r.Name]) {
					t.Fatalf("request %d: not the object's bytes (%x…)", i, data[i][:8])
				}
			}
			fs.mu.Lock()
			defer fs.mu.Unlock()
			// Every mapping made went to Map, and is the bytes delivered
			// for its request: none is made and dropped.
			if len(fs.maps) != len(delivered) {
				t.Fatalf("%d mappings made, %d handed to Map", len(fs.maps), len(delivered))
			}
			for _, m := range delivered {
				if !c.mapped {
					t.Fatal("a span that fell back to reading was mapped")
				}
				found := false
				for _, d := range data {
					found = found || unsafe.SliceData(d) == unsafe.SliceData(m)
				}
				if !found {
					t.Fatal("a mapping handed to Map is not the bytes delivered")
				}
			}
			if c.mapped && len(delivered) != len(reqs) {
				t.Fatalf("%d of %d requests mapped", len(delivered), len(reqs))
			}
		})
	}
}
