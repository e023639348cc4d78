package scanner

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
)

// Bind ahead of its listing: a glob or prefix over a store that lists by
// folder (S3) takes a round trip per level of its listing, and more than
// one page takes two at least. The listing's first page holds the
// source's first objects (store.GlobFirst), so bind starts on them as soon
// as that page is in: it reads the first chunk's schema and starts its
// prefetches (prefetch.go) while the rest is listed, instead of one round
// trip after the listing. Once the listing is done, bind takes what was
// read only if the source's first chunk is the one it was read from, and
// whether the chunks are fetched ahead is as it was; else it drops it and
// reads again. A prefetch is taken by a scan only for the chunk it was
// made for (takePrefetch checks the URL and range), so a listing that
// changed between its pages, or a server that sends a page out of order,
// costs requests, never a wrong chunk.
//
// Not with union_by_name (bind reads every chunk's schema after the
// listing) nor with a local cache (whose use at bind starts after the
// listing).

// bindAhead is bind's work on the listing's first page.
type bindAhead struct {
	ctx    context.Context // the statement's: prefetches outlive bind
	cancel context.CancelFunc
	plan   *Plan // the plan of the first page's chunks: its prefetches and schema reads
	mu     sync.Mutex
	begun  bool
	done   chan struct{}
	// Set before done is closed:
	head  Chunk
	ahead bool
	first boundChunk
	err   error
}

// newBindAhead prepares bind's work on the first page of cfg's listing
// for the plan with query id id, or returns nil where bind does not work
// ahead of its listing.
func newBindAhead(ctx context.Context, cfg *Config, id uint64) *bindAhead {
	if cfg.UnionByName || cfg.CacheDir != "" {
		return nil
	}
	a := &bindAhead{ctx: ctx, done: make(chan struct{})}
	a.plan = &Plan{cfg: *cfg, id: id}
	return a
}

// start begins bind's work on chunks, the listing's first page: once, on
// a goroutine of its own (the listing's must not block).
func (a *bindAhead) start(chunks *Chunks) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.begun || chunks.Len() == 0 && chunks.Dropped() == 0 {
		return
	}
	a.begun = true
	var sctx context.Context
	sctx, a.cancel = context.WithCancel(a.ctx)
	p := a.plan
	p.Chunks = chunks
	a.head = chunks.First()
	p.home = a.head.URL
	a.ahead = !p.cfg.PruneAfterBind && fetchesAhead(&p.cfg, chunks)
	go func() {
		defer close(a.done)
		defer func() {
			if r := recover(); r != nil {
				a.err = fmt.Errorf("remote_segments: internal error (panic) while binding ahead of the listing: %v\n%s", r, debug.Stack())
			}
		}()
		if n := a.head.WireLength(); a.ahead && n > 0 && n <= bindWholeMax {
			p.startPrefetch(a.ctx)
		}
		a.first, a.err = p.readSchema(sctx, &a.head, a.ahead)
	}()
}

// take waits for the work on the first page and hands it to p, whose first
// chunk is head and fetches ahead if ahead: its prefetches and what
// reading head's schema gave (taken). It returns false, having dropped the work,
// if there is none or it was not on head, or not as ahead says. Safe on
// nil.
func (a *bindAhead) take(p *Plan, head *Chunk, ahead bool) (boundChunk, bool, error) {
	if a == nil {
		return boundChunk{}, false, nil
	}
	a.mu.Lock()
	begun := a.begun
	a.mu.Unlock()
	if !begun {
		return boundChunk{}, false, nil
	}
	<-a.done
	a.cancel()
	if a.head.URL != head.URL || a.head.Offset != head.Offset || a.head.WireLength() != head.WireLength() || a.head.Row != head.Row || a.ahead != ahead {
		a.plan.dropPrefetch(nil)
		return boundChunk{}, false, nil
	}
	p.prefetched = a.plan.prefetched
	p.schemaRequests += a.plan.schemaRequests
	p.schemaBytes += a.plan.schemaBytes
	return a.first, true, a.err
}

// stop ends the work on the first page, if any, and drops its prefetches:
// bind failed. Safe on nil.
func (a *bindAhead) stop() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.begun = true // no start after this one
	started := a.cancel != nil
	a.mu.Unlock()
	if !started {
		return
	}
	a.cancel()
	<-a.done
	a.plan.dropPrefetch(nil)
}
