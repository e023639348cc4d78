package iosched_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// TestBatchResultAndFailed: a batch's Result gives each request its own
// bytes or error, and Failed names the request whose failure failed the
// batch, not one cancelled by it: a caller that submits several chunks'
// requests in one batch can say which chunk failed.
func TestBatchResultAndFailed(t *testing.T) {
	leakCheck(t)
	objects := map[string][]byte{"a": []byte("alpha"), "c": []byte("gamma")}
	ms := &memStore{objects: objects}
	// One worker: the requests run in order, so "a" is answered before
	// "gone" fails, and "c" is still queued then.
	s := newScheduler(t, iosched.Options{Parallelism: 1, Retries: -1, NoHedge: true})
	req := func(name string, n int64) iosched.Request {
		return iosched.Request{Store: ms, Name: name, Length: n, Priority: iosched.Priority{Query: 1}}
	}

	// Request 0 is answered; 1 fails; 2 is cancelled by 1's failure.
	b := s.Submit(context.Background(), []iosched.Request{req("a", 5), req("gone", 3), req("c", 5)})
	if _, err := b.Wait(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Wait: %v, want the missing object's error", err)
	}
	if k := b.Failed(); k != 1 {
		t.Errorf("Failed() = %d, want 1", k)
	}
	if data, err := b.Result(0); err != nil || string(data) != "alpha" {
		t.Errorf("Result(0) = %q, %v; want alpha", data, err)
	}
	if _, err := b.Result(1); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "mem://gone") {
		t.Errorf("Result(1) = %v, want mem://gone not found", err)
	}
	if _, err := b.Result(2); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "mem://c") {
		t.Errorf("Result(2) = %v, want mem://c cancelled", err)
	}

	// None fails.
	ms.delay = nil
	b = s.Submit(context.Background(), []iosched.Request{req("a", 5), req("c", 5)})
	if _, err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if k := b.Failed(); k != -1 {
		t.Errorf("a batch without failure: Failed() = %d, want -1", k)
	}
	if data, err := b.Result(1); err != nil || string(data) != "gamma" {
		t.Errorf("Result(1) = %q, %v; want gamma", data, err)
	}

	// Cancelled by its context before any request failed: none is to blame.
	ctx, cancel := context.WithCancel(context.Background())
	ms.delay = func(string, int64) time.Duration { return time.Minute }
	b = s.Submit(ctx, []iosched.Request{req("a", 5), req("c", 5)})
	cancel()
	if _, err := b.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled batch: Wait: %v", err)
	}
	if k := b.Failed(); k != -1 {
		t.Errorf("a cancelled batch: Failed() = %d, want -1", k)
	}
}
