package iosched

// Running a task: one attempt is one GET (read through the one read path,
// getRange), raced by a hedge when it stalls; a failed attempt is retried
// with back-off or fails its task.

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
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
	err := s.guardedAttempt(id, t)
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
	retry := !store.Permanent(err) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, errPanicked) && s.o.Retries > 0
	s.mu.Lock()
	if throttled {
		s.answerLocked(issued, time.Now(), true)
	}
	// Unless the controller has cut the limit by a quarter or more it
	// judges the throttling random (see congestion.random): a throttled GET
	// then waits at most half the first retry's back-off (jittered from 0)
	// however often it was throttled, since waiting does not make a random
	// refusal less likely, only the scan's tail longer (a scan of many small
	// GETs ends with its last wave, where one GET's back-off is the whole
	// tail: see BENCHMARKS.md, "Figures behind the code"). Throttling that follows our load cuts the limit within a round
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
//
// A read of a local file (store.Local) runs under the batch's context with
// no watch (a context of its own, a timer, a hedge): a pread, once begun,
// runs to its end whatever its context says, so the watch could not act.
func (s *Scheduler) attempt(id int, t *task) error {
	b := t.b
	_, local := t.sp.st.(store.Local)
	local = local && t.sp.version == nil
	ctx, cancel := b.ctx, context.CancelCauseFunc(nil) // a nil cancel: getRange sets no watchdog
	if !local {
		ctx, cancel = context.WithCancelCause(b.ctx)
		defer cancel(nil)
	}
	if t.sp.version != nil {
		return s.askVersion(ctx, cancel, id, t)
	}
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
	if local {
		got, err := s.getRange(ctx, nil, id, t, "GET", t.off+from, want, func() []byte { return s.buffer(t)[from:] }, nil)
		t.done = from + int64(len(got))
		return err
	}
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
	if errors.Is(err, ErrChanged) {
		t.done = 0 // the bytes kept are of the version before: the retry reads all of the range
	}
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

// errPanicked marks an attempt that panicked: a bug met by a store's
// answer (its headers, its body, an error document) or by our reading of
// it. It is not retried.
var errPanicked = errors.New("iosched: internal error (panic)")

// guardedAttempt is attempt with a panic made its error (errPanicked, with
// the panic and its stack). An IO worker has no caller to recover it, and
// a panic on it would end the host process; the task fails instead, and
// its batch reports it.
func (s *Scheduler) guardedAttempt(id int, t *task) (err error) {
	defer recovered(&err)
	return s.attempt(id, t)
}

// recovered, deferred, makes a panic of its goroutine *err (errPanicked).
func recovered(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v\n%s", errPanicked, r, debug.Stack())
	}
}

// askVersion asks the store for t's object's version (a Request's
// Version), under the same first-byte timeout as a GET: the answer is
// headers alone.
func (s *Scheduler) askVersion(ctx context.Context, cancel context.CancelCauseFunc, id int, t *task) error {
	start := time.Now()
	watchdog := time.AfterFunc(s.o.FirstByteTimeout, func() {
		cancel(fmt.Errorf("%w: no answer within %v", ErrTimeout, s.o.FirstByteTimeout))
	})
	v, err := t.sp.st.(store.Versioner).Version(ctx, t.sp.name)
	watchdog.Stop()
	if err != nil {
		err = s.cause(ctx, err)
	}
	s.account(id, t, "HEAD", 0, 0, start, 0, err)
	if err == nil {
		t.sp.version(v)
	}
	return err
}
