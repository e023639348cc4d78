package iosched_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
)

// versionStore is a memStore that gives versions, recording each request
// for one ("HEAD name") in the order of the GETs.
type versionStore struct{ *memStore }

func (v versionStore) Version(ctx context.Context, name string) (string, error) {
	v.mu.Lock()
	v.order = append(v.order, "HEAD "+name)
	v.mu.Unlock()
	return "etag:" + name, nil
}

// TestVersionRequestsQueued: a request for an object's version waits for a
// worker slot like a GET and is served in priority order among the GETs
// of its query; it delivers no bytes, gives its answer, and is not counted
// as a GET.
func TestVersionRequestsQueued(t *testing.T) {
	leakCheck(t)
	objects := map[string][]byte{"a": {1}, "b": {2}, "c": {3}}
	ms := versionStore{&memStore{objects: objects, gate: make(chan struct{})}}
	s := newScheduler(t, iosched.Options{Parallelism: 1, CoalesceGap: -1, NoHedge: true})
	ctx := context.Background()
	first := s.Submit(ctx, []iosched.Request{{Store: ms, Name: "a", Length: 1, Priority: iosched.Priority{Query: 1, Seq: 0}}})
	// In flight, and its GET started: a slot is taken before its worker
	// reaches the store.
	if !eventually(5*time.Second, func() bool { _, _, gets := ms.snapshot(); return s.Stats().InFlight == 1 && gets == 1 }) {
		t.Fatalf("%d GETs in flight, want the first one", s.Stats().InFlight)
	}
	var got string
	head := s.Submit(ctx, []iosched.Request{{Store: ms, Name: "b", Priority: iosched.Priority{Query: 1, Seq: 2},
		Version: func(v string) { got = v }}})
	get := s.Submit(ctx, []iosched.Request{{Store: ms, Name: "c", Length: 1, Priority: iosched.Priority{Query: 1, Seq: 3}}})
	// An earlier Seq submitted last goes before both.
	head2 := s.Submit(ctx, []iosched.Request{{Store: ms, Name: "c", Priority: iosched.Priority{Query: 1, Seq: 1},
		Version: func(string) {}}})
	if order, _, _ := ms.snapshot(); !slices.Equal(order, []string{"a@0"}) {
		t.Fatalf("requests ran while the only slot was busy: %v", order)
	}
	close(ms.gate)
	for _, b := range []*iosched.Batch{first, head, get, head2} {
		if _, err := b.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := head.Wait()
	if len(data) != 1 || len(data[0]) != 0 || got != "etag:b" {
		t.Fatalf("version request: data %v, version %q", data, got)
	}
	want := []string{"a@0", "HEAD c", "HEAD b", "c@0"}
	if order, _, _ := ms.snapshot(); fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if st := s.Stats(); st.Issued != 2 {
		t.Fatalf("%d GETs issued, want 2 (version requests are not GETs)", st.Issued)
	}
}
