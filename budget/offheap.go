package budget

// Large buffers on huge pages, outside the Go heap.
//
// A pooled buffer of a huge page (2 MiB) or more is mapped for itself
// (mmap), its start aligned to a huge page, and the kernel is asked to back
// it with huge pages (madvise MADV_HUGEPAGE, which systems whose transparent
// huge pages are "madvise" or "always" honour; "never" turns it off). Filling
// a fresh 4 KiB page costs a page fault, and on virtual machines a fault
// costs more than the zeroing: reading 1 GiB of local files in 30 MB chunks,
// a fresh CLI faulted ~21 k times, ~15 k of them for its pool's buffers, and
// spent a fifth of its time there (BENCHMARKS.md, "Figures behind the code").
// A huge page is one fault for 512 pages' worth. The Go heap gives no huge
// pages on such systems, hence the mapping of our own.
//
// A mapping is made when the pool makes a fresh buffer and unmapped when the
// pool drops it (put over its limit, or after ClosePool): the pool's contract
// already is that nothing reads or writes a buffer it took back, since it
// hands the buffer to the next chunk. Nothing is kept between scans, so a
// scan's bytes never show in another scan's buffers. The one exception is a
// buffer abandoned (Lease.Abandon, a writer may still hold it): unmapping it
// could crash that writer, so its pages are given back to the kernel
// (MADV_DONTNEED: a late write lands in a fresh zero page) and its address
// range is never reused. A scan canceled (a LIMIT met, a query stopped)
// abandons the buffers of the chunks it was reading. Past abandonedMax such
// bytes, buffers come from the Go heap again, so that a long-lived process
// canceling scan after scan cannot grow its address space, and its count
// of mappings (vm.max_map_count, 65530 by default), without bound: at most
// abandonedMax ÷ HugePage of them.

import (
	"sync"
	"unsafe"
)

// HugePage is the size of a huge page on the platforms this package maps
// them for (x86-64 and arm64 with 4 KiB base pages).
const HugePage = 2 << 20

// abandonedMax bounds the bytes of abandoned mappings (see above).
const abandonedMax = 4 << 30

// offHeap is the process's record of the mappings it made: which buffers are
// its own, to be unmapped when dropped.
var offHeap = &mappings{live: map[uintptr]int{}}

type mappings struct {
	mu    sync.Mutex
	live  map[uintptr]int // mapped buffers handed out or kept by a pool, by address: their length
	stats MappedStats
}

// MappedStats describes the buffers this process mapped for itself.
type MappedStats struct {
	Live      int64 // bytes mapped and not dropped
	Maps      int64 // mappings made
	Unmaps    int64 // mappings dropped
	Abandoned int64 // bytes of abandoned mappings, never reused
	Failed    int64 // mappings refused by the system (the Go heap served instead)
}

// Mapped returns a snapshot of the process's mapped buffers.
func Mapped() MappedStats {
	offHeap.mu.Lock()
	defer offHeap.mu.Unlock()
	return offHeap.stats
}

// take returns a buffer of length and capacity c mapped for itself, or nil
// when c is under a huge page or the system refuses (the caller then makes
// one on the Go heap). Its bytes are zero.
func (m *mappings) take(c int) []byte {
	if c < HugePage {
		return nil
	}
	m.mu.Lock()
	if m.stats.Abandoned > abandonedMax {
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	buf, err := mapHuge(c)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.stats.Failed++
		return nil
	}
	m.live[uintptr(unsafe.Pointer(unsafe.SliceData(buf)))] = len(buf)
	m.stats.Maps++
	m.stats.Live += int64(len(buf))
	return buf
}

// drop unmaps buf if it is one take returned (nothing uses it any more); a
// buffer of the Go heap is left to the collector.
func (m *mappings) drop(buf []byte) {
	n, ok := m.forget(buf)
	if !ok {
		return
	}
	unmap(unsafe.SliceData(buf), n)
	m.mu.Lock()
	m.stats.Unmaps++
	m.mu.Unlock()
}

// abandon gives buf's pages back to the kernel, if it is one take returned,
// and keeps its addresses mapped for good: a writer may still hold it.
func (m *mappings) abandon(buf []byte) {
	n, ok := m.forget(buf)
	if !ok {
		return
	}
	m.mu.Lock()
	m.stats.Abandoned += int64(n)
	m.mu.Unlock()
	dropPages(unsafe.SliceData(buf), n)
}

// forget removes buf from the live mappings and returns its length, if it
// was one. A second drop of a buffer finds nothing and does nothing, unless
// a new mapping took its address in between: the pool's books stop that
// first (put panics on a buffer returned more often than taken).
func (m *mappings) forget(buf []byte) (int, bool) {
	if cap(buf) < HugePage {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.live[p]
	if !ok {
		return 0, false
	}
	delete(m.live, p)
	m.stats.Live -= int64(n)
	return n, true
}
