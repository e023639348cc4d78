package budget

import (
	"context"
	"time"
)

// growLocked charges b (the lease's budget or a parent of it) n more bytes
// of a lease of origin without blocking (Commit above the estimate, Grow),
// counting an overcommit when that leaves b above its cap.
func (b *Budget) growLocked(origin *Budget, n int64) {
	b.addLocked(origin, n)
	b.grown += n
	b.peak = max(b.peak, b.inUse)
	if b.inUse > b.capacity {
		b.overcommits++
	}
}

// extendLocked is growLocked for an Extend; head says the lease is the head
// of line.
func (b *Budget) extendLocked(origin *Budget, n int64, head bool) {
	b.growLocked(origin, n)
	if b.onExtend != nil {
		b.onExtend(b, n, head)
	}
}

// Grow charges n more bytes to the lease at once, without blocking, for
// bytes that exist already; memory about to be allocated takes Extend,
// which waits for room.
// Like a growing Commit it may leave the budget, or a parent, above its cap
// (counted in Stats.Overcommits); the Commit that follows replaces the
// whole charge by the measured size. It panics if n is negative or the lease
// is committed or closed.
func (l *Lease) Grow(n int64) {
	l.checkSize("Grow", n)
	b := l.b
	b.lock()
	if l.closed || l.committed {
		b.unlock()
		panic("budget: Grow after Commit or Close")
	}
	l.size += n
	l.held += n
	for lv := b; lv != nil; lv = lv.parent {
		lv.growLocked(b, n)
	}
	b.unlock()
}

// Extend charges n more bytes to the lease before the caller allocates them
// (a chunk's decode outgrowing its reservation), to b and all its parents.
// It blocks while they are full, ahead of every Reserve and behind earlier
// Extend calls, unless the lease is the oldest open lease of b (the head
// of line): that one is charged at once, past the caps if need be (counted
// in Stats.Overcommits), and a parked Extend is granted so as soon as its
// lease becomes the oldest. So the chunk the pipeline needs first always
// finishes and closes, and the budget cannot wedge: a younger lease waits
// for room, an older one never does.
//
// On failure, returns ctx.Err() and leaves the lease and the budget as they
// were. If ctx is already done, Extend fails even when the bytes are free.
// It panics if n is negative or absurdly large, or the lease is committed or
// closed. Close must not run while Extend waits.
func (l *Lease) Extend(ctx context.Context, n int64) error {
	l.checkSize("Extend", n)
	b := l.b
	done := ctx.Done()
	b.lock()
	if l.closed || l.committed {
		b.unlock()
		panic("budget: Extend after Commit or Close")
	}
	select {
	case <-done:
		b.cancels++
		b.unlock()
		return ctx.Err()
	default:
	}
	var stop *Budget
	if b.headLocked() != l {
		stop = b.blockedGrowLocked(n)
	}
	for lv := b; lv != stop; lv = lv.parent {
		lv.extendLocked(b, n, stop == nil && b.headLocked() == l)
	}
	if stop == nil {
		l.size += n
		l.held += n
		b.unlock()
		return nil
	}

	// Levels below stop have charged n; it waits in stop's growers and
	// moves up as each level grants it, like a Reserve.
	ready := make(chan struct{})
	w := &waiter{n: n, at: stop, origin: b, ready: ready}
	stop.growers.pushBack(w)
	l.grower = w
	b.growWaits++
	start := time.Now()
	b.unlock()

	select {
	case <-done:
		b.lock()
		l.grower = nil
		if w.at == nil {
			// Granted in the race with the cancel: give it back.
			b.giveBackLocked(nil, n)
		} else {
			w.at.growers.remove(w)
			b.giveBackLocked(w.at, n)
		}
		b.noteWaitLocked(start, true /* cancelled */)
		b.notifyLocked()
		b.unlock()
		return ctx.Err()
	case <-ready:
		b.mu.Lock()
		l.grower = nil
		l.size += n
		l.held += n
		b.noteWaitLocked(start, false /* cancelled */)
		b.mu.Unlock()
		return nil
	}
}

// TryExtend is Extend that never waits (see TryReserve): where Extend
// would wait it charges nothing and returns false.
func (l *Lease) TryExtend(n int64) bool {
	l.checkSize("Extend", n)
	b := l.b
	b.lock()
	defer b.unlock()
	if l.closed || l.committed {
		panic("budget: Extend after Commit or Close")
	}
	head := b.headLocked() == l
	if !head && b.blockedGrowLocked(n) != nil {
		return false
	}
	for lv := b; lv != nil; lv = lv.parent {
		lv.extendLocked(b, n, head)
	}
	l.size += n
	l.held += n
	return true
}

// blockedGrowLocked returns the first of b and its ancestors at which an
// Extend of n bytes must wait, or nil if every level has room now. Earlier
// Extends parked at a level go first.
func (b *Budget) blockedGrowLocked(n int64) *Budget {
	for l := b; l != nil; l = l.parent {
		if l.growers.len > 0 || n > l.capacity-l.inUse {
			return l
		}
	}
	return nil
}
