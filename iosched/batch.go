package iosched

// Batches: Submit plans a vector of requests into spans (merging nearby
// requests, splitting long ones into parts), queues their tasks, and
// delivers each request's bytes or error when its span is complete.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

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

	// mu guards what follows; it is never held with the Scheduler's mu.
	mu        sync.Mutex
	data      [][]byte
	errs      []error // each request's error, made at the first (Result)
	remaining int
	err       error
	failed    int // the request err came from, when it came from one (Failed)
	nreq      int
	// onDone is SubmitFunc's done, called once (notified) when the batch
	// is complete.
	onDone   func(*Batch)
	notified bool

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
	st     store.Store
	name   string
	off    int64
	length int64 // < 0: to the end
	end    int64
	// alloc chooses the span's memory once: a mapping (mapRange) or the
	// buffer it is read into (buffer), never one and later the other.
	alloc   sync.Once
	buf     []byte       // set once by alloc
	mapTo   func([]byte) // the request's Map: the span is that request alone
	version func(string) // the request's Version: the span is that request alone
	members []member
	one     [1]member // members of a span of one request (planOne)
	pending int       // parts not yet finished
	failed  bool
	// parts is how many tasks read the span; where more than one does,
	// every answer must give the version of the first (task.sameVersion).
	parts        int
	partsVersion VersionPin
}

type member struct {
	index  int
	at     int64 // offset within the span
	length int64
}

// Submit queues reqs and returns at once. Cancelling ctx removes the
// batch's queued GETs and aborts its running ones; the batch then fails with ctx's cause. Submit panics if a request has no Store.
func (s *Scheduler) Submit(ctx context.Context, reqs []Request) *Batch {
	return s.SubmitFunc(ctx, reqs, nil)
}

// SubmitFunc is Submit, and calls done (if not nil) with the batch once,
// when every request has its Result (Done is closed): on the goroutine
// that completed the batch, which may be an IO worker, one that cancels
// it, or the caller's, maybe before SubmitFunc returns. So a caller can
// hand the batch on without a goroutine that waits for it; done must not
// block, nor do more than hand it on (IO workers do IO alone).
func (s *Scheduler) SubmitFunc(ctx context.Context, reqs []Request, done func(*Batch)) *Batch {
	b := &Batch{
		s: s, reqs: reqs, results: make(chan Result, len(reqs)), done: make(chan struct{}),
		data: make([][]byte, len(reqs)), remaining: len(reqs), nreq: len(reqs), onDone: done, failed: -1,
	}
	b.ctx, b.cancel = context.WithCancelCause(ctx)
	s.requests.Add(int64(len(reqs)))
	if len(reqs) == 0 {
		b.finishLocked()
		b.cancel(context.Canceled)
		if done != nil {
			done(b)
		}
		return b
	}
	spans, invalid := s.plan(reqs)
	for _, sp := range spans {
		prio := reqs[sp.members[0].index].Priority
		for _, m := range sp.members[1:] {
			prio.Seq = min(prio.Seq, reqs[m.index].Priority.Seq)
		}
		if sp.length < 0 || sp.version != nil {
			b.tasks = append(b.tasks, &task{b: b, sp: sp, off: sp.off, length: sp.length, prio: prio, index: -1})
			sp.pending = 1
			continue
		}
		// Equal parts: 9 MiB with 8 MiB requests is 2 × 4.5 MiB, not 8 + 1.
		n := (sp.length + s.o.RequestSize - 1) / s.o.RequestSize
		if _, ok := sp.st.(store.Mapper); ok && sp.mapTo != nil {
			n = 1 // one mapping, not parts of one
		}
		part := (sp.length + n - 1) / n
		for at := int64(0); at < sp.length; at += part {
			b.tasks = append(b.tasks, &task{b: b, sp: sp, off: sp.off + at, partAt: at,
				length: min(part, sp.length-at), prio: prio, index: -1})
			sp.pending++
		}
		sp.parts = sp.pending
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
	if len(reqs) == 1 {
		if sp := s.planOne(reqs[0]); sp != nil {
			return []*span{sp}, nil
		}
	}
	groups := map[key][]int{}
	var keys []key
	for i, r := range reqs {
		if r.Store == nil {
			panic("iosched: request without a store")
		}
		if r.Version != nil {
			if _, ok := r.Store.(store.Versioner); !ok || r.Offset != 0 || r.Length != 0 || r.Map != nil {
				panic("iosched: a version request with a range, a mapping, or of a store that gives no version")
			}
			spans = append(spans, &span{st: r.Store, name: r.Name, members: []member{{index: i}}, version: r.Version})
			continue
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
					members: []member{{index: i, length: -1}}, mapTo: r.Map})
				continue
			}
			end := r.Offset + r.Length
			if r.Map != nil {
				spans = append(spans, &span{st: k.st, name: k.name, off: r.Offset, end: end, length: r.Length,
					members: []member{{index: i, length: r.Length}}, mapTo: r.Map})
				cur = nil // alone: the next request does not join it
				continue
			}
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

// planOne is plan of a vector of one request r (a whole chunk, most
// often), which has nothing to merge with: its span, or nil where plan's
// other rules apply (a version, an empty or invalid range, no store).
func (s *Scheduler) planOne(r Request) *span {
	if r.Store == nil || r.Version != nil || r.Offset < 0 || r.Length == 0 {
		return nil
	}
	sp := &span{st: r.Store, name: r.Name, off: r.Offset, length: r.Length, mapTo: r.Map}
	sp.one[0] = member{length: r.Length}
	sp.members = sp.one[:]
	if r.Length > 0 {
		sp.end = r.Offset + r.Length
	}
	return sp
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

// Result returns request i's bytes, or its error, once the batch is Done.
// A request that failed because another one did (the first failure cancels
// the rest) has that failure's cause as its error: Failed names the
// request it came from.
func (b *Batch) Result(i int) ([]byte, error) {
	<-b.done
	if b.errs != nil && b.errs[i] != nil {
		return nil, b.errs[i]
	}
	return b.data[i], nil
}

// Failed returns, once the batch is Done, the index of the request whose
// failure is Wait's error, or -1 if none failed or the batch was cancelled
// before any did.
func (b *Batch) Failed() int {
	<-b.done
	return b.failed
}

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
	if err != nil {
		if b.errs == nil {
			b.errs = make([]error, b.nreq)
		}
		b.errs[i] = err
	}
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
		if counts {
			b.failed = i
		}
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
	var notify func(*Batch)
	if complete && !b.notified {
		b.notified, notify = true, b.onDone
	}
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
	if notify != nil {
		notify(b)
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
