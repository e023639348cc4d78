// Package datagen writes sample datasets of Arrow IPC chunks and computes,
// while writing, the aggregates a correct scan must return.
package datagen

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Spec says how large a dataset to write. Chunks alternate between the IPC
// file and stream formats and hold several record batches each.
type Spec struct {
	Segments         int
	ChunksPerSegment int
	RowsPerChunk     int // the k-th chunk of a segment has RowsPerChunk + 517*k rows
	BatchesPerChunk  int
	Seed             uint64
}

// DefaultSpec is the demo's dataset: small, but every chunk crosses DuckDB's
// 2048-row vector boundary at a different place.
var DefaultSpec = Spec{Segments: 4, ChunksPerSegment: 3, RowsPerChunk: 3000, BatchesPerChunk: 3, Seed: 42}

// Schema is the schema of every chunk.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// SegmentStats are the aggregates of one segment, computed from the values as
// they were generated.
type SegmentStats struct {
	Segment                   string
	Rows                      int64
	SumX, MinX, MaxX, NullX   int64
	SumI                      int64
	SumD                      float64 // values are multiples of 0.25: sums are exact in any order
	TrueB, NullB, NullS, LenS int64
}

// Write writes the dataset under dir as dir/chunks/segment=sN/chunk-K.arrow
// and the expected aggregates as dir/expected.csv; it returns them too.
func Write(dir string, spec Spec) ([]SegmentStats, error) {
	rng := rand.New(rand.NewPCG(spec.Seed, 0x5eed))
	var stats []SegmentStats
	for s := 0; s < spec.Segments; s++ {
		st := SegmentStats{Segment: fmt.Sprintf("s%d", s), MinX: 1<<63 - 1, MaxX: -1 << 63}
		segDir := filepath.Join(dir, "chunks", "segment="+st.Segment)
		if err := os.MkdirAll(segDir, 0o755); err != nil {
			return nil, err
		}
		for k := 0; k < spec.ChunksPerSegment; k++ {
			rows := spec.RowsPerChunk + 517*k
			recs := makeBatches(rng, rows, max(1, spec.BatchesPerChunk), &st)
			path := filepath.Join(segDir, fmt.Sprintf("chunk-%d.arrow", k))
			err := WriteChunk(path, recs, (s+k)%2 == 0)
			for _, r := range recs {
				r.Release()
			}
			if err != nil {
				return nil, err
			}
		}
		stats = append(stats, st)
	}
	return stats, writeExpected(filepath.Join(dir, "expected.csv"), stats)
}

func makeBatches(rng *rand.Rand, rows, nb int, st *SegmentStats) []arrow.RecordBatch {
	mem := memory.DefaultAllocator
	var out []arrow.RecordBatch
	per := rows / nb
	for b := 0; b < nb; b++ {
		n := per
		if b == nb-1 {
			n = rows - per*(nb-1)
		}
		bld := array.NewRecordBuilder(mem, Schema)
		xb := bld.Field(0).(*array.Int64Builder)
		ib := bld.Field(1).(*array.Int32Builder)
		db := bld.Field(2).(*array.Float64Builder)
		bb := bld.Field(3).(*array.BooleanBuilder)
		sb := bld.Field(4).(*array.StringBuilder)
		for r := 0; r < n; r++ {
			st.Rows++
			if rng.IntN(7) == 0 {
				xb.AppendNull()
				st.NullX++
			} else {
				x := rng.Int64N(2_000_000) - 1_000_000
				xb.Append(x)
				st.SumX += x
				st.MinX = min(st.MinX, x)
				st.MaxX = max(st.MaxX, x)
			}
			i := int32(rng.IntN(1000))
			ib.Append(i)
			st.SumI += int64(i)
			d := float64(rng.IntN(4000)) * 0.25
			db.Append(d)
			st.SumD += d
			switch rng.IntN(5) {
			case 0:
				bb.AppendNull()
				st.NullB++
			case 1, 2:
				bb.Append(true)
				st.TrueB++
			default:
				bb.Append(false)
			}
			if rng.IntN(11) == 0 {
				sb.AppendNull()
				st.NullS++
			} else {
				// Short strings are inlined by DuckDB, long ones are not: have both.
				s := strings.Repeat("ab", rng.IntN(12)) + strconv.Itoa(r)
				sb.Append(s)
				st.LenS += int64(len(s))
			}
		}
		out = append(out, bld.NewRecordBatch())
		bld.Release()
	}
	return out
}

// WriteChunk writes recs as one Arrow IPC file (fileFormat) or stream.
func WriteChunk(path string, recs []arrow.RecordBatch, fileFormat bool) error {
	return writeChunkOpts(path, recs, fileFormat)
}

func writeChunkOpts(path string, recs []arrow.RecordBatch, fileFormat bool, opts ...ipc.Option) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	type writer interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	var w writer
	if fileFormat {
		w, err = ipc.NewFileWriter(f, append(opts, ipc.WithSchema(recs[0].Schema()))...)
		if err != nil {
			f.Close()
			return err
		}
	} else {
		w = ipc.NewWriter(f, append(opts, ipc.WithSchema(recs[0].Schema()))...)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ExpectedHeader is the header of expected.csv.
var ExpectedHeader = []string{"segment_id", "rows", "sum_x", "min_x", "max_x", "null_x", "sum_i", "sum_d", "true_b", "null_b", "null_s", "len_s"}

func writeExpected(path string, stats []SegmentStats) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(ExpectedHeader)
	for _, s := range stats {
		i := func(v int64) string { return strconv.FormatInt(v, 10) }
		_ = w.Write([]string{s.Segment, i(s.Rows), i(s.SumX), i(s.MinX), i(s.MaxX), i(s.NullX), i(s.SumI),
			strconv.FormatFloat(s.SumD, 'f', -1, 64), i(s.TrueB), i(s.NullB), i(s.NullS), i(s.LenS)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
