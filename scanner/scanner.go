// Package scanner turns a remote_segments source into a stream of Arrow record
// batches for the table function's threads.
//
// Bind resolves the source into catalog rows (chunks) and reads the schema of
// the first chunk; Start begins a Scan; every DuckDB thread calls Next for the
// next batch and Close on it when its rows are copied out.
package scanner

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Config holds the parameters of one scan. A zero Config is not valid: Source
// is required.
type Config struct {
	Source    string
	Allocator memory.Allocator // for decoded buffers; nil means memory.DefaultAllocator
	// DebugPanic makes the scan panic at a stage ("bind" or "next"). Tests use
	// it to prove that a panic becomes a DuckDB error instead of a crash.
	DebugPanic string
}

// Output column positions before the chunks' own columns.
const (
	ColSegmentID = 0
	ColChunkID   = 1
	NumMetaCols  = 2
)

// Plan is a bound scan: the chunks to read and the schema they share.
type Plan struct {
	cfg    Config
	Chunks []Chunk
	Schema *arrow.Schema // schema of the first chunk
}

// Bind resolves cfg.Source and reads the first chunk's schema. On failure it
// returns an error naming the source or the chunk at fault.
func Bind(ctx context.Context, cfg Config) (*Plan, error) {
	if cfg.Allocator == nil {
		cfg.Allocator = memory.DefaultAllocator
	}
	if cfg.DebugPanic == "bind" {
		panic("remote_segments: debug_panic at bind")
	}
	chunks, err := resolveSource(cfg.Source)
	if err != nil {
		return nil, err
	}
	p := &Plan{cfg: cfg, Chunks: chunks}
	schema, batches, _, err := p.load(ctx, &chunks[0])
	if err != nil {
		return nil, err
	}
	for _, b := range batches {
		b.Release()
	}
	p.Schema = schema
	return p, nil
}

// load reads and decodes one whole chunk and says how many bytes it read.
// The batches belong to the caller.
func (p *Plan) load(ctx context.Context, c *Chunk) (*arrow.Schema, []arrow.RecordBatch, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	data, err := os.ReadFile(c.URL)
	if err != nil {
		return nil, nil, 0, &ChunkError{Chunk: c, Err: unwrapPathError(err)}
	}
	if c.Offset > 0 || c.Length >= 0 {
		end := int64(len(data))
		if c.Length >= 0 {
			end = c.Offset + c.Length
		}
		if end > int64(len(data)) {
			return nil, nil, 0, &ChunkError{Chunk: c, Err: fmt.Errorf("%w: range %d+%d beyond object size %d", ErrBadChunk, c.Offset, c.Length, len(data))}
		}
		data = data[c.Offset:end]
	}
	schema, batches, err := decodeIPC(data, p.cfg.Allocator)
	if err != nil {
		return nil, nil, 0, &ChunkError{Chunk: c, Err: err}
	}
	return schema, batches, int64(len(data)), nil
}

// Stats describes a finished or running scan.
type Stats struct {
	Chunks    int64
	Batches   int64
	Rows      int64
	WireBytes int64
	Wall      time.Duration
}

// Scan is a running scan. Next and Close are safe for concurrent use.
type Scan struct {
	id     int64
	plan   *Plan
	ctx    context.Context
	cancel context.CancelFunc
	start  time.Time

	mu    sync.Mutex
	next  int      // next chunk to load
	ready []*Batch // decoded batches not yet handed out
	err   error    // first error; every later Next returns it

	chunks, batches, rows, wire atomic.Int64
}

// Start begins scanning. The scan ends when ctx is cancelled or Close is called.
func (p *Plan) Start(ctx context.Context) *Scan {
	ctx, cancel := context.WithCancel(ctx)
	s := &Scan{plan: p, ctx: ctx, cancel: cancel, start: time.Now()}
	register(s)
	return s
}

// MaxThreads is how many threads can usefully call Next at once.
func (s *Scan) MaxThreads() int { return len(s.plan.Chunks) }

// Next returns the next batch, or nil at the end of the scan. The caller owns
// the batch and must Close it. After an error every call returns that error.
func (s *Scan) Next() (*Batch, error) {
	if s.plan.cfg.DebugPanic == "next" {
		panic("remote_segments: debug_panic at next")
	}
	for {
		s.mu.Lock()
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		if len(s.ready) > 0 {
			b := s.ready[0]
			s.ready = s.ready[1:]
			s.mu.Unlock()
			return b, nil
		}
		if s.next >= len(s.plan.Chunks) {
			s.mu.Unlock()
			return nil, nil
		}
		c := &s.plan.Chunks[s.next]
		s.next++
		s.mu.Unlock()

		batches, err := s.loadChecked(c)
		s.mu.Lock()
		if err != nil {
			if s.err == nil {
				s.err = err
			}
		} else {
			for _, rb := range batches {
				s.ready = append(s.ready, &Batch{Chunk: c, Record: rb})
			}
		}
		s.mu.Unlock()
	}
}

func (s *Scan) loadChecked(c *Chunk) ([]arrow.RecordBatch, error) {
	schema, batches, wire, err := s.plan.load(s.ctx, c)
	if err != nil {
		return nil, err
	}
	s.wire.Add(wire)
	if !schema.Equal(s.plan.Schema) {
		for _, b := range batches {
			b.Release()
		}
		return nil, &ChunkError{Chunk: c, Err: fmt.Errorf("%w: schema %s differs from the first chunk's (%s): %s",
			ErrBadChunk, schema, s.plan.Chunks[0].URL, s.plan.Schema)}
	}
	s.chunks.Add(1)
	for _, b := range batches {
		s.batches.Add(1)
		s.rows.Add(b.NumRows())
	}
	return batches, nil
}

// Close cancels the scan and frees every batch not handed out. It is
// idempotent and returns the scan's statistics.
func (s *Scan) Close() Stats {
	s.cancel()
	s.mu.Lock()
	for _, b := range s.ready {
		b.Close()
	}
	s.ready = nil
	state := "done"
	switch {
	case s.err != nil:
		state = "error"
	case s.next < len(s.plan.Chunks):
		state = "cancelled" // ended early: a LIMIT or an interrupt
	}
	if s.err == nil {
		s.err = context.Canceled
	}
	s.mu.Unlock()
	info := s.info(state)
	unregister(s, info)
	return info.Stats
}

func (s *Scan) info(state string) ScanInfo {
	i := ScanInfo{ID: s.id, Source: s.plan.cfg.Source, State: state, Stats: s.Stats()}
	if state == "error" {
		s.mu.Lock()
		i.Error = s.err.Error()
		s.mu.Unlock()
	}
	return i
}

// Stats returns a snapshot of the scan's counters.
func (s *Scan) Stats() Stats {
	return Stats{
		Chunks:    s.chunks.Load(),
		Batches:   s.batches.Load(),
		Rows:      s.rows.Load(),
		WireBytes: s.wire.Load(),
		Wall:      time.Since(s.start),
	}
}

// Batch is one decoded record batch of one chunk, consumed by one thread at a
// time in slices of at most a DuckDB vector.
type Batch struct {
	Chunk  *Chunk
	Record arrow.RecordBatch
	pos    int64 // rows already taken
}

// Take hands out the next at most max rows: it returns the first row and the
// count, 0 when the batch is used up.
func (b *Batch) Take(max int64) (start, n int64) {
	start = b.pos
	n = min(max, b.Record.NumRows()-b.pos)
	b.pos += n
	return start, n
}

// Close releases the batch's memory. It is idempotent.
func (b *Batch) Close() {
	if b == nil || b.Record == nil {
		return
	}
	b.Record.Release()
	b.Record = nil
}
