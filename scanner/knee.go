package scanner

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
)

// knee is the cap a scan starts with, whatever its budget allows: the
// most that keeps IO and decoding busy as far as can be known before the
// scan runs. It is the largest of floor (0: budget.DefaultMin), a chunk
// being consumed and the next one fetched (largest is the largest chunk's
// wire estimate), and min(max_parallel_io, kneeParallelism) requests of
// up to request_size in flight. From there the cap grows only where that
// is measured to pay (kneeProbe): a bigger budget is otherwise only memory
// the pool must fault in instead of reusing (measured on local files and
// versitygw: 128 MiB, 512 MiB and 1 GiB budgets were slower than the
// knee, see test/bench/scan).
func knee(largest int64, parallelism int, requestSize, floor int64) int64 {
	if floor <= 0 {
		floor = budget.DefaultMin
	}
	if requestSize <= 0 {
		requestSize = iosched.DefaultRequestSize
	}
	io := int64(min(parallelism, kneeParallelism)) * min(requestSize, largest)
	return max(floor, 2*largest, io)
}

// kneeParallelism bounds the requests the knee keeps in flight: 16 GETs of
// 8 MiB outrun what two cores decode and copy into DuckDB.
const kneeParallelism = 16

// kneeWindow is the shortest time a probe's rate is measured over.
const kneeWindow = 100 * time.Millisecond

// kneeGain is how much faster the scan must deliver after a raise for the
// raise to stay.
const kneeGain = 1.10

// kneeProbe grows a scan's cap from the knee while that is measured to
// pay. When a consumer finds nothing ready, a chunk has waited for memory
// since the last look and the IO scheduler has free slots, the budget may
// be what keeps DuckDB waiting: the cap grows by a largest chunk, and the
// rate at which chunks arrive is compared over the windows before and
// after. A raise that did
// not make the scan at least kneeGain faster is undone and the cap stays
// there for the rest of the scan (on 2 cores next to a local server, more
// chunks in flight only compete for the same CPU).
type kneeProbe struct {
	step   int64 // what the cap grows by: the largest chunk's wire estimate, at least 1 MiB
	raises atomic.Int64

	mu       sync.Mutex
	frozen   bool      // a raise did not pay: no more
	judging  bool      // a raise waits for its verdict
	before   float64   // bytes/s in the window before the raise
	prevCap  int64     // the cap before the raise
	winStart time.Time // the current window
	winWire  int64     // the scan's wire bytes when it started
	winWaits int64     // the budget's Waits when it started
}

// starved is called when a consumer finds nothing ready.
func (s *Scan) starved() {
	k := &s.knee
	if s.chunks.Load() == 0 {
		return // the first chunks are on their way: latency, not memory
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.frozen {
		return
	}
	now, wire := time.Now(), s.wire.Load()
	if k.winStart.IsZero() {
		k.winStart, k.winWire, k.winWaits = now, wire, s.budget.Stats().Waits
		return
	}
	elapsed := now.Sub(k.winStart)
	if elapsed < kneeWindow {
		return
	}
	rate := float64(wire-k.winWire) / elapsed.Seconds()
	if k.judging {
		k.judging = false
		if rate < kneeGain*k.before {
			s.budget.SetCap(k.prevCap)
			k.frozen = true
			return
		}
	}
	st := s.budget.Stats()
	waited := st.Waits > k.winWaits
	k.winStart, k.winWire, k.winWaits = now, wire, st.Waits
	if !waited || st.Cap >= s.limit {
		return // no chunk waited for memory in the window, or no room to grow
	}
	io := s.sched.Stats()
	if io.InFlight+io.Queued >= s.share(io.Limit) {
		return // IO is the bottleneck: more memory would only queue
	}
	k.prevCap, k.before, k.judging = st.Cap, rate, true
	s.budget.SetCap(min(s.limit, st.Cap+k.step))
	k.raises.Add(1)
}
