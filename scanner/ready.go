package scanner

import (
	"context"
	"sync"
	"time"
)

// A consumer on DuckDB's threads that sleeps and wakes pays for waking a
// thread and handing it a P, which costs more than taking a small batch.
// So a queued batch does not always wake a consumer at once: the queue
// waits for work worth the wake (wakeRows rows, or wakeBatches batches),
// unless nothing more can come without a consumer. That is when no chunk
// is in flight (started and not yet put): the producers then wait for a
// lookahead slot or for budget that only a consumer gives back, and a
// consumer asleep beside the batches that hold them would wedge the scan.
// wakeAfter bounds how long a batch waits for company in any case: a
// chunk in flight may take long (a slow request), and its batch must not
// keep the first rows of a LIMIT waiting.
const (
	// wakeRows is a few of DuckDB's vectors of rows.
	wakeRows  = 4 * 2048
	wakeAfter = time.Millisecond
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
	// started counts the chunks started (start); started-done are in
	// flight. rows is the rows of the batches in q.
	started int
	rows    int64
	// wakeBatches is how many queued batches are worth a wake (see
	// wakeRows); one, the default, wakes a consumer for every batch.
	wakeBatches int
	// wakeAfter is how long a batch waits for a wake at most; timer is
	// armed while a batch waits for one.
	wakeAfter time.Duration
	timer     *time.Timer
	armed     bool
}

func newReadyQueue(total int, ordered bool) *readyQueue {
	r := &readyQueue{ordered: ordered, total: total, pending: map[int][]*Batch{}, wakeBatches: 1, wakeAfter: wakeAfter}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// setWakeBatches sets wakeBatches, n ≥ 1.
func (r *readyQueue) setWakeBatches(n int) {
	r.mu.Lock()
	r.wakeBatches = n
	r.mu.Unlock()
}

// start counts a chunk in flight until its put.
func (r *readyQueue) start() {
	r.mu.Lock()
	r.started++
	r.mu.Unlock()
}

// batchRows is b's rows (none for a batch without a record).
func batchRows(b *Batch) int64 {
	if b == nil || b.Record == nil {
		return 0
	}
	return b.Record.NumRows()
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
	for _, b := range r.q[queued:] {
		r.rows += batchRows(b)
	}
	r.wakeLocked(false /* not the timer */)
}

// wakeLocked wakes waiting consumers for the queued batches when they are
// worth a wake, when no chunk is in flight, or when the timer is up (see
// wakeRows); every one at the end of the scan. Else it arms the timer.
// A consumer woken runs on its own thread, which the runtime must wake
// and hand a P to, and one woken for a batch another one takes goes back
// to sleep having paid for both: a wake for each worth of work, no more.
func (r *readyQueue) wakeLocked(timeUp bool) {
	if r.done == r.total && len(r.pending) == 0 {
		r.broadcastLocked()
		return
	}
	if r.waiting == 0 || len(r.q) == 0 {
		return
	}
	n := max(len(r.q)/r.wakeBatches, int(r.rows/wakeRows))
	if n == 0 && !timeUp && r.started > r.done {
		if !r.armed {
			r.armed = true
			if r.timer == nil {
				r.timer = time.AfterFunc(r.wakeAfter, r.timeUp)
			} else {
				r.timer.Reset(r.wakeAfter)
			}
		}
		return
	}
	r.stopTimerLocked()
	n = min(max(n, 1), r.waiting)
	r.waiting -= n
	r.woken += n
	for range n {
		r.cond.Signal()
	}
}

// timeUp wakes a consumer for batches that waited wakeAfter.
func (r *readyQueue) timeUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.armed {
		r.armed = false
		r.wakeLocked(true /* the timer */)
	}
}

func (r *readyQueue) stopTimerLocked() {
	if r.armed {
		r.armed = false
		r.timer.Stop()
	}
}

// broadcastLocked wakes every waiting consumer.
func (r *readyQueue) broadcastLocked() {
	r.stopTimerLocked()
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
		r.rows -= batchRows(b)
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
	r.q, r.pending, r.rows = nil, map[int][]*Batch{}, 0
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
