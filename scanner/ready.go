package scanner

import (
	"context"
	"sync"
)

// readyQueue holds decoded batches until a thread takes them: in any order,
// or in catalog order when ordered.
type readyQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	ordered bool
	q       []*Batch
	pending map[int][]*Batch // ordered: chunks waiting for an earlier one
	next    int              // ordered: the chunk to deliver next
	done    int              // chunks whose batches arrived
	total   int
	err     error
	closed  bool
	drained bool // a consumer reached the end
	// waiting counts the consumers waiting in pop that no wake has reached
	// yet; woken counts the wakes given (wakeLocked).
	waiting, woken int
}

func newReadyQueue(total int, ordered bool) *readyQueue {
	r := &readyQueue{ordered: ordered, total: total, pending: map[int][]*Batch{}}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// put queues chunk i's batches (possibly none). After close or an error
// they are freed instead.
func (r *readyQueue) put(i int, batches []*Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	if r.closed || r.err != nil {
		for _, b := range batches {
			b.Close()
		}
		return
	}
	queued := len(r.q)
	if !r.ordered {
		r.q = append(r.q, batches...)
	} else {
		r.pending[i] = batches
		for {
			bs, ok := r.pending[r.next]
			if !ok {
				break
			}
			delete(r.pending, r.next)
			r.q = append(r.q, bs...)
			r.next++
		}
	}
	r.wakeLocked(len(r.q) - queued)
}

// wakeLocked wakes a waiting consumer for each of n batches just queued,
// and every one at the end of the scan. One batch wakes one consumer: on
// DuckDB's threads a consumer that wakes runs on its own thread, which the
// runtime must wake and hand a P to, and a consumer woken for a batch
// another one takes goes back to sleep having paid for both, once per
// chunk of a scan of small chunks.
func (r *readyQueue) wakeLocked(n int) {
	if r.done == r.total && len(r.pending) == 0 {
		r.broadcastLocked()
		return
	}
	n = min(n, r.waiting)
	r.waiting -= n
	r.woken += n
	for range n {
		r.cond.Signal()
	}
}

// broadcastLocked wakes every waiting consumer.
func (r *readyQueue) broadcastLocked() {
	r.woken += r.waiting
	r.waiting = 0
	r.cond.Broadcast()
}

// pop returns the next batch, nil at the end, or the first error.
func (r *readyQueue) pop(ctx context.Context) (*Batch, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if b, err, ok := r.takeLocked(); ok {
			return b, err
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		r.waiting++
		r.cond.Wait()
	}
}

// poll is pop without waiting: ok is false when pop would wait.
func (r *readyQueue) poll() (b *Batch, err error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.takeLocked()
}

func (r *readyQueue) takeLocked() (*Batch, error, bool) {
	switch {
	case r.err != nil:
		return nil, r.err, true
	case r.closed:
		return nil, context.Canceled, true
	case len(r.q) > 0:
		b := r.q[0]
		r.q[0] = nil
		r.q = r.q[1:]
		return b, nil, true
	case r.done == r.total && len(r.pending) == 0:
		r.drained = true
		return nil, nil, true
	}
	return nil, nil, false
}

func (r *readyQueue) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.close()
}

func (r *readyQueue) wake() {
	r.mu.Lock()
	r.broadcastLocked()
	r.mu.Unlock()
}

// close frees every queued batch; later puts free theirs at once.
func (r *readyQueue) close() {
	r.mu.Lock()
	r.closed = true
	q, pending := r.q, r.pending
	r.q, r.pending = nil, map[int][]*Batch{}
	r.broadcastLocked()
	r.mu.Unlock()
	for _, b := range q {
		b.Close()
	}
	for _, bs := range pending {
		for _, b := range bs {
			b.Close()
		}
	}
}

// stopped is the error every later take returns: the first error,
// context.Canceled once closed, nil while the queue runs.
func (r *readyQueue) stopped() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.err != nil:
		return r.err
	case r.closed:
		return context.Canceled
	}
	return nil
}

func (r *readyQueue) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// finished reports whether a consumer read the scan to its end.
func (r *readyQueue) finished() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drained
}
