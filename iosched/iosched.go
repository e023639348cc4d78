// Package iosched runs the byte-range reads of all queries of a store domain on one priority queue drained by a fixed number of IO workers.
//
// It owns IO scheduling and nothing above it: it must not import budget
// (the scanner reserves memory before it submits), the scanner or anything
// DuckDB; stores come from iosched/store.
package iosched

// How it works. Callers submit a whole vector of requests (Submit, Fetch)
// and wait for it or stream its results, or hear when it is done
// (SubmitFunc); they never manage concurrency. The
// scheduler merges nearby requests into one GET and splits large ones into
// parallel parts (plan), queues the GETs, and runs them on at most
// max_parallel_io worker slots. Workers only do IO: a body is read into the
// caller's buffer and handed over; decoding happens on the caller's side.
// A request may ask for an object's version instead of bytes
// (Request.Version: a HEAD): it waits for a slot like a GET.
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
// once; hedges stay under 5 % of all GETs. A read of a local file
// (store.Local) is neither watched nor hedged: nothing could interrupt it.
//
// The files follow those seams: iosched.go the Scheduler and its
// settings; queue.go the queue and its fairness; batch.go Submit, planning
// (split, coalesce) and delivery; attempt.go one attempt (the one read
// path, getRange), retries and hedging; congestion.go the throttling
// limit (AIMD) and the retry budget; stats.go the counters and latency
// histograms; domains.go one scheduler and store per store domain.
//
// Locks, in the order they may be taken: hedge.mu, then Scheduler.mu
// (startHedge runs under hedge.mu). Batch.mu is never held with
// Scheduler.mu.
//
// Errors: the sentinels that are causes inside a *RequestError
// (ErrShortBody, ErrTimeout, ...) are bare nouns, and the RequestError adds
// the package prefix once ("iosched: GET <url> bytes=a-b: timeout: ...");
// an error a caller can receive on its own (ErrClosed) and a panic's text
// carry the prefix themselves.

import (
	"sync"
	"sync/atomic"
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
	// Alloc, if set, makes the buffer of n bytes that the GET this request
	// is part of reads into, where Buffer does not serve: a request merged
	// with its neighbours, whose bytes are a slice of one buffer for all
	// of them (the first one's Alloc makes it). The same rule holds as for
	// Buffer: after a failed batch, it may still be written.
	Alloc func(n int) []byte
	// Map, if set, lets the scheduler answer with a read-only mapping of the
	// range instead of a copy when the store maps (store.Mapper: a local
	// file). Map is called with the mapping before it is delivered, and from
	// then on the caller owns it: it must store.Unmap it after its last read,
	// also when the batch fails or is canceled. Where the store cannot map,
	// or mapping fails, the range is read as usual (Buffer, Alloc). A
	// request with Map is never merged, and a store that maps gets it
	// whole, not split; one to the end of the object (Length < 0) maps to
	// its end.
	Map func(m []byte)
	// Version, if set, makes the request one for the object's version
	// (its Store must be a store.Versioner: an HTTP HEAD, S3 HeadObject)
	// and no bytes: Offset and Length must be 0, and its Result's Data is
	// empty. It is queued and retried as a GET is, on the same worker
	// slots (a check of an object's version is a round trip like a
	// range's), never merged, split or hedged, and does not count as a
	// GET in the stats. Version is called with the store's answer on a
	// worker, before the request is delivered; it must not block.
	Version func(v string)
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

	// mu guards what follows. Lock order: a hedge's mu before mu, never
	// the reverse; a Batch's mu is never held with it.
	mu sync.Mutex
	// base is the domain's max_parallel_io (SetParallelism): the share of
	// a query that sets none. p is the worker slots: base, or the largest
	// share a query holds (SetQueryLimit) if that is larger, so that a
	// query's share lasts as long as the query and no longer.
	base, p  int
	cc       *congestion // the throttling limit, 1 ≤ cc.limit ≤ p
	rb       retryBudget // tokens for retries of throttled, reset, timed-out GETs
	inflight int         // busy worker slots
	hedging  int         // hedges running
	busy     []bool
	queues   map[uint64]*queryQueue
	spare    *queryQueue // an empty queue for reuse (dropQueueLocked)
	// Per-query shares: the most GETs a query may run at once (a query
	// without one: base), and how many it runs (SetQueryLimit).
	queryCap, queryRunning map[uint64]int
	ring                   []*queryQueue // queries with queued work, served round-robin
	rr                     int
	queued                 int
	backoff                int
	closed                 bool
	batches                map[*Batch]struct{}
	// notedLimit is the limit the running batches last heard of: only a
	// lower one is news to them (limitChangedLocked).
	notedLimit int
	order      int64 // tie-break: FIFO among equal priorities
	// Utilization integrals.
	lastChange             time.Time
	busyTime, capacityTime time.Duration
	hedgesIssued           int64
	queueWait              Histogram
	latency                Histogram
	budgetFailures         int64
	stallRetries           int64

	// idle are the workers between tasks (see idleWait), the most recent
	// last; quit is closed by Close, which ends them.
	idle []chan workItem
	quit chan struct{}

	wg sync.WaitGroup // workers, hedges
	// workers counts the worker goroutines started.
	workers atomic.Int64

	requests, failed, canceled, issued, bytes, retries atomic.Int64
	throttled, hedgesWon, splits, coalesced            atomic.Int64
}

// New returns a scheduler with opts (zero fields take the defaults). It
// starts no goroutine until work arrives: workers exit when the queue has
// been empty for idleKeep.
func New(opts Options) *Scheduler {
	o := opts.withDefaults()
	now := time.Now()
	return &Scheduler{
		o: o, base: o.Parallelism, p: o.Parallelism, cc: newCongestion(o.Parallelism, o.AIMDInterval, now),
		rb:       retryBudget{tokens: o.RetryBudget, capacity: o.RetryBudget},
		busy:     make([]bool, o.Parallelism),
		queues:   map[uint64]*queryQueue{},
		queryCap: map[uint64]int{}, queryRunning: map[uint64]int{},
		batches:    map[*Batch]struct{}{},
		lastChange: now,
		quit:       make(chan struct{}),
	}
}

// Parallelism returns the domain's max_parallel_io: the most GETs a query
// that set no share of its own (SetQueryLimit) runs at once. While a query
// with a larger share runs, the scheduler has more workers than this (see
// Stats.Workers).
func (s *Scheduler) Parallelism() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base
}

// SetParallelism changes the domain's max_parallel_io to n (at most
// MaxParallelism) at run time.
// Growing starts queued work at once; shrinking lets running GETs finish
// and starts no new one until fewer than the new limit run. An
// unthrottled scheduler moves its AIMD limit with its workers; a
// throttled one keeps its lower limit. It panics if n < 1.
func (s *Scheduler) SetParallelism(n int) {
	if n < 1 {
		panic("iosched: parallelism must be at least 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base = min(n, MaxParallelism)
	s.resizeLocked()
}

// resizeLocked sizes the worker slots to the domain's parallelism or the
// largest share a query holds, whichever is larger (at most
// MaxParallelism), and starts what the new sizes allow.
func (s *Scheduler) resizeLocked() {
	n := s.base
	for _, c := range s.queryCap {
		n = max(n, min(c, MaxParallelism))
	}
	if n != s.p {
		s.accountLocked(time.Now())
		s.cc.setParallelism(n)
		s.limitChangedLocked()
		s.p = n
		for len(s.busy) < n {
			s.busy = append(s.busy, false)
		}
	}
	s.dispatchLocked()
}

// Model returns what the scheduler has learned of its store's latency and
// per-GET bandwidth (priors of 20 ms and 100 MB/s until it measured some).
func (s *Scheduler) Model() Model { return s.model.get() }

// SetQueryLimit sets query's (Priority.Query) share to n: the most GETs
// it runs at once, where a query without one runs at most Parallelism. A
// query's max_parallel_io is its own share of the domain's workers and
// never changes another query's: a share larger than Parallelism adds
// workers for this query alone, for as long as it holds the share. n ≤ 0
// removes the share, as a query must when it ends: then the workers are
// the domain's again (less what other queries' shares add). Growing a
// share starts queued work at once; shrinking it lets running GETs finish.
func (s *Scheduler) SetQueryLimit(query uint64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= 0 {
		delete(s.queryCap, query)
	} else {
		s.queryCap[query] = n
	}
	s.resizeLocked()
}

// shareLocked is the most GETs query may run at once: its own share, else
// the domain's parallelism.
func (s *Scheduler) shareLocked(query uint64) int {
	if n, ok := s.queryCap[query]; ok {
		return n
	}
	return s.base
}

// Stats returns a snapshot of the counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	now := time.Now()
	s.accountLocked(now)
	s.growLocked(now)
	st := Stats{
		Parallelism: s.base, Workers: s.p, Limit: s.cc.limit, LimitMin: s.cc.minLimit, InFlight: s.inflight, Hedging: s.hedging,
		Queued: s.queued, Backoff: s.backoff,
		HedgesIssued: s.hedgesIssued, Decreases: s.cc.cuts, Undos: s.cc.undos,
		RetryTokens: s.rb.tokens, BudgetFailures: s.budgetFailures, StallRetries: s.stallRetries, BackgroundThrottle: s.cc.bg,
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
	if !s.closed {
		close(s.quit) // the idle workers exit
	}
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
