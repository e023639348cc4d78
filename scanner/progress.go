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
	total     int64
	delivered atomic.Int64

	mu     sync.Mutex
	weight map[int]int64 // catalog row → bytes, for chunks not yet delivered
}

func newProgress(chunks []Chunk) *progress {
	p := &progress{weight: make(map[int]int64, len(chunks))}
	var known, n int64
	for i := range chunks {
		if w := chunks[i].WireLength(); w > 0 {
			known += w
			n++
		}
	}
	avg := int64(1)
	if n > 0 {
		avg = max(1, known/n)
	}
	for i := range chunks {
		w := chunks[i].WireLength()
		if w <= 0 {
			w = avg
		}
		p.weight[chunks[i].Row] += w
		p.total += w
	}
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
	if b == nil {
		for row, w := range p.weight {
			p.delivered.Add(w)
			delete(p.weight, row)
		}
		return
	}
	if w, ok := p.weight[b.Chunk.Row]; ok {
		p.delivered.Add(w)
		delete(p.weight, b.Chunk.Row)
	}
}

// fraction is the share of the scan's bytes delivered, from 0 to 1.
func (p *progress) fraction() float64 {
	if p.total == 0 {
		return 1
	}
	return min(1, float64(p.delivered.Load())/float64(p.total))
}
