package budget

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// extending is an Extend call running on its own goroutine.
type extending struct {
	cancel context.CancelFunc
	done   chan error
}

func startExtend(l *Lease, n int64) *extending {
	ctx, cancel := context.WithCancel(context.Background())
	e := &extending{cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- l.Extend(ctx, n) }()
	return e
}

func (e *extending) wait(t *testing.T) error {
	t.Helper()
	defer e.cancel()
	select {
	case err := <-e.done:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("Extend did not return")
		return nil
	}
}

// waitGrowing waits until n Extend calls are parked at b.
func waitGrowing(t *testing.T, b *Budget, n int) {
	t.Helper()
	waitStat(t, b, "growing", func(s Stats) int { return s.Growing }, n)
}

// TestExtendHeadOfLine: a younger lease's Extend waits for room; the
// oldest lease's never does, even past the cap; when the oldest closes,
// the next one's parked Extend goes through.
func TestExtendHeadOfLine(t *testing.T) {
	ctx := context.Background()
	b := newUnit(100)
	a := mustTry(t, b, 40)
	y := mustTry(t, b, 40)
	e := startExtend(y, 30) // 110 > 100: waits
	waitGrowing(t, b, 1)
	if err := a.Extend(ctx, 50); err != nil { // the head: at once, past the cap
		t.Fatal(err)
	}
	if st := b.Stats(); st.InUse != 130 || st.Overcommits != 1 || st.Growing != 1 {
		t.Fatalf("after the head's Extend: %s growing %d", st, st.Growing)
	}
	a.Close() // y is the head now: in use 40 + 30
	if err := e.wait(t); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.InUse != 70 || y.Held() != 70 || st.Peak != 130 || st.GrowWaits != 1 {
		t.Fatalf("after the head closed: %s held %d", st, y.Held())
	}
	y.Commit(60)
	y.Close()
	if st := b.Stats(); st.InUse != 0 {
		t.Fatalf("after Close: %s", st)
	}
	checkBooks(t, b.Stats())
}

// TestExtendPromotedPastCap: a parked Extend that still does not fit when
// its lease becomes the head of line is granted past the cap: the oldest
// chunk never waits for younger ones (which may wait for it to be
// consumed).
func TestExtendPromotedPastCap(t *testing.T) {
	b := newUnit(100)
	a := mustTry(t, b, 10)
	y := mustTry(t, b, 10)
	z := mustTry(t, b, 70) // younger, holds most of the budget
	e := startExtend(y, 50)
	waitGrowing(t, b, 1)
	a.Close()
	if err := e.wait(t); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.InUse != 130 || st.Overcommits != 1 || st.Growing != 0 {
		t.Fatalf("after promotion: %s", st)
	}
	y.Close()
	z.Close()
	checkBooks(t, b.Stats())
}

// TestExtendBeforeReserve: a Reserve that would fit does not pass a parked
// Extend; room goes to the growth first.
func TestExtendBeforeReserve(t *testing.T) {
	b := newUnit(100)
	a := mustTry(t, b, 50)
	y := mustTry(t, b, 30)
	e := startExtend(y, 30) // 110: waits
	waitGrowing(t, b, 1)
	if _, ok := b.TryReserve(10); ok {
		t.Fatal("a reservation passed a parked Extend")
	}
	r := startReserve(b, 10)
	waitQueued(t, b, 1)
	a.Release(15) // 65 + 30 = 95: the Extend fits, the Reserve does not yet
	if err := e.wait(t); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.InUse != 95 || st.Queued != 1 {
		t.Fatalf("after the release: %s queued %d", st, st.Queued)
	}
	a.Close()
	l, err := r.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	y.Close()
	checkBooks(t, b.Stats())
}

// TestExtendCancel: a cancelled Extend leaves the lease and every level as
// they were, at the level it waited at and below, and lets the waiters
// behind it in.
func TestExtendCancel(t *testing.T) {
	parent := newUnit(100)
	b := newUnit(1000, WithParent(parent))
	a := mustTry(t, b, 60)
	y := mustTry(t, b, 20)
	e := startExtend(y, 40) // fits b, not the parent: waits there
	waitGrowing(t, parent, 1)
	if st := b.Stats(); st.InUse != 120 {
		t.Fatalf("the Extend passed b: %s", st)
	}
	e.cancel()
	if err := e.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Extend after cancel = %v", err)
	}
	for _, lv := range []*Budget{b, parent} {
		if st := lv.Stats(); st.InUse != 80 || st.Growing != 0 {
			t.Fatalf("after cancel: %s growing %d", st, st.Growing)
		}
	}
	if y.Held() != 20 {
		t.Fatalf("lease holds %d after a cancelled Extend", y.Held())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Extend(ctx, 1); !errors.Is(err, context.Canceled) || a.Held() != 60 {
		t.Fatalf("Extend with a done context = %v, held %d", err, a.Held())
	}
	y.Commit(20)
	y.Close()
	a.Close()
	for _, lv := range []*Budget{b, parent} {
		if st := lv.Stats(); st.InUse != 0 {
			t.Fatalf("after Close: %s", st)
		}
		checkBooks(t, lv.Stats())
	}
}

// TestExtendMisuse: Extend panics like Grow after Commit or Close.
func TestExtendMisuse(t *testing.T) {
	ctx := context.Background()
	for name, f := range map[string]func(){
		"after commit": func() { l := mustTry(t, newUnit(10), 1); l.Commit(1); _ = l.Extend(ctx, 1) },
		"after close":  func() { l := mustTry(t, newUnit(10), 1); l.Close(); _ = l.Extend(ctx, 1) },
		"negative":     func() { _ = mustTry(t, newUnit(10), 1).Extend(ctx, -1) },
		"nil":          func() { _ = (*Lease)(nil).Extend(ctx, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestExtendNoWedge runs chunks whose decode outgrows its reservation many
// times over, in small steps, on goroutines of their own, against a
// consumer that closes them strictly in reservation order (ordered
// delivery: a younger chunk that is ready waits for every older one, and
// holds its bytes meanwhile). It checks that
//
//   - every Extend that left a level above its cap was the head of line's;
//   - every other charge left the level within its cap;
//   - nothing wedges, and everything is given back.
//
// Without the head-of-line rule it wedges: each chunk waits for room the
// younger ones hold, and they wait to be consumed after it.
func TestExtendNoWedge(t *testing.T) {
	const (
		chunks = 40
		wire   = 10
		steps  = 8
		step   = 15 // each chunk ends at 10 + 8*15 = 130 bytes
	)
	var violations, headPastCap atomic.Int64
	hook := withExtendHook(func(l *Budget, n int64, head bool) {
		if l.inUse > l.capacity {
			if !head {
				violations.Add(1)
			} else {
				headPastCap.Add(1)
			}
		}
	})
	parent := newUnit(400, hook)
	b := newUnit(300, WithParent(parent), hook)

	watchdog := time.AfterFunc(time.Minute, func() { panic("wedged: " + b.String() + " / " + parent.String()) })
	defer watchdog.Stop()

	committed := make([]chan *Lease, chunks)
	for i := range committed {
		committed[i] = make(chan *Lease, 1)
	}
	var consumer sync.WaitGroup
	consumer.Go(func() {
		for i := range chunks {
			(<-committed[i]).Close()
		}
	})
	var decoders sync.WaitGroup
	ctx := context.Background()
	for i := range chunks {
		l, err := b.Reserve(ctx, wire)
		if err != nil {
			t.Fatal(err)
		}
		decoders.Go(func() {
			for range steps {
				if err := l.Extend(ctx, step); err != nil {
					t.Error(err)
				}
			}
			l.Commit(l.Held())
			committed[i] <- l
		})
	}
	decoders.Wait()
	consumer.Wait()
	if v := violations.Load(); v != 0 {
		t.Errorf("%d Extends of younger leases left a level above its cap", v)
	}
	for _, lv := range []*Budget{b, parent} {
		st := lv.Stats()
		if st.InUse != 0 || st.Growing != 0 || st.Queued != 0 {
			t.Errorf("after all closed: %s", st)
		}
		// Past the cap only by what the head alone added.
		if st.Peak > st.Cap+wire+steps*step {
			t.Errorf("peak %d beyond the cap and one chunk: %s", st.Peak, st)
		}
		checkBooks(t, st)
		t.Logf("%s grow_waits=%d head past cap %d", st, st.GrowWaits, headPastCap.Load())
	}
}

// TestFirstRatio: with WithFirstRatio the first measured ratio replaces
// the placeholder multiplier, and later ones are smoothed as usual;
// ReserveSize charges the size it is given whatever the multiplier.
func TestFirstRatio(t *testing.T) {
	ctx := context.Background()
	b := New(1<<20, WithMultiplier(1), WithMultiplierBounds(1, 64), WithFirstRatio())
	l, err := b.ReserveSize(ctx, 10, 100)
	if err != nil || l.Held() != 100 {
		t.Fatalf("ReserveSize: %v, held %d", err, l.Held())
	}
	l.Commit(120) // ratio 12
	l.Close()
	if m := b.Stats().Multiplier; m != 12 {
		t.Fatalf("multiplier after the first commit = %v, want 12", m)
	}
	l, _ = b.Reserve(ctx, 10)
	if l.Held() != 120 {
		t.Fatalf("reservation after learning = %d, want 120", l.Held())
	}
	l.Commit(20) // ratio 2: smoothed, 12 + 0.2 × (2 − 12)
	l.Close()
	if m := b.Stats().Multiplier; m != 10 {
		t.Fatalf("multiplier after the second commit = %v, want 10", m)
	}
}

// TestTryExtend: TryExtend charges at once where Extend would not wait
// (room under the cap, or the head of line past it) and, where Extend
// would wait (no room, or an Extend parked ahead), charges nothing and
// leaves the budget as it was.
func TestTryExtend(t *testing.T) {
	b := newUnit(100)
	a := mustTry(t, b, 40) // the head of line
	y := mustTry(t, b, 40)
	if !y.TryExtend(20) { // 100: fits
		t.Fatal("TryExtend(20) with 20 free failed")
	}
	before := b.Stats()
	if y.TryExtend(1) {
		t.Fatal("TryExtend(1) of a younger lease with nothing free succeeded")
	}
	if st := b.Stats(); st != before || y.Held() != 60 {
		t.Fatalf("a failed TryExtend changed the budget: %+v -> %+v, held %d", before, st, y.Held())
	}
	if !a.TryExtend(30) { // the head: past the cap, as Extend
		t.Fatal("the head's TryExtend past the cap failed")
	}
	if st := b.Stats(); st.InUse != 130 || st.Overcommits != 1 || a.Held() != 70 {
		t.Fatalf("after the head's TryExtend: %s held %d", st, a.Held())
	}
	a.Close() // y is the head now
	z := mustTry(t, b, 10)
	w := mustTry(t, b, 10)
	e := startExtend(z, 50) // 130 > 100: parks
	waitGrowing(t, b, 1)
	if w.TryExtend(10) { // 90 would fit, but the parked Extend goes first
		t.Fatal("TryExtend passed a parked Extend")
	}
	y.Close() // z is the head now: its parked Extend goes through
	if err := e.wait(t); err != nil {
		t.Fatal(err)
	}
	w.Close()
	z.Close()
	if st := b.Stats(); st.InUse != 0 {
		t.Fatalf("after Close: %s", st)
	}
	checkBooks(t, b.Stats())
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("TryExtend of a closed lease did not panic")
			}
		}()
		z.TryExtend(1)
	}()
}
