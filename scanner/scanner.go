// Package scanner turns a remote_segments source into a stream of Arrow record
// batches for the table function's threads, inside a memory budget: it is
// the pipeline (plan, reserve, submit, decode, ready queue, stats).
//
// The house: catalog (scanner/catalog) lists the chunks of a source; Bind
// plans them and reads the first chunk's schema; Start runs the pipeline:
// in catalog order, each chunk first reserves its estimated bytes from the
// scan's budget (blocking while the budget is full), then submits its byte
// ranges to the store domain's IO scheduler (iosched), is decoded off the
// IO workers (scanner/arrowipc), commits its measured size, and queues its
// batches. DuckDB's threads take batches with Next, release each slice's
// bytes as they copy it out (Batch.Consumed) and Close the batch; Close on
// the Scan cancels everything still running and refunds every byte.
//
// It owns the pipeline and the per-scan and per-process state (Process);
// the format of catalogs and of Arrow IPC belongs to its subpackages. It
// must not import cabi, sql or anything DuckDB: it is pure Go.
package scanner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/cache"
	"github.com/remote-segments/remote_segments/scanner/arrowipc"
)

// Plan is a bound scan: the chunks to read and the schema they share.
type Plan struct {
	cfg Config
	// Chunks are the chunks to read, held compactly (catalog.List): a
	// plan keeps them from bind to the end of its last scan.
	Chunks *Chunks
	Schema *arrow.Schema // schema of the first chunk (or the union of all, with UnionByName)
	// first is the first chunk's bytes when bind read it whole (a chunk
	// of at most bindWholeMax bytes), handed to the first Start so it is
	// not fetched twice.
	firstMu sync.Mutex
	first   []byte
	// firstLen is the first chunk's length: the wire estimate of chunks of
	// unknown length, for every Start (first is cleared once used).
	firstLen int64
	// firstPlain: bind read the first chunk's batch metadata and none of
	// its batches is compressed, so its decoded/wire ratio is known
	// without decoding it (see Scan.probe).
	firstPlain bool
	// colBytes is the first chunk's per-column body bytes when it is an
	// IPC file without dictionaries (nil otherwise): the basis for deciding
	// whether reading only some columns pays; readPlan is where a projected
	// read of a similar file finds its footer and columns.
	colBytes []int64
	bodyLen  int64
	readPlan arrowipc.ReadPlan
	// home is the URL of the source's first chunk: the store domain the
	// scan runs on and the schema's origin, even when Select dropped it.
	home string
	// pruned counts the chunks Select dropped.
	pruned int64
	// schemaRequests and schemaBytes are what bind read of the chunks for
	// the schema (set by Bind, read-only after).
	schemaRequests, schemaBytes int64
	// id is the query id of the plan's first scan, taken at bind for its
	// prefetches (prefetch.go); idUsed once a scan has it.
	id     uint64
	idUsed bool
	// prefetched holds the chunks bind fetched beside the first, by catalog row
	// (under firstMu).
	prefetched map[int]*prefetch
	// cache is the local cache of remote chunks (nil: none), and
	// cacheUses each running scan's use of it by query id, bind's
	// under the plan's id (cache.go; under firstMu).
	cache     *cache.Cache
	cacheUses map[uint64]*cacheUse
}

// scanID is the query id of a new scan of the plan: the one reserved at
// bind for the first, a fresh one for any later.
func (p *Plan) scanID() uint64 {
	p.firstMu.Lock()
	defer p.firstMu.Unlock()
	if !p.idUsed {
		p.idUsed = true
		return p.id
	}
	return p.cfg.Process.nextScanID.Add(1)
}

// Bind resolves cfg's source and reads the first chunk's schema: of an IPC
// file its footer (and its batches' metadata), of a stream its first
// message. It reads a chunk whole only where that is one request anyway
// (a chunk of at most the tail or head a schema read asks for), or where
// the scan is sure to need its bytes: when the catalog does not give every
// chunk's num_rows (so that no query is answered without the chunks) and
// no chunk can be dropped after bind (Config.PruneAfterBind), bind reads
// the first chunk whole and starts the next ones (prefetch.go). Of a glob
// or prefix whose listing takes more than one page, it does that on the
// first page, while the rest is listed (early.go). On failure it returns
// an error naming the source, the catalog row or the chunk.
func Bind(ctx context.Context, cfg Config) (*Plan, error) {
	if cfg.Allocator == nil {
		cfg.Allocator = memory.DefaultAllocator
	}
	if cfg.DebugPanic == "bind" {
		panic("remote_segments: debug_panic at bind")
	}
	// A shard's Keep is applied as the source is read: the plan never
	// holds the chunks of other shards. With union_by_name every shard
	// reads the schemas of all chunks, so that all agree on the columns.
	keep := cfg.Keep
	if cfg.UnionByName {
		cfg.Keep = nil
	}
	if cfg.Process == nil {
		return nil, ErrNoProcess
	}
	id := cfg.Process.nextScanID.Add(1)
	early := newBindAhead(ctx, &cfg, id)
	if early != nil {
		cfg.firstListed = early.start
	}
	chunks, err := resolveSource(ctx, &cfg)
	cfg.firstListed = nil
	if err != nil {
		early.stop()
		return nil, err
	}
	head := chunks.First()
	p := &Plan{cfg: cfg, Chunks: chunks, home: head.URL, id: id, pruned: int64(chunks.Dropped())}
	if cfg.CacheDir != "" {
		if p.cache, err = cfg.Process.caches.open(cfg.CacheDir, cfg.CacheSize); err != nil {
			return nil, fmt.Errorf("remote_segments: cache_dir: %w", err)
		}
		bound := newCacheUse(ctx, p.cache)
		bound.listed = true // the listing, if any, was made just now
		p.cacheUses = map[uint64]*cacheUse{p.id: bound}
	}
	ahead := !cfg.PruneAfterBind && fetchesAhead(&cfg, chunks)
	if ahead && p.cache != nil {
		p.checkVersionsAtBind(ctx, p.cacheUses[p.id])
	}
	first, taken, err := early.take(p, &head, ahead)
	if !taken {
		if n := head.WireLength(); ahead && n > 0 && n <= bindWholeMax {
			p.startPrefetch(ctx) // the first chunk is read whole: the next ones go with it
		}
		first, err = p.readSchema(ctx, &head, ahead)
	}
	if err != nil {
		p.dropPrefetch(nil)
		return nil, err
	}
	p.Schema, p.first, p.firstLen = first.schema, first.data, first.size
	p.firstPlain = first.meta.Plain
	p.colBytes, p.bodyLen, p.readPlan = first.meta.ColBytes, first.meta.BodyLen, first.meta.Plan
	if cfg.UnionByName {
		if err := p.unionSchemas(ctx); err != nil {
			return nil, err
		}
		if keep != nil {
			p.Select(keep)
		}
	}
	if chunks.Len() == 0 || chunks.Row(0) != 0 {
		p.first = nil // the first chunk is not read: do not pin its bytes
		p.firstPlain = false
	}
	return p, nil
}

// fetchesAhead reports whether chunks may be fetched before a scan asks
// for them, once no chunk can be dropped any more: when some chunk's
// num_rows is unknown (with every one known, a query of no chunk column
// reads none: see Scan.nextCounted). cfg.Keep is applied.
func fetchesAhead(cfg *Config, chunks *Chunks) bool {
	for i := range chunks.Len() {
		if chunks.NumRows(i) >= 0 {
			continue
		}
		if cfg.Keep == nil {
			return true
		}
		if c := chunks.At(i); cfg.Keep(&c) {
			return true
		}
	}
	return false
}

// Resolve lists the chunks cfg's source names (its catalog rows, the
// objects of a glob or prefix, or the LIST), as Bind would, without reading
// any chunk.
func Resolve(ctx context.Context, cfg Config) ([]Chunk, error) {
	l, err := resolveSource(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	return l.Slice(), nil
}

// Select keeps only the chunks keep returns true for and returns how many
// it dropped (the stats' Pruned). Call it before Start: the dropped chunks
// are never requested. The schema stays the source's first chunk's, so
// every selection of one source has the same columns, even an empty one.
func (p *Plan) Select(keep func(c *Chunk) bool) int {
	kept := p.Chunks.Select(keep)
	dropped := p.Chunks.Len() - kept.Len()
	if kept.Len() == 0 || kept.Row(0) != 0 {
		p.firstMu.Lock()
		p.first = nil // the first chunk is not read: do not pin its bytes
		p.firstMu.Unlock()
		// What bind saw of it says nothing of the chunk a scan starts
		// with now: that one is probed.
		p.firstPlain = false
	}
	p.dropPrefetch(kept.HasRow)
	p.Chunks = kept
	p.pruned += int64(dropped)
	return dropped
}

// fetchWhole reads chunk c's byte range in one request, run by run (the
// scheduler's Fetch at bind, the scan's accounted submit later). A known
// length is asked for exactly: one buffer of the right size, and the
// scheduler can split the range into parallel parts.
// prepare, if not nil, sets where the bytes go (iosched.Request's Buffer,
// Alloc and Map).
func (p *Plan) fetchWhole(c *Chunk, query uint64, prepare func(*iosched.Request), run func(*iosched.Scheduler, []iosched.Request) ([][]byte, error)) ([]byte, error) {
	if c.Size == 0 {
		return nil, &ChunkError{Chunk: c, Err: fmt.Errorf("%w: the object is empty", ErrBadChunk)}
	}
	h, err := openObject(c.URL, &p.cfg)
	if err != nil {
		return nil, &ChunkError{Chunk: c, Err: err}
	}
	defer h.Release()
	r := iosched.Request{Store: h.Store, Name: h.Name, Offset: c.Offset, Length: c.WireLength(),
		Priority: iosched.Priority{Query: query, Seq: int64(c.Row)}}
	if prepare != nil {
		prepare(&r)
	}
	data, err := p.viaCache(p.cacheUseOf(query), c, prepare, run)(h.Scheduler, []iosched.Request{r})
	if err != nil {
		return nil, &ChunkError{Chunk: c, Err: err}
	}
	return data[0], nil
}

// fetchAtBind is fetchWhole before any scan runs.
func (p *Plan) fetchAtBind(ctx context.Context, c *Chunk) ([]byte, error) {
	return p.fetchWhole(c, 0, nil, func(s *iosched.Scheduler, reqs []iosched.Request) ([][]byte, error) {
		return p.fetchSchema(ctx, s, reqs)
	})
}

// fetchSchema runs bind's requests for a schema, counting them.
func (p *Plan) fetchSchema(ctx context.Context, s *iosched.Scheduler, reqs []iosched.Request) ([][]byte, error) {
	data, err := s.Fetch(ctx, reqs)
	p.schemaRequests += int64(len(reqs))
	for _, b := range data {
		p.schemaBytes += int64(len(b))
	}
	return data, err
}

// bindWholeMax is the largest chunk bind reads whole for its schema (one
// round trip, and the first Start decodes those bytes instead of fetching
// them again). Of a larger IPC file, bind reads only the footer and the
// batches' metadata (two round trips of a few KiB): its bytes would
// otherwise sit outside the scan's budget and buffer pool from bind until
// the scan had consumed them, then wait for the garbage collector (W1 of
// BENCHMARKS.md: a 61 MB buffer beside a 64 MiB budget).
const bindWholeMax = 4 << 20

// boundChunk is what bind learned of one chunk.
type boundChunk struct {
	schema *arrow.Schema
	meta   arrowipc.FileMeta // zero unless the chunk is an IPC file without dictionaries
	data   []byte            // the chunk's bytes, if read whole
	size   int64             // its length
}

// readSchema reads chunk c's schema at bind. With whole, a chunk of at
// most bindWholeMax bytes is read whole (and validated whole), for the scan
// to decode; without, only a chunk of at most the schema read's guess is
// (one request either way). Of any other, bind reads only an IPC file's
// footer and batch metadata, or a stream's first message; a file with
// dictionaries, or a chunk of unknown length, is read whole.
func (p *Plan) readSchema(ctx context.Context, c *Chunk, whole bool) (boundChunk, error) {
	size := c.WireLength()
	if size > bindWholeMax || (!whole && size > min(arrowipc.TailGuess, arrowipc.HeadGuess)) {
		meta, err := p.readMetaAtBind(ctx, c, size)
		if err == nil {
			return boundChunk{schema: meta.Schema, meta: meta, size: size}, nil
		}
		if errors.Is(err, arrowipc.ErrNotFile) {
			schema, err := p.readHeadAtBind(ctx, c, size)
			if err != nil {
				return boundChunk{}, &ChunkError{Chunk: c, Err: err}
			}
			return boundChunk{schema: schema, size: size}, nil
		}
		if !errors.Is(err, arrowipc.ErrDictionaries) {
			return boundChunk{}, &ChunkError{Chunk: c, Err: err}
		}
		// A file with dictionaries: read whole below.
	}
	data, err := p.fetchAtBind(ctx, c)
	if err != nil {
		return boundChunk{}, err
	}
	schema, batches, err := arrowipc.Decode(data, p.cfg.Allocator)
	if err != nil {
		return boundChunk{}, &ChunkError{Chunk: c, Err: err}
	}
	arrowipc.ReleaseAll(batches)
	meta, _ := arrowipc.FileMetaOf(data)
	return boundChunk{schema: schema, meta: meta, data: data, size: int64(len(data))}, nil
}

// readHeadAtBind reads the schema of the IPC stream chunk c, of size
// bytes, from its first message: the chunk's first HeadGuess bytes, and
// the rest of a longer message after.
func (p *Plan) readHeadAtBind(ctx context.Context, c *Chunk, size int64) (*arrow.Schema, error) {
	h, err := openObject(c.URL, &p.cfg)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	run := p.viaCache(p.cacheUseOf(0), c, nil, func(s *iosched.Scheduler, reqs []iosched.Request) ([][]byte, error) {
		return p.fetchSchema(ctx, s, reqs)
	})
	n := min(size, arrowipc.HeadGuess)
	for {
		req := iosched.Request{Store: h.Store, Name: h.Name, Offset: c.Offset, Length: n,
			Priority: iosched.Priority{Seq: int64(c.Row)}}
		got, err := run(h.Scheduler, []iosched.Request{req})
		if err != nil {
			return nil, err
		}
		schema, need, err := arrowipc.HeadSchema(got[0])
		switch {
		case err != nil:
			return nil, err
		case need == 0:
			return schema, nil
		case need > size || need <= n:
			return nil, fmt.Errorf("%w: its schema message ends at byte %d, beyond its %d bytes", ErrBadChunk, need, size)
		}
		n = need
	}
}

// readMetaAtBind reads the footer and batch metadata of the IPC file
// chunk c, of size bytes, through its store's scheduler.
func (p *Plan) readMetaAtBind(ctx context.Context, c *Chunk, size int64) (arrowipc.FileMeta, error) {
	h, err := openObject(c.URL, &p.cfg)
	if err != nil {
		return arrowipc.FileMeta{}, err
	}
	defer h.Release()
	run := p.viaCache(p.cacheUseOf(0), c, nil, func(s *iosched.Scheduler, reqs []iosched.Request) ([][]byte, error) {
		return p.fetchSchema(ctx, s, reqs)
	})
	fetch := func(rs []arrowipc.Range) ([][]byte, error) {
		reqs := make([]iosched.Request, len(rs))
		for i, r := range rs {
			reqs[i] = iosched.Request{Store: h.Store, Name: h.Name, Offset: c.Offset + r.Offset, Length: r.Length,
				Priority: iosched.Priority{Seq: int64(c.Row)}}
		}
		return run(h.Scheduler, reqs)
	}
	meta, _, err := arrowipc.ReadFileMeta(size, fetch)
	return meta, err
}

// unionSchemas reads every chunk's schema and merges them by column name:
// the plan's schema is the first chunk's columns followed by the new
// columns of later chunks, in order. A column whose type differs between
// chunks is an error naming both.
func (p *Plan) unionSchemas(ctx context.Context) error {
	fields := append([]arrow.Field(nil), p.Schema.Fields()...)
	index := map[string]int{}
	for i, f := range fields {
		index[f.Name] = i
	}
	for i := range p.Chunks.Len() {
		if p.Chunks.Row(i) == 0 {
			continue // the first chunk: read
		}
		c := p.Chunks.At(i)
		bound, err := p.readSchema(ctx, &c, false /* its schema only */)
		if err != nil {
			return err
		}
		for _, f := range bound.schema.Fields() {
			j, ok := index[f.Name]
			if !ok {
				f.Nullable = true
				index[f.Name] = len(fields)
				fields = append(fields, f)
				continue
			}
			if !arrow.TypeEqual(fields[j].Type, f.Type) {
				return &ChunkError{Chunk: &c, Err: fmt.Errorf("%w: column %q is %s here but %s in an earlier chunk (union_by_name matches names, not types)",
					ErrBadChunk, f.Name, f.Type, fields[j].Type)}
			}
		}
	}
	p.Schema = arrow.NewSchema(fields, nil)
	return nil
}

// Stats describes a finished or running scan.
type Stats struct {
	Chunks    int64
	Batches   int64
	Rows      int64
	WireBytes int64
	Wall      time.Duration

	// IO, summed over the scan's requests.
	Requests, GETs, Retries, HedgesIssued, HedgesWon, Splits, Coalesced int64
	// IOUtilization is the average fraction of the domain's IO slots busy
	// during the scan (all queries on the domain count).
	IOUtilization float64
	Parallelism   int
	ProjectedIO   bool // only the selected columns' bytes were fetched

	Budget budget.Stats

	// RoundTrips counts the scan's sequential waves of requests, summed
	// over its chunks (a whole read is 1, a projected one up to 3).
	RoundTrips int64
	// ProjectedChunks were read column by column; ProjectionSaved is the
	// bytes of theirs that were not fetched.
	ProjectedChunks, ProjectionSaved int64
	// Pruned counts the chunks of the source that Select dropped before
	// the scan: never requested.
	Pruned int64
	// SchemaRequests and SchemaBytes are what the plan's bind read of the
	// chunks for their schema, counted in no other field.
	SchemaRequests, SchemaBytes int64
	// Progress is the share of the scan's bytes handed out by Next, from
	// 0 to 1 (progress.go).
	Progress float64
	// Throttled counts the 429/503 answers the scan's GETs got.
	Throttled int64
	// LimitMin and LimitFinal are the domain's throttling limit on
	// requests in flight: the lowest seen by the scan's requests, and the
	// limit at its end.
	LimitMin, LimitFinal int
	// BudgetLimit is the ceiling of the budget (memory_budget, its default,
	// or the process limit): its cap starts at the smaller of it and the
	// starting cap, and CapRaises counts the steps it grew by towards the ceiling
	// while the budget kept the consumers waiting.
	BudgetLimit int64
	CapRaises   int64
	// Pool is the budget's buffer pool: buffers allocated and reused.
	Pool budget.PoolStats
	// CacheHits counts the ranges read from the local cache instead of
	// the store, and CacheBytes their bytes (Config.CacheDir).
	CacheHits, CacheBytes int64
}
