// Package heapfloor keeps the Go collector from starting a cycle before the
// heap has grown by a floor of bytes past what the last cycle left live.
//
// A runtime whose live heap is small (a few MiB: a scan's buffers are pooled,
// and most of what it allocates is short-lived) collects whenever the heap
// doubles, every few MiB of allocation: a scan of twenty thousand small
// chunks ran about fifty cycles a second, and the marking, the sweeping and
// the goroutines they wake took a sixth of its CPU. GOGC alone cannot help:
// a percent high enough for a small heap lets a large one grow many times
// over. So after each cycle the percent is set again, to what gives the
// floor over the live heap measured, and never below the runtime's default
// of 100: a large heap is collected as it would be anyway, and the memory
// limit (debug.SetMemoryLimit) still bounds both.
//
// Only a program that owns its Go runtime may use it: the loadable
// extension does; a Go program's collector settings are its own.
package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// defaultPercent is GOGC's default, the least Start sets.
const defaultPercent = 100

// maxPercent bounds the percent Start sets: a heap of a few KiB live would
// otherwise ask for an absurd one.
const maxPercent = 100_000

var liveMetric = "/gc/heap/live:bytes"

// tuner sets the collector's percent after each cycle (cycle).
type tuner struct {
	floor int64
	mu    sync.Mutex
	on    bool
	prev  int // the percent before Start, restored by Stop
	set   int // the percent last set
	probe []metrics.Sample
}

// Start keeps at least floor bytes of growth between a cycle and the next
// (within the memory limit), until the returned stop is called, which
// restores the percent there was before. Starting again while started is
// a no-op (and its stop too). It panics if floor is not positive.
func Start(floor int64) (stop func()) {
	if floor <= 0 {
		panic("heapfloor: floor must be positive")
	}
	t := &tuner{floor: floor, probe: []metrics.Sample{{Name: liveMetric}}}
	active.Lock()
	defer active.Unlock()
	if active.t != nil {
		return func() {}
	}
	active.t = t
	t.on = true
	t.prev = debug.SetGCPercent(defaultPercent)
	t.tune()
	t.arm()
	return sync.OnceFunc(func() {
		active.Lock()
		defer active.Unlock()
		t.mu.Lock()
		t.on = false
		t.mu.Unlock()
		debug.SetGCPercent(t.prev)
		active.t = nil
	})
}

// active is the running tuner, if any: one percent per runtime.
var active struct {
	sync.Mutex
	t *tuner
}

// Percent returns the percent the running tuner set last, or -1 if none
// runs.
func Percent() int {
	active.Lock()
	defer active.Unlock()
	if active.t == nil {
		return -1
	}
	active.t.mu.Lock()
	defer active.t.mu.Unlock()
	return active.t.set
}

// sentinel is an object whose finalizer runs after the cycle that found it
// unreachable: one is made after each cycle. It holds a pointer, so it is
// not batched with other small objects (a finalizer on those may never
// run).
type sentinel struct {
	_ *int
	_ [2]int64
}

// arm makes the next sentinel.
func (t *tuner) arm() {
	s := &sentinel{}
	runtime.SetFinalizer(s, func(*sentinel) { t.cycle() })
}

// cycle runs after a collection (in the finalizer goroutine): it sets the
// percent for the next one, and arms the next sentinel.
func (t *tuner) cycle() {
	if t.tune() {
		t.arm()
	}
}

// tune sets the percent for the live heap now; false once stopped.
func (t *tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return false
	}
	metrics.Read(t.probe)
	var live int64
	if v := t.probe[0].Value; v.Kind() == metrics.KindUint64 {
		live = int64(v.Uint64())
	}
	p := percentFor(t.floor, live)
	if p != t.set {
		debug.SetGCPercent(p)
		t.set = p
	}
	return true
}

// minHeap is the runtime's minimum heap goal at the default percent; it
// scales with the percent.
const minHeap = 4 << 20

// percentFor is the percent that lets a heap of live bytes grow by about
// floor bytes before the next cycle, within [defaultPercent, maxPercent].
// Below minHeap live (and before the first cycle, when it reads 0) the
// runtime's minimum goal, which grows with the percent, is what gives the
// floor: the percent is minHeap's.
func percentFor(floor, live int64) int {
	p := floor * 100 / max(live, minHeap)
	return int(min(max(p, defaultPercent), maxPercent))
}
