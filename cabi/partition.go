package cabi

import (
	"sync"
	"sync/atomic"

	"github.com/remote-segments/remote_segments/scanner"
)

// partitions gives the 2.0 edition's partition of each thread's rows: the
// batch index and segment of the batch a thread fills from. A thread's
// batches get increasing indexes (one counter for the scan, taken when the
// thread starts on a batch), so every thread's indexes increase, as DuckDB
// requires, and each index covers rows of one chunk: one segment.
type partitions struct {
	batches atomic.Int64 // batch indexes handed out

	mu      sync.Mutex
	threads map[*threadState]threadBatch
}

// threadBatch is the batch a thread fills from and the batch index it got.
type threadBatch struct {
	batch *scanner.Batch
	index int64
	seg   string
}

// of returns the batch index and segment of the rows t's last fill
// produced.
func (p *partitions) of(t *threadState) (int64, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.threads == nil {
		p.threads = map[*threadState]threadBatch{}
	}
	cur := p.threads[t]
	if t.batch != nil && t.batch != cur.batch {
		cur = threadBatch{batch: t.batch, index: p.batches.Add(1), seg: t.batch.Chunk.SegmentID}
		p.threads[t] = cur
	}
	return cur.index, cur.seg
}
