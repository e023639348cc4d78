package catalog

// FuzzCatalogRoundTrip checks what the catalog parsers return, not only
// that they do not crash (issue 11, item 4). `make fuzz` runs it for
// FUZZTIME; `go test` runs its seeds as tests.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// FuzzCatalogRoundTrip: a catalog any of the three parsers accepts, written
// out again as JSON lines, CSV and Parquet with every field explicit, parses
// to the same chunks in each format: the parsers agree with each other and
// with what they read. CSV and JSON yield at most one row per input byte.
func FuzzCatalogRoundTrip(f *testing.F) {
	f.Add([]byte("url,segment_id,offset,length\na.arrow,1,0,10\n"), uint8(CSV))
	f.Add([]byte("url,segment_id,chunk_id,offset,length,num_rows,decoded_bytes\nseg/a.arrow,s1,c0,0,100,10,99\n/abs/b.arrow,,,,,,\nhttps://h/x/c.arrow,7,,8,9,,\n"), uint8(CSV))
	f.Add([]byte(`[{"url":"a.arrow","num_rows":3,"chunk_id":7}]`), uint8(JSON))
	f.Add([]byte("{\"url\":\"s3://b/a\",\"offset\":\"12\"}\n{\"url\":\"../b\",\"segment_id\":\"\"}\n"), uint8(JSON))
	f.Add(parquetCatalog(f), uint8(Parquet))
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		const base = "/base/catalog"
		cf := Format(format%3 + 1)
		chunks, err := Parse(data, cf, base)
		if err != nil {
			return
		}
		if cf != Parquet && len(chunks) > len(data) {
			t.Fatalf("%d chunks from %d bytes", len(chunks), len(data))
		}
		for _, out := range []struct {
			format Format
			write  func(*testing.T, []Chunk) ([]byte, bool)
		}{{JSON, writeJSONCatalog}, {CSV, writeCSVCatalog}, {Parquet, writeParquetCatalog}} {
			enc, ok := out.write(t, chunks)
			if !ok {
				continue
			}
			again, err := Parse(enc, out.format, base)
			if err != nil {
				t.Fatalf("format %d: parsing the written catalog: %v\n%q", out.format, err, enc)
			}
			if len(again) != len(chunks) {
				t.Fatalf("format %d: %d chunks, was %d", out.format, len(again), len(chunks))
			}
			for i := range chunks {
				if again[i] != chunks[i] {
					t.Fatalf("format %d: chunk %d = %+v, was %+v", out.format, i, again[i], chunks[i])
				}
			}
		}
	})
}

// catalogRecord is a chunk as catalog fields; the optional numbers are
// absent (nil) when the chunk does not know them.
func catalogRecord(c Chunk) map[string]any {
	m := map[string]any{colURL: c.URL, colSegmentID: c.SegmentID, colChunkID: c.ChunkID, colOffset: c.Offset}
	for name, v := range map[string]int64{colLength: c.Length, colNumRows: c.NumRows, colDecodedBytes: c.DecodedBytes} {
		if v >= 0 {
			m[name] = v
		}
	}
	return m
}

// writeJSONCatalog writes JSON lines; false when a string is not UTF-8
// (JSON would replace its bytes).
func writeJSONCatalog(t *testing.T, chunks []Chunk) ([]byte, bool) {
	var buf bytes.Buffer
	for _, c := range chunks {
		for _, s := range []string{c.URL, c.SegmentID, c.ChunkID} {
			if !utf8.ValidString(s) {
				return nil, false
			}
		}
		b, err := json.Marshal(catalogRecord(c))
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), true
}

// writeCSVCatalog writes CSV; false when a value cannot survive CSV: an
// empty text field (an empty cell is an absent value) or a carriage return
// (the reader drops it before a newline, even quoted).
func writeCSVCatalog(t *testing.T, chunks []Chunk) ([]byte, bool) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := []string{colURL, colSegmentID, colChunkID, colOffset, colLength, colNumRows, colDecodedBytes}
	_ = w.Write(header)
	for _, c := range chunks {
		for _, s := range []string{c.URL, c.SegmentID, c.ChunkID} {
			if s == "" || strings.ContainsRune(s, '\r') {
				return nil, false
			}
		}
		rec := []string{c.URL, c.SegmentID, c.ChunkID, strconv.FormatInt(c.Offset, 10)}
		for _, v := range []int64{c.Length, c.NumRows, c.DecodedBytes} {
			if v < 0 {
				rec = append(rec, "")
			} else {
				rec = append(rec, strconv.FormatInt(v, 10))
			}
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), true
}

// writeParquetCatalog writes Parquet: strings and nullable int64s.
func writeParquetCatalog(t *testing.T, chunks []Chunk) ([]byte, bool) {
	fields := []arrow.Field{{Name: colURL, Type: arrow.BinaryTypes.String}, {Name: colSegmentID, Type: arrow.BinaryTypes.String},
		{Name: colChunkID, Type: arrow.BinaryTypes.String}}
	ints := []string{colOffset, colLength, colNumRows, colDecodedBytes}
	for _, n := range ints {
		fields = append(fields, arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, c := range chunks {
		b.Field(0).(*array.StringBuilder).Append(c.URL)
		b.Field(1).(*array.StringBuilder).Append(c.SegmentID)
		b.Field(2).(*array.StringBuilder).Append(c.ChunkID)
		for i, v := range []int64{c.Offset, c.Length, c.NumRows, c.DecodedBytes} {
			if fb := b.Field(3 + i).(*array.Int64Builder); v < 0 {
				fb.AppendNull()
			} else {
				fb.Append(v)
			}
		}
	}
	return parquetFile(t, b), true
}

// parquetFile writes the record b built as a Parquet file.
func parquetFile(t testing.TB, b *array.RecordBuilder) []byte {
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
