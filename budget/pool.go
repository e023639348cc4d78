package budget

// Buffers that are faulted in once.
//
// A scan that reads every chunk into freshly allocated memory pays, per
// 4 KiB of data, a page fault (the kernel zeroes and maps a fresh page) and,
// once the garbage collector has freed the buffer and the runtime's
// scavenger has handed its pages back to the kernel, the same again for the
// next chunk. On virtual machines a fault is expensive. So a budget owns a
// pool: a lease's buffers (Lease.Buffer, Budget.Allocator) come from it and
// go back to it when the lease closes, and the next chunk reuses them; a
// buffer filled before its lease (Lease.Adopt) joins it the same way. The
// pool never holds more than the budget's cap in buffers handed out and free
// ones together, unless the buffers handed out alone exceed it (the budget,
// not the pool, decides how much is live): the bytes the budget meters are
// the bytes the pool holds. A fresh buffer of a huge page or more is mapped
// for itself on huge pages, outside the Go heap, and unmapped when the pool
// drops it (offheap.go).

import (
	"math/bits"
	"sync"
)

// PoolMin is the smallest buffer the pool keeps, a page. Smaller ones come
// from the Go allocator, whose size-classed spans are reused without the
// kernel. A buffer of a few pages is not worth a fault but is worth the
// pool: a scan of many small chunks that took each chunk's buffer from the
// allocator made most of the garbage the collector then chased.
const PoolMin = 4 << 10

// poolClass is the size of the pooled buffer that serves n > PoolMin bytes:
// n rounded up to a sixteenth of its power of two (at most 6.25 % more, and
// above 64 KiB a multiple of 4 KiB), so chunks of similar sizes share
// buffers.
func poolClass(n int) int {
	step := 1 << (bits.Len(uint(n-1)) - 5)
	return (n + step - 1) &^ (step - 1)
}

// PooledSize is the capacity of the buffer a budget's pool hands out for
// n bytes (Lease.Buffer, Budget.Allocator): n rounded up to its class, or n
// itself at or below PoolMin, where the pool does not serve.
func PooledSize(n int) int {
	if n <= PoolMin {
		return n
	}
	return poolClass(n)
}

// pool is a budget's free lists of buffers by class. Its lock is its own:
// buffers come and go on the scan's goroutines and DuckDB's threads without
// taking the budget's lock.
type pool struct {
	mu    sync.Mutex
	limit int64 // the budget's cap; see Budget.SetCap
	free  map[int][][]byte
	// INVARIANT: freeBytes is the sum of the caps of the buffers in free;
	// taken the sum of the caps of the buffers handed out and not returned.
	freeBytes, taken       int64
	fresh, reused, adopted int64
	closed                 bool // ClosePool: keep nothing
}

// get returns a buffer of length n and capacity poolClass(n) (n > PoolMin):
// a free one of its class, else a new one, after dropping free buffers of
// other classes as long as the pool would otherwise exceed its limit.
func (p *pool) get(n int) []byte {
	c := poolClass(n)
	p.mu.Lock()
	p.taken += int64(c)
	if list := p.free[c]; len(list) > 0 {
		buf := list[len(list)-1]
		list[len(list)-1] = nil
		p.free[c] = list[:len(list)-1]
		p.freeBytes -= int64(c)
		p.reused++
		p.mu.Unlock()
		return buf[:n]
	}
	p.fresh++
	var dropped [][]byte
	for k, list := range p.free {
		for len(list) > 0 && p.taken+p.freeBytes > p.limit {
			dropped = append(dropped, list[len(list)-1])
			list[len(list)-1] = nil
			list = list[:len(list)-1]
			p.freeBytes -= int64(k)
		}
		p.free[k] = list
	}
	p.mu.Unlock()
	for _, buf := range dropped {
		offHeap.drop(buf)
	}
	if buf := offHeap.take(c); buf != nil {
		return buf[:n]
	}
	return make([]byte, n, c)
}

// put takes back a buffer get returned. It keeps it for reuse unless that
// would put the pool above its limit while other buffers are free.
func (p *pool) put(buf []byte) {
	c := cap(buf)
	if c <= PoolMin || poolClass(c) != c {
		panic("budget: returned a buffer the pool did not hand out")
	}
	p.mu.Lock()
	if p.taken < int64(c) {
		p.mu.Unlock()
		panic("budget: returned more buffers than were handed out")
	}
	p.taken -= int64(c)
	if p.closed || p.freeBytes > 0 && p.taken+p.freeBytes+int64(c) > p.limit {
		p.mu.Unlock()
		offHeap.drop(buf) // unmapped if mapped, else the collector frees it
		return
	}
	if p.free == nil {
		p.free = map[int][][]byte{}
	}
	p.free[c] = append(p.free[c], buf[:c])
	p.freeBytes += int64(c)
	p.mu.Unlock()
}

// forget accounts for buf, a buffer of class c handed out that will never
// come back (its writer may still hold it).
func (p *pool) forget(c int, buf []byte) {
	p.mu.Lock()
	p.taken = max(0, p.taken-int64(c))
	p.mu.Unlock()
	offHeap.abandon(buf)
}

func (p *pool) setLimit(n int64) {
	p.mu.Lock()
	p.limit = n
	p.mu.Unlock()
}

// ClosePool drops the free buffers of b's pool and every buffer given back
// later (unmapped, or left to the garbage collector): a budget whose scan
// ended may stay reachable (statistics) but must not pin memory. Buffers are
// still handed out after it, fresh each time.
func (b *Budget) ClosePool() {
	p := &b.pool
	p.mu.Lock()
	p.closed = true
	free := p.free
	p.free, p.freeBytes = nil, 0
	p.mu.Unlock()
	for _, list := range free {
		for _, buf := range list {
			offHeap.drop(buf)
		}
	}
}

// PoolStats describes a budget's buffer pool.
type PoolStats struct {
	Taken   int64 // bytes of buffers handed out and not given back
	Free    int64 // bytes of buffers kept for reuse
	Fresh   int64 // buffers allocated
	Reused  int64 // buffers handed out again
	Adopted int64 // buffers filled before their lease, taken in (Lease.Adopt)
}

// PoolStats returns a snapshot of b's buffer pool.
func (b *Budget) PoolStats() PoolStats {
	p := &b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Taken: p.taken, Free: p.freeBytes, Fresh: p.fresh, Reused: p.reused, Adopted: p.adopted}
}

// Buffer returns a byte slice of length n that the lease owns until Close,
// which gives it back to the budget's pool for the next lease. Its contents
// are arbitrary (a previous chunk's bytes): the caller overwrites them. A
// buffer below PoolMin bytes is ordinary memory, not pooled. Buffer does not
// charge the budget: the lease's reservation covers the bytes. It panics if
// n is negative or the lease is closed.
func (l *Lease) Buffer(n int) []byte {
	if n < 0 {
		panic("budget: negative buffer size")
	}
	if n <= PoolMin {
		return make([]byte, n)
	}
	buf := l.b.pool.get(n)
	l.b.mu.Lock()
	closed := l.closed
	if !closed {
		l.bufs = append(l.bufs, buf)
	}
	l.b.mu.Unlock()
	if closed {
		l.b.pool.put(buf)
		panic("budget: Buffer on closed lease")
	}
	return buf
}

// Adopt makes buf the lease's as if Buffer had handed it out: Close gives
// it to the pool, for the next lease. It is for bytes read before their
// lease existed (bind's prefetches), which then need no copy into a pooled
// buffer, nor the fresh memory that copy would fault in. The lease's
// reservation must cover cap(buf), as for Buffer. Adopt reports false, and
// buf stays the caller's, if its capacity is not what Buffer hands out for
// its length (PooledSize, above PoolMin) or the lease is closed (or nil).
func (l *Lease) Adopt(buf []byte) bool {
	c := cap(buf)
	if l == nil || len(buf) <= PoolMin || c != PooledSize(len(buf)) {
		return false
	}
	// Taken before the lease lists it, as Buffer's are: a Close that
	// follows at once puts it back against this count.
	p := &l.b.pool
	p.mu.Lock()
	p.taken += int64(c)
	p.mu.Unlock()
	l.b.mu.Lock()
	closed := l.closed
	if !closed {
		l.bufs = append(l.bufs, buf)
	}
	l.b.mu.Unlock()
	p.mu.Lock()
	if closed {
		p.taken -= int64(c)
	} else {
		p.adopted++
	}
	p.mu.Unlock()
	return !closed
}

// Abandon closes the lease like Close, but its buffers are not reused: a
// writer may still hold them (an IO request that failed while other parts of
// it ran on). The garbage collector frees them once nobody refers to them;
// a mapped one gives its pages back at once and keeps its addresses, never
// reused (offheap.go). Abandon is idempotent and safe on a nil lease.
func (l *Lease) Abandon() {
	if l == nil {
		return
	}
	l.b.mu.Lock()
	bufs := l.bufs
	l.bufs = nil
	l.b.mu.Unlock()
	for _, buf := range bufs {
		l.b.pool.forget(cap(buf), buf)
	}
	l.Close()
}

// Allocator is the allocator interface of Arrow (memory.Allocator of
// arrow-go), restated so that this package needs only the standard library.
type Allocator interface {
	Allocate(size int) []byte
	Reallocate(size int, b []byte) []byte
	Free(b []byte)
}

// Allocator returns an Allocator whose buffers above PoolMin bytes come from
// b's pool (cleared, as Arrow expects) and go back to it when freed; smaller
// ones come from small. Decoded data then lands in memory earlier chunks
// already faulted in. The pooled buffers are not charged to the budget: the
// caller counts what it allocates and commits it to its lease.
func (b *Budget) Allocator(small Allocator) Allocator {
	return &poolAllocator{p: &b.pool, small: small}
}

type poolAllocator struct {
	p     *pool
	small Allocator
}

func (a *poolAllocator) Allocate(n int) []byte {
	if n <= PoolMin {
		return a.small.Allocate(n)
	}
	buf := a.p.get(n)
	clear(buf)
	return buf
}

func (a *poolAllocator) Reallocate(n int, old []byte) []byte {
	if n <= PoolMin && len(old) <= PoolMin {
		return a.small.Reallocate(n, old)
	}
	buf := a.Allocate(n)
	copy(buf, old)
	a.Free(old)
	return buf
}

// Free routes by length as Allocate did: Arrow hands back the slice
// Allocate returned, whose length gives its class. A slice too short for
// its class was not handed out by the pool as it is: the pool forgets the
// class's bytes and abandons the slice (see Lease.Abandon) rather than fail.
func (a *poolAllocator) Free(buf []byte) {
	if len(buf) <= PoolMin {
		a.small.Free(buf)
		return
	}
	c := poolClass(len(buf))
	if cap(buf) < c {
		a.p.forget(c, buf)
		return
	}
	a.p.put(buf[:c:c])
}
