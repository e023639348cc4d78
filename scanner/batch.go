package scanner

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/remote-segments/remote_segments/budget"
)

// Batch is one decoded record batch of one chunk, consumed by one thread at a
// time in slices of at most a DuckDB vector.
type Batch struct {
	Chunk  *Chunk
	Record arrow.RecordBatch
	cols   []int // plan field → record column, -1 if not read; nil: the same index
	pos    int64 // rows already taken
	share  int64 // this batch's bytes of the chunk's lease, given back at Close
	cl     *chunkLease
	scan   *Scan
	mapped bool // some buffers are a file's mapping (see mmap.go)
}

// Mapped reports whether some of the batch's buffers are a mapping of a
// local file, which another process may change or truncate under the scan:
// a reader must check every offset it follows, and survive SIGBUS.
func (b *Batch) Mapped() bool { return b.mapped }

// Column returns the array of plan field f, or nil if the batch does not
// hold it (a field the scan was not asked for).
func (b *Batch) Column(f int) arrow.Array {
	if b.cols == nil {
		return b.Record.Column(f)
	}
	if j := b.cols[f]; j >= 0 {
		return b.Record.Column(j)
	}
	return nil
}

// Take hands out the next at most max rows: it returns the first row and the
// count, 0 when the batch is used up.
func (b *Batch) Take(max int64) (start, n int64) {
	start = b.pos
	n = min(max, b.Record.NumRows()-b.pos)
	b.pos += n
	return start, n
}

// Consumed tells the batch the caller has copied n rows out. It gives
// nothing back to the budget: the batch's arrays stay allocated until
// Close frees them, and the budget counts what is live.
func (b *Batch) Consumed(n int64) {}

// Close releases the batch's memory and what it still holds of the budget.
// It is idempotent and safe on nil.
func (b *Batch) Close() {
	if b == nil || b.Record == nil {
		return
	}
	b.Record.Release()
	b.Record = nil
	if b.cl == nil {
		return
	}
	b.cl.mu.Lock()
	if b.share > 0 {
		b.cl.lease.Release(b.share)
		b.share = 0
		b.scan.trace.budget(b.scan.budget)
	}
	if b.cl.open--; b.cl.open == 0 {
		if b.mapped {
			// munmap tears down the chunk's page tables and waits for the
			// other CPUs to flush their TLBs, a visible share of a local
			// scan's wall time when it runs on the consumer's thread (see
			// BENCHMARKS.md, "Figures behind the code"). Off it, then; the
			// bytes go back to the budget once the pages are gone.
			b.scan.unmaps.Add(1)
			go func(l *budget.Lease) {
				defer b.scan.unmaps.Done()
				l.Close()
			}(b.cl.lease)
		} else {
			b.cl.lease.Close() // rounding leftovers
		}
	}
	b.cl.mu.Unlock()
}
