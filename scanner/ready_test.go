package scanner

import (
	"context"
	"testing"
	"time"
)

// TestReadyQueueWakesOnePerBatch: a chunk of one batch wakes one of the
// consumers waiting for it, not all of them (each woken for nothing goes
// back to sleep, on DuckDB's threads at the cost of waking a thread); the
// end of the scan wakes them all.
func TestReadyQueueWakesOnePerBatch(t *testing.T) {
	r := newReadyQueue(3, false)
	got := make(chan *Batch, 3)
	for range 2 {
		go func() {
			for {
				b, err := r.pop(context.Background())
				if err != nil {
					t.Error(err)
				}
				got <- b
				if b == nil {
					return
				}
			}
		}()
	}
	waitWaiting := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(waitTimeout); ; time.Sleep(time.Millisecond) {
			r.mu.Lock()
			w := r.waiting
			r.mu.Unlock()
			if w == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d consumers waiting, want %d", w, n)
			}
		}
	}
	woken := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.woken
	}
	waitWaiting(2)
	b0, b1 := &Batch{}, &Batch{}
	r.put(0, []*Batch{b0})
	if w := woken(); w != 1 {
		t.Fatalf("a batch for two waiting consumers woke %d, want 1", w)
	}
	if b := <-got; b != b0 {
		t.Fatalf("got %p, want the batch put", b)
	}
	waitWaiting(2) // the consumer that took it waits again
	r.put(1, []*Batch{b1})
	if w := woken(); w != 2 {
		t.Fatalf("two batches woke %d consumers, want 2", w)
	}
	if b := <-got; b != b1 {
		t.Fatalf("got %p, want the second batch", b)
	}
	waitWaiting(2)
	r.put(2, nil) // the last chunk, of no batch: the end wakes both
	for range 2 {
		if b := <-got; b != nil {
			t.Fatalf("got %p at the end, want nil", b)
		}
	}
	if w := woken(); w != 4 {
		t.Fatalf("%d wakes in all, want 4", w)
	}
}
