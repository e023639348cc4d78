package iosched_test

import (
	"bytes"
	"context"
	"testing"
	"unsafe"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// TestRequestBuffer: a request fetched on its own, split into parts or not,
// lands in the buffer its caller supplied; one merged with a neighbour, or
// whose buffer is too short, gets a buffer of the scheduler's.
func TestRequestBuffer(t *testing.T) {
	s, st, name, src := oneObject(t, 5, 3<<20, iosched.Options{Parallelism: 4, RequestSize: 1 << 20, CoalesceGap: 4 << 10, NoHedge: true})

	whole := make([]byte, 3<<20) // split into 3 parts, all into whole
	short := make([]byte, 100)
	merged := make([]byte, 1024)
	reqs := []iosched.Request{
		{Store: st, Name: name, Offset: 0, Length: 3 << 20, Buffer: whole, Priority: iosched.Priority{Query: 1}},
		{Store: st, Name: name, Offset: 10, Length: 1000, Buffer: short, Priority: iosched.Priority{Query: 2}},
		{Store: st, Name: name, Offset: 2 << 20, Length: 1024, Buffer: merged, Priority: iosched.Priority{Query: 3}},
		{Store: st, Name: name, Offset: 2<<20 + 1024, Length: 1024, Priority: iosched.Priority{Query: 3}},
	}
	got := fetchRight(t, s, src, reqs)
	same := func(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }
	if !same(got[0], whole) || cap(got[0]) != len(got[0]) {
		t.Fatal("a split request did not land in its own buffer")
	}
	if same(got[1], short) || same(got[2], merged) {
		t.Fatal("a too-short buffer, or one of a merged request, was used")
	}
	if !bytes.Equal(short, make([]byte, 100)) || !bytes.Equal(merged, make([]byte, 1024)) {
		t.Fatal("an unused buffer was written to")
	}
}

// TestRequestAlloc: requests merged into one GET read into one buffer that
// the first one's Alloc made, of the merged length; a request with a
// Buffer long enough does not call its Alloc.
func TestRequestAlloc(t *testing.T) {
	s, st, name, src := oneObject(t, 6, 1<<20, iosched.Options{Parallelism: 2, RequestSize: 4 << 20, CoalesceGap: 4 << 10, NoHedge: true})

	var made [][]byte
	alloc := func(n int) []byte {
		b := make([]byte, n+100) // longer than asked: the scheduler takes n
		made = append(made, b)
		return b
	}
	own := make([]byte, 4096)
	reqs := []iosched.Request{
		{Store: st, Name: name, Offset: 1000, Length: 5000, Alloc: alloc, Priority: iosched.Priority{Query: 1}},
		{Store: st, Name: name, Offset: 7000, Length: 3000, Alloc: alloc, Priority: iosched.Priority{Query: 1}}, // 1000 bytes after: merged
		{Store: st, Name: name, Offset: 500 << 10, Length: 4096, Buffer: own, Alloc: alloc, Priority: iosched.Priority{Query: 1}},
	}
	got := fetchRight(t, s, src, reqs)
	if len(made) != 1 || len(made[0]) != 9000+100 {
		t.Fatalf("Alloc made %d buffers, want one of the merged 9000 bytes (+100)", len(made))
	}
	in := func(a, b []byte) bool {
		return uintptr(unsafe.Pointer(unsafe.SliceData(a))) >= uintptr(unsafe.Pointer(unsafe.SliceData(b))) &&
			uintptr(unsafe.Pointer(unsafe.SliceData(a)))+uintptr(len(a)) <= uintptr(unsafe.Pointer(unsafe.SliceData(b)))+uintptr(len(b))
	}
	if !in(got[0], made[0]) || !in(got[1], made[0]) || unsafe.SliceData(got[2]) != unsafe.SliceData(own) {
		t.Fatal("the merged requests are not in Alloc's buffer, or the one with a Buffer not in it")
	}
}

// oneObject is a scheduler with opts over a directory store holding one
// random object of size bytes (from seed): the store, its name and bytes.
func oneObject(t *testing.T, seed uint64, size int, opts iosched.Options) (*iosched.Scheduler, store.Store, string, []byte) {
	t.Helper()
	leakCheck(t)
	objects := randomObjects(seed, 1, size)
	st, pre := openStore(t, writeDir(t, objects)+"/", store.Options{})
	return newScheduler(t, opts), st, pre + "obj-000.bin", objects["obj-000.bin"]
}

// fetchRight fetches reqs and fails t unless each got its bytes of src.
func fetchRight(t *testing.T, s *iosched.Scheduler, src []byte, reqs []iosched.Request) [][]byte {
	t.Helper()
	got, err := s.Fetch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if !bytes.Equal(got[i], src[r.Offset:r.Offset+r.Length]) {
			t.Fatalf("request %d: wrong bytes", i)
		}
	}
	return got
}
