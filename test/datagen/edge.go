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
//	strings/short.arrow string and large_string columns of every length from
//	                    0 to 13, each followed in the character buffer by
//	                    other bytes and the shortest last (see
//	                    ShortStrings): a string of up to 12 bytes must come
//	                    out without the bytes that follow it
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
	// In a directory of its own: the sandbox tests count edge/*.arrow.
	if err := os.MkdirAll(filepath.Join(edge, "strings"), 0o755); err != nil {
		return err
	}
	if err := writeShortStrings(filepath.Join(edge, "strings", "short.arrow")); err != nil {
		return err
	}
	return writeEmptyBatch(filepath.Join(edge, "empty-batch.arrow"))
}

// ShortStrings are the rows of edge/strings/short.arrow: the prefixes of
// "abcdefghijklm" from 13 bytes down to none, then from 1 byte up to 13, then
// from 13 down to 1 again, so that the last strings end the character
// buffer and the others are followed by more letters; and a null.
func ShortStrings() []string {
	const letters = "abcdefghijklm"
	var out []string
	for k := len(letters); k >= 0; k-- {
		out = append(out, letters[:k])
	}
	for k := 1; k <= len(letters); k++ {
		out = append(out, letters[:k])
	}
	for k := len(letters); k >= 1; k-- {
		out = append(out, letters[:k])
	}
	return out
}

func writeShortStrings(path string) error {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	values := ShortStrings()
	rb.Field(0).(*array.StringBuilder).AppendValues(values, nil)
	rb.Field(1).(*array.LargeStringBuilder).AppendValues(values, nil)
	rb.Field(0).AppendNull()
	rb.Field(1).AppendNull()
	rec := rb.NewRecordBatch()
	defer rec.Release()
	return WriteChunk(path, []arrow.RecordBatch{rec}, true)
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
