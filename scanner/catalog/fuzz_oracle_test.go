package catalog

// FuzzCatalogRoundTrip checks what the CSV and JSON catalog parsers return, not only
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
)

// FuzzCatalogRoundTrip: a catalog the CSV or the JSON parser accepts,
// written out again as JSON lines and as CSV with every field explicit,
// parses to the same chunks in each format: the parsers agree with each
// other and with what they read. They yield at most one row per input byte.
func FuzzCatalogRoundTrip(f *testing.F) {
	f.Add([]byte("url,segment_id,offset,length\na.arrow,1,0,10\n"), uint8(CSV))
	f.Add([]byte("url,segment_id,chunk_id,offset,length,num_rows,decoded_bytes\nseg/a.arrow,s1,c0,0,100,10,99\n/abs/b.arrow,,,,,,\nhttps://h/x/c.arrow,7,,8,9,,\n"), uint8(CSV))
	f.Add([]byte(`[{"url":"a.arrow","num_rows":3,"chunk_id":7}]`), uint8(JSON))
	f.Add([]byte("{\"url\":\"s3://b/a\",\"offset\":\"12\"}\n{\"url\":\"../b\",\"segment_id\":\"\"}\n"), uint8(JSON))
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		const base = "/base/catalog"
		// Parquet is the parquet reader's own (its fuzz target): here CSV
		// and JSON.
		cf := []Format{CSV, JSON}[format%2]
		chunks, err := Parse(data, cf, base)
		if err != nil {
			return
		}
		if len(chunks) > len(data) {
			t.Fatalf("%d chunks from %d bytes", len(chunks), len(data))
		}
		for _, out := range []struct {
			format Format
			write  func(*testing.T, []Chunk) ([]byte, bool)
		}{{JSON, writeJSONCatalog}, {CSV, writeCSVCatalog}} {
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
