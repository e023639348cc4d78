package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every wait for another goroutine in these tests.
const waitTimeout = 10 * time.Second

// newUnit returns a budget whose multiplier is pinned to 1, so a reservation
// of wire bytes charges exactly wire bytes.
func newUnit(capacity int64, opts ...Option) *Budget {
	return New(capacity, append([]Option{WithMultiplier(1), WithAlpha(0)}, opts...)...)
}

// pending is a Reserve call running on its own goroutine.
type pending struct {
	cancel context.CancelFunc
	done   chan struct{}
	lease  *Lease
	err    error
}

func startReserve(b *Budget, wire int64) *pending {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pending{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.lease, p.err = b.Reserve(ctx, wire)
	}()
	return p
}

// wait returns the result of the Reserve call, failing the test if it does
// not return in time.
func (p *pending) wait(t *testing.T) (*Lease, error) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		t.Fatal("Reserve did not return")
	}
	p.cancel()
	return p.lease, p.err
}

func (p *pending) returned() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// mustGrant waits for p and fails unless it was granted.
func (p *pending) mustGrant(t *testing.T) *Lease {
	t.Helper()
	l, err := p.wait(t)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	return l
}

// waitQueued waits until n requests are parked in b's queue.
func waitQueued(t *testing.T, b *Budget, n int) {
	t.Helper()
	waitStat(t, b, "queued", func(s Stats) int { return s.Queued }, n)
}

// waitStat waits until stat of b's Stats is n.
func waitStat(t *testing.T, b *Budget, name string, stat func(Stats) int, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for stat(b.Stats()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d, want %d", name, stat(b.Stats()), n)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func mustTry(t *testing.T, b *Budget, wire int64) *Lease {
	t.Helper()
	l, ok := b.TryReserve(wire)
	if !ok {
		t.Fatalf("TryReserve(%d) failed: %v", wire, b)
	}
	return l
}

func checkInUse(t *testing.T, b *Budget, want int64) {
	t.Helper()
	s := b.Stats()
	if s.InUse != want {
		t.Fatalf("in use = %d, want %d (%v)", s.InUse, want, s)
	}
	checkBooks(t, s)
}

// checkBooks checks the accounting identity every Stats satisfies.
func checkBooks(t testing.TB, s Stats) {
	t.Helper()
	if got := s.Reserved + s.Grown - s.Refunded - s.Released; got != s.InUse || s.InUse < 0 {
		t.Errorf("books: reserved+grown-refunded-released = %d, in use = %d (%+v)", got, s.InUse, s)
	}
}

func TestReserveFIFO(t *testing.T) {
	t.Run("big request is not starved by small ones", func(t *testing.T) {
		b := newUnit(10)
		first := mustTry(t, b, 5)
		big := startReserve(b, 10)
		waitQueued(t, b, 1)
		// 5 bytes are free, yet no small request may pass the waiting big one.
		var smalls []*pending
		for i := range 3 {
			if _, ok := b.TryReserve(1); ok {
				t.Fatal("TryReserve jumped the queue")
			}
			smalls = append(smalls, startReserve(b, 1))
			waitQueued(t, b, 2+i)
		}
		checkInUse(t, b, 5)
		first.Close()
		bigLease := big.mustGrant(t)
		checkInUse(t, b, 10)
		waitQueued(t, b, 3)
		bigLease.Close()
		for _, p := range smalls {
			p.mustGrant(t).Close()
		}
		checkInUse(t, b, 0)
	})
	t.Run("small requests are granted in arrival order", func(t *testing.T) {
		b := newUnit(3)
		hold := mustTry(t, b, 3)
		var ps []*pending
		for i := range 3 {
			ps = append(ps, startReserve(b, int64(1+i))) // 1, 2, 3 bytes
			waitQueued(t, b, i+1)
		}
		hold.Release(1) // 1 free: the 1-byte head goes, the 2-byte one waits
		l1 := ps[0].mustGrant(t)
		waitQueued(t, b, 2)
		hold.Close() // 3 free: 1 held by l1, so the 2-byte one goes; 3-byte waits
		l2 := ps[1].mustGrant(t)
		waitQueued(t, b, 1)
		if ps[2].returned() {
			t.Fatal("3-byte request granted while 3 of 3 bytes are held")
		}
		l1.Close()
		l2.Close()
		ps[2].mustGrant(t).Close()
		checkInUse(t, b, 0)
	})
}

func TestTryReserve(t *testing.T) {
	tests := []struct {
		name   string
		cap    int64
		held   int64
		queued bool
		wire   int64
		want   bool
	}{
		{"fits", 10, 4, false, 6, true},
		{"does not fit", 10, 5, false, 6, false},
		{"zero bytes", 10, 10, false, 0, true},
		{"fits but someone waits", 10, 1, true, 1, false},
		{"oversize, nothing held", 10, 0, false, 11, true},
		{"oversize, something held", 10, 1, false, 11, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newUnit(tt.cap)
			hold := mustTry(t, b, tt.held)
			var waiter *pending
			if tt.queued {
				waiter = startReserve(b, tt.cap)
				waitQueued(t, b, 1)
			}
			before := b.Stats()
			l, ok := b.TryReserve(tt.wire)
			if ok != tt.want {
				t.Fatalf("TryReserve(%d) = %v, want %v", tt.wire, ok, tt.want)
			}
			if !ok && b.Stats() != before {
				t.Fatalf("failed TryReserve changed the budget: %+v -> %+v", before, b.Stats())
			}
			l.Close()
			hold.Close()
			if waiter != nil {
				waiter.mustGrant(t).Close()
			}
			checkInUse(t, b, 0)
		})
	}
}

// TestTryReserveSize: TryReserveSize charges the size given, not the
// wire bytes' estimate, when it fits, and nothing when it does not.
func TestTryReserveSize(t *testing.T) {
	b := newUnit(10)
	hold := mustTry(t, b, 4)
	if _, ok := b.TryReserveSize(1, 7); ok {
		t.Fatal("TryReserveSize(1, 7) with 6 free succeeded")
	}
	l, ok := b.TryReserveSize(1, 6)
	if !ok || l.Held() != 6 {
		t.Fatalf("TryReserveSize(1, 6) with 6 free: %v, held %d", ok, l.Held())
	}
	l.Close()
	hold.Close()
	checkInUse(t, b, 0)
}

func TestReserveCancel(t *testing.T) {
	t.Run("leaves the budget unchanged", func(t *testing.T) {
		b := newUnit(10)
		hold := mustTry(t, b, 8)
		p := startReserve(b, 5)
		waitQueued(t, b, 1)
		before := b.Stats()
		p.cancel()
		if _, err := p.wait(t); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		after := b.Stats()
		if after.Cancels != 1 || after.Queued != 0 {
			t.Fatalf("cancels = %d, queued = %d; want 1, 0", after.Cancels, after.Queued)
		}
		after.Cancels, after.Queued, after.TotalWait, after.MaxWait = before.Cancels, before.Queued, before.TotalWait, before.MaxWait
		if after != before {
			t.Fatalf("cancel changed the budget:\n%+v\n%+v", before, after)
		}
		hold.Close()
		checkInUse(t, b, 0)
	})
	t.Run("done context fails even with bytes free", func(t *testing.T) {
		b := newUnit(10)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if l, err := b.Reserve(ctx, 1); err != context.Canceled || l != nil {
			t.Fatalf("Reserve = %v, %v; want nil, context.Canceled", l, err)
		}
		checkInUse(t, b, 0)
	})
	t.Run("cancelled head lets the next waiters in", func(t *testing.T) {
		b := newUnit(10)
		hold := mustTry(t, b, 5)
		big := startReserve(b, 10)
		waitQueued(t, b, 1)
		small := startReserve(b, 5)
		waitQueued(t, b, 2)
		big.cancel()
		if _, err := big.wait(t); err == nil {
			t.Fatal("cancelled Reserve succeeded")
		}
		small.mustGrant(t).Close()
		hold.Close()
		checkInUse(t, b, 0)
	})
	t.Run("deadline", func(t *testing.T) {
		b := newUnit(1)
		hold := mustTry(t, b, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if _, err := b.Reserve(ctx, 1); err != context.DeadlineExceeded {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		hold.Close()
		if s := b.Stats(); s.Waits != 1 || s.Cancels != 1 || s.MaxWait <= 0 || s.TotalWait < s.MaxWait {
			t.Fatalf("wait stats: %+v", s)
		}
	})
}

// TestReserveCancelGrantRace makes the grant and the cancel happen at once:
// the waiter is granted while its context is already done. Reserve must fail
// and give the bytes back so that the next waiter gets them.
func TestReserveCancelGrantRace(t *testing.T) {
	for range 50 {
		b := newUnit(10)
		hold := mustTry(t, b, 10)
		racer := startReserve(b, 10)
		waitQueued(t, b, 1)
		next := startReserve(b, 10)
		waitQueued(t, b, 2)

		// Cancel and grant inside one critical section: whichever the racer
		// sees first, ctx was done before the grant.
		b.mu.Lock()
		racer.cancel()
		hold.held = 0
		b.releaseLocked(10)
		hold.closed = true
		b.mu.Unlock()

		if _, err := racer.wait(t); err != context.Canceled {
			t.Fatalf("racer err = %v, want context.Canceled", err)
		}
		next.mustGrant(t).Close()
		checkInUse(t, b, 0)
		if s := b.Stats(); s.Queued != 0 || s.Cancels != 1 {
			t.Fatalf("stats after race: %+v", s)
		}
	}
}

// TestReserveCancelRaceLoose races a real Close against a cancel from two
// goroutines; either outcome is fine, but the books must balance.
func TestReserveCancelRaceLoose(t *testing.T) {
	for range 200 {
		b := newUnit(4)
		hold := mustTry(t, b, 4)
		p := startReserve(b, 3)
		waitQueued(t, b, 1)
		var wg sync.WaitGroup
		wg.Go(hold.Close)
		wg.Go(p.cancel)
		wg.Wait()
		l, err := p.wait(t)
		if (l == nil) == (err == nil) {
			t.Fatalf("Reserve = %v, %v", l, err)
		}
		l.Close()
		checkInUse(t, b, 0)
	}
}

func TestCommit(t *testing.T) {
	tests := []struct {
		name          string
		cap           int64
		wire          int64
		mult          float64
		released      int64 // released before Commit
		actual        int64
		wantHeld      int64
		wantInUse     int64
		wantOver      int64
		wantNextGrant bool // a queued 3-byte request is granted by the commit
	}{
		{"exact", 100, 10, 1.5, 0, 15, 15, 15, 0, false},
		{"grow", 100, 10, 1.5, 0, 30, 30, 30, 0, false},
		{"grow past cap never blocks", 16, 10, 1.5, 0, 30, 30, 30, 1, false},
		{"refund admits the waiter", 17, 10, 1.5, 0, 10, 10, 13, 0, true},
		{"refund to zero", 16, 10, 1.5, 0, 0, 0, 3, 0, true},
		{"after partial release", 100, 10, 1.5, 5, 12, 7, 7, 0, false},
		{"estimate rounds up", 100, 3, 1.5, 0, 5, 5, 5, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.cap, WithMultiplier(tt.mult))
			l := mustTry(t, b, tt.wire)
			l.Release(tt.released)
			filler := mustTry(t, b, 0)
			var next *pending
			if free := tt.cap - b.Stats().InUse; free < 3 {
				next = startReserve(b, 2) // 2 × 1.5 = 3 bytes
				waitQueued(t, b, 1)
			}
			l.Commit(tt.actual)
			if got := l.Held(); got != tt.wantHeld {
				t.Errorf("held = %d, want %d", got, tt.wantHeld)
			}
			s := b.Stats()
			if s.InUse != tt.wantInUse {
				t.Errorf("in use = %d, want %d", s.InUse, tt.wantInUse)
			}
			if s.Overcommits != tt.wantOver {
				t.Errorf("overcommits = %d, want %d", s.Overcommits, tt.wantOver)
			}
			if s.Committed != tt.actual {
				t.Errorf("committed = %d, want %d", s.Committed, tt.actual)
			}
			checkBooks(t, s)
			if next != nil {
				if got := next.returned(); tt.wantNextGrant {
					next.mustGrant(t).Close()
				} else if got {
					t.Error("commit growth admitted a waiter")
				}
			}
			l.Close()
			filler.Close()
			if next != nil {
				next.mustGrant(t).Close()
			}
			checkInUse(t, b, 0)
		})
	}
}

func TestMultiplierEMA(t *testing.T) {
	type obs struct{ wire, actual int64 }
	tests := []struct {
		name string
		opts []Option
		obs  []obs
		want float64
	}{
		{"initial", nil, nil, DefaultMultiplier},
		{"one observation", nil, []obs{{100, 200}}, 1.5 + DefaultAlpha*(2-1.5)},
		{"two observations", nil, []obs{{100, 200}, {100, 100}}, 1.6 + 0.2*(1-1.6)},
		{"ratio clamped to max", nil, []obs{{1, 1000}}, 1.5 + 0.2*(3-1.5)},
		{"ratio clamped to min", nil, []obs{{1000, 1}}, 1.5 + 0.2*(1-1.5)},
		{"wire 0 is not observed", nil, []obs{{0, 1000}}, 1.5},
		{"converges", nil, repeatObs(obs{10, 25}, 200), 2.5},
		{"stays inside bounds", nil, repeatObs(obs{1, 1 << 20}, 200), DefaultMaxMultiplier},
		{"alpha 1 follows the last ratio", []Option{WithAlpha(1)}, []obs{{10, 12}}, 1.2},
		{"alpha 0 freezes", []Option{WithAlpha(0)}, []obs{{10, 30}}, 1.5},
		{"start clamped", []Option{WithMultiplier(9)}, nil, DefaultMaxMultiplier},
		{"custom bounds", []Option{WithMultiplierBounds(2, 4), WithAlpha(1)}, []obs{{10, 50}}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(1<<40, tt.opts...)
			for _, o := range tt.obs {
				l := mustTry(t, b, o.wire)
				l.Commit(o.actual)
				l.Close()
			}
			if got := b.Stats().Multiplier; math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("multiplier = %v, want %v", got, tt.want)
			}
		})
	}
}

func repeatObs[T any](o T, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = o
	}
	return s
}

func TestReserveUsesMultiplier(t *testing.T) {
	b := New(1000, WithAlpha(1))
	l := mustTry(t, b, 10)
	if l.Held() != 15 {
		t.Fatalf("reservation = %d, want 15 (10 × 1.5)", l.Held())
	}
	l.Commit(22) // ratio 2.2
	l.Close()
	l = mustTry(t, b, 10)
	if l.Held() != 22 {
		t.Fatalf("reservation = %d, want 22 (10 × 2.2)", l.Held())
	}
	l.Close()
}

func TestSize(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name     string
		total    int64
		fraction float64
		min, max int64
		want     int64
	}{
		{"defaults, small query gets min", 10 * mib, 0, 0, 0, DefaultMin},
		{"defaults, mid query", 1000 * mib, 0, 0, 0, 250 * mib},
		{"defaults, huge query gets max", 1 << 40, 0, 0, 0, DefaultMax},
		{"zero total gets min", 0, 0, 0, 0, DefaultMin},
		{"unknown total gets max", -1, 0, 0, 0, DefaultMax},
		{"custom fraction", 1000 * mib, 0.5, 0, 0, 500 * mib},
		{"negative fraction is default", 1000 * mib, -1, 0, 0, 250 * mib},
		{"NaN fraction is default", 1000 * mib, math.NaN(), 0, 0, 250 * mib},
		{"Inf fraction is default", 1000 * mib, math.Inf(1), 0, 0, 250 * mib},
		{"custom bounds", 1000 * mib, 0.25, 300 * mib, 400 * mib, 300 * mib},
		{"negative bounds are default", 1000 * mib, 0.25, -1, -1, 250 * mib},
		{"min above max: max wins", 1000 * mib, 0.25, 2 << 30, 100 * mib, 100 * mib},
		{"rounds down", 10, 0.25, 1, 100, 2},
		{"no overflow", math.MaxInt64, 100, 0, 0, DefaultMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Size(tt.total, tt.fraction, tt.min, tt.max); got != tt.want {
				t.Fatalf("Size(%d, %v, %d, %d) = %d, want %d", tt.total, tt.fraction, tt.min, tt.max, got, tt.want)
			}
		})
	}
}

func TestOversize(t *testing.T) {
	t.Run("admitted at once when nothing is held", func(t *testing.T) {
		b := newUnit(10)
		l := mustTry(t, b, 25)
		s := b.Stats()
		if s.OversizeAdmits != 1 || s.InUse != 25 || s.Peak != 25 {
			t.Fatalf("stats: %+v", s)
		}
		// Nothing else fits beside it, however small.
		if _, ok := b.TryReserve(1); ok {
			t.Fatal("granted beside an oversize lease")
		}
		l.Close()
		checkInUse(t, b, 0)
	})
	t.Run("waits until nothing else is held", func(t *testing.T) {
		b := newUnit(10)
		hold := mustTry(t, b, 1)
		big := startReserve(b, 25)
		waitQueued(t, b, 1)
		if b.Stats().OversizeAdmits != 0 {
			t.Fatal("oversize admitted while bytes are held")
		}
		hold.Close()
		big.mustGrant(t).Close()
		if s := b.Stats(); s.OversizeAdmits != 1 {
			t.Fatalf("oversize admits = %d, want 1", s.OversizeAdmits)
		}
	})
	t.Run("waits for its turn at the head", func(t *testing.T) {
		b := newUnit(10)
		hold := mustTry(t, b, 6)
		first := startReserve(b, 5)
		waitQueued(t, b, 1)
		big := startReserve(b, 25)
		waitQueued(t, b, 2)
		hold.Close()
		l := first.mustGrant(t)
		waitQueued(t, b, 1) // big is the head now but 5 bytes are held
		l.Close()
		big.mustGrant(t).Close()
		checkInUse(t, b, 0)
	})
	t.Run("zero cap admits one at a time", func(t *testing.T) {
		b := newUnit(0)
		l := mustTry(t, b, 1)
		if _, ok := b.TryReserve(1); ok {
			t.Fatal("second request granted on a zero cap")
		}
		l.Close()
		if s := b.Stats(); s.OversizeAdmits != 1 {
			t.Fatalf("oversize admits = %d", s.OversizeAdmits)
		}
	})
}

func TestParent(t *testing.T) {
	t.Run("child never above its cap, parent never above its", func(t *testing.T) {
		p := newUnit(10)
		a := newUnit(6, WithParent(p))
		c := newUnit(6, WithParent(p))
		la := mustTry(t, a, 6)
		if _, ok := a.TryReserve(1); ok {
			t.Fatal("child granted above its cap")
		}
		lc := mustTry(t, c, 4)
		if _, ok := c.TryReserve(1); ok {
			t.Fatal("parent granted above its cap")
		}
		checkInUse(t, p, 10)
		// c's request passes c (4+2 <= 6) and waits at the parent.
		w := startReserve(c, 2)
		waitQueued(t, p, 1)
		if s := c.Stats(); s.InUse != 6 || s.Queued != 0 {
			t.Fatalf("child stats: %+v", s)
		}
		la.Release(2)
		lw := w.mustGrant(t)
		checkInUse(t, p, 10)
		for _, l := range []*Lease{la, lc, lw} {
			l.Close()
		}
		for _, b := range []*Budget{p, a, c} {
			checkInUse(t, b, 0)
		}
	})
	t.Run("parent FIFO across children", func(t *testing.T) {
		p := newUnit(10)
		a := newUnit(10, WithParent(p))
		c := newUnit(10, WithParent(p))
		hold := mustTry(t, c, 5)
		big := startReserve(a, 10)
		waitQueued(t, p, 1)
		// c has room of its own, but may not pass a's waiting request at p.
		if _, ok := c.TryReserve(1); ok {
			t.Fatal("TryReserve jumped the parent's queue")
		}
		small := startReserve(c, 1)
		waitQueued(t, p, 2)
		hold.Close()
		lb := big.mustGrant(t)
		waitQueued(t, p, 1)
		lb.Close()
		small.mustGrant(t).Close()
		checkInUse(t, p, 0)
	})
	t.Run("oversize is per level and does not wedge", func(t *testing.T) {
		// Two children each hold part of the parent; a request larger than
		// the parent (but not the child) waits until the parent is empty.
		p := newUnit(10)
		a := newUnit(20, WithParent(p))
		c := newUnit(20, WithParent(p))
		la := mustTry(t, a, 4)
		lc := mustTry(t, c, 4)
		big := startReserve(a, 15)
		waitQueued(t, p, 1)
		la.Close()
		waitQueued(t, p, 1) // c still holds 4
		lc.Close()
		lb := big.mustGrant(t)
		if sp, sa := p.Stats(), a.Stats(); sp.OversizeAdmits != 1 || sa.OversizeAdmits != 0 || sp.InUse != 15 {
			t.Fatalf("parent %+v\nchild %+v", sp, sa)
		}
		lb.Close()
		// Oversize for the child too: admitted alone at both levels.
		lh := mustTry(t, a, 30)
		if p.Stats().OversizeAdmits != 2 || a.Stats().OversizeAdmits != 1 {
			t.Fatalf("oversize counts: parent %v, child %v", p, a)
		}
		lh.Close()
		checkInUse(t, p, 0)
		checkInUse(t, a, 0)
	})
	t.Run("cancel while waiting at the parent gives the child back", func(t *testing.T) {
		p := newUnit(4)
		a := newUnit(10, WithParent(p))
		hold := mustTry(t, p, 4)
		w := startReserve(a, 3)
		waitQueued(t, p, 1)
		checkInUse(t, a, 3) // passed a, waits at p
		w.cancel()
		if _, err := w.wait(t); err == nil {
			t.Fatal("cancelled Reserve succeeded")
		}
		checkInUse(t, a, 0)
		checkInUse(t, p, 4)
		if s := a.Stats(); s.Cancels != 1 || s.Waits != 1 {
			t.Fatalf("child stats: %+v", s)
		}
		hold.Close()
	})
	t.Run("commit grows every level", func(t *testing.T) {
		p := newUnit(10)
		a := newUnit(10, WithParent(p))
		l := mustTry(t, a, 5)
		l.Commit(12)
		if sp, sa := p.Stats(), a.Stats(); sp.InUse != 12 || sa.InUse != 12 || sp.Overcommits != 1 || sa.Overcommits != 1 {
			t.Fatalf("parent %+v\nchild %+v", sp, sa)
		}
		l.Close()
		checkInUse(t, p, 0)
	})
}

func TestSetCap(t *testing.T) {
	b := newUnit(4)
	hold := mustTry(t, b, 4)
	w := startReserve(b, 3)
	waitQueued(t, b, 1)
	b.SetCap(7)
	l := w.mustGrant(t)
	b.SetCap(2) // shrinking revokes nothing
	checkInUse(t, b, 7)
	if _, ok := b.TryReserve(0); ok {
		t.Fatal("granted while above the shrunk cap")
	}
	hold.Close()
	l.Close()
	if s := b.Stats(); s.Cap != 2 || s.InUse != 0 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestClose(t *testing.T) {
	var nilLease *Lease
	nilLease.Close() // safe
	if nilLease.Held() != 0 {
		t.Fatal("nil lease holds bytes")
	}
	b := newUnit(10)
	l := mustTry(t, b, 7)
	l.Release(2)
	l.Close()
	l.Close()
	checkInUse(t, b, 0)
	if s := b.Stats(); s.Released != 7 || s.Releases != 2 {
		t.Fatalf("released = %d in %d calls, want 7 in 2", s.Released, s.Releases)
	}
	if l.Held() != 0 {
		t.Fatal("closed lease holds bytes")
	}
}

// TestLeaseAcrossGoroutines commits on one goroutine and releases on
// others; run with -race.
func TestLeaseAcrossGoroutines(t *testing.T) {
	b := New(1 << 20)
	for range 20 {
		l := mustTry(t, b, 1000)
		committed := make(chan struct{})
		go func() {
			l.Commit(1600)
			close(committed)
		}()
		<-committed
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { l.Release(400) })
		}
		wg.Wait()
		wg.Go(l.Close)
		wg.Go(l.Close)
		wg.Wait()
	}
	checkInUse(t, b, 0)
}

func TestMisusePanics(t *testing.T) {
	closed := func() *Lease {
		l := mustTry(t, newUnit(10), 5)
		l.Close()
		return l
	}
	committed := func() *Lease {
		l := mustTry(t, newUnit(10), 5)
		l.Commit(5)
		return l
	}
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"negative cap", func() { New(-1) }, "budget: negative capacity"},
		{"negative SetCap", func() { newUnit(1).SetCap(-1) }, "budget: negative capacity"},
		{"negative wire", func() { newUnit(1).TryReserve(-1) }, "budget: negative wire size"},
		{"huge wire", func() { newUnit(1).Reserve(context.Background(), math.MaxInt64) }, "budget: wire size out of range"},
		{"release more than held", func() { mustTry(t, newUnit(10), 5).Release(6) }, "budget: released more than held"},
		{"negative release", func() { mustTry(t, newUnit(10), 5).Release(-1) }, "budget: negative release"},
		{"release after close", func() { closed().Release(1) }, "budget: Release on closed lease"},
		{"release 0 after close", func() { closed().Release(0) }, "budget: Release on closed lease"},
		{"commit after close", func() { closed().Commit(1) }, "budget: Commit on closed lease"},
		{"commit twice", func() { committed().Commit(5) }, "budget: Commit called twice"},
		{"negative commit", func() { mustTry(t, newUnit(10), 5).Commit(-1) }, "budget: commit size out of range"},
		{"commit below released", func() {
			l := mustTry(t, newUnit(10), 5)
			l.Release(4)
			l.Commit(3)
		}, "budget: commit below bytes already released"},
		{"nil release", func() { (*Lease)(nil).Release(1) }, "budget: Release on nil lease"},
		{"nil commit", func() { (*Lease)(nil).Commit(1) }, "budget: Commit on nil lease"},
		{"alpha", func() { WithAlpha(1.5) }, "budget: alpha must be in [0, 1]"},
		{"multiplier", func() { WithMultiplier(0) }, "budget: multiplier must be positive and finite"},
		{"bounds", func() { WithMultiplierBounds(2, 1) }, "budget: multiplier bounds must satisfy 0 < lo <= hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); msg != tt.want {
					t.Fatalf("panic = %#v, want %q", r, tt.want)
				}
			}()
			tt.f()
		})
	}
	// A misuse panic leaves the budget consistent and unlocked.
	b := newUnit(10)
	l := mustTry(t, b, 5)
	func() {
		defer func() { _ = recover() }()
		l.Release(6)
	}()
	l.Close()
	checkInUse(t, b, 0)
}

func TestStatsString(t *testing.T) {
	b := New(64 << 20)
	l := mustTry(t, b, 40<<20) // 60 MiB
	l.Commit(50 << 20)
	l.Close()
	got := b.String()
	want := "budget cap=64.0MiB in_use=0B peak=60.0MiB (93.8%) waits=0 wait=0s max_wait=0s oversize=0 overcommit=0 ratio=1.45 reserved=60.0MiB committed=50.0MiB released=50.0MiB"
	if got != want {
		t.Fatalf("String() =\n%s\nwant\n%s", got, want)
	}
	if s := New(0).String(); !strings.Contains(s, "peak=0B waits") {
		t.Fatalf("zero cap: %s", s)
	}
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 1536: "1.5KiB", 1 << 30: "1.0GiB", 3 << 60: "3.0EiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestHammer runs random reserve/commit/release/close/cancel traffic from
// many goroutines against a parent with three children (one larger than the
// parent) and checks, at every grant, exactly what may exceed a cap:
//
//   - a normal grant leaves in use <= cap at that level;
//   - an oversize grant is larger than the cap and finds the level empty;
//   - nothing else adds bytes except Commit growth, which never blocks.
//
// At the end every level is back to exactly 0 with nobody queued, and
// goleak (TestMain) checks that no Reserve goroutine is left parked.
func TestHammer(t *testing.T) {
	const (
		workers = 12
		ops     = 300
	)
	var violations atomic.Int64
	hook := withGrantHook(func(l *Budget, n int64, oversize bool) {
		switch {
		case oversize && (n <= l.capacity || l.inUse != n):
			violations.Add(1)
		case !oversize && l.inUse > l.capacity:
			violations.Add(1)
		}
	})

	root := New(400, hook)
	levels := []*Budget{
		root,
		New(200, WithParent(root), hook),
		New(150, WithParent(root), WithAlpha(0.5), hook),
		New(600, WithParent(root), WithMultiplier(1), hook),
	}

	stop := make(chan struct{})
	var checker sync.WaitGroup
	checker.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, b := range levels {
				s := b.Stats()
				checkBooks(t, s)
				if s.Multiplier < DefaultMinMultiplier || s.Multiplier > DefaultMaxMultiplier {
					t.Errorf("multiplier %v out of bounds", s.Multiplier)
				}
			}
			time.Sleep(20 * time.Microsecond)
		}
	})

	// A wedge would otherwise hang until the test binary's timeout.
	watchdog := time.AfterFunc(time.Minute, func() {
		var b strings.Builder
		for i, l := range levels {
			fmt.Fprintf(&b, "\nlevel %d: %+v", i, l.Stats())
		}
		panic("hammer wedged:" + b.String())
	})
	defer watchdog.Stop()

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			var held []*Lease
			defer func() {
				for _, l := range held {
					l.Close()
				}
			}()
			for range ops {
				b := levels[rng.IntN(len(levels))]
				wire := rng.Int64N(60)
				if rng.IntN(20) == 0 {
					wire = 200 + rng.Int64N(400) // oversize at some levels
				}
				if rng.IntN(50) == 0 && b != root {
					b.SetCap(150 + rng.Int64N(100))
				}
				// A goroutine that holds leases never waits without a
				// deadline: hold-and-wait can wedge any semaphore.
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if len(held) > 0 || rng.IntN(4) == 0 {
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rng.IntN(300))*time.Microsecond)
				}
				var l *Lease
				var err error
				if rng.IntN(5) == 0 {
					var ok bool
					if l, ok = b.TryReserve(wire); !ok {
						err = errors.New("busy")
					}
				} else {
					l, err = b.Reserve(ctx, wire)
				}
				cancel()
				if err != nil {
					if l != nil {
						t.Errorf("Reserve returned a lease and %v", err)
					}
					continue
				}
				if rng.IntN(4) != 0 {
					l.Commit(rng.Int64N(3*wire + 1))
				}
				for range rng.IntN(3) {
					if h := l.Held(); h > 0 {
						l.Release(rng.Int64N(h + 1))
					}
				}
				if rng.IntN(3) == 0 && len(held) < 3 {
					held = append(held, l)
				} else {
					l.Close()
				}
				if len(held) > 0 && rng.IntN(3) == 0 {
					i := rng.IntN(len(held))
					held[i].Close()
					held = append(held[:i], held[i+1:]...)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	checker.Wait()

	if v := violations.Load(); v != 0 {
		t.Errorf("%d grants broke the cap rules", v)
	}
	for i, b := range levels {
		s := b.Stats()
		if s.InUse != 0 || s.Queued != 0 {
			t.Errorf("level %d: in use %d, queued %d after all leases closed", i, s.InUse, s.Queued)
		}
		checkBooks(t, s)
		t.Logf("level %d: %v cancels=%d", i, s, s.Cancels)
	}
}

// TestLeaseGrow: Grow charges at once, above the cap if need be, at every
// level; Commit then replaces the whole charge.
func TestLeaseGrow(t *testing.T) {
	parent := newUnit(150)
	b := newUnit(100, WithParent(parent))
	l, err := b.Reserve(context.Background(), 80)
	if err != nil {
		t.Fatal(err)
	}
	l.Grow(80)
	for _, lv := range []*Budget{b, parent} {
		if st := lv.Stats(); st.InUse != 160 || st.Peak != 160 || st.Overcommits != 1 {
			t.Fatalf("after Grow: %s", st)
		}
	}
	l.Commit(90)
	if st := b.Stats(); st.InUse != 90 || l.Held() != 90 {
		t.Fatalf("after Commit: %s, held %d", st, l.Held())
	}
	l.Close()
	if st := parent.Stats(); st.InUse != 0 || st.Reserved+st.Grown-st.Refunded-st.Released != 0 {
		t.Fatalf("after Close: %s", st)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Grow after Close did not panic")
		}
	}()
	l.Grow(1)
}

// TestIdlePass: under a parent WithIdlePass, a child that holds nothing there
// passes the parent's cap and queue, one request at a time; a child that
// holds something waits in FIFO order as usual, and passes once it holds
// nothing again. Without it, the same requests wait: two scans whose
// consumers depend on each other would deadlock.
func TestIdlePass(t *testing.T) {
	ctx := context.Background()
	strict := newUnit(100)
	a0, b0 := newUnit(1000, WithParent(strict)), newUnit(1000, WithParent(strict))
	held, _ := b0.Reserve(ctx, 100) // b0's ready chunks fill the parent
	if _, ok := a0.TryReserve(10); ok {
		t.Fatal("a strict parent let a request past its cap")
	}
	held.Close()

	parent := newUnit(100, WithIdlePass())
	a, b := newUnit(1000, WithParent(parent)), newUnit(1000, WithParent(parent))
	bl, _ := b.Reserve(ctx, 100)
	al, err := a.Reserve(ctx, 10) // a holds nothing: passes
	if err != nil || parent.Stats().InUse != 110 || parent.Stats().Bypasses != 1 {
		t.Fatalf("idle child: %v; parent %s", err, parent)
	}
	bw := startReserve(b, 10) // b holds 100: waits, first in line
	waitQueued(t, parent, 1)
	aw := startReserve(a, 10) // a holds 10: waits behind b
	waitQueued(t, parent, 2)
	al.Close() // a holds nothing again: its waiter passes b's
	l, err := aw.wait(t)
	if err != nil || parent.Stats().Bypasses != 2 || parent.Stats().Queued != 1 {
		t.Fatalf("after a's release: %v; parent %s queued %d", err, parent, parent.Stats().Queued)
	}
	l.Close()
	bl.Close() // b's own release admits its waiter
	if l, err := bw.wait(t); err != nil {
		t.Fatal(err)
	} else {
		l.Close()
	}
	if st := parent.Stats(); st.InUse != 0 || st.Queued != 0 {
		t.Fatalf("after everything closed: %s", st)
	}
}
