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
//
// It owns the memory books (admission, leases, the decoded/wire estimate and
// the buffer pool) and nothing else: it must not import the rest of the
// module (iosched, scanner, cabi) or anything DuckDB, only the standard
// library.
package budget

import (
	"context"
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

// TryReserve is Reserve that never waits: where Reserve would wait (a
// level full, or requests queued ahead of this one) it takes nothing,
// queues nothing, and returns false. A caller holding work that others
// wait for (requests it has not submitted yet) tries first, hands that work
// on when the try fails, and only then waits in Reserve.
func (b *Budget) TryReserve(wire int64) (*Lease, bool) {
	return b.tryReserve(wire, -1)
}

// TryReserveSize is ReserveSize that never waits (see TryReserve).
func (b *Budget) TryReserveSize(wire, size int64) (*Lease, bool) {
	if size < 0 || size > maxBytes {
		panic("budget: reserve size out of range")
	}
	return b.tryReserve(wire, size)
}

func (b *Budget) tryReserve(wire, size int64) (*Lease, bool) {
	checkWire(wire)
	b.lock()
	defer b.unlock()
	n := size
	if n < 0 {
		n = reservation(wire, b.mult)
	}
	if b.blockedLevelLocked(n) != nil {
		return nil, false
	}
	b.grantBelowLocked(nil, n)
	return b.newLeaseLocked(wire, n), true
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
