package cabi

import (
	"sync"
	"sync/atomic"

	"github.com/remote-segments/remote_segments/scanner"
)

// delivery follows what a scan has handed to DuckDB: the fraction of its
// bytes delivered (its progress) and, for the 2.0 edition's partitions, the
// batch index and segment of each thread's current batch. A chunk's bytes count as delivered when its first
// batch is handed out; the end of the scan delivers the rest (chunks that
// decoded to no batch). A chunk's bytes are its wire length from the
// catalog or listing; a chunk of unknown length counts as the average of the
// known ones (1 when none is known).
type delivery struct {
	weight  map[int]int64 // catalog row → bytes, for chunks not yet delivered
	bytes   *byteProgress
	batches atomic.Int64 // batch indexes handed out

	mu      sync.Mutex
	threads map[*threadState]threadBatch
}

// byteProgress is a scan's delivered and total bytes.
type byteProgress struct {
	total     int64
	delivered atomic.Int64
}

// fraction is the share of the scan's bytes delivered, from 0 to 1.
func (p *byteProgress) fraction() float64 {
	if p.total == 0 {
		return 1
	}
	return min(1, float64(p.delivered.Load())/float64(p.total))
}

// threadBatch is the batch a thread fills from and the batch index it got.
type threadBatch struct {
	batch *scanner.Batch
	index int64
	seg   string
}

func newDelivery(chunks []scanner.Chunk) *delivery {
	d := &delivery{weight: make(map[int]int64, len(chunks)), bytes: &byteProgress{}, threads: map[*threadState]threadBatch{}}
	var known, n int64
	for i := range chunks {
		if w := chunkBytes(&chunks[i]); w > 0 {
			known += w
			n++
		}
	}
	avg := int64(1)
	if n > 0 {
		avg = max(1, known/n)
	}
	for i := range chunks {
		w := chunkBytes(&chunks[i])
		if w <= 0 {
			w = avg
		}
		d.weight[chunks[i].Row] += w
		d.bytes.total += w
	}
	return d
}

// chunkBytes is c's wire length, or -1 when the catalog does not say.
func chunkBytes(c *scanner.Chunk) int64 {
	switch {
	case c.Length >= 0:
		return c.Length
	case c.Size >= 0:
		return c.Size - c.Offset
	}
	return -1
}

// track wraps a scan's Next: it counts each batch's chunk once, and at the
// end of the scan counts the rest.
func (d *delivery) track(next func() (*scanner.Batch, error)) func() (*scanner.Batch, error) {
	return func() (*scanner.Batch, error) {
		b, err := next()
		d.mu.Lock()
		defer d.mu.Unlock()
		switch {
		case err != nil:
		case b == nil:
			for row, w := range d.weight {
				d.bytes.delivered.Add(w)
				delete(d.weight, row)
			}
		default:
			if w, ok := d.weight[b.Chunk.Row]; ok {
				d.bytes.delivered.Add(w)
				delete(d.weight, b.Chunk.Row)
			}
		}
		return b, err
	}
}

// partition returns the batch index and segment of the rows t's last fill
// produced. A thread's batches get increasing indexes (one counter for the
// scan, taken when the thread starts on a batch), so every thread's indexes
// increase, as DuckDB requires, and each index covers rows of one chunk:
// one segment.
func (d *delivery) partition(t *threadState) (int64, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.threads[t]
	if t.batch != nil && t.batch != cur.batch {
		cur = threadBatch{batch: t.batch, index: d.batches.Add(1), seg: t.batch.Chunk.SegmentID}
		d.threads[t] = cur
	}
	return cur.index, cur.seg
}

// progressBook is a Host's record (nil: none) of its scans' deliveries, by scan id, for
// remote_segments_stats(): the newest keepProgress scans.
type progressBook struct {
	mu    sync.Mutex
	scans map[uint64]*byteProgress
}

const keepProgress = 256

func (p *progressBook) add(id uint64, d *byteProgress) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.scans == nil {
		p.scans = map[uint64]*byteProgress{}
	}
	p.scans[id] = d
	if len(p.scans) > keepProgress {
		for old := range p.scans {
			if old+keepProgress <= id {
				delete(p.scans, old)
			}
		}
	}
}

// progress is scan id's delivered fraction, false when this host does not
// know the scan.
func (p *progressBook) progress(id uint64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.scans[id]
	if !ok {
		return 0, false
	}
	return d.fraction(), true
}
