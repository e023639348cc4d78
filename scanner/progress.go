package scanner

import (
	"sync"
	"sync/atomic"
)

// progress is the share of a scan's bytes handed out by Next: what the 2.0
// edition reports to DuckDB's progress bar and remote_segments_stats() shows.
// A chunk's bytes count as delivered when its first batch is handed out; the
// end of the scan delivers the rest (chunks that decoded to no batch). A
// chunk's bytes are its wire length from the catalog or listing; a chunk of
// unknown length counts as the average of the known ones (1 when none is
// known).
type progress struct {
	chunks    *Chunks
	avg       int64 // the weight of a chunk of unknown length
	total     int64
	delivered atomic.Int64

	mu       sync.Mutex
	counted  []uint64 // bit i: chunk i's bytes are delivered
	finished bool     // the end of the scan delivered the rest
}

// newProgress weighs chunks. It holds a bit per chunk, not a weight: a
// chunk's weight is found again from the list when it is delivered.
func newProgress(chunks *Chunks) *progress {
	p := &progress{chunks: chunks, counted: make([]uint64, (chunks.Len()+63)/64)}
	var known, n int64
	for i := range chunks.Len() {
		if w := chunks.WireLength(i); w > 0 {
			known += w
			n++
		}
	}
	p.avg = 1
	if n > 0 {
		p.avg = max(1, known/n)
	}
	p.total = known + (int64(chunks.Len())-n)*p.avg
	return p
}

// handedOut counts what Next returned: b's chunk once, and at the end of the
// scan (a nil batch and no error) every chunk not counted yet.
func (p *progress) handedOut(b *Batch, err error) {
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	if b == nil {
		p.finished = true
		p.delivered.Store(p.total)
		return
	}
	i, ok := p.chunks.IndexOfRow(b.Chunk.Row)
	if !ok || p.counted[i/64]&(1<<(i%64)) != 0 {
		return
	}
	p.counted[i/64] |= 1 << (i % 64)
	w := p.chunks.WireLength(i)
	if w <= 0 {
		w = p.avg
	}
	p.delivered.Add(w)
}

// fraction is the share of the scan's bytes delivered, from 0 to 1.
func (p *progress) fraction() float64 {
	if p.total == 0 {
		return 1
	}
	return min(1, float64(p.delivered.Load())/float64(p.total))
}
