package budget

import (
	"time"
)

// fitsLocked reports whether a request of n bytes that is first in line at b
// may be granted now, and whether that grant is an oversize admit.
func (b *Budget) fitsLocked(n int64) (ok, oversize bool) {
	if n <= b.capacity-b.inUse {
		return true, false
	}
	if n > b.capacity && b.inUse == 0 {
		// Never wedge: a request larger than the cap could otherwise never be
		// granted. Admit it alone.
		return true, true
	}
	return false, false
}

// blockedLevelLocked returns the first of b and its ancestors at which a new
// request of n bytes must wait, or nil if every level grants it now. A level
// with waiters blocks even if n would fit: letting a small request pass a
// waiting large one could starve the large one forever.
func (b *Budget) blockedLevelLocked(n int64) *Budget {
	for l := b; l != nil; l = l.parent {
		if l.idlePass && l != b && l.byOrigin[b] == 0 {
			continue // see WithIdlePass
		}
		if l.queue.len > 0 || l.growers.len > 0 {
			return l
		}
		if ok, _ := l.fitsLocked(n); !ok {
			return l
		}
	}
	return nil
}

// grantBelowLocked grants n bytes at b and each ancestor below stop (all of
// them if stop is nil). The caller has checked that each of them fits.
func (b *Budget) grantBelowLocked(stop *Budget, n int64) {
	for l := b; l != stop; l = l.parent {
		ok, oversize := l.fitsLocked(n)
		if l != b && (!ok || l.queue.len > 0) {
			l.bypasses++ // only a bypass gets here (blockedLevelLocked)
		}
		l.grantLocked(b, n, oversize)
	}
}

func (b *Budget) grantLocked(origin *Budget, n int64, oversize bool) {
	b.addLocked(origin, n)
	b.reserved += n
	if b.inUse > b.peak {
		b.peak = b.inUse
	}
	if oversize {
		b.oversizeAdmits++
	}
	if b.onGrant != nil {
		b.onGrant(b, n, oversize)
	}
}

// giveBackLocked returns n bytes to b and each ancestor below stop (all of
// them if stop is nil). The caller runs notifyLocked afterwards.
func (b *Budget) giveBackLocked(stop *Budget, n int64) {
	for l := b; l != stop; l = l.parent {
		l.addLocked(b, -n)
		l.released += n
	}
}

// addLocked changes b's bytes in use by n, on behalf of requests made on
// origin (b itself or a budget below it).
func (b *Budget) addLocked(origin *Budget, n int64) {
	b.inUse += n
	if origin == b {
		return
	}
	if b.byOrigin == nil {
		b.byOrigin = map[*Budget]int64{}
	}
	if v := b.byOrigin[origin] + n; v != 0 {
		b.byOrigin[origin] = v
	} else {
		delete(b.byOrigin, origin)
	}
}

// notifyLocked admits the waiters that now fit, at b and then at each
// ancestor. A waiter granted at one level joins the back of its parent's
// queue, so the parent sees requests in the order its children granted them.
func (b *Budget) notifyLocked() {
	for l := b; l != nil; l = l.parent {
		l.admitWaitersLocked()
	}
}

// admitWaitersLocked grants waiters from the front of b's queue while they
// fit. It stops at the first one that does not, even if a later, smaller one
// would fit: under steady load of small requests a large one would starve.
// The caller holds the locks of b and of its ancestors.
func (b *Budget) admitWaitersLocked() {
	// Growth first, in arrival order: those leases hold bytes already, and
	// an older chunk must not wait for a younger one's reservation.
	for w := b.growers.head; w != nil; w = b.growers.head {
		if w.n > b.capacity-b.inUse {
			break
		}
		b.growers.remove(w)
		b.admitGrowLocked(w)
	}
	for w := b.queue.head; b.growers.len == 0 && w != nil; w = b.queue.head {
		ok, oversize := b.fitsLocked(w.n)
		if !ok {
			break
		}
		b.queue.remove(w)
		b.admitLocked(w, oversize)
	}
	// A waiter whose budget holds nothing here passes the others: see
	// WithIdlePass. There is at most one per budget below, so the walk is
	// short.
	for w := b.queue.head; b.idlePass && w != nil; {
		next := w.next
		if w.origin != b && b.byOrigin[w.origin] == 0 {
			b.queue.remove(w)
			b.bypasses++
			b.admitLocked(w, false)
		}
		w = next
	}
}

// admitLocked grants waiter w, just removed from b's queue, at b and moves
// it to its next level, or wakes it.
func (b *Budget) admitLocked(w *waiter, oversize bool) {
	b.grantLocked(w.origin, w.n, oversize)
	if b.parent == nil {
		w.at = nil
		close(w.ready)
		return
	}
	w.at = b.parent
	b.parent.queue.pushBack(w)
}

// admitGrowLocked charges b the growth of waiter w, just removed from b's
// growers, and moves it to its next level, or wakes it.
func (b *Budget) admitGrowLocked(w *waiter) {
	b.extendLocked(w.origin, w.n, false /* head */)
	if b.parent == nil {
		w.at = nil
		close(w.ready)
		return
	}
	w.at = b.parent
	b.parent.growers.pushBack(w)
}

// promoteHeadLocked grants, past every cap, the parked Extend of b's head
// of line, if it has one: the oldest lease never waits (see Extend). The
// caller holds b's chain and runs notifyLocked afterwards.
func (b *Budget) promoteHeadLocked() {
	h := b.headLocked()
	if h == nil || h.grower == nil || h.grower.at == nil {
		return
	}
	w := h.grower
	w.at.growers.remove(w)
	for l := w.at; l != nil; l = l.parent {
		l.extendLocked(b, w.n, true /* head */)
	}
	w.at = nil
	close(w.ready)
}

// headLocked returns the oldest open lease made on b, or nil.
func (b *Budget) headLocked() *Lease {
	for b.headSeq < b.nextSeq && b.open[b.headSeq] == nil {
		b.headSeq++ // closed: each number is passed once
	}
	return b.open[b.headSeq]
}

// noteWaitLocked records a finished wait on the budget the request was made
// on. Only b.mu need be held.
func (b *Budget) noteWaitLocked(start time.Time, cancelled bool) {
	d := time.Since(start)
	b.totalWait += d
	b.maxWait = max(b.maxWait, d)
	if cancelled {
		b.cancels++
	}
}
