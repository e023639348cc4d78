package iosched_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/remote-segments/remote_segments/iosched"
)

// panickyStore is a memStore whose GET of "bad" panics, as a bug met by a
// hostile answer would.
type panickyStore struct {
	*memStore
	bad *atomic.Int32 // GETs of "bad"
}

func (p panickyStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if name == "bad" {
		p.bad.Add(1)
		panic("an answer the reader choked on")
	}
	return p.memStore.GetRange(ctx, name, off, length)
}

// TestWorkerPanicFailsTheRequest: a panic on an IO worker (in a store's
// GET) fails that request with an error naming it, once (not retried),
// and the process and the scheduler go on: a later request is served.
// Without the worker's recover this test binary dies.
func TestWorkerPanicFailsTheRequest(t *testing.T) {
	st := panickyStore{&memStore{objects: map[string][]byte{"good": []byte("0123456789")}}, new(atomic.Int32)}
	s := newScheduler(t, iosched.Options{Parallelism: 2, Retries: 3})
	ctx := context.Background()
	_, err := s.Fetch(ctx, []iosched.Request{{Store: st, Name: "bad", Length: 4}})
	if err == nil || !strings.Contains(err.Error(), "panic") || !strings.Contains(err.Error(), "an answer the reader choked on") {
		t.Fatalf("Fetch of a GET that panics = %v, want an error naming the panic", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("a panic reported as a cancel: %v", err)
	}
	data, err := s.Fetch(ctx, []iosched.Request{{Store: st, Name: "good", Offset: 2, Length: 4}})
	if err != nil || string(data[0]) != "2345" {
		t.Fatalf("a GET after the panic = %q, %v; want \"2345\"", data, err)
	}
	if n := st.bad.Load(); n != 1 {
		t.Errorf("the GET that panics was made %d times; want once: a panic is not retried", n)
	}
}
