package scanner

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
)

// Prefetches: while bind reads the first chunk for its schema, the next
// chunks that a scan would read whole are requested too, so that the
// scan's first wave leaves with bind's request instead of one round trip
// after it. Behind a store's latency that round trip is most of what a
// scan of many small objects loses against a plain loop of GETs (see
// BENCHMARKS.md, "Figures behind the code").
//
// They are a bet that the scan will read those chunks, made only where
// nothing the plan learns later can lose it: not when the catalog gives
// every chunk's num_rows (a count(*) then reads no chunk), and not for a
// host that prunes after bind (Config.PruneAfterBind: the 2.0 edition's
// filter pushdown, which runs just before the scan starts, so that
// prefetching after it would gain nothing). There bind reads the first
// chunk's schema only. A LIMIT can still leave them unread: they are
// fewer than max_parallel_io, by which a LIMIT may overshoot anyway.
//
// They are bounded so that a plan that is never started (DESCRIBE, a
// prepared statement) costs little: at most max_parallel_io - 1 chunks,
// each small enough that bind would read it whole, together at most a
// quarter of the starting cap's floor (16 MiB) and of memory_budget, and a
// sixteenth of the process memory limit. Their requests carry the query id
// the plan's first scan will have, so once it starts they count in its
// max_parallel_io share. The first Start adopts them (and their IO
// counters); Select drops those of chunks it drops, Close of a scan drops
// what it did not use, and a failed fetch is simply fetched again by the
// scan, which reports its error.

// prefetch is one chunk bind started fetching whole.
type prefetch struct {
	url          string
	offset, size int64
	cancel       context.CancelFunc // stops its request (a chunk dropped before the scan used it)
	done         chan struct{}      // closed when data, err and st are set
	data         []byte
	err          error
	st           iosched.BatchStats
}

// startPrefetch requests, beside the first chunk, the chunks after it that a
// scan reads whole, under ctx (the statement's).
func (p *Plan) startPrefetch(ctx context.Context) {
	cfg := &p.cfg
	if cfg.UnionByName || p.Chunks.Len() < 2 {
		return
	}
	parallel := p.bindParallelism()
	if parallel == 0 {
		return // bind reports why
	}
	// A quarter of the smallest cap a scan starts with (the starting cap's floor)
	// and of memory_budget: before the scan reserves them, these bytes are
	// outside its budget.
	maxBytes := int64(budget.DefaultMin / 4)
	if cfg.startingCapFloor > 0 {
		maxBytes = cfg.startingCapFloor / 4
	}
	if cfg.MemoryBudget > 0 {
		maxBytes = min(maxBytes, cfg.MemoryBudget/4)
	}
	if cfg.Process.Memory != nil {
		maxBytes = min(maxBytes, cfg.Process.Memory.Stats().Cap/16)
	}
	var picked []Chunk
	var total int64
	for i := 0; i < p.Chunks.Len() && len(picked) < parallel-1; i++ {
		if p.Chunks.Row(i) == 0 {
			continue // bind reads it
		}
		c := p.Chunks.At(i) // a shard's: Bind's Keep dropped the others
		n := c.WireLength()
		if n <= 0 || n > bindWholeMax || total+n > maxBytes {
			break
		}
		total += n
		picked = append(picked, c)
	}
	if len(picked) == 0 {
		return
	}
	p.prefetched = make(map[int]*prefetch, len(picked))
	for _, c := range picked {
		e := &prefetch{url: c.URL, offset: c.Offset, size: c.WireLength(), done: make(chan struct{})}
		ctx, cancel := context.WithCancel(ctx)
		e.cancel = cancel
		p.prefetched[c.Row] = e
		go func(c Chunk) {
			defer cancel()
			defer close(e.done)
			// No scan yet to fail: a panic is the prefetch's error, and the
			// scan fetches the chunk itself, reporting what it meets.
			defer func() {
				if r := recover(); r != nil {
					e.data, e.err = nil, fmt.Errorf("remote_segments: internal error (panic) in a prefetch: %v\n%s", r, debug.Stack())
				}
			}()
			if p.cfg.DebugPanic == "prefetch" {
				panic("debug_panic at prefetch")
			}
			// The bytes go into a buffer of the capacity the scan's pool
			// hands out for them, which the scan then adopts
			// (budget.Lease.Adopt) instead of copying them into fresh
			// pooled memory.
			var into []byte
			prepare := func(r *iosched.Request) {
				if n := int(r.Length); n > budget.PoolMin {
					into = make([]byte, n, budget.PooledSize(n))
					r.Buffer = into
				}
			}
			e.data, e.err = p.fetchWhole(&c, p.id, prepare, func(s *iosched.Scheduler, reqs []iosched.Request) ([][]byte, error) {
				b := s.Submit(ctx, reqs)
				data, err := b.Wait()
				e.st = b.Stats()
				return data, err
			})
			if e.err == nil && len(e.data) > 0 && len(into) >= len(e.data) && &e.data[0] == &into[0] {
				e.data = into[:len(e.data)] // its capacity, which the scheduler's slice cuts to its length
			}
		}(c)
	}
}

// bindParallelism is the scan's max_parallel_io on the first chunk's
// scheduler, as bind's requests ahead (prefetches, version checks) count
// it; 0 if that chunk's store cannot be opened (bind reports it).
func (p *Plan) bindParallelism() int {
	if n := p.cfg.MaxParallelIO; n > 0 {
		return n
	}
	h, err := openObject(p.home, &p.cfg)
	if err != nil {
		return 0
	}
	defer h.Release()
	return h.Scheduler.Parallelism()
}

// takePrefetch hands chunk c's prefetch to the caller, once (nil: none).
func (p *Plan) takePrefetch(c *Chunk) *prefetch {
	p.firstMu.Lock()
	defer p.firstMu.Unlock()
	e := p.prefetched[c.Row]
	if e == nil || e.url != c.URL || e.offset != c.Offset || e.size != c.WireLength() {
		return nil
	}
	delete(p.prefetched, c.Row)
	return e
}

// prefetches reports whether bind fetches chunk c (takePrefetch would
// hand it over).
func (p *Plan) prefetches(c *Chunk) bool {
	p.firstMu.Lock()
	defer p.firstMu.Unlock()
	e := p.prefetched[c.Row]
	return e != nil && e.url == c.URL && e.offset == c.Offset && e.size == c.WireLength()
}

// dropPrefetch forgets the prefetches keep returns false for (nil: all)
// and cancels their requests if still running.
func (p *Plan) dropPrefetch(keep func(row int) bool) {
	p.firstMu.Lock()
	defer p.firstMu.Unlock()
	for row, e := range p.prefetched {
		if keep == nil || !keep(row) {
			e.cancel()
			delete(p.prefetched, row)
		}
	}
}

// adoptPrefetch waits for chunk c's prefetch, if bind started one, and
// returns its bytes with its IO counted as the scan's (nil: fetch it).
func (s *Scan) adoptPrefetch(c *Chunk) []byte {
	e := s.plan.takePrefetch(c)
	if e == nil {
		return nil
	}
	select {
	case <-e.done:
	case <-s.ctx.Done():
		return nil // the scan's own fetch reports the cancellation
	}
	s.count(e.st)
	if e.err != nil {
		return nil // fetched again, and its error (if it persists) reported then
	}
	return e.data
}
