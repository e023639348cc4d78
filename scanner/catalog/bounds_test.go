package catalog

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

// A catalog's min_<col> and max_<col> fields become the chunk's Bounds of
// col, as the catalog gives them, in every format; a row without them has
// none, and a NULL or absent side is nil.
func TestBoundsFields(t *testing.T) {
	csv := "url,min_x,max_x,min_s\n/a.arrow,1,5,apple\n/b.arrow,,7,\n/c.arrow,,,\n"
	json := `[{"url": "/a.arrow", "min_x": 1, "max_x": 5, "min_s": "apple"}, {"url": "/b.arrow", "max_x": 7}, {"url": "/c.arrow", "min_": 3}]`
	for _, tc := range []struct {
		name   string
		data   []byte
		format Format
		one    any // min_x of the first row as the format gives it
	}{
		{"csv", []byte(csv), CSV, "1"},
		{"json", []byte(json), JSON, int64(1)},
		{"parquet", boundsParquet(t), Parquet, int64(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks, err := Parse(tc.data, tc.format, "/cat")
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := chunks[0].Bounds.Of("x")
			if lo != tc.one || hi == nil {
				t.Errorf("row 0: x in [%#v, %#v], want [%#v, 5]", lo, hi, tc.one)
			}
			if lo, _ := chunks[0].Bounds.Of("s"); lo != "apple" {
				t.Errorf("row 0: min_s %#v", lo)
			}
			if lo, hi := chunks[1].Bounds.Of("x"); lo != nil || hi == nil {
				t.Errorf("row 1: x in [%#v, %#v], want no minimum", lo, hi)
			}
			if chunks[2].Bounds != nil {
				t.Errorf("row 2: bounds %+v, want none", chunks[2].Bounds)
			}
		})
	}
}

// boundsParquet is the catalog of TestBoundsFields as Parquet.
func boundsParquet(t *testing.T) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "min_x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "max_x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "min_s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"/a.arrow", "/b.arrow", "/c.arrow"}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 0, 0}, []bool{true, false, false})
	b.Field(2).(*array.Int64Builder).AppendValues([]int64{5, 7, 0}, []bool{true, true, false})
	b.Field(3).(*array.StringBuilder).AppendValues([]string{"apple", "", ""}, []bool{true, false, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	return parquettest.WriteArrow(t, rec)
}
