package iosched

// Running a task: one attempt is one GET (read through the one read path,
// getRange), raced by a hedge when it stalls; a failed attempt is retried
// with back-off or fails its task.

import (
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

var (
	errHedgeWon  = errors.New("the hedged GET answered first")
	errHedgeLost = errors.New("the first GET answered first")
	// errHedgeStalled ends a hedge that stalled like the GET it hedged.
	errHedgeStalled = errors.New("the hedge stalled too")
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
	if t.quietSince.IsZero() {
		t.quietSince = issued
	}
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
	// A stall the watch ended is our impatience, not a failure of the
	// store: it is retried at once and draws nothing from the retry budget
	// nor counts as broken, until the task has gone without a byte for as
	// long as a patient client waits (the request timeout, over all its
	// attempts; the watch waits twice as long for each stall in a row, so
	// a dead store gets a few GETs, not one a second). Then it fails as a
	// timeout: a store that stopped answering is reported about
	// request_timeout after its last byte, as a patient client would, while
	// a machine too busy to read its sockets for a second (every GET looks
	// stalled at once) cannot drain the budget and fail the scan.
	var se *stallError
	impatient, gaveUp := false, false
	if errors.As(err, &se) {
		if quiet := time.Since(t.quietSince); quiet < s.quietLimit(t) {
			impatient = true
			t.stalls++
		} else {
			gaveUp = true
			err = fmt.Errorf("%w: no byte for %v (the last attempt %s)", ErrTimeout, quiet.Round(time.Millisecond), se.reason)
		}
	}
	throttled := store.Throttled(err)
	if throttled {
		s.throttled.Add(1)
		b.throttled.Add(1)
	}
	cost := retryCostOf(err)
	if impatient {
		cost = 0
	}
	retry := !store.Permanent(err) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) && s.o.Retries > 0
	s.mu.Lock()
	if throttled {
		s.answerLocked(issued, time.Now(), true)
	}
	// Unless the controller has cut the limit by a quarter or more it
	// judges the throttling random (see congestion.random): a throttled GET
	// then waits at most half the first retry's back-off (jittered from 0)
	// however often it was throttled, since waiting does not make a random
	// refusal less likely, only the scan's tail longer (three 503s in a row
	// on one of 2,000 small GETs added ~0.5 s to a 1.2 s scan; in the fault
	// mix of issue 8 a 503 in the last wave of GETs is the usual end of the
	// scan). Throttling that follows our load cuts the limit within a round
	// or two, and then back-off grows as usual.
	random := throttled && s.cc.random()
	if cost > 0 && !throttled {
		t.broken++
		t.brokenRun++
	} else {
		t.brokenRun = 0
	}
	switch {
	case !retry:
	case gaveUp:
		retry = false
	case impatient:
		s.stallRetries++
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
	var d time.Duration
	switch {
	case impatient:
		// A stall is not throttling: ask again at once.
	case cost == retryCost && !throttled:
		// A broken connection (a reset, a body cut short) is not
		// throttling either, and waiting does not make the next one less
		// likely: the first in a row is retried at once, on a new
		// connection. Another in a row backs off as usual, by the count of
		// breaks in a row: a server restarting resets its connections and
		// then refuses new ones for a while (refusals back off by attempt).
		if t.brokenRun > 1 {
			d = s.retryDelay(t.brokenRun-1, err, false)
		}
	default:
		d = s.retryDelay(t.attempts, err, random)
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

// quietLimit is how long a patient client would wait for t's next byte:
// the first-byte timeout before any byte of it came, else the idle timeout.
func (s *Scheduler) quietLimit(t *task) time.Duration {
	if t.done == 0 {
		return s.o.FirstByteTimeout
	}
	return s.o.IdleTimeout
}

// stallError is the cause with which the watch ends a GET that stalled
// (with no hedge allowed, or with its hedge): a timeout of our own
// impatience, retried for free while the task is within quietLimit (see
// run). It unwraps to ErrTimeout.
type stallError struct{ reason string }

func (e *stallError) Error() string { return ErrTimeout.Error() + ": " + e.reason }
func (e *stallError) Unwrap() error { return ErrTimeout }

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

// retryDelay is the wait before the next attempt of a GET that failed with
// err after attempts attempts: the back-off of that many attempts, or
// between 0 and Backoff/2 while the throttling is random (see run), or
// what the store asked for with Retry-After if that is longer (capped at
// FirstByteTimeout).
func (s *Scheduler) retryDelay(attempts int, err error, random bool) time.Duration {
	var d time.Duration
	if random {
		d = rand.N(s.o.Backoff/2 + 1)
	} else {
		d = s.backoffDelay(attempts)
	}
	if ra := store.RetryAfter(err); ra > d {
		d = min(ra, s.o.FirstByteTimeout) // the store asked for it; a silly value is capped
	}
	return d
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
	// mu guards the fields up to got. Lock order: mu before the
	// Scheduler's mu (startHedge is called with mu held).
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
	// The task's stall clock (see run): since when it has had no byte, how
	// long a patient client waits, and the stalls in a row before this GET.
	quietSince time.Time
	quietLimit time.Duration
	stalls     int

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
	if t.sp.mapTo != nil && t.length == t.sp.length && s.mapRange(id, t) {
		return nil
	}
	if t.length < 0 {
		data, err := s.getRange(ctx, cancel, id, t, "GET", t.off, -1, nil, nil)
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
		hs.quietSince, hs.quietLimit, hs.stalls = t.quietSince, s.quietLimit(t), t.stalls
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
	got, err := s.getRange(ctx, cancel, id, t, "GET", t.off+from, want, func() []byte { return s.buffer(t)[from:] }, hs)
	t.done = from + int64(len(got))
	if last := hs.lastByte.Load(); last != 0 {
		t.quietSince = time.Unix(0, last)
		t.stalls = 0
	}
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

// mapRange answers t, a whole span that asked for a mapping, with one from
// a store that maps (a local file): no copy, and the pages are faulted in
// here, in the IO worker. It reports false when the store does not map or
// the mapping failed: the caller then reads the range (whose error, if the
// range is bad, is the one to report).
//
// Whether a span is mapped or read is decided once, by its first attempt,
// under the span's alloc: the same Once that buffer uses to choose the
// memory a read goes into. A span that fell back to reading has its bytes,
// or some of them, in that memory, and its retries read on into it: it is
// never mapped later, and a mapping never stands beside a buffer already
// chosen.
func (s *Scheduler) mapRange(id int, t *task) bool {
	sp := t.sp
	mp, ok := sp.st.(store.Mapper)
	if !ok {
		return false
	}
	mapped := false
	sp.alloc.Do(func() {
		start := time.Now()
		m, err := mp.MapRange(t.b.ctx, sp.name, t.off, t.length)
		if err != nil {
			if sp.length >= 0 {
				sp.buf = s.readBuffer(t)
			}
			return
		}
		s.issued.Add(1)
		t.b.issued.Add(1)
		sp.mapTo(m) // the caller's from now on
		sp.buf = m[:len(m):len(m)]
		s.account(id, t, "MAP", t.off, t.length, start, int64(len(m)), nil)
		mapped = true
	})
	if !mapped {
		return false
	}
	t.buf = sp.buf
	t.done = int64(len(sp.buf))
	return true
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
		// busy machine is not a stall), is ended and retried rather than
		// left to the idle timeout; twice as long for each stall in a row
		// of its task, and at the latest when the task has had no byte for
		// as long as a patient client waits (see run).
		idleSince, quietSince := hs.start, hs.quietSince
		if last := hs.lastByte.Load(); last != 0 {
			idleSince, quietSince = time.Unix(0, last), time.Unix(0, last)
		}
		wait := max(4*hs.patience, time.Second) << min(hs.stalls, 6)
		if s.o.Retries > 0 && (time.Since(idleSince) >= wait || time.Since(quietSince) >= hs.quietLimit) {
			cancelPrimary(&stallError{"stalled, and no hedge was allowed"})
			return
		}
		hs.timer.Reset(gap)
	case !hs.hedgeDone:
		// Both stuck: the hedge ran as long as the first GET did before
		// it was hedged. End both; the task is retried as a timeout.
		hs.cancel(errHedgeStalled)
		if s.o.Retries > 0 { // else the first GET waits for its timeout: it cannot be retried
			cancelPrimary(&stallError{"stalled, and so did its hedge"})
		}
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
		_, err := s.getRange(ctx, cancel, id, t, "hedge", t.off+from, t.length-from, func() []byte {
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
			if s.o.Retries > 0 {
				cancelPrimary(&stallError{"stalled, and its hedge failed: " + err.Error()})
			}
		}
		hs.mu.Unlock()
		close(hs.done)
	}()
	return true
}

// buffer returns t's slice of its span's buffer, chosen once per span (see
// readBuffer and mapRange). It is called once the response headers are in,
// so that clearing megabytes overlaps with the body's arrival instead of
// delaying the request; and it is not called under b.mu, which would
// serialize the workers.
func (s *Scheduler) buffer(t *task) []byte {
	if t.buf == nil {
		sp := t.sp
		sp.alloc.Do(func() { sp.buf = s.readBuffer(t) })
		t.buf = sp.buf[t.partAt : t.partAt+t.length]
	}
	return t.buf
}

// readBuffer makes the buffer t's span is read into: the request's own
// Buffer when the span is that one request and the Buffer is long enough,
// else one from the first request's Alloc or a new one. Call it only in
// the span's alloc.
func (s *Scheduler) readBuffer(t *task) []byte {
	sp := t.sp
	if len(sp.members) == 1 {
		if into := t.b.reqs[sp.members[0].index].Buffer; int64(len(into)) >= sp.length {
			return into[:sp.length:sp.length]
		}
	}
	if alloc := t.b.reqs[sp.members[0].index].Alloc; alloc != nil {
		return alloc(int(sp.length))[:sp.length:sp.length]
	}
	return make([]byte, sp.length)
}

// getRange is the one read path: it makes one GET of length bytes of t's
// object at off (length < 0: to the end of the object) under a watchdog,
// and reports it to the stats and the tracer as name ("GET" or "hedge").
// A known length is read into into(), called once the store has answered
// (so that clearing a large buffer overlaps the body's arrival); a body
// that ends early is ErrShortBody. To the end, the bytes go into a buffer
// that grows. It returns the bytes read, also on failure (a retry resumes
// after them). The attempt is canceled with ErrTimeout when no first byte
// arrives within FirstByteTimeout or no further byte within IdleTimeout;
// hs, if not nil, hears of every byte (the hedge's watch).
func (s *Scheduler) getRange(ctx context.Context, cancel context.CancelCauseFunc, id int, t *task, name string, off, length int64, into func() []byte, hs *hedge) ([]byte, error) {
	start := time.Now()
	s.issued.Add(1)
	t.b.issued.Add(1)
	var sawByte atomic.Bool
	watchdog := time.AfterFunc(s.o.FirstByteTimeout, func() {
		if sawByte.Load() {
			cancel(fmt.Errorf("%w: no byte for %v", ErrTimeout, s.o.IdleTimeout))
		} else {
			cancel(fmt.Errorf("%w: no first byte within %v", ErrTimeout, s.o.FirstByteTimeout))
		}
	})
	defer watchdog.Stop()
	data, headers, err := s.readBody(ctx, t, off, length, into, func(m int) {
		if m > 0 {
			if !sawByte.Swap(true) {
				s.lat.addFirstByte(time.Since(start))
			}
			watchdog.Reset(s.o.IdleTimeout)
			if hs != nil {
				hs.progress(m)
			}
		}
	})
	if err != nil {
		err = s.cause(ctx, err)
	} else if len(data) > 0 {
		s.model.add(headers, time.Since(start), int64(len(data)))
	}
	s.account(id, t, name, off, length, start, int64(len(data)), err)
	return data, err
}

// readBody sends the GET and reads its body as getRange describes, calling
// progress with each read's byte count; it returns the bytes read and how
// long the store took to answer.
func (s *Scheduler) readBody(ctx context.Context, t *task, off, length int64, into func() []byte, progress func(int)) ([]byte, time.Duration, error) {
	start := time.Now()
	body, err := t.sp.st.GetRange(ctx, t.sp.name, off, length)
	if err != nil {
		return nil, 0, err
	}
	headers := time.Since(start)
	defer body.Close()
	var buf []byte
	if length < 0 {
		buf = make([]byte, min(64<<10, s.o.MaxReadToEnd+1))
	} else {
		buf = into()
	}
	n := 0
	for {
		if n == len(buf) {
			if length >= 0 {
				return buf, headers, nil
			}
			if int64(n) > s.o.MaxReadToEnd {
				return buf[:n], headers, fmt.Errorf("%w: more than %d bytes, and no length was given for it (give the chunk's length in a catalog)", ErrTooLarge, s.o.MaxReadToEnd)
			}
			buf = slices.Grow(buf, len(buf))[:min(2*int64(len(buf)), s.o.MaxReadToEnd+1)]
		}
		m, err := body.Read(buf[n:])
		n += m
		progress(m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf[:n], headers, err
		}
	}
	if length >= 0 && n < len(buf) {
		return buf[:n], headers, fmt.Errorf("%w: got %d of %d bytes", ErrShortBody, n, len(buf))
	}
	return buf[:n], headers, nil
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

// cause replaces a context error caused by a timeout by the timeout.
func (s *Scheduler) cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && errors.Is(c, ErrTimeout) {
		return c
	}
	return err
}
