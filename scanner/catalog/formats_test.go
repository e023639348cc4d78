package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

func TestParseCatalog(t *testing.T) {
	tests := []struct {
		name    string
		format  Format
		base    string
		data    string
		want    []Chunk
		wantErr string
	}{
		{
			name: "csv relative and absolute", format: CSV, base: "/data/ds/catalog.csv",
			data: "url,segment_id,chunk_id,offset,length,num_rows\nseg1/a.arrow,s1,c0,0,100,10\n/abs/b.arrow,,,,,\nhttps://h/x/c.arrow,7,,8,9,\n",
			want: []Chunk{
				{URL: "/data/ds/seg1/a.arrow", SegmentID: "s1", ChunkID: "c0", Offset: 0, Length: 100, Size: -1, NumRows: 10, DecodedBytes: -1, Row: 0},
				{URL: "/abs/b.arrow", SegmentID: "abs", ChunkID: "b", Length: -1, Size: -1, NumRows: -1, DecodedBytes: -1, Row: 1},
				{URL: "https://h/x/c.arrow", SegmentID: "7", ChunkID: "c", Offset: 8, Length: 9, Size: -1, NumRows: -1, DecodedBytes: -1, Row: 2},
			},
		},
		{
			name: "json array against an s3 catalog", format: JSON, base: "s3://bkt/ds/catalog.json",
			data: `[{"url": "segment=3/a.arrow", "num_rows": 5, "decoded_bytes": 1000}, {"url": "../b.arrow", "segment_id": 12, "chunk_id": 4}]`,
			want: []Chunk{
				{URL: "s3://bkt/ds/segment=3/a.arrow", SegmentID: "3", ChunkID: "a", Length: -1, Size: -1, NumRows: 5, DecodedBytes: 1000, Row: 0},
				{URL: "s3://bkt/b.arrow", SegmentID: "12", ChunkID: "4", Length: -1, Size: -1, NumRows: -1, DecodedBytes: -1, Row: 1},
			},
		},
		{
			name: "json lines", format: JSON, base: "/c.jsonl",
			data: "{\"url\": \"/x/a.arrow\"}\n{\"url\": \"/x/b.arrow\", \"length\": 3}\n",
			want: []Chunk{
				{URL: "/x/a.arrow", SegmentID: "x", ChunkID: "a", Length: -1, Size: -1, NumRows: -1, DecodedBytes: -1, Row: 0},
				{URL: "/x/b.arrow", SegmentID: "x", ChunkID: "b", Length: 3, Size: -1, NumRows: -1, DecodedBytes: -1, Row: 1},
			},
		},
		{name: "empty url", format: CSV, base: "/c.csv", data: "url\n/a.arrow\n \n", wantErr: `catalog /c.csv row 1: bad catalog: "url" is empty`},
		{name: "no url column", format: CSV, base: "/c.csv", data: "path\n/a.arrow\n", wantErr: `row 0: bad catalog: no "url"`},
		{name: "negative offset", format: JSON, base: "/c.json", data: `[{"url":"/a","offset":-1}]`, wantErr: `row 0: bad catalog: "offset" is -1, negative`},
		{name: "not an integer", format: CSV, base: "/c.csv", data: "url,length\n/a,ten\n", wantErr: `row 0: bad catalog: "length" is "ten", not an integer`},
		{name: "zero length", format: CSV, base: "/c.csv", data: "url,length\n/a,0\n", wantErr: `"length" is 0`},
		{name: "end past the largest object", format: CSV, base: "/c.csv", data: "url,offset,length\n/a,9223372036854775807,10\n", wantErr: `"offset" 9223372036854775807 and "length" 10 end past the largest object`},
		{name: "end at the largest object", format: CSV, base: "/c.csv", data: "url,offset,length\n/a,9223372036854775797,10\n",
			want: []Chunk{{URL: "/a", SegmentID: "", ChunkID: "a", Offset: 9223372036854775797, Length: 10, Size: -1, NumRows: -1, DecodedBytes: -1}}},
		{name: "fractional", format: JSON, base: "/c.json", data: `[{"url":"/a","num_rows":1.5}]`, wantErr: `"num_rows" is 1.5, not an integer`},
		{name: "bad json", format: JSON, base: "/c.json", data: `[{"url":`, wantErr: "catalog /c.json: bad catalog: JSON"},
		{name: "json not objects", format: JSON, base: "/c.json", data: `{"url":"/a"} 7`, wantErr: "row 1: bad catalog: JSON"},
		{name: "ragged csv", format: CSV, base: "/c.csv", data: "url\n\"/a\n", wantErr: "row 0: bad catalog: CSV"},
		{name: "no rows", format: CSV, base: "/c.csv", data: "url\n", wantErr: "catalog /c.csv: no chunks: the catalog has no rows"},
		{name: "relative without base", format: JSON, base: "", data: `[{"url":"a.arrow"}]`, wantErr: "is relative"},
		{name: "not parquet", format: Parquet, base: "/c.parquet", data: "PAR1 nope", wantErr: "catalog /c.parquet: bad catalog: Parquet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.data), tt.format, tt.base)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("err %T is not a *Error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d chunks, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("chunk %d = %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseCatalogParquet(t *testing.T) {
	got, err := Parse(parquettest.CatalogFile(t), Parquet, "file:///ds/cat.parquet")
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{
		{URL: "file:///ds/a.arrow", SegmentID: "1", ChunkID: "a", Length: 10, Size: -1, NumRows: 3, DecodedBytes: -1, Row: 0},
		{URL: "file:///ds/sub/b.arrow", SegmentID: "2", ChunkID: "b", Length: -1, Size: -1, NumRows: 4, DecodedBytes: -1, Row: 1},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("chunk %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// FuzzParseCatalog: any input is chunks or a *Error, never a panic.
func FuzzParseCatalog(f *testing.F) {
	f.Add([]byte("url,segment_id,offset,length\na.arrow,1,0,10\n"), uint8(CSV))
	f.Add([]byte(`[{"url":"a.arrow","num_rows":3,"chunk_id":7}]`), uint8(JSON))
	f.Add([]byte("{\"url\":\"s3://b/a\"}\n{\"url\":\"b\"}\n"), uint8(JSON))
	f.Add(parquettest.CatalogFile(f), uint8(Parquet))
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		chunks, err := Parse(data, Format(format%3+1), "/base/catalog")
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err %T (%v) is not a *Error", err, err)
			}
			return
		}
		for i, c := range chunks {
			if c.URL == "" || c.Row != i || c.Offset < 0 || c.Length == 0 || c.Length < -1 {
				t.Fatalf("chunk %d = %+v", i, c)
			}
		}
	})
}

// TestColumnNamedTwice: a catalog that names one of its columns twice
// (two url columns, two min_x) fails naming it, in every format, even
// when the second name is written with an escape (JSON); other columns
// named twice are not the catalog's business.
func TestColumnNamedTwice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   []byte
		format Format
		column string // "" : no error
	}{
		{"csv url", []byte("url,url\n/a.arrow,/b.arrow\n"), CSV, "url"},
		{"csv min_x", []byte("url,min_x,max_x,min_x\n/a.arrow,1,5,9\n"), CSV, "min_x"},
		{"csv other", []byte("url,note,note\n/a.arrow,1,2\n"), CSV, ""},
		{"json url", []byte(`[{"url": "/a.arrow", "url": "/b.arrow"}]`), JSON, "url"},
		{"json escaped", []byte(`{"url": "/a.arrow", "\u0075rl": "/b.arrow"}`), JSON, "url"},
		{"json num_rows", []byte(`{"url": "/a.arrow", "num_rows": 3, "num_rows": 10}`), JSON, "num_rows"},
		{"json other", []byte(`{"url": "/a.arrow", "n": 1, "n": 2}`), JSON, ""},
		{"json nested", []byte(`{"url": "/a.arrow", "meta": {"url": "/b.arrow"}}`), JSON, ""},
		{"json spaced", []byte("{\"url\" : \"/a.arrow\", \"url\"\n\t: \"/b.arrow\"}"), JSON, "url"},
		{"json colons in values", []byte(`{"url": "s3://b/a.arrow", "segment_id": ":", "chunk_id": "a:"}`), JSON, ""},
		{"jsonl second row", []byte("{\"url\": \"/a.arrow\"}\n{\"url\": \"/a.arrow\", \"min_x\": 1, \"min_x\": 2}\n"), JSON, "min_x"},
		{"parquet url", twoURLParquet(t), Parquet, "url"},
	} {
		_, err := Parse(tc.data, tc.format, "/cat")
		switch {
		case tc.column == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.column != "" && (err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), fmt.Sprintf("%q twice", tc.column))):
			t.Errorf("%s: error %v, want one naming %q twice", tc.name, err, tc.column)
		}
	}
}

// twoURLParquet is a Parquet catalog of one row with two columns url.
func twoURLParquet(t *testing.T) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "url", Type: arrow.BinaryTypes.String}, {Name: "url", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("/a.arrow")
	b.Field(1).(*array.StringBuilder).Append("/b.arrow")
	rec := b.NewRecordBatch()
	defer rec.Release()
	return parquettest.WriteArrow(t, rec)
}
