package datagen

import (
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// EdgeViewStrings are the values of edge/view-padding.arrow, each at most 12
// bytes (inline in an Arrow view), in row order.
var EdgeViewStrings = []string{"", "a", "abc", "abc", "twelve bytes", "a"}

// WriteEdgeInputs writes, under dir/edge, valid inputs that Arrow writers
// produce and a reader must accept, which the other datasets do not contain:
//
//	view-padding.arrow  a string_view column whose inline views carry garbage
//	                    in the bytes after each string (the format leaves them
//	                    unspecified); equal strings must still compare equal
//	empty-batch.arrow   a zero-row batch whose string and list columns have
//	                    no offsets buffer, then a batch of three rows
//	escape.csv          a catalog whose row leaves edge/ (../bad/...): a
//	                    sandbox that admits edge/ must refuse its chunk
func WriteEdgeInputs(dir string) error {
	edge := filepath.Join(dir, "edge")
	if err := os.MkdirAll(edge, 0o755); err != nil {
		return err
	}
	if err := writeViewPadding(filepath.Join(edge, "view-padding.arrow")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(edge, "escape.csv"), []byte("url\nview-padding.arrow\n../bad/mismatch/a.arrow\n"), 0o644); err != nil {
		return err
	}
	return writeEmptyBatch(filepath.Join(edge, "empty-batch.arrow"))
}

func writeViewPadding(path string) error {
	b := array.NewStringViewBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, s := range EdgeViewStrings {
		b.Append(s)
	}
	arr := b.NewArray()
	defer arr.Release()
	// Fill the unused bytes of every inline view with a row-dependent pattern.
	views := arr.Data().Buffers()[1].Bytes()
	for i, s := range EdgeViewStrings {
		v := views[i*16 : (i+1)*16]
		for j := 4 + len(s); j < 16; j++ {
			v[j] = byte(0xA0 + i)
		}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.StringView}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len()))
	defer rec.Release()
	return WriteChunk(path, []arrow.RecordBatch{rec}, true)
}

func writeEmptyBatch(path string) error {
	listType := arrow.ListOf(arrow.PrimitiveTypes.Int32)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: listType, Nullable: true},
	}, nil)
	// Zero rows and no buffers at all, as some writers (arrow-rs, pyarrow
	// slices) emit them: the offsets buffer of a zero-length array is empty.
	emptyValues := array.NewData(arrow.PrimitiveTypes.Int32, 0, []*memory.Buffer{nil, nil}, nil, 0, 0)
	defer emptyValues.Release()
	emptyStr := array.MakeFromData(array.NewData(arrow.BinaryTypes.String, 0, []*memory.Buffer{nil, nil, nil}, nil, 0, 0))
	defer emptyStr.Release()
	emptyList := array.MakeFromData(array.NewData(listType, 0, []*memory.Buffer{nil, nil}, []arrow.ArrayData{emptyValues}, 0, 0))
	defer emptyList.Release()
	empty := array.NewRecordBatch(schema, []arrow.Array{emptyStr, emptyList}, 0)
	defer empty.Release()

	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	rb.Field(0).(*array.StringBuilder).AppendValues([]string{"x", "yy", "zzz"}, nil)
	lb := rb.Field(1).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.Int32Builder)
	for r := range 3 {
		lb.Append(true)
		for k := 0; k <= r; k++ {
			vb.Append(int32(k))
		}
	}
	full := rb.NewRecordBatch()
	defer full.Release()
	return WriteChunk(path, []arrow.RecordBatch{empty, full}, true)
}
