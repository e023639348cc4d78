package scanner

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/budget"
)

// chunkLease is one chunk's budget lease, shared by its batches.
type chunkLease struct {
	mu    sync.Mutex
	lease *budget.Lease
	open  int // batches not closed
	// out is set when Next hands out the chunk's first batch; ahead is
	// the scan's lookahead slot it gives back then.
	out   atomic.Bool
	ahead chan struct{}
}

// handedOut gives the chunk's lookahead slot back, once: a consumer has
// reached the chunk.
func (cl *chunkLease) handedOut() {
	if cl != nil && cl.out.CompareAndSwap(false, true) {
		<-cl.ahead
	}
}

// countingAllocator counts the bytes an allocator holds for one chunk. It
// carries the chunk's lease (nil outside a scan), whose pooled buffers the
// chunk's fetch fills, and, until the lease is committed, makes the lease
// cover every allocation before it happens: a chunk being decoded holds its
// fetched bytes and its decoded ones at once, and what the
// reservation does not cover waits for room in the budget (Lease.Extend)
// before it is allocated.
type countingAllocator struct {
	memory.Allocator
	live  atomic.Int64
	lease *budget.Lease
	ctx   context.Context // the scan's: a cancelled scan's decode stops (errDecodeCancelled)
	maps  *mapping        // nil: the chunk is never mapped

	mu        sync.Mutex // orders allocations' Extend before the Commit
	committed bool
	charged   int64 // the lease's size: its reservation and what Extend added
	fetched   int64 // the chunk's fetched (or mapped) bytes covered so far
}

// errDecodeCancelled is the panic of an allocation whose room the scan
// was cancelled while waiting for: arrow-go's decoders have no other way
// out. Decode turns it into an error, and load into the scan's cause.
type errDecodeCancelled struct{ err error }

// The counts are of capacities: a pooled buffer is rounded up to its class,
// and those are the bytes held.
func (a *countingAllocator) Allocate(n int) []byte {
	a.cover(int64(budget.PooledSize(n)))
	b := a.Allocator.Allocate(n)
	a.live.Add(int64(cap(b)))
	return b
}

func (a *countingAllocator) Reallocate(n int, b []byte) []byte {
	was := cap(b)
	a.cover(int64(budget.PooledSize(n) - was))
	b = a.Allocator.Reallocate(n, b)
	a.live.Add(int64(cap(b) - was))
	return b
}

// cover makes the lease hold the chunk's bytes plus n more before they are
// allocated, waiting for room as Extend does.
func (a *countingAllocator) cover(n int64) {
	if n <= 0 || a.lease == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.committed {
		return // the lease's size is final
	}
	if need := a.fetched + a.live.Load() + n; need > a.charged {
		if err := a.lease.Extend(a.ctx, need-a.charged); err != nil {
			panic(errDecodeCancelled{err})
		}
		a.charged = need
	}
}

// commit commits to the lease the bytes the allocator holds plus retained
// (wire bytes the batches reference) and returns that size. Allocations
// after it are counted but no longer charged: the lease's size is final.
func (a *countingAllocator) commit(retained int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.committed = true
	actual := a.live.Load() + retained
	a.lease.Commit(actual)
	return actual
}

// fetching makes the lease cover n more fetched (or mapped) bytes of the
// chunk before they are fetched (or, where the size was unknown, right
// after), waiting for room as cover does: a projected read may fetch more
// than its estimate (the footer, ranges a prediction missed), and must not
// overrun the budget at Commit.
func (a *countingAllocator) fetching(n int64) {
	if a == nil || a.lease == nil || n <= 0 {
		return
	}
	a.cover(n)
	a.mu.Lock()
	a.fetched += n
	a.mu.Unlock()
}

func (a *countingAllocator) Free(b []byte) {
	a.live.Add(-int64(cap(b)))
	a.Allocator.Free(b)
}
