// The correction model: estimate now, correct later.
//
// A scan cannot know how many decoded bytes a chunk will occupy until it has
// fetched and decoded it, yet it must take the memory before the fetch, or the
// budget only meters what is already live. So every chunk goes through three
// steps:
//
//  1. Reserve(wire) before the fetch charges wire × multiplier bytes, where
//     multiplier is the decoded/wire ratio learned so far. It blocks, in FIFO
//     order, while the budget is full.
//  2. Extend(n), while the decode allocates more than the estimate, charges
//     the excess before it is allocated. It waits while the budget is full,
//     ahead of every Reserve, unless the lease is the oldest open one of its
//     budget (the head of line), which never waits: the chunk a consumer
//     needs first can always finish, so growth cannot wedge the pipeline.
//  3. Commit(actual) after the decode replaces the estimate by the measured
//     size: a shortfall is charged at once without blocking (the bytes already
//     exist; blocking could wedge the pipeline), a surplus is refunded and may
//     admit waiters. The ratio actual/wire is clamped into [min, max] and
//     smoothed into the multiplier with an exponential moving average:
//     multiplier += alpha × (ratio − multiplier).
//  4. Release(n), as DuckDB consumes each vector, gives the bytes back piece
//     by piece; Close gives back whatever is left and is what every error,
//     cancel and early-exit path calls.
//
// In use can exceed the cap in four ways only: a Commit or Grow that grows,
// an Extend of the head-of-line lease (both counted in Stats.Overcommits),
// SetCap shrinking below what is held, and an oversize admit: a request larger than the whole cap is admitted when it is at the
// head of the queue and nothing else is held (counted in
// Stats.OversizeAdmits), so the budget never wedges. With a parent, every
// rule holds at each level separately.

// Package budget provides a FIFO byte semaphore that bounds the decoded bytes
// a scan holds, from before each fetch until the consumer has used them.
package budget

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// Defaults of the decoded/wire ratio estimate; see WithMultiplier,
// WithAlpha and WithMultiplierBounds.
const (
	// DefaultMultiplier is the decoded/wire ratio assumed before any Commit.
	DefaultMultiplier = 1.5
	// DefaultAlpha is the EMA smoothing constant: the weight of the newest
	// observed ratio.
	DefaultAlpha = 0.2
	// DefaultMinMultiplier and DefaultMaxMultiplier clamp observed ratios and
	// the multiplier.
	DefaultMinMultiplier = 1.0
	DefaultMaxMultiplier = 3.0
)

// maxBytes bounds every size passed in, so that sums of a few of them cannot
// overflow int64. It is 64 PiB; anything near it is a bug in the caller.
const maxBytes = 1 << 56

// Option configures a Budget in New (functional options; the defaults are the
// Default constants and no parent).
type Option func(*options)

type options struct {
	parent           *Budget
	idlePass         bool
	multiplier       float64
	alpha            float64
	minMult, maxMult float64
	firstRatio       bool
	onGrant          func(l *Budget, n int64, oversize bool)
	onExtend         func(l *Budget, n int64, head bool)
}

// withGrantHook lets a test see every grant at this level right after it
// is made, with the level's lock held.
func withGrantHook(f func(l *Budget, n int64, oversize bool)) Option {
	return func(o *options) { o.onGrant = f }
}

// withExtendHook lets a test see every level's charge of an Extend right
// after it is made (head: the lease is the head of line), with the level's
// lock held.
func withExtendHook(f func(l *Budget, n int64, head bool)) Option {
	return func(o *options) { o.onExtend = f }
}

// WithParent makes the budget draw every byte from parent as well: a request
// is granted only when both the budget and parent (and parent's own parents)
// can grant it, in FIFO order at each level. Use it to let concurrent queries
// share one process-wide ceiling (and see WithIdlePass). A nil parent means
// none.
func WithParent(parent *Budget) Option {
	return func(o *options) { o.parent = parent }
}

// WithIdlePass makes the budget, as a parent, let a budget below it that
// holds nothing here pass its queue and its cap (counted in
// Stats.Bypasses). Without it, parents can deadlock consumers that depend on
// each other: a query whose join reads two scans consumes the build side's
// first, while the probe side's ready chunks may hold the whole parent. With
// it, each budget below always has one request going, and the parent
// exceeds its cap by at most one request per budget below it.
func WithIdlePass() Option {
	return func(o *options) { o.idlePass = true }
}

// WithMultiplier sets the decoded/wire ratio assumed before the first Commit
// (default DefaultMultiplier). It is clamped into the multiplier bounds.
// It panics if m is not a positive finite number.
func WithMultiplier(m float64) Option {
	if !(m > 0) || math.IsInf(m, 0) {
		panic("budget: multiplier must be positive and finite")
	}
	return func(o *options) { o.multiplier = m }
}

// WithAlpha sets the EMA smoothing constant (default DefaultAlpha); 0 freezes
// the multiplier, 1 uses only the latest ratio. It panics if alpha is outside
// [0, 1].
func WithAlpha(alpha float64) Option {
	if !(alpha >= 0 && alpha <= 1) {
		panic("budget: alpha must be in [0, 1]")
	}
	return func(o *options) { o.alpha = alpha }
}

// WithFirstRatio makes the first observed decoded/wire ratio replace the
// multiplier instead of being smoothed into it: the one WithMultiplier set
// is then a placeholder until a chunk was measured, not a prior worth
// averaging with (a ratio of 10 would otherwise take a dozen chunks to
// learn, each reserved far too small).
func WithFirstRatio() Option {
	return func(o *options) { o.firstRatio = true }
}

// WithMultiplierBounds sets the clamp of observed ratios and of the multiplier
// (default [DefaultMinMultiplier, DefaultMaxMultiplier]). It panics unless
// 0 < lo <= hi and both are finite.
func WithMultiplierBounds(lo, hi float64) Option {
	if !(lo > 0 && lo <= hi) || math.IsInf(hi, 0) {
		panic("budget: multiplier bounds must satisfy 0 < lo <= hi")
	}
	return func(o *options) { o.minMult, o.maxMult = lo, hi }
}

// Budget is a byte semaphore with FIFO admission, leases that are corrected
// after the fact, a learned decoded/wire ratio and telemetry. All methods are
// safe for concurrent use. Create it with New; the zero Budget is not usable.
type Budget struct {
	parent           *Budget                                 // immutable
	idlePass         bool                                    // immutable; see WithIdlePass
	alpha            float64                                 // immutable
	minMult, maxMult float64                                 // immutable
	firstRatio       bool                                    // immutable; see WithFirstRatio
	onGrant          func(l *Budget, n int64, oversize bool) // immutable; tests only (withGrantHook)
	onExtend         func(l *Budget, n int64, head bool)     // immutable; tests only (withExtendHook)

	mu sync.Mutex

	// Guarded by mu. For a parent, these count the requests of all its
	// children too.
	//
	// INVARIANT: inUse == reserved + grown - refunded - released.
	// INVARIANT: after every operation, the head of queue (if any) cannot be
	// admitted: a waiter never stays parked while it could be granted.
	// INVARIANT: a grant leaves inUse <= capacity, except an oversize grant,
	// which finds inUse == 0, and a bypass (see WithIdlePass).
	// Only Commit growth, Grow, the head of line's Extend and SetCap
	// shrinking can otherwise leave inUse above capacity.
	// INVARIANT: while growers is not empty, no Reserve is granted at this
	// level (except a bypass): growth of a lease already held goes first.
	capacity int64
	inUse    int64
	peak     int64
	queue    waitQueue
	growers  waitQueue // Extend calls parked here, in arrival order

	// Guarded by mu; the open leases made on this budget by number, in the
	// order they were made. The oldest is the head of line, whose Extend
	// never waits. INVARIANT: every number below headSeq is closed.
	open             map[uint64]*Lease
	headSeq, nextSeq uint64

	// Totals; see Stats.
	reserved, committed, grown, refunded, released int64
	releases, oversizeAdmits, overcommits          int64

	// Guarded by mu; these belong to the budget a request was made on and
	// are not propagated to parents.
	mult               float64
	observed           bool // a ratio was folded into mult
	waits, cancels     int64
	growWaits          int64
	totalWait, maxWait time.Duration

	// Guarded by mu; only a parent uses them. byOrigin is the bytes each
	// budget below holds at this level (keyed by the budget the requests
	// were made on), for the rule that lets one that holds nothing pass
	// (see blockedLevelLocked).
	byOrigin map[*Budget]int64
	bypasses int64

	pool pool // buffers of this budget's leases; see pool.go
}

// New returns a budget that admits up to capacity bytes at once. It panics
// if capacity is negative. A zero capacity is valid: every request is then
// oversize and is admitted alone.
func New(capacity int64, opts ...Option) *Budget {
	if capacity < 0 {
		panic("budget: negative capacity")
	}
	o := options{
		multiplier: DefaultMultiplier,
		alpha:      DefaultAlpha,
		minMult:    DefaultMinMultiplier,
		maxMult:    DefaultMaxMultiplier,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return &Budget{
		parent:     o.parent,
		idlePass:   o.idlePass,
		alpha:      o.alpha,
		minMult:    o.minMult,
		maxMult:    o.maxMult,
		firstRatio: o.firstRatio,
		onGrant:    o.onGrant,
		onExtend:   o.onExtend,
		capacity:   capacity,
		mult:       min(max(o.multiplier, o.minMult), o.maxMult),
		pool:       pool{limit: capacity},
	}
}

// lock locks b and then each of its ancestors. Locks are always taken from
// the leaf towards the root and a parent never locks a child, so budgets
// sharing a parent cannot deadlock each other.
func (b *Budget) lock() {
	b.mu.Lock()
	if b.parent != nil {
		b.parent.lockChain()
	}
}

func (b *Budget) unlock() {
	b.mu.Unlock()
	if b.parent != nil {
		b.parent.unlockChain()
	}
}

// lockChain and unlockChain are the loops of lock and unlock, kept apart so
// that the common case, a budget without parent, inlines.
func (b *Budget) lockChain() {
	for l := b; l != nil; l = l.parent {
		l.mu.Lock()
	}
}

func (b *Budget) unlockChain() {
	for l := b; l != nil; l = l.parent {
		l.mu.Unlock()
	}
}

// Reserve blocks until it can charge wire × multiplier bytes (rounded up) to
// b and all its parents, and returns the lease that holds them. Requests are
// granted in arrival order: a request never jumps one that waits, even if it
// would fit, so a large request is not starved by a stream of small ones.
// A request larger than the cap is granted once it is first in line and
// nothing else is held (an oversize admit).
//
// On success the caller owns the lease and must Close it. On failure, returns
// ctx.Err() and leaves the budget unchanged: nothing held, nothing queued.
// (Counters record the attempt: Cancels and the wait times, and, with a
// parent, the totals and Peak of the levels the request had already passed.)
// If ctx is already done, Reserve fails even when the bytes are free. It panics if wire is negative or absurdly large (above 64 PiB).
func (b *Budget) Reserve(ctx context.Context, wire int64) (*Lease, error) {
	return b.reserve(ctx, wire, -1)
}

// ReserveSize is Reserve of a chunk whose decoded size is known in advance
// (a catalog that records it, or the chunk's own metadata): it charges
// size bytes instead of wire × multiplier. Commit still feeds the measured
// actual/wire into the multiplier. It panics if size is negative or
// absurdly large.
func (b *Budget) ReserveSize(ctx context.Context, wire, size int64) (*Lease, error) {
	if size < 0 || size > maxBytes {
		panic("budget: reserve size out of range")
	}
	return b.reserve(ctx, wire, size)
}

// reserve is Reserve of size bytes, or of the estimate for wire bytes if
// size is negative.
func (b *Budget) reserve(ctx context.Context, wire, size int64) (*Lease, error) {
	checkWire(wire)
	done := ctx.Done()

	b.lock()
	select {
	case <-done:
		// ctx being done happened before the call took the lock; prefer to
		// fail, as x/sync/semaphore does.
		b.cancels++
		b.unlock()
		return nil, ctx.Err()
	default:
	}
	n := size
	if n < 0 {
		n = reservation(wire, b.mult)
	}
	stop := b.blockedLevelLocked(n)
	b.grantBelowLocked(stop, n)
	if stop == nil {
		l := b.newLeaseLocked(wire, n)
		b.unlock()
		return l, nil
	}

	// Levels below stop have already granted n (the request passed them);
	// it now waits in stop's queue and moves up as each level grants it.
	ready := make(chan struct{})
	w := &waiter{n: n, at: stop, origin: b, ready: ready}
	stop.queue.pushBack(w)
	b.waits++
	start := time.Now()
	b.unlock()

	select {
	case <-done:
		b.lock()
		if w.at == nil {
			// The grant raced with the cancel and won: give the bytes back
			// and let the next waiters in (TestReserveCancelGrantRace).
			b.giveBackLocked(nil, n)
		} else {
			// Still queued at w.at: leave the queue and give back what the
			// levels below it granted. If w was the head, the requests behind
			// it may now fit; notify wakes them.
			w.at.queue.remove(w)
			b.giveBackLocked(w.at, n)
		}
		b.noteWaitLocked(start, true /* cancelled */)
		b.notifyLocked()
		b.unlock()
		return nil, ctx.Err()

	case <-ready:
		select {
		case <-done:
			// Granted, but ctx is done too; fail, as the cancel may have
			// happened first.
			b.lock()
			b.giveBackLocked(nil, n)
			b.noteWaitLocked(start, true /* cancelled */)
			b.notifyLocked()
			b.unlock()
			return nil, ctx.Err()
		default:
		}
		b.mu.Lock()
		b.noteWaitLocked(start, false /* cancelled */)
		l := b.newLeaseLocked(wire, n)
		b.mu.Unlock()
		return l, nil
	}
}

// SetCap changes the capacity of b. Growing it admits waiters that now fit;
// shrinking it never revokes granted bytes, so in use may stay above the new
// cap until leases give bytes back. It panics if capacity is negative.
func (b *Budget) SetCap(capacity int64) {
	if capacity < 0 {
		panic("budget: negative capacity")
	}
	b.lock()
	b.capacity = capacity
	b.notifyLocked()
	b.unlock()
	b.pool.setLimit(capacity)
}

func checkWire(wire int64) {
	if wire < 0 {
		panic("budget: negative wire size")
	}
	if wire > maxBytes {
		panic("budget: wire size out of range")
	}
}

// reservation is the estimate for wire bytes: ⌈wire × m⌉, at most maxBytes.
func reservation(wire int64, m float64) int64 {
	r := math.Ceil(float64(wire) * m)
	if r >= maxBytes {
		return maxBytes
	}
	return int64(r)
}

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

// Commit replaces the lease's estimate by the measured decoded size actual
// and feeds actual/wire into the budget's multiplier (skipped if wire was 0).
// A larger actual is charged at once, never blocking, even if that pushes the
// budget (or a parent) above its cap (counted in Stats.Overcommits); a smaller
// one is refunded and may admit waiters. Bytes already released stay released.
//
// Commit may be called at most once, and not after Close; it panics then, if
// actual is negative, or if actual is less than the bytes already released.
func (l *Lease) Commit(actual int64) {
	if l == nil {
		panic("budget: Commit on nil lease")
	}
	if actual < 0 || actual > maxBytes {
		panic("budget: commit size out of range")
	}
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
	if l == nil {
		panic("budget: Grow on nil lease")
	}
	if n < 0 || n > maxBytes {
		panic("budget: grow size out of range")
	}
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
	if l == nil {
		panic("budget: Extend on nil lease")
	}
	if n < 0 || n > maxBytes {
		panic("budget: extend size out of range")
	}
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
	// must find them, not fault in a fresh buffer beside them (31 MB chunks
	// under a 64 MiB cap: a third buffer, +30 MiB of peak RSS, in 1 of 5
	// scans once GOMAXPROCS left a P free for the waiter to run at once).
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

// Stats is a snapshot of a budget's state and counters. Byte totals of a
// parent include the requests of its children; Waits, Cancels, TotalWait,
// MaxWait and Multiplier belong to the budget the requests were made on.
//
// INVARIANT: InUse == Reserved + Grown - Refunded - Released.
type Stats struct {
	Cap   int64 // capacity in bytes
	InUse int64 // bytes held now, including requests that passed this level and wait at a parent
	Peak  int64 // highest InUse seen

	Reserved  int64 // bytes granted by Reserve and TryReserve (estimates)
	Committed int64 // sum of the actual sizes passed to Commit
	Grown     int64 // bytes added by commits larger than their estimate
	Refunded  int64 // bytes returned by commits smaller than their estimate
	Released  int64 // bytes given back by Release, Close and cancelled requests

	Releases int64 // Release and Close calls that gave bytes back
	Queued   int   // requests parked in this budget's queue now
	Growing  int   // Extend calls parked at this budget now

	Waits     int64         // Reserve calls that had to wait
	GrowWaits int64         // Extend calls that had to wait
	Cancels   int64         // Reserve and Extend calls that returned ctx.Err()
	TotalWait time.Duration // time spent waiting, summed over Reserve and Extend calls
	MaxWait   time.Duration // longest single wait

	OversizeAdmits int64 // requests larger than Cap admitted alone
	Overcommits    int64 // Commit, Grow and head-of-line Extend calls that left InUse above Cap

	Multiplier float64 // current decoded/wire ratio estimate

	// Bypasses counts requests of a budget below that held nothing here,
	// granted past the queue and the cap so that none waits on the others
	// forever (see WithIdlePass).
	Bypasses int64
}

// Stats returns a consistent snapshot of b's counters.
func (b *Budget) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{
		Cap:            b.capacity,
		InUse:          b.inUse,
		Peak:           b.peak,
		Reserved:       b.reserved,
		Committed:      b.committed,
		Grown:          b.grown,
		Refunded:       b.refunded,
		Released:       b.released,
		Releases:       b.releases,
		Queued:         b.queue.len,
		Growing:        b.growers.len,
		GrowWaits:      b.growWaits,
		Waits:          b.waits,
		Cancels:        b.cancels,
		TotalWait:      b.totalWait,
		MaxWait:        b.maxWait,
		OversizeAdmits: b.oversizeAdmits,
		Overcommits:    b.overcommits,
		Multiplier:     b.mult,
		Bypasses:       b.bypasses,
	}
}

// String returns a one-line summary of b's Stats.
func (b *Budget) String() string { return b.Stats().String() }

// String returns a one-line summary such as
//
//	budget cap=64.0MiB in_use=0B peak=63.1MiB (98.6%) waits=120 wait=1.2s max_wait=40ms oversize=0 overcommit=0 ratio=1.42 reserved=1.2GiB committed=1.1GiB released=1.1GiB
func (s Stats) String() string {
	pct := ""
	if s.Cap > 0 {
		pct = fmt.Sprintf(" (%.1f%%)", 100*float64(s.Peak)/float64(s.Cap))
	}
	return fmt.Sprintf("budget cap=%s in_use=%s peak=%s%s waits=%d wait=%s max_wait=%s oversize=%d overcommit=%d ratio=%.2f reserved=%s committed=%s released=%s",
		formatBytes(s.Cap), formatBytes(s.InUse), formatBytes(s.Peak), pct,
		s.Waits, s.TotalWait.Round(time.Millisecond), s.MaxWait.Round(time.Millisecond),
		s.OversizeAdmits, s.Overcommits, s.Multiplier,
		formatBytes(s.Reserved), formatBytes(s.Committed), formatBytes(s.Released))
}

// formatBytes renders n in binary units with one decimal: 512B, 1.5KiB, 64.0MiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%dB", n)
	}
	v, i := float64(n)/unit, 0
	for ; (v >= unit || v <= -unit) && i < 5; i++ {
		v /= unit
	}
	return fmt.Sprintf("%.1f%ciB", v, "KMGTPE"[i])
}

// waiter is a Reserve call parked in a queue, or an Extend call parked in
// a level's growers.
type waiter struct {
	n int64
	// at is the budget whose queue holds the waiter; nil once the root
	// granted it. It changes only with the locks of both the old and the new
	// level held, and the waiting goroutine reads it with its whole chain
	// locked.
	at         *Budget
	origin     *Budget       // the budget the request was made on
	ready      chan struct{} // closed when the last level grants the request
	prev, next *waiter
}

// waitQueue is an intrusive FIFO list of waiters.
type waitQueue struct {
	head, tail *waiter
	len        int
}

func (q *waitQueue) pushBack(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	q.len++
}

func (q *waitQueue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	q.len--
}
