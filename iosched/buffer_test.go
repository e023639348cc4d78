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
	leakCheck(t)
	objects := randomObjects(5, 1, 3<<20)
	st, pre := openStore(t, writeDir(t, objects)+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 4, RequestSize: 1 << 20, CoalesceGap: 4 << 10, NoHedge: true})
	src := objects["obj-000.bin"]
	name := pre + "obj-000.bin"

	whole := make([]byte, 3<<20) // split into 3 parts, all into whole
	short := make([]byte, 100)
	merged := make([]byte, 1024)
	reqs := []iosched.Request{
		{Store: st, Name: name, Offset: 0, Length: 3 << 20, Buffer: whole, Priority: iosched.Priority{Query: 1}},
		{Store: st, Name: name, Offset: 10, Length: 1000, Buffer: short, Priority: iosched.Priority{Query: 2}},
		{Store: st, Name: name, Offset: 2 << 20, Length: 1024, Buffer: merged, Priority: iosched.Priority{Query: 3}},
		{Store: st, Name: name, Offset: 2<<20 + 1024, Length: 1024, Priority: iosched.Priority{Query: 3}},
	}
	got, err := s.Fetch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if !bytes.Equal(got[i], src[r.Offset:r.Offset+r.Length]) {
			t.Fatalf("request %d: wrong bytes", i)
		}
	}
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
