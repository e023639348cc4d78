package main

// The Go contenders, each run as its own process (peers -child NAME) so that
// its peak RSS is its own. All three read the IPC chunks through the
// project's S3 store (iosched/store) in rangeSize ranges at p requests in
// flight, the concurrency remote_segments uses by default:
//
//   raw      the ceiling: p goroutines GET the next range into a small buffer
//            and drop it; no decode.
//   channel  the byte-capped channel: p fetch goroutines fill whole chunks; the
//            goroutine that completes a chunk decodes it with arrow-go and
//            sends its record batches into a channel whose byte cap counts
//            decoded bytes only (what a channel can see); one consumer sums.
//   nested   nested buffered(k): k1 segments at a time × k2 chunks at a time
//            × k3 ranges at a time (k1·k2·k3 = p), every level waiting for its
//            whole wave; decode and sum between the waves. (test/bench/iosched
//            has the same design over whole objects, in a main package that
//            cannot be imported: this one is written again, over ranges.)

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// rangeSize is remote_segments' default request_size; tests make it small.
var rangeSize int64 = 8 << 20

type childConfig struct {
	name     string
	prefix   string // s3://bucket/dataset/ipc/
	endpoint string
	p        int
	capBytes int64 // the channel's byte cap
	segments int   // for nested: chunks are grouped into this many segments
}

type chunkInfo struct {
	name string
	size int64
}

type byteRange struct {
	chunk     int
	off, size int64
}

// runChild runs one Go contender and prints its RESULT line.
func runChild(c childConfig) error {
	st, prefix, err := store.Open(c.prefix, store.Options{
		S3Endpoint: c.endpoint, S3AccessKeyID: envOr("AWS_ACCESS_KEY_ID", ""), S3SecretAccessKey: envOr("AWS_SECRET_ACCESS_KEY", ""),
		S3Region: envOr("AWS_REGION", "us-east-1"), MaxConns: c.p + c.p/8 + 1,
	})
	if err != nil {
		return err
	}
	defer st.Close()
	if c.name == "idle" { // the floor: the process with its store, reading nothing
		return nil
	}
	ctx := context.Background()
	start := time.Now()
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	var chunks []chunkInfo
	for _, o := range objs {
		if strings.HasSuffix(o.Name, ".arrow") {
			chunks = append(chunks, chunkInfo{o.Name, o.Size})
		}
	}
	if len(chunks) == 0 {
		return fmt.Errorf("no .arrow objects under %s", c.prefix)
	}
	var a answer
	var wire int64
	switch c.name {
	case "raw":
		wire, err = readRaw(ctx, st, chunks, c.p)
	case "channel":
		a, wire, err = readChannel(ctx, st, chunks, c.p, c.capBytes)
	case "nested":
		a, wire, err = readNested(ctx, st, chunks, c.p, c.segments)
	default:
		return fmt.Errorf("unknown child %q", c.name)
	}
	if err != nil {
		return err
	}
	fmt.Printf("RESULT %s wire_bytes=%d scan_ms=%.1f\n", a, wire, float64(time.Since(start).Microseconds())/1000)
	return nil
}

func ranges(chunks []chunkInfo) []byteRange {
	var rs []byteRange
	for i, ch := range chunks {
		for off := int64(0); off < ch.size; off += rangeSize {
			rs = append(rs, byteRange{i, off, min(rangeSize, ch.size-off)})
		}
	}
	return rs
}

// fetch reads r into dst (len(dst) == r.size).
func fetch(ctx context.Context, st store.Store, ch chunkInfo, r byteRange, dst []byte) error {
	body, err := st.GetRange(ctx, ch.name, r.off, r.size)
	if err != nil {
		return err
	}
	defer body.Close()
	if _, err := io.ReadFull(body, dst); err != nil {
		return fmt.Errorf("%s: %w", st.URL(ch.name), err)
	}
	return nil
}

func readRaw(ctx context.Context, st store.Store, chunks []chunkInfo, p int) (int64, error) {
	rs := ranges(chunks)
	var next atomic.Int64
	var total atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for range p {
		g.Go(func() error {
			buf := make([]byte, 256<<10)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(rs) {
					return nil
				}
				r := rs[i]
				body, err := st.GetRange(ctx, chunks[r.chunk].name, r.off, r.size)
				if err != nil {
					return err
				}
				n, err := io.CopyBuffer(io.Discard, body, buf)
				body.Close()
				if err == nil && n != r.size {
					err = fmt.Errorf("%s: short body %d of %d", st.URL(chunks[r.chunk].name), n, r.size)
				}
				if err != nil {
					return err
				}
				total.Add(n)
			}
		})
	}
	err := g.Wait()
	return total.Load(), err
}

// sumBatch adds the answer of one record batch to a.
func sumBatch(a *answer, rec arrow.RecordBatch) {
	a.Rows += rec.NumRows()
	for _, v := range rec.Column(0).(*array.Int64).Int64Values() {
		a.SumID += v
	}
	for _, v := range rec.Column(1).(*array.Float64).Float64Values() {
		a.SumX += v
	}
	strLen := func(col arrow.Array) int64 {
		s := col.(*array.String)
		if s.Len() == 0 {
			return 0
		}
		return int64(s.ValueOffset(s.Len()-1)) + int64(len(s.Value(s.Len()-1))) - int64(s.ValueOffset(0))
	}
	a.LenS += strLen(rec.Column(2))
	a.LenPayload += strLen(rec.Column(3))
}

func (a *answer) add(b answer) {
	a.Rows += b.Rows
	a.SumID += b.SumID
	a.SumX += b.SumX
	a.LenS += b.LenS
	a.LenPayload += b.LenPayload
}

// decode calls fn with every record batch of an IPC file held in data.
func decode(data []byte, fn func(arrow.RecordBatch) error) error {
	r, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return err
	}
	defer r.Close()
	for i := range r.NumRecords() {
		rec, err := r.RecordBatch(i)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

func batchBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

func readChannel(ctx context.Context, st store.Store, chunks []chunkInfo, p int, capBytes int64) (answer, int64, error) {
	rs := ranges(chunks)
	bufs := make([][]byte, len(chunks))
	left := make([]atomic.Int64, len(chunks))
	var bufMu sync.Mutex // allocates a chunk's buffer when its first range starts
	for i, ch := range chunks {
		left[i].Store((ch.size + rangeSize - 1) / rangeSize)
	}
	type item struct {
		rec  arrow.RecordBatch
		size int64
	}
	out := make(chan item, 64)
	sem := semaphore.NewWeighted(capBytes)
	var next atomic.Int64
	var wire atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range p {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(rs) {
					return nil
				}
				r := rs[i]
				bufMu.Lock()
				if bufs[r.chunk] == nil {
					bufs[r.chunk] = make([]byte, chunks[r.chunk].size)
				}
				buf := bufs[r.chunk]
				bufMu.Unlock()
				if err := fetch(gctx, st, chunks[r.chunk], r, buf[r.off:r.off+r.size]); err != nil {
					return err
				}
				wire.Add(r.size)
				if left[r.chunk].Add(-1) != 0 {
					continue
				}
				// The last range of the chunk: decode it here, as the
				// design does (CPU work on the fetch task), and send.
				err := decode(buf, func(rec arrow.RecordBatch) error {
					n := min(batchBytes(rec), capBytes) // one batch larger than the cap passes alone
					if err := sem.Acquire(gctx, n); err != nil {
						return err
					}
					rec.Retain()
					select {
					case out <- item{rec, n}:
						return nil
					case <-gctx.Done():
						rec.Release()
						sem.Release(n)
						return gctx.Err()
					}
				})
				bufMu.Lock()
				bufs[r.chunk] = nil
				bufMu.Unlock()
				if err != nil {
					return err
				}
			}
		})
	}
	var a answer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for it := range out {
			sumBatch(&a, it.rec)
			it.rec.Release()
			sem.Release(it.size)
		}
	}()
	err := g.Wait()
	close(out)
	<-done
	return a, wire.Load(), err
}

// splitNested factors p into k1 (segments) × k2 (chunks per segment) × k3
// (ranges per chunk) at a time: k3 first (a chunk's ranges), the rest near
// √ between the two outer levels.
func splitNested(p, segments, perSeg, rangesPerChunk int) (k1, k2, k3 int) {
	k3 = max(1, min(rangesPerChunk, p))
	rest := max(1, p/k3)
	k1 = int(math.Sqrt(float64(rest)))
	for k1 > 1 && rest%k1 != 0 {
		k1--
	}
	k1 = max(1, min(k1, segments))
	k2 = max(1, min(rest/k1, perSeg))
	return k1, k2, k3
}

func readNested(ctx context.Context, st store.Store, chunks []chunkInfo, p, segments int) (answer, int64, error) {
	segments = max(1, min(segments, len(chunks)))
	perSeg := (len(chunks) + segments - 1) / segments
	maxRanges := 0
	for _, ch := range chunks {
		maxRanges = max(maxRanges, int((ch.size+rangeSize-1)/rangeSize))
	}
	k1, k2, k3 := splitNested(p, segments, perSeg, maxRanges)
	var mu sync.Mutex
	var total answer
	var wire atomic.Int64
	chunk := func(ctx context.Context, i int) ([]byte, error) {
		ch := chunks[i]
		buf := make([]byte, ch.size)
		var rs []byteRange
		for off := int64(0); off < ch.size; off += rangeSize {
			rs = append(rs, byteRange{i, off, min(rangeSize, ch.size-off)})
		}
		for w := 0; w < len(rs); w += k3 { // buffered(k3) over the ranges
			g, gctx := errgroup.WithContext(ctx)
			for _, r := range rs[w:min(w+k3, len(rs))] {
				g.Go(func() error { return fetch(gctx, st, ch, r, buf[r.off:r.off+r.size]) })
			}
			if err := g.Wait(); err != nil {
				return nil, err
			}
		}
		wire.Add(ch.size)
		return buf, nil
	}
	segment := func(ctx context.Context, s int) error {
		ids := make([]int, 0, perSeg)
		for i := s * perSeg; i < min((s+1)*perSeg, len(chunks)); i++ {
			ids = append(ids, i)
		}
		for w := 0; w < len(ids); w += k2 { // buffered(k2) over the chunks
			wave := ids[w:min(w+k2, len(ids))]
			data := make([][]byte, len(wave))
			g, gctx := errgroup.WithContext(ctx)
			for k, i := range wave {
				g.Go(func() (err error) { data[k], err = chunk(gctx, i); return err })
			}
			if err := g.Wait(); err != nil {
				return err
			}
			var a answer
			for _, d := range data { // decode between the awaits
				if err := decode(d, func(rec arrow.RecordBatch) error { sumBatch(&a, rec); return nil }); err != nil {
					return err
				}
			}
			mu.Lock()
			total.add(a)
			mu.Unlock()
		}
		return nil
	}
	segIDs := make([]int, segments)
	for i := range segIDs {
		segIDs[i] = i
	}
	for w := 0; w < segments; w += k1 { // buffered(k1) over the segments
		g, gctx := errgroup.WithContext(ctx)
		for _, s := range segIDs[w:min(w+k1, segments)] {
			g.Go(func() error { return segment(gctx, s) })
		}
		if err := g.Wait(); err != nil {
			return answer{}, 0, err
		}
	}
	return total, wire.Load(), nil
}

// nestedShape describes the nested design's factors for the report.
func nestedShape(p, segments, chunks int, chunkSize int64) string {
	perSeg := (chunks + segments - 1) / segments
	k1, k2, k3 := splitNested(p, segments, perSeg, int((chunkSize+rangeSize-1)/rangeSize))
	return fmt.Sprintf("buffered(%d) segments × buffered(%d) chunks × buffered(%d) ranges", k1, k2, k3)
}
