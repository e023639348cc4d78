package scanner

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/remote-segments/remote_segments/test/datagen"
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
	woken := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.woken
	}
	waitWaiting(t, r, 2)
	b0, b1 := &Batch{}, &Batch{}
	r.put(0, []*Batch{b0})
	if w := woken(); w != 1 {
		t.Fatalf("a batch for two waiting consumers woke %d, want 1", w)
	}
	if b := <-got; b != b0 {
		t.Fatalf("got %p, want the batch put", b)
	}
	waitWaiting(t, r, 2) // the consumer that took it waits again
	r.put(1, []*Batch{b1})
	if w := woken(); w != 2 {
		t.Fatalf("two batches woke %d consumers, want 2", w)
	}
	if b := <-got; b != b1 {
		t.Fatalf("got %p, want the second batch", b)
	}
	waitWaiting(t, r, 2)
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

// rowsBatch is a batch of n rows and no column.
func rowsBatch(n int64) *Batch {
	return &Batch{Record: array.NewRecordBatch(noColumns, nil, n)}
}

// waitingConsumer pops from r in a goroutine of its own, until the end,
// sending what it takes on the returned channel; it returns once the
// consumer waits in pop.
func waitingConsumer(t *testing.T, r *readyQueue) <-chan *Batch {
	t.Helper()
	got := make(chan *Batch, 16)
	go func() {
		defer close(got)
		for {
			b, err := r.pop(context.Background())
			if errors.Is(err, context.Canceled) {
				return // the test closed the queue
			}
			if err != nil {
				t.Error(err)
				return
			}
			if b == nil {
				return
			}
			got <- b
		}
	}()
	waitWaiting(t, r, 1)
	return got
}

// TestReadyQueueWakesForWork: while chunks are in flight, small batches
// wait for company: a consumer is woken once for wakeBatches of them, not
// for each (a wake of one of DuckDB's threads costs more than a small
// batch), and at once for a batch of wakeRows rows.
func TestReadyQueueWakesForWork(t *testing.T) {
	r := newReadyQueue(8, false)
	r.wakeAfter = time.Hour // no timer: the counts alone
	r.setWakeBatches(3)
	for range 8 {
		r.start()
	}
	got := waitingConsumer(t, r)
	woken := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.woken
	}
	r.put(0, []*Batch{rowsBatch(100)})
	r.put(1, []*Batch{rowsBatch(100)})
	if w := woken(); w != 0 {
		t.Fatalf("two small batches with chunks in flight woke %d consumers, want 0", w)
	}
	r.put(2, []*Batch{rowsBatch(100)})
	if w := woken(); w != 1 {
		t.Fatalf("three small batches woke %d consumers, want 1", w)
	}
	for range 3 {
		<-got
	}
	waitWaiting(t, r, 1)
	r.put(3, []*Batch{rowsBatch(wakeRows)})
	if w := woken(); w != 2 {
		t.Fatalf("a batch of wakeRows rows woke %d consumers in all, want 2", w)
	}
	<-got
	r.close()
	for range got {
	}
}

// TestReadyQueueWakesForLoneBatch: a small batch alone still reaches a
// waiting consumer. At once when no chunk is in flight (the timer taken
// away): the producers may be waiting for the lookahead slot or the
// budget the queued batch holds, which only a consumer gives back (the
// wedge a wake for several batches risks). After wakeAfter beside a chunk
// in flight: a slow chunk must not hold back the rows already there.
func TestReadyQueueWakesForLoneBatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inFlight  int // chunks started beside the one put
		wakeAfter time.Duration
	}{
		{"nothing in flight, no timer", 0, time.Hour},
		{"a chunk in flight, the timer", 1, wakeAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReadyQueue(8, false)
			r.wakeAfter = tc.wakeAfter
			r.setWakeBatches(4)
			for range 1 + tc.inFlight {
				r.start()
			}
			got := waitingConsumer(t, r)
			b := rowsBatch(10)
			r.put(0, []*Batch{b})
			select {
			case g := <-got:
				if g != b {
					t.Fatalf("got %p, want the batch put", g)
				}
			case <-time.After(waitTimeout):
				t.Fatal("the batch never reached the waiting consumer")
			}
			r.close()
			for range got {
			}
		})
	}
}

func waitWaiting(t *testing.T, r *readyQueue, n int) {
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

// TestScanSmallBatchesNoWedge: a scan of small chunks under a budget that
// holds one of them, with the wake timer taken away. A chunk's batch alone
// is not worth a wake, and the next chunk waits for the budget that batch
// holds: the scan ends only because a batch put with no chunk in flight
// wakes a consumer at once.
func TestScanSmallBatchesNoWedge(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 10, RowsPerChunk: 200, BatchesPerChunk: 1, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		budget int64
	}{
		{"budget of one chunk", 1},
		{"budget of all", 64 << 20}, // the lookahead fills instead
	} {
		t.Run(tc.name, func(t *testing.T) {
			scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"),
				MemoryBudget: tc.budget, MaxParallelIO: 8, readyWakeAfter: time.Hour}, nil)
			defer scan.Close()
			done := make(chan struct{})
			var rows, sumX map[string]int64
			go func() {
				defer close(done)
				rows, sumX = drain(t, scan, 2, 0)
			}()
			select {
			case <-done:
			case <-time.After(waitTimeout):
				scan.Close() // the consumers get an error and end
				<-done
				t.Fatal("the scan wedged: consumers asleep beside the batches that hold the budget")
			}
			checkSegments(t, stats, rows, sumX)
		})
	}
}
