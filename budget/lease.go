package budget

import "strings"

// observeLocked folds one observed decoded/wire ratio into the multiplier.
func (b *Budget) observeLocked(ratio float64) {
	ratio = min(max(ratio, b.minMult), b.maxMult)
	if b.firstRatio && !b.observed {
		b.observed = true
		b.mult = ratio
		return
	}
	b.observed = true
	// The explicit conversion forbids a fused multiply-add, so the result is
	// bit-for-bit the same on every platform.
	m := b.mult + float64(b.alpha*(ratio-b.mult))
	b.mult = min(max(m, b.minMult), b.maxMult)
}

// newLeaseLocked returns a new lease of n bytes for wire bytes. A lease is
// never reused: a closed one stays dead.
func (b *Budget) newLeaseLocked(wire, n int64) *Lease {
	l := &Lease{b: b, wire: wire, size: n, held: n, seq: b.nextSeq, listed: true}
	if b.open == nil {
		b.open = map[uint64]*Lease{}
	}
	b.open[l.seq] = l
	b.nextSeq++
	return l
}

// Lease is the bytes one chunk holds in a Budget, from Reserve until Close.
// Its methods may be called from different goroutines: each takes the
// budget's lock, so a Commit happens before any Release or Close that
// follows it in time, with no further synchronization by the caller.
type Lease struct {
	b    *Budget
	wire int64

	// Guarded by b.mu.
	//
	// INVARIANT: 0 <= held <= size; held == 0 once closed.
	size      int64 // bytes charged in total: the reservation, then the committed size
	held      int64 // size minus the bytes given back so far
	committed bool
	closed    bool
	bufs      [][]byte // pooled buffers handed out by Buffer; back to the pool at Close
	atClose   []func() // AtClose's, run by Close before the bytes go back
	grower    *waiter  // the Extend parked now, if any
	seq       uint64   // the lease's number in b.open
	listed    bool     // in b.open: open, or closing
}

// checkSize panics if the lease is nil or n is not a size a lease can hold
// (negative, or absurdly large); op names the method.
func (l *Lease) checkSize(op string, n int64) {
	if l == nil {
		panic("budget: " + op + " on nil lease")
	}
	if n < 0 || n > maxBytes {
		panic("budget: " + strings.ToLower(op) + " size out of range")
	}
}

// Commit replaces the lease's estimate by the measured decoded size actual
// and feeds actual/wire into the budget's multiplier (skipped if wire was 0).
// A larger actual is charged at once, never blocking, even if that pushes the
// budget (or a parent) above its cap (counted in Stats.Overcommits); a smaller
// one is refunded and may admit waiters. Bytes already released stay released.
//
// Commit may be called at most once, and not after Close; it panics then, if
// actual is negative, or if actual is less than the bytes already released.
func (l *Lease) Commit(actual int64) {
	l.checkSize("Commit", actual)
	b := l.b
	b.lock()
	switch {
	case l.closed:
		b.unlock()
		panic("budget: Commit on closed lease")
	case l.committed:
		b.unlock()
		panic("budget: Commit called twice")
	case l.held+actual-l.size < 0:
		b.unlock()
		panic("budget: commit below bytes already released")
	}
	delta := actual - l.size
	l.committed = true
	l.size = actual
	l.held += delta
	for lv := b; lv != nil; lv = lv.parent {
		lv.committed += actual
		if delta > 0 {
			lv.growLocked(b, delta)
			continue
		}
		lv.addLocked(b, delta)
		lv.refunded -= delta
	}
	if l.wire > 0 {
		b.observeLocked(float64(actual) / float64(l.wire))
	}
	if delta < 0 {
		b.notifyLocked()
	}
	b.unlock()
}

// Release gives n of the lease's bytes back, as the consumer is done with
// them, and admits waiters that now fit. Releasing 0 is a no-op. It panics if
// n is negative, more than the lease holds, or the lease is closed.
func (l *Lease) Release(n int64) {
	if l == nil {
		panic("budget: Release on nil lease")
	}
	if n < 0 {
		panic("budget: negative release")
	}
	b := l.b
	b.lock()
	if l.closed {
		b.unlock()
		panic("budget: Release on closed lease")
	}
	if n > l.held {
		b.unlock()
		panic("budget: released more than held")
	}
	if n > 0 {
		l.held -= n
		b.releaseLocked(n)
	}
	b.unlock()
}

// Close gives back every byte the lease still holds and ends it, and its
// buffers (Buffer) to the pool for the next lease; later Release, Commit and
// Buffer calls panic. Close is idempotent and safe on a nil
// lease, so `defer lease.Close()` right after Reserve covers every error,
// cancel and early-exit path.
func (l *Lease) Close() {
	if l == nil {
		return
	}
	b := l.b
	b.lock()
	bufs, atClose := l.bufs, l.atClose
	l.bufs, l.atClose = nil, nil
	var n int64
	if !l.closed {
		l.closed = true
		n, l.held = l.held, 0
	}
	listed := l.listed
	l.listed = false
	b.unlock()
	for _, f := range atClose { // memory the reservation covers goes first too
		f()
	}
	// The buffers go back to the pool before the bytes go back to the
	// budget: a waiter the release admits may ask the pool at once, and
	// must find them, not fault in a fresh buffer beside them (a third
	// buffer beside the two a cap of two chunks holds, when the waiter runs
	// at once on a free P).
	for _, buf := range bufs {
		b.pool.put(buf)
	}
	if n > 0 || listed {
		// The lease leaves the line only now, with its bytes: a younger
		// lease promoted to the head grows past the cap, and must not find
		// these bytes still counted.
		b.lock()
		if listed {
			delete(b.open, l.seq)
		}
		if n > 0 {
			b.releaseLocked(n)
		}
		b.promoteHeadLocked()
		b.notifyLocked()
		b.unlock()
	}
}

// AtClose has f run when the lease closes, before its bytes go back to the
// budget: the release of memory the reservation covers that is not a pooled
// buffer (a file mapping the lease's chunk is read from). On a closed lease,
// f runs at once. Abandon runs it too. AtClose is safe on a nil lease (f
// runs at once).
func (l *Lease) AtClose(f func()) {
	if l == nil {
		f()
		return
	}
	l.b.mu.Lock()
	closed := l.closed
	if !closed {
		l.atClose = append(l.atClose, f)
	}
	l.b.mu.Unlock()
	if closed {
		f()
	}
}

// releaseLocked gives n > 0 bytes back to b and its parents and admits
// waiters.
func (b *Budget) releaseLocked(n int64) {
	for l := b; l != nil; l = l.parent {
		l.addLocked(b, -n)
		l.released += n
		l.releases++
	}
	b.notifyLocked()
}

// Held returns the bytes the lease still holds: its reservation or committed
// size minus what was released; 0 after Close (and 0 for a nil lease).
func (l *Lease) Held() int64 {
	if l == nil {
		return 0
	}
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	return l.held
}
