package iosched

// Hedging: a second GET of a task's remaining bytes, raced against a first
// one that stalled (see attempt).

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

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
		var err error
		func() {
			defer recovered(&err) // a goroutine of its own: see guardedAttempt
			_, err = s.getRange(ctx, cancel, id, t, "hedge", t.off+from, t.length-from, func() []byte {
				buf = make([]byte, t.length-from)
				return buf
			}, nil)
		}()
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
