package datagen

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchSchema is the schema of the benchmark dataset: fixed-width columns
// and a short string.
var BenchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "x", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i", Type: arrow.PrimitiveTypes.Int32},
	{Name: "d", Type: arrow.PrimitiveTypes.Float64},
	{Name: "s", Type: arrow.BinaryTypes.String},
}, nil)

// WriteBench writes chunks uncompressed IPC files of rows rows each (in
// batches of 64 Ki rows) under dir/segment=<k mod 8>/ and returns the total
// rows and bytes. Row r of chunk c has x = c·rows + r.
func WriteBench(dir string, chunks, rows int) (int64, int64, error) {
	var total, size int64
	for c := 0; c < chunks; c++ {
		var recs []arrow.RecordBatch
		for from := 0; from < rows; from += 64 << 10 {
			n := min(64<<10, rows-from)
			b := array.NewRecordBuilder(memory.DefaultAllocator, BenchSchema)
			xs := make([]int64, n)
			is := make([]int32, n)
			ds := make([]float64, n)
			ss := make([]string, n)
			for r := range n {
				v := int64(c)*int64(rows) + int64(from+r)
				xs[r], is[r], ds[r], ss[r] = v, int32(v%1000), float64(v%4096)*0.5, "v"+strconv.FormatInt(v%100000, 10)
			}
			b.Field(0).(*array.Int64Builder).AppendValues(xs, nil)
			b.Field(1).(*array.Int32Builder).AppendValues(is, nil)
			b.Field(2).(*array.Float64Builder).AppendValues(ds, nil)
			b.Field(3).(*array.StringBuilder).AppendValues(ss, nil)
			recs = append(recs, b.NewRecordBatch())
			b.Release()
		}
		path := filepath.Join(dir, fmt.Sprintf("segment=%d", c%8), fmt.Sprintf("chunk-%04d.arrow", c))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return 0, 0, err
		}
		err := WriteChunk(path, recs, true)
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return 0, 0, err
		}
		st, err := os.Stat(path)
		if err != nil {
			return 0, 0, err
		}
		total += int64(rows)
		size += st.Size()
	}
	return total, size, nil
}
