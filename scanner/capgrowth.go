package scanner

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
)

// startingCap is the cap a scan starts with, whatever its budget allows: the
// most that keeps IO and decoding busy as far as can be known before the
// scan runs. It is the largest of floor (0: budget.DefaultMin), a chunk
// being consumed and the next one fetched (largest is the largest chunk's
// wire estimate), and min(parallelism, startingCapRequests) requests of up to
// request_size in flight (Start passes 0 where the store has no latency
// for them to hide). From there the cap grows only where that
// is measured to pay (capProbe): a bigger budget is otherwise only memory
// the pool must fault in instead of reusing (the budget sweep, W4 of
// BENCHMARKS.md).
func startingCap(largest int64, parallelism int, requestSize, floor int64) int64 {
	if floor <= 0 {
		floor = budget.DefaultMin
	}
	if requestSize <= 0 {
		requestSize = iosched.DefaultRequestSize
	}
	io := int64(min(parallelism, startingCapRequests)) * min(requestSize, largest)
	return max(floor, 2*largest, io)
}

// startingCapRequests bounds the requests the starting cap keeps in flight: 16 GETs of
// 8 MiB outrun what two cores decode and copy into DuckDB.
const startingCapRequests = 16

// growthWindow is the shortest time a probe's rate is measured over.
const growthWindow = 100 * time.Millisecond

// growthGain is how much faster the scan must deliver after a raise for the
// raise to stay.
const growthGain = 1.10

// growthVerdicts is how many windows in a row after a raise must each be
// growthGain faster than the window before it for the raise to stay: one
// short window on shared cores passes by chance often enough to keep
// raises that buy nothing and cost memory.
const growthVerdicts = 2

// minLatencyToHide is the store's round trip (iosched.Model.Floor, the
// shortest time to an answer's headers lately) below which the starting cap counts
// no requests in flight and the probe never raises the cap: more chunks in
// flight hide round trips, and below a few milliseconds there are none to
// hide (local files, a server on the same machine), while each trial costs
// a largest chunk of freshly faulted memory, kept as peak RSS even when the
// trial is undone. Not the average time to headers: a server short of CPU
// answers slowly under a scan's load only because requests queue, and more
// requests in flight only queue longer there (see BENCHMARKS.md, "Figures
// behind the code").
const minLatencyToHide = 5 * time.Millisecond

// capProbe grows a scan's cap from the starting cap while that is measured to
// pay. When a consumer finds nothing ready, a chunk has waited for memory
// in the last window, the IO scheduler has free slots and the store's
// round trip is at least minLatencyToHide, the budget may be what keeps DuckDB
// waiting: the cap grows by a largest chunk, and the
// rate at which chunks arrive is compared over the windows before and
// after. The first window of a scan is its warm-up (decoders and IO
// ramping up, slower than what follows whatever the cap) and is never the
// baseline. A raise that did not make the scan at least growthGain faster
// in growthVerdicts windows in a row is undone and the cap stays there for
// the rest of the scan (on 2 cores next to a local server, more chunks in
// flight only compete for the same CPU).
type capProbe struct {
	step   int64 // what the cap grows by: the largest chunk's wire estimate, at least 1 MiB
	raises atomic.Int64

	mu       sync.Mutex
	frozen   bool      // a raise did not pay: no more
	warm     bool      // the warm-up window is over
	passed   int       // windows since the raise that were growthGain faster
	judging  bool      // a raise waits for its verdict
	before   float64   // bytes/s in the window before the raise
	prevCap  int64     // the cap before the raise
	winStart time.Time // the current window
	winWire  int64     // the scan's wire bytes when it started
	winWaits int64     // the budget's Waits when it started
}

// capLook is what the probe sees when a consumer finds nothing ready.
type capLook struct {
	now         time.Time
	wire, waits int64 // the scan's wire bytes and its budget's waits so far
	cap, limit  int64 // the budget's cap and how far it may grow
	ioFree      bool  // the IO scheduler has slots the scan could use
	latency     bool  // the store's round trip is at least minLatencyToHide
}

// look advances the probe and returns the cap to set (0: leave it).
func (k *capProbe) look(l capLook) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.frozen {
		return 0
	}
	if k.winStart.IsZero() {
		k.winStart, k.winWire, k.winWaits = l.now, l.wire, l.waits
		return 0
	}
	elapsed := l.now.Sub(k.winStart)
	if elapsed < growthWindow {
		return 0
	}
	rate := float64(l.wire-k.winWire) / elapsed.Seconds()
	waited := l.waits > k.winWaits
	k.winStart, k.winWire, k.winWaits = l.now, l.wire, l.waits
	if !k.warm {
		k.warm = true
		return 0
	}
	if k.judging {
		if rate < growthGain*k.before {
			k.judging, k.frozen = false, true
			return k.prevCap
		}
		if k.passed++; k.passed < growthVerdicts {
			return 0
		}
		k.judging = false
		// The raise stayed; the next raise is judged against this window.
	}
	if !waited || l.cap >= l.limit || !l.ioFree || !l.latency {
		return 0 // no chunk waited for memory, no room to grow, IO is the bottleneck, or no latency to hide
	}
	k.prevCap, k.before, k.judging, k.passed = l.cap, rate, true, 0
	k.raises.Add(1)
	return min(l.limit, l.cap+k.step)
}

// starved is called when a consumer finds nothing ready.
func (s *Scan) starved() {
	if s.chunks.Load() == 0 {
		return // the first chunks are on their way: latency, not memory
	}
	now := time.Now()
	if !s.growth.due(now) {
		return
	}
	st, io, m := s.budget.Stats(), s.sched.Stats(), s.sched.Model()
	newCap := s.growth.look(capLook{now: now, wire: s.wire.Load(), waits: st.Waits, cap: st.Cap, limit: s.limit,
		ioFree: io.InFlight+io.Queued < s.share(io, io.Limit), latency: m.Samples > 0 && m.Floor >= minLatencyToHide})
	if newCap > 0 {
		s.budget.SetCap(newCap)
	}
}

// due reports whether a look at now would do anything: the probe is not
// frozen, and its window has not begun or has lasted growthWindow. It spares
// the consumers' every empty poll the budget's and scheduler's locks.
func (k *capProbe) due(now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.frozen && (k.winStart.IsZero() || now.Sub(k.winStart) >= growthWindow)
}
