package datagen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Compressed is the shape of the compressed dataset: chunks that ZSTD
// shrinks far more than a budget's default decoded/wire ratio assumes, so
// that a scan which trusts the wire size overruns its budget by several
// times.
type Compressed struct {
	Chunks int // IPC files
	Rows   int // rows per file, in one record batch
}

// DefaultCompressed is 32 files of about 2.4 MB on disk and 25 MB decoded:
// an int64 sequence, a repeated 31-byte string and a small int.
var DefaultCompressed = Compressed{Chunks: 32, Rows: 530_000}

// CompressedString is the value of every row's s in the compressed dataset.
const CompressedString = "the same thirty-one byte string"

// WriteCompressed writes dir/chunk-K.arrow, spec.Chunks ZSTD-compressed IPC
// files of columns id (int64: the row's number over the whole dataset), s
// (CompressedString) and k (int32: id mod 7). It returns the bytes written
// and the bytes the columns' buffers take decoded.
func WriteCompressed(dir string, spec Compressed) (wire, decoded int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "k", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	if len(CompressedString) != 31 {
		panic("datagen: CompressedString must be 31 bytes")
	}
	s := strings.Repeat(CompressedString, spec.Rows)
	for c := range spec.Chunks {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		ids := b.Field(0).(*array.Int64Builder)
		strs := b.Field(1).(*array.StringBuilder)
		ks := b.Field(2).(*array.Int32Builder)
		strs.ReserveData(len(s))
		for r := range spec.Rows {
			id := int64(c*spec.Rows + r)
			ids.Append(id)
			strs.Append(CompressedString)
			ks.Append(int32(id % 7))
		}
		rec := b.NewRecordBatch()
		b.Release()
		for _, col := range rec.Columns() {
			for _, buf := range col.Data().Buffers() {
				if buf != nil {
					decoded += int64(buf.Len())
				}
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("chunk-%02d.arrow", c))
		err := writeChunkOpts(path, []arrow.RecordBatch{rec}, true, ipc.WithZstd())
		rec.Release()
		if err != nil {
			return 0, 0, err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return 0, 0, err
		}
		wire += fi.Size()
	}
	return wire, decoded, nil
}
