// Package iosched runs the byte-range reads of all queries of a store domain on one priority queue drained by a fixed number of IO workers.
package iosched

// How it works. Callers submit a whole vector of requests (Submit, Fetch)
// and wait for it or stream its results; they never manage concurrency. The
// scheduler merges nearby requests into one GET and splits large ones into
// parallel parts (plan), queues the GETs, and runs them on at most
// max_parallel_io worker slots. Workers only do IO: a body is read into the
// caller's buffer and handed over; decoding happens on the caller's side.
//
// Order: the queue holds one sub-queue per query (Priority.Query); workers
// take from the queries in turn (round-robin) and, within a query, the
// lowest Priority.Seq first (catalog order). A retried GET keeps its place,
// so a small request submitted later cannot starve an older one.
//
// Failures: 404/403 and bad ranges fail at once; 5xx, 429, connection
// errors, short bodies and timeouts are retried with jittered exponential
// back-off (or the wait a Retry-After header asks for), resuming after the
// bytes already read. Retries of throttled, reset and timed-out GETs draw
// from a retry budget shared by the scheduler (retryBudget); other errors
// are retried Options.Retries times. Throttled answers move the effective
// parallelism only when they follow our load (congestion.go). A GET slower
// than the p95 of its size class, or whose body stops arriving, is hedged
// once; hedges stay under 5 % of all GETs.

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// Priority orders requests: queries are served in turn, and within a query
// lower Seq first.
type Priority struct {
	Query uint64 // a query (scan) id
	Seq   int64  // catalog order within the query
}

// Request asks for Length bytes of object Name of Store from Offset; a
// negative Length reads to the end of the object (such requests are neither
// split nor merged).
type Request struct {
	Store    store.Store
	Name     string
	Offset   int64
	Length   int64
	Priority Priority
	// Buffer, if at least Length bytes long, is where the bytes go (pooled
	// memory the caller owns), when the request is fetched on its own (not
	// merged with others); its Result's Data is then Buffer[:Length]. The
	// scheduler writes into it until the batch is done; after a failed
	// batch, parts of it may still be written: don't reuse it then.
	Buffer []byte
}

// Result is the outcome of one request: its index in the submitted slice
// and its bytes, or the error. Data of merged requests share one buffer;
// each Data is capped at its length, so appending to it copies.
type Result struct {
	Index int
	Data  []byte
	Err   error
}

// Scheduler is the IO queue and worker pool of one store domain. Its methods
// are safe for concurrent use; create it with New and end it with Close.
type Scheduler struct {
	o     Options
	lat   latencies
	model model

	mu       sync.Mutex
	p        int         // max_parallel_io
	cc       *congestion // the throttling limit, 1 ≤ cc.limit ≤ p
	rb       retryBudget // tokens for retries of throttled, reset, timed-out GETs
	inflight int         // busy worker slots
	hedging  int         // hedges running
	busy     []bool
	queues   map[uint64]*queryQueue
	// Per-query shares: the most GETs a query may run at once, and how
	// many it runs (SetQueryLimit).
	queryCap, queryRunning map[uint64]int
	ring                   []*queryQueue // queries with queued work, served round-robin
	rr                     int
	queued                 int
	backoff                int
	closed                 bool
	batches                map[*Batch]struct{}
	order                  int64 // tie-break: FIFO among equal priorities
	// Utilization integrals.
	lastChange             time.Time
	busyTime, capacityTime time.Duration
	hedgesIssued           int64
	queueWait              Histogram
	latency                Histogram
	budgetFailures         int64

	wg sync.WaitGroup // workers, hedges

	requests, failed, canceled, issued, bytes, retries atomic.Int64
	throttled, hedgesWon, splits, coalesced            atomic.Int64
}

// New returns a scheduler with opts (zero fields take the defaults). It
// starts no goroutine until work arrives: workers exit when the queue is
// empty.
func New(opts Options) *Scheduler {
	o := opts.withDefaults()
	now := time.Now()
	return &Scheduler{
		o: o, p: o.Parallelism, cc: newCongestion(o.Parallelism, o.AIMDInterval, now),
		rb:       retryBudget{tokens: o.RetryBudget, capacity: o.RetryBudget},
		busy:     make([]bool, o.Parallelism),
		queues:   map[uint64]*queryQueue{},
		queryCap: map[uint64]int{}, queryRunning: map[uint64]int{},
		batches:    map[*Batch]struct{}{},
		lastChange: now,
	}
}

// Parallelism returns max_parallel_io.
func (s *Scheduler) Parallelism() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// SetParallelism changes max_parallel_io to n at run time. Growing starts
// queued work at once; shrinking lets running GETs finish and starts no new
// one until fewer than n run. An unthrottled scheduler moves its AIMD limit
// with n; a throttled one keeps its lower limit. It panics if n < 1.
func (s *Scheduler) SetParallelism(n int) {
	if n < 1 {
		panic("iosched: parallelism must be at least 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setParallelismLocked(n)
}

func (s *Scheduler) setParallelismLocked(n int) {
	s.accountLocked(time.Now())
	s.cc.setParallelism(n)
	s.limitChangedLocked()
	s.p = n
	for len(s.busy) < n {
		s.busy = append(s.busy, false)
	}
	s.dispatchLocked()
}

// Model returns what the scheduler has learned of its store's latency and
// per-GET bandwidth (priors of 20 ms and 100 MB/s until it measured some).
func (s *Scheduler) Model() Model { return s.model.get() }

// SetQueryLimit caps the GETs query (Priority.Query) runs at once at n,
// beside the scheduler's parallelism, which stays as it is: a query's
// max_parallel_io is its own share of the domain's workers and never
// changes another query's. n ≤ 0 removes the cap. Growing a cap starts
// queued work at once; shrinking it lets running GETs finish.
func (s *Scheduler) SetQueryLimit(query uint64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= 0 {
		delete(s.queryCap, query)
	} else {
		s.queryCap[query] = n
	}
	s.dispatchLocked()
}

// EnsureParallelism raises max_parallel_io to n if it is lower, and never
// lowers it: for a query whose own share (SetQueryLimit) is larger than
// the domain's worker pool. It panics if n < 1.
func (s *Scheduler) EnsureParallelism(n int) {
	if n < 1 {
		panic("iosched: parallelism must be at least 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.p {
		s.setParallelismLocked(n)
	}
}

// Stats returns a snapshot of the counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	now := time.Now()
	s.accountLocked(now)
	s.growLocked(now)
	st := Stats{
		Parallelism: s.p, Limit: s.cc.limit, LimitMin: s.cc.minLimit, InFlight: s.inflight, Hedging: s.hedging,
		Queued: s.queued, Backoff: s.backoff,
		HedgesIssued: s.hedgesIssued, Decreases: s.cc.cuts, Undos: s.cc.undos,
		RetryTokens: s.rb.tokens, BudgetFailures: s.budgetFailures, BackgroundThrottle: s.cc.bg,
		QueueWait: s.queueWait.clone(), Latency: s.latency.clone(),
		BusyTime: s.busyTime, CapacityTime: s.capacityTime,
	}
	s.mu.Unlock()
	st.Requests = s.requests.Load()
	st.Failed = s.failed.Load()
	st.Canceled = s.canceled.Load()
	st.Issued = s.issued.Load()
	st.Bytes = s.bytes.Load()
	st.Retries = s.retries.Load()
	st.Throttled = s.throttled.Load()
	st.HedgesWon = s.hedgesWon.Load()
	st.Splits = s.splits.Load()
	st.Coalesced = s.coalesced.Load()
	return st
}

// Close fails every batch still running with ErrClosed, aborts its GETs and
// waits until all workers have exited. Later Submits fail with ErrClosed.
// Close is idempotent.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	s.closed = true
	var live []*Batch
	for b := range s.batches {
		live = append(live, b)
	}
	s.mu.Unlock()
	for _, b := range live {
		b.cancel(ErrClosed) // its AfterFunc removes the queued tasks
	}
	for _, b := range live {
		<-b.done
	}
	s.wg.Wait()
	return nil
}

// accountLocked advances the utilization integrals to now.
func (s *Scheduler) accountLocked(now time.Time) {
	d := now.Sub(s.lastChange)
	if d <= 0 {
		return
	}
	s.busyTime += time.Duration(s.inflight) * d
	s.capacityTime += time.Duration(s.p) * d
	s.lastChange = now
}

// --- throttling ---

// answerLocked feeds the outcome of a GET sent at issued to the throttling
// controller and tells running batches about a lower limit.
func (s *Scheduler) answerLocked(issued, now time.Time, throttled bool) {
	s.accountLocked(now)
	s.cc.answer(issued, now, throttled)
	s.limitChangedLocked()
}

// growLocked lets the limit grow back (see congestion.grow).
func (s *Scheduler) growLocked(now time.Time) {
	s.cc.grow(now)
}

// limitChangedLocked records the limit in the running batches' minimum.
func (s *Scheduler) limitChangedLocked() {
	for b := range s.batches {
		b.noteLimit(s.cc.limit)
	}
}

// --- queue ---

type taskState int

const (
	planned taskState = iota // not queued yet
	queued
	backingOff
	running
	finished
)

// task is one GET-sized piece of work: a whole span or one part of a split
// span.
type task struct {
	b      *Batch
	sp     *span
	off    int64 // in the object
	partAt int64 // offset within the span
	length int64 // < 0: to the end
	buf    []byte
	done   int64 // bytes already in buf: a retry resumes after them

	prio     Priority
	order    int64
	index    int // in its query heap
	state    taskState
	attempts int
	spent    int // retry-budget tokens its retries took
	broken   int // failures that were not throttles (resets, short bodies, timeouts)
	enqueued time.Time
	timer    *time.Timer
}

type queryQueue struct {
	id    uint64
	tasks taskHeap
}

type taskHeap []*task

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if h[i].prio.Seq != h[j].prio.Seq {
		return h[i].prio.Seq < h[j].prio.Seq
	}
	return h[i].order < h[j].order
}
func (h taskHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *taskHeap) Push(x any) {
	t := x.(*task)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

func (s *Scheduler) pushLocked(t *task, now time.Time) {
	q := s.queues[t.prio.Query]
	if q == nil {
		q = &queryQueue{id: t.prio.Query}
		s.queues[q.id] = q
		s.ring = append(s.ring, q)
	}
	t.state = queued
	t.enqueued = now
	heap.Push(&q.tasks, t)
	s.queued++
}

// popLocked takes the next task: the head of the next query in turn that
// is below its share (SetQueryLimit); nil when there is none.
func (s *Scheduler) popLocked(now time.Time) *task {
	if s.queued == 0 {
		return nil
	}
	var q *queryQueue
	for range len(s.ring) {
		if s.rr >= len(s.ring) {
			s.rr = 0
		}
		c := s.ring[s.rr]
		if n, capped := s.queryCap[c.id]; !capped || s.queryRunning[c.id] < n {
			q = c
			break
		}
		s.rr++
	}
	if q == nil {
		return nil // every query with queued work runs its share
	}
	s.queryRunning[q.id]++
	t := heap.Pop(&q.tasks).(*task)
	s.queued--
	if q.tasks.Len() == 0 {
		s.dropQueueLocked(s.rr)
	} else {
		s.rr++
	}
	t.state = running
	w := now.Sub(t.enqueued)
	s.queueWait.add(w)
	t.b.queueWait.Add(int64(w))
	return t
}

func (s *Scheduler) dropQueueLocked(i int) {
	delete(s.queues, s.ring[i].id)
	s.ring = slices.Delete(s.ring, i, i+1)
	if s.rr > i {
		s.rr--
	}
}

func (s *Scheduler) removeLocked(t *task) {
	q := s.queues[t.prio.Query]
	heap.Remove(&q.tasks, t.index)
	s.queued--
	if q.tasks.Len() == 0 {
		s.dropQueueLocked(slices.Index(s.ring, q))
	}
}

// dispatchLocked starts workers while slots are free and work is queued.
func (s *Scheduler) dispatchLocked() {
	now := time.Now()
	s.growLocked(now)
	for s.inflight < min(s.cc.effective(), s.p) && s.queued > 0 {
		id := slices.Index(s.busy[:s.p], false)
		// INVARIANT: fewer than p slots below p are busy when inflight < p.
		t := s.popLocked(now)
		if t == nil {
			return
		}
		s.accountLocked(now)
		s.busy[id] = true
		s.inflight++
		s.wg.Add(1)
		go s.worker(id, t)
	}
}

// worker runs tasks in slot id until the queue is empty or the slot is no
// longer allowed (parallelism or AIMD limit lowered).
func (s *Scheduler) worker(id int, t *task) {
	defer s.wg.Done()
	for t != nil {
		q := t.prio.Query
		s.run(id, t)
		s.mu.Lock()
		if s.queryRunning[q]--; s.queryRunning[q] <= 0 {
			delete(s.queryRunning, q)
		}
		now := time.Now()
		s.growLocked(now)
		t = nil
		if id < s.p && s.inflight <= min(s.cc.effective(), s.p) && s.queued > 0 {
			t = s.popLocked(now)
		}
		if t == nil {
			s.accountLocked(now)
			s.inflight--
			s.busy[id] = false
			s.dispatchLocked()
		}
		s.mu.Unlock()
	}
}

// --- batches ---

// Batch is a submitted vector of requests. Each request produces exactly one
// Result; the first failure cancels the requests still pending.
type Batch struct {
	s       *Scheduler
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stop    func() bool
	tasks   []*task
	reqs    []Request // for their Buffer; see buffer
	results chan Result
	done    chan struct{}

	mu        sync.Mutex
	data      [][]byte
	remaining int
	err       error
	nreq      int

	issued, bytes, retries, hedges, hedgesWon, splits, coalesced, queueWait atomic.Int64
	throttled                                                               atomic.Int64
	limitMin                                                                atomic.Int64 // lowest limit while the batch ran
}

// noteLimit lowers the batch's recorded minimum limit to n.
func (b *Batch) noteLimit(n int) {
	for {
		cur := b.limitMin.Load()
		if cur <= int64(n) || b.limitMin.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// span is a run of requests to one object merged into one range, fetched by
// one task or, when longer than RequestSize, by several.
type span struct {
	st      store.Store
	name    string
	off     int64
	length  int64 // < 0: to the end
	end     int64
	alloc   sync.Once
	buf     []byte // set once by alloc
	members []member
	pending int // parts not yet finished
	failed  bool
}

type member struct {
	index  int
	at     int64 // offset within the span
	length int64
}

// Submit queues reqs and returns at once. Cancelling ctx (or calling
// Cancel) removes the batch's queued GETs and aborts its running ones; the
// batch then fails with ctx's cause. Submit panics if a request has no Store.
func (s *Scheduler) Submit(ctx context.Context, reqs []Request) *Batch {
	b := &Batch{
		s: s, reqs: reqs, results: make(chan Result, len(reqs)), done: make(chan struct{}),
		data: make([][]byte, len(reqs)), remaining: len(reqs), nreq: len(reqs),
	}
	b.ctx, b.cancel = context.WithCancelCause(ctx)
	s.requests.Add(int64(len(reqs)))
	if len(reqs) == 0 {
		b.finishLocked()
		b.cancel(context.Canceled)
		return b
	}
	spans, invalid := s.plan(reqs)
	for _, sp := range spans {
		prio := reqs[sp.members[0].index].Priority
		for _, m := range sp.members[1:] {
			prio.Seq = min(prio.Seq, reqs[m.index].Priority.Seq)
		}
		if sp.length < 0 {
			b.tasks = append(b.tasks, &task{b: b, sp: sp, off: sp.off, length: -1, prio: prio, index: -1})
			sp.pending = 1
			continue
		}
		// Equal parts: 9 MiB with 8 MiB requests is 2 × 4.5 MiB, not 8 + 1.
		n := (sp.length + s.o.RequestSize - 1) / s.o.RequestSize
		part := (sp.length + n - 1) / n
		for at := int64(0); at < sp.length; at += part {
			b.tasks = append(b.tasks, &task{b: b, sp: sp, off: sp.off + at, partAt: at,
				length: min(part, sp.length-at), prio: prio, index: -1})
			sp.pending++
		}
		b.splits.Add(int64(sp.pending - 1))
		b.coalesced.Add(int64(len(sp.members) - 1))
	}
	s.splits.Add(b.splits.Load())
	s.coalesced.Add(b.coalesced.Load())

	// Registered before the push, so that a worker finishing the batch sees
	// b.stop. If ctx is done already, cancelBatch runs at once on its own
	// goroutine: it finishes the tasks still planned (or removes them once
	// pushed) and may finish the batch, reading b.stop, before AfterFunc
	// returns; hence b.mu around the assignment.
	b.mu.Lock()
	b.stop = context.AfterFunc(b.ctx, func() { s.cancelBatch(b) })
	b.mu.Unlock()
	s.mu.Lock()
	switch {
	case s.closed:
		b.cancel(ErrClosed)
	case b.ctx.Err() == nil:
		s.batches[b] = struct{}{}
		b.limitMin.Store(int64(min(s.cc.limit, s.p)))
		now := time.Now()
		for _, t := range b.tasks {
			t.order = s.order
			s.order++
			s.pushLocked(t, now)
		}
		s.dispatchLocked()
	}
	s.mu.Unlock()

	b.mu.Lock()
	for _, i := range invalid {
		r := reqs[i]
		if r.Length == 0 && r.Offset >= 0 {
			b.deliverLocked(i, []byte{}, nil)
			continue
		}
		b.failLocked(i, &RequestError{URL: r.Store.URL(r.Name), Offset: r.Offset, Length: r.Length,
			Err: fmt.Errorf("%w: negative offset", ErrInvalid)}, true)
	}
	b.mu.Unlock()
	b.afterChange()
	return b
}

// plan merges requests into spans: per object and query, sorted by offset,
// a request joins the previous span when it starts at most CoalesceGap past
// its end and the merged range fits in RequestSize. It returns the indexes
// of empty or invalid requests apart.
func (s *Scheduler) plan(reqs []Request) (spans []*span, apart []int) {
	type key struct {
		st    store.Store
		name  string
		query uint64
	}
	groups := map[key][]int{}
	var keys []key
	for i, r := range reqs {
		if r.Store == nil {
			panic("iosched: request without a store")
		}
		if r.Offset < 0 || r.Length == 0 {
			apart = append(apart, i)
			continue
		}
		k := key{r.Store, r.Name, r.Priority.Query}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range keys {
		idx := groups[k]
		slices.SortStableFunc(idx, func(a, c int) int {
			switch {
			case reqs[a].Offset < reqs[c].Offset:
				return -1
			case reqs[a].Offset > reqs[c].Offset:
				return 1
			}
			return 0
		})
		var cur *span
		for _, i := range idx {
			r := reqs[i]
			if r.Length < 0 {
				spans = append(spans, &span{st: k.st, name: k.name, off: r.Offset, length: -1,
					members: []member{{index: i, length: -1}}})
				continue
			}
			end := r.Offset + r.Length
			if cur != nil && s.o.CoalesceGap >= 0 && r.Offset <= cur.end+s.o.CoalesceGap &&
				max(end, cur.end)-cur.off <= s.o.RequestSize {
				cur.members = append(cur.members, member{index: i, at: r.Offset - cur.off, length: r.Length})
				cur.end = max(cur.end, end)
				cur.length = cur.end - cur.off
				continue
			}
			cur = &span{st: k.st, name: k.name, off: r.Offset, end: end, length: r.Length,
				members: []member{{index: i, length: r.Length}}}
			spans = append(spans, cur)
		}
	}
	return spans, apart
}

// cancelBatch removes the queued and backing-off tasks of a canceled batch.
func (s *Scheduler) cancelBatch(b *Batch) {
	var gone []*task
	s.mu.Lock()
	for _, t := range b.tasks {
		switch t.state {
		case planned:
			gone = append(gone, t)
		case queued:
			if t.index >= 0 {
				s.removeLocked(t)
				gone = append(gone, t)
			}
		case backingOff:
			t.timer.Stop()
			s.backoff--
			gone = append(gone, t)
		default:
			continue
		}
		t.state = finished
	}
	s.mu.Unlock()
	for _, t := range gone {
		s.finish(t, nil, true /* canceled */)
	}
}

// requeue puts a task back after its back-off.
func (s *Scheduler) requeue(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.state != backingOff {
		return // canceled meanwhile
	}
	s.backoff--
	s.pushLocked(t, time.Now())
	s.dispatchLocked()
}

// Results returns a channel that yields each request's Result as soon as it
// is complete, in completion order, and is closed after the last one.
// It is buffered for the whole batch: not reading it never blocks workers.
func (b *Batch) Results() <-chan Result { return b.results }

// Done is closed when every request has its Result.
func (b *Batch) Done() <-chan struct{} { return b.done }

// Wait blocks until every request has its Result and returns the bytes of
// each request by index. On failure it returns nil and the first error: a
// *RequestError naming the URL, or the cause that canceled the batch.
func (b *Batch) Wait() ([][]byte, error) {
	<-b.done
	if b.err != nil {
		return nil, b.err
	}
	return b.data, nil
}

// Cancel cancels the batch's pending requests; Wait then returns
// context.Canceled unless the batch had finished or failed before.
func (b *Batch) Cancel() { b.cancel(context.Canceled) }

// Stats returns the batch's counters.
func (b *Batch) Stats() BatchStats {
	return BatchStats{
		Requests: b.nreq, Issued: b.issued.Load(), Bytes: b.bytes.Load(), Retries: b.retries.Load(),
		HedgesIssued: b.hedges.Load(), HedgesWon: b.hedgesWon.Load(),
		Splits: b.splits.Load(), Coalesced: b.coalesced.Load(), QueueWait: time.Duration(b.queueWait.Load()),
		Throttled: b.throttled.Load(), LimitMin: int(b.limitMin.Load()),
	}
}

// Fetch submits reqs and waits for them: Submit(ctx, reqs).Wait().
func (s *Scheduler) Fetch(ctx context.Context, reqs []Request) ([][]byte, error) {
	return s.Submit(ctx, reqs).Wait()
}

func (b *Batch) deliverLocked(i int, data []byte, err error) {
	b.data[i] = data
	b.results <- Result{Index: i, Data: data, Err: err}
	b.remaining--
	if b.remaining == 0 {
		b.finishLocked()
	}
}

func (b *Batch) finishLocked() {
	close(b.results)
	close(b.done)
}

// failLocked delivers err for request i and records the batch's first error.
func (b *Batch) failLocked(i int, err error, counts bool) {
	if b.err == nil {
		b.err = err
	}
	if counts {
		b.s.failed.Add(1)
	} else {
		b.s.canceled.Add(1)
	}
	b.deliverLocked(i, nil, err)
}

// afterChange cancels the batch after its first error and releases it when
// it is complete. Call it without b.mu held.
func (b *Batch) afterChange() {
	b.mu.Lock()
	err, complete, stop := b.err, b.remaining == 0, b.stop
	b.mu.Unlock()
	if err != nil {
		b.cancel(err)
	}
	if complete {
		if stop != nil {
			stop()
		}
		b.cancel(context.Canceled) // releases the context; a no-op after a failure
		b.s.mu.Lock()
		delete(b.s.batches, b)
		b.s.mu.Unlock()
	}
}

// finish records a task's end: success (err nil, canceled false), failure or
// cancellation. The span delivers when all its parts are in.
func (s *Scheduler) finish(t *task, err error, canceled bool) {
	b, sp := t.b, t.sp
	b.mu.Lock()
	if canceled && err == nil {
		err = context.Cause(b.ctx)
		if err == nil {
			err = context.Canceled
		}
	}
	switch {
	case sp.failed:
	case err != nil:
		sp.failed = true
		for _, m := range sp.members {
			r := &RequestError{URL: sp.st.URL(sp.name), Offset: sp.off + m.at, Length: m.length, Attempts: t.attempts, Err: err}
			if canceled {
				// The batch's cause (maybe another request's error) is
				// already b.err; this request only reports the cancellation.
				r = &RequestError{URL: r.URL, Offset: r.Offset, Length: r.Length, Err: b.ctx.Err()}
				if b.err == nil {
					b.err = err
				}
			}
			b.failLocked(m.index, r, !canceled)
		}
	default:
		sp.pending--
		if sp.pending == 0 {
			for _, m := range sp.members {
				if sp.length < 0 {
					b.deliverLocked(m.index, t.buf, nil)
					continue
				}
				b.deliverLocked(m.index, sp.buf[m.at:m.at+m.length:m.at+m.length], nil)
			}
		}
	}
	b.mu.Unlock()
	b.afterChange()
}

// --- running a task ---

var (
	errHedgeWon  = errors.New("iosched: the hedged GET answered first")
	errHedgeLost = errors.New("iosched: the first GET answered first")
	// errHedgeStalled ends a hedge that stalled like the GET it hedged.
	errHedgeStalled = errors.New("iosched: the hedge stalled too")
)

// run makes one attempt at t in worker slot id and then finishes it,
// fails it or schedules its retry.
func (s *Scheduler) run(id int, t *task) {
	b := t.b
	if b.ctx.Err() != nil {
		s.finish(t, nil, true)
		return
	}
	t.attempts++
	issued := time.Now()
	err := s.attempt(id, t)
	if err == nil {
		s.mu.Lock()
		s.answerLocked(issued, time.Now(), false)
		if t.attempts == 1 {
			s.rb.refund(1)
		} else {
			s.rb.refund(t.spent) // the retries paid off: their tokens return
		}
		s.mu.Unlock()
		s.finish(t, nil, false)
		return
	}
	if b.ctx.Err() != nil {
		s.finish(t, nil, true)
		return
	}
	throttled := store.Throttled(err)
	if throttled {
		s.throttled.Add(1)
		b.throttled.Add(1)
	}
	cost := retryCostOf(err)
	retry := !store.Permanent(err) && !errors.Is(err, ErrInvalid) && s.o.Retries > 0
	s.mu.Lock()
	if throttled {
		s.answerLocked(issued, time.Now(), true)
	}
	if cost > 0 && !throttled {
		t.broken++
	}
	switch {
	case !retry:
	case cost > 0 && !throttled && t.broken > s.o.Retries:
		// Random resets and stalls hit a GET rarely; the same GET broken
		// Retries+1 times is a server that cannot serve it (a body that
		// never comes, a Content-Length it never fills): fail within
		// Retries+1 timeouts and their back-off, not after draining the
		// budget for 20 attempts.
		retry = false
	case cost > 0 && t.attempts < maxBudgetedAttempts:
		// Throttles, resets and timeouts draw from the shared budget.
		if s.rb.take(cost) {
			t.spent += cost
		} else {
			retry = false
			s.budgetFailures++
			err = fmt.Errorf("%w (%w)", err, ErrRetryBudget)
		}
	default:
		retry = t.attempts <= s.o.Retries
	}
	s.mu.Unlock()
	if !retry {
		s.finish(t, err, false)
		return
	}
	s.retries.Add(1)
	b.retries.Add(1)
	d := s.backoffDelay(t.attempts)
	if ra := store.RetryAfter(err); ra > d {
		d = min(ra, s.o.FirstByteTimeout) // the store asked for it; a silly value is capped
	}
	s.mu.Lock()
	// Checked under s.mu: cancelBatch runs after the context is done and
	// takes s.mu, so it either sees this task backing off or we see the
	// cancellation here.
	if b.ctx.Err() == nil {
		t.state = backingOff
		s.backoff++
		t.timer = time.AfterFunc(d, func() { s.requeue(t) })
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.finish(t, nil, true)
}

// maxBudgetedAttempts bounds the attempts of one GET whose retries come
// from the retry budget, so that one object that is always throttled
// cannot retry for ever while other GETs refill the budget.
const maxBudgetedAttempts = 20

// retryCostOf is what retrying err costs from the retry budget: throttles
// and broken connections retryCost, timeouts timeoutCost; 0 for errors
// retried Options.Retries times instead.
func retryCostOf(err error) int {
	switch {
	case errors.Is(err, ErrTimeout):
		return timeoutCost
	case store.Throttled(err), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, ErrShortBody):
		return retryCost
	}
	return 0
}

// backoffDelay is the n-th retry's wait: between d/2 and d for
// d = min(MaxBackoff, Backoff·2ⁿ⁻¹) ("equal jitter").
func (s *Scheduler) backoffDelay(n int) time.Duration {
	d := s.o.Backoff << min(n-1, 20)
	if d > s.o.MaxBackoff || d <= 0 {
		d = s.o.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// hedge is the second GET of a slow attempt, and what the first one's
// watch knows of its progress.
type hedge struct {
	mu          sync.Mutex
	primaryDone bool
	primaryWon  bool
	started     bool
	won         bool
	cancel      context.CancelCauseFunc
	done        chan struct{}
	buf         []byte
	err         error
	from        int64 // offset in the task where the hedge's bytes go
	timer       *time.Timer
	patience    time.Duration // how long the hedge may run before both GETs count as stalled
	hedgeDone   bool
	start       time.Time // of the first GET
	want        int64     // bytes it asks for
	unknown     bool      // no latency was measured when it started

	got      atomic.Int64 // body bytes the first GET has read
	lastByte atomic.Int64 // when it last read one (UnixNano), 0 before the first
}

// progress records m more body bytes of the first GET.
func (hs *hedge) progress(m int) {
	hs.got.Add(int64(m))
	hs.lastByte.Store(time.Now().UnixNano())
}

// attempt makes one GET of t's remaining bytes into t.buf, racing a hedge
// against it when it stalls. It returns nil when all bytes are in.
//
// The watch (hedge logic): once the GET has run for the p95 of its size
// class (or, before the class has samples, four times what the model
// expects; before any GET was measured, the watch looks again every
// HedgeFloor until one was) without finishing, it is hedged if no body byte came yet (a
// stall before or at the headers) or none for stallGap (a stall mid-body;
// the hedge then asks only for the bytes not read yet). A GET whose body
// still flows is checked again after stallGap. Whatever the throttling
// limit, a stalled GET is hedged as long as hedges stay within
// HedgeFraction. If the hedge fails, or is still running after as long
// again while the first GET stays stuck, both end and the task is retried
// as a timeout; so is a GET stuck for four times that long (a second at
// least) while the hedge budget allows no hedge.
func (s *Scheduler) attempt(id int, t *task) error {
	b := t.b
	ctx, cancel := context.WithCancelCause(b.ctx)
	defer cancel(nil)
	if t.length < 0 {
		data, err := s.get(ctx, cancel, id, t, "GET", t.off, -1, nil)
		if err == nil {
			t.buf = data
		}
		return err
	}
	from := t.done
	want := t.length - from
	hs := &hedge{done: make(chan struct{})}
	if !s.o.NoHedge {
		d, ok := s.lat.threshold(want, s.o.HedgeFloor, s.o.HedgeMinSamples)
		if !ok {
			// Too few GETs of this size yet: what the model expects. A scan's
			// first GETs stall as often as its last ones.
			d, ok = s.model.hedgeAfter(want, s.o.HedgeFloor)
		}
		gap := s.lat.stallGap(s.o.HedgeFloor, s.o.HedgeMinSamples)
		hs.mu.Lock()
		hs.start, hs.want = time.Now(), want
		if !ok {
			// Nothing measured yet (a new scheduler's first GETs): look
			// again after the floor, when other GETs may have taught the
			// model what to expect.
			d, hs.unknown = s.o.HedgeFloor, true
		}
		hs.patience = max(d, gap)
		hs.timer = time.AfterFunc(d, func() { s.watch(id, t, hs, from, gap, cancel) })
		hs.mu.Unlock()
	}
	n, err := s.getInto(ctx, cancel, id, t, "GET", t.off+from, want, func() []byte { return s.buffer(t)[from:] }, hs)
	t.done = from + int64(n)
	hs.mu.Lock()
	if hs.timer != nil {
		hs.timer.Stop()
	}
	hs.primaryDone = true
	if err == nil && !hs.won {
		hs.primaryWon = true
		if hs.started {
			hs.cancel(errHedgeLost)
		}
	}
	won, started := hs.won, hs.started
	hs.mu.Unlock()
	if err == nil && !won {
		return nil
	}
	if started && !won {
		<-hs.done // the first GET failed: the hedge may still deliver
		hs.mu.Lock()
		won = hs.won || hs.err == nil
		hs.mu.Unlock()
	}
	if won {
		copy(s.buffer(t)[hs.from:], hs.buf)
		t.done = t.length
		s.hedgesWon.Add(1)
		b.hedgesWon.Add(1)
		return nil
	}
	return err
}

// watch runs when the first GET of an attempt at from has been slow: it
// hedges a stalled GET and checks a flowing one again after gap.
func (s *Scheduler) watch(id int, t *task, hs *hedge, from int64, gap time.Duration, cancelPrimary context.CancelCauseFunc) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.primaryDone || t.b.ctx.Err() != nil {
		return
	}
	if hs.unknown {
		d, ok := s.model.hedgeAfter(hs.want, s.o.HedgeFloor)
		if !ok {
			hs.timer.Reset(s.o.HedgeFloor)
			return
		}
		hs.unknown, hs.patience = false, max(d, gap)
		if ran := time.Since(hs.start); ran < d {
			hs.timer.Reset(d - ran)
			return
		}
	}
	if last := hs.lastByte.Load(); last != 0 {
		if idle := time.Since(time.Unix(0, last)); idle < gap {
			hs.timer.Reset(gap - idle) // still flowing
			return
		}
	}
	switch {
	case !hs.started:
		if s.startHedge(id, t, hs, from+hs.got.Load(), cancelPrimary) {
			hs.timer.Reset(hs.patience)
			return
		}
		// Over the hedge budget. Maybe later; but a GET stuck for four
		// times its patience, and a second at least (a slow start on a
		// busy machine is not a stall), is ended as a timeout and retried
		// rather than left to the idle timeout.
		idleSince := hs.start
		if last := hs.lastByte.Load(); last != 0 {
			idleSince = time.Unix(0, last)
		}
		if time.Since(idleSince) >= max(4*hs.patience, time.Second) {
			cancelPrimary(fmt.Errorf("%w: stalled, and no hedge was allowed", ErrTimeout))
			return
		}
		hs.timer.Reset(gap)
	case !hs.hedgeDone:
		// Both stuck: the hedge ran as long as the first GET did before
		// it was hedged. End both; the task is retried as a timeout.
		hs.cancel(errHedgeStalled)
		cancelPrimary(fmt.Errorf("%w: stalled, and so did its hedge", ErrTimeout))
	}
}

// startHedge sends the second GET of an attempt, for the task's bytes from
// from on, if the hedge budget allows; it reports whether it did. Call it
// with hs.mu held.
func (s *Scheduler) startHedge(id int, t *task, hs *hedge, from int64, cancelPrimary context.CancelCauseFunc) bool {
	s.mu.Lock()
	// Hedges are extra load: at most HedgeFraction of all GETs so far and
	// of the parallelism at any moment.
	ok := !s.closed &&
		float64(s.hedgesIssued+1) <= s.o.HedgeFraction*float64(s.issued.Load()) &&
		float64(s.hedging) < max(1, s.o.HedgeFraction*float64(s.p))
	if ok {
		s.hedgesIssued++
		s.hedging++
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	t.b.hedges.Add(1)
	hs.started = true
	hs.from = from
	ctx, cancel := context.WithCancelCause(t.b.ctx)
	hs.cancel = cancel
	go func() {
		defer s.wg.Done()
		defer cancel(nil)
		var buf []byte
		_, err := s.getInto(ctx, cancel, id, t, "hedge", t.off+from, t.length-from, func() []byte {
			buf = make([]byte, t.length-from)
			return buf
		}, nil)
		s.mu.Lock()
		s.hedging--
		s.mu.Unlock()
		hs.mu.Lock()
		hs.buf, hs.err = buf, err
		hs.hedgeDone = true
		switch {
		case err == nil && !hs.primaryWon:
			hs.won = true
			cancelPrimary(errHedgeWon)
		case err != nil && !hs.primaryDone && !errors.Is(context.Cause(ctx), errHedgeLost) && !errors.Is(context.Cause(ctx), errHedgeStalled):
			// The hedge failed while the first GET is still stuck: end
			// that one too, as a timeout, so that the task is retried
			// (from the bytes it has) instead of waiting out the stall.
			cancelPrimary(fmt.Errorf("%w: stalled, and its hedge failed: %v", ErrTimeout, err))
		}
		hs.mu.Unlock()
		close(hs.done)
	}()
	return true
}

// buffer returns t's slice of its span's buffer: the request's own Buffer
// when the span is that one request and the Buffer is long enough, else a
// new buffer allocated on first use. It is called once the response headers
// are in, so that clearing megabytes overlaps with the body's arrival
// instead of delaying the request; and it is not called under b.mu, which
// would serialize the workers.
func (s *Scheduler) buffer(t *task) []byte {
	if t.buf == nil {
		sp := t.sp
		sp.alloc.Do(func() {
			if len(sp.members) == 1 {
				if into := t.b.reqs[sp.members[0].index].Buffer; int64(len(into)) >= sp.length {
					sp.buf = into[:sp.length:sp.length]
					return
				}
			}
			sp.buf = make([]byte, sp.length)
		})
		t.buf = sp.buf[t.partAt : t.partAt+t.length]
	}
	return t.buf
}

// getInto reads length bytes at off into buf() with first-byte and idle
// timeouts, and reports the GET to the stats and the tracer. buf is called
// once the store has answered.
func (s *Scheduler) getInto(ctx context.Context, cancel context.CancelCauseFunc, id int, t *task, name string, off, length int64, buf func() []byte, hs *hedge) (int, error) {
	start := time.Now()
	s.issued.Add(1)
	t.b.issued.Add(1)
	n, err := s.read(ctx, cancel, t, off, length, buf, hs)
	s.account(id, t, name, off, length, start, int64(n), err)
	return n, err
}

// get reads from off to the end of the object into a new buffer.
func (s *Scheduler) get(ctx context.Context, cancel context.CancelCauseFunc, id int, t *task, name string, off, length int64, _ []byte) ([]byte, error) {
	start := time.Now()
	s.issued.Add(1)
	t.b.issued.Add(1)
	var data []byte
	n, err := s.readWith(ctx, cancel, t, off, -1, nil, func(body io.Reader, progress func(int)) (int, error) {
		buf := make([]byte, 0, 64<<10)
		for {
			if len(buf) == cap(buf) {
				buf = slices.Grow(buf, cap(buf))
			}
			m, err := body.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+m]
			progress(m)
			if err == io.EOF {
				data = buf
				return len(buf), nil
			}
			if err != nil {
				return len(buf), err
			}
		}
	})
	s.account(id, t, name, off, length, start, int64(n), err)
	return data, err
}

func (s *Scheduler) account(id int, t *task, name string, off, length int64, start time.Time, n int64, err error) {
	d := time.Since(start)
	s.bytes.Add(n)
	t.b.bytes.Add(n)
	if err == nil {
		if length > 0 {
			s.lat.add(length, d)
		}
		s.mu.Lock()
		s.latency.add(d)
		s.mu.Unlock()
	}
	if tr := s.o.Tracer; tr != nil {
		tr.TraceRequest(Event{Name: name, URL: t.sp.st.URL(t.sp.name), Offset: off, Length: length,
			Query: t.prio.Query, Worker: id, Start: start, Dur: d, Bytes: n, Err: err})
	}
}

// read fills bufFn() (called once the store answered) from the body of a
// GET of length bytes at off; a body that ends early is ErrShortBody.
func (s *Scheduler) read(ctx context.Context, cancel context.CancelCauseFunc, t *task, off, length int64, bufFn func() []byte, hs *hedge) (int, error) {
	return s.readWith(ctx, cancel, t, off, length, hs, func(body io.Reader, progress func(int)) (int, error) {
		buf := bufFn()
		n := 0
		for n < len(buf) {
			m, err := body.Read(buf[n:])
			n += m
			progress(m)
			if err == io.EOF {
				break
			}
			if err != nil {
				return n, err
			}
		}
		if n < len(buf) {
			return n, fmt.Errorf("%w: got %d of %d bytes", ErrShortBody, n, len(buf))
		}
		return n, nil
	})
}

// readWith sends the GET and runs fill on its body under a watchdog: the
// attempt is canceled with ErrTimeout when no first byte arrives within
// FirstByteTimeout or no further byte within IdleTimeout.
func (s *Scheduler) readWith(ctx context.Context, cancel context.CancelCauseFunc, t *task, off, length int64, hs *hedge,
	fill func(io.Reader, func(int)) (int, error)) (int, error) {
	var sawByte atomic.Bool
	watchdog := time.AfterFunc(s.o.FirstByteTimeout, func() {
		if sawByte.Load() {
			cancel(fmt.Errorf("%w: no byte for %v", ErrTimeout, s.o.IdleTimeout))
		} else {
			cancel(fmt.Errorf("%w: no first byte within %v", ErrTimeout, s.o.FirstByteTimeout))
		}
	})
	defer watchdog.Stop()
	start := time.Now()
	progress := func(m int) {
		if m > 0 {
			if !sawByte.Swap(true) {
				s.lat.addFirstByte(time.Since(start))
			}
			watchdog.Reset(s.o.IdleTimeout)
			if hs != nil {
				hs.progress(m)
			}
		}
	}
	body, err := t.sp.st.GetRange(ctx, t.sp.name, off, length)
	if err != nil {
		return 0, s.cause(ctx, err)
	}
	headers := time.Since(start)
	defer body.Close()
	n, err := fill(body, progress)
	if err != nil {
		return n, s.cause(ctx, err)
	}
	if n > 0 {
		s.model.add(headers, time.Since(start), int64(n))
	}
	return n, nil
}

// cause replaces a context error caused by a timeout by the timeout.
func (s *Scheduler) cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && errors.Is(c, ErrTimeout) {
		return c
	}
	return err
}
