package iosched

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// Bursts of requests with short gaps between them (a scan's chunks, one
// after another) run on the same few worker goroutines, not on new ones
// each burst; Close ends the idle ones, and a worker idle for longer than
// idleKeep exits by itself.
func TestWorkersKeptBetweenBursts(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	const p, objects = 4, 8
	for i := range objects {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("o%d", i)), make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, _, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(Options{Parallelism: p})
	reqs := make([]Request, objects)
	for i := range reqs {
		reqs[i] = Request{Store: st, Name: filepath.Join(dir, fmt.Sprintf("o%d", i)), Length: 4096, Priority: Priority{Query: 1, Seq: int64(i)}}
	}
	const bursts = 20
	for range bursts {
		data, err := s.Fetch(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) != objects || len(data[objects-1]) != 4096 {
			t.Fatalf("got %d ranges, the last of %d bytes", len(data), len(data[objects-1]))
		}
	}
	// A burst may start one worker per slot while the earlier ones are
	// between their last task and idle; never one per burst.
	if n := s.workers.Load(); n > 2*p {
		t.Errorf("%d worker goroutines started for %d bursts of %d requests at parallelism %d, want at most %d", n, bursts, objects, p, 2*p)
	}
	// Idle workers exit by themselves after idleKeep...
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		idle := len(s.idle)
		s.mu.Unlock()
		if idle == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still idle 10 s after the last burst", idle)
		}
		time.Sleep(idleKeep / 4)
	}
	// ... and Close ends those of a later burst at once.
	if _, err := s.Fetch(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > 10*idleKeep {
		t.Errorf("Close took %v with idle workers", d)
	}
}
