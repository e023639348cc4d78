package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

// A catalog DuckDB writes from a time-series table (DATE, TIMESTAMP and
// TIMESTAMP WITH TIME ZONE min_/max_ columns, a DATE segment_id, a
// TIMESTAMP version) is read: bounds as the text DuckDB shows (UTC
// instants with +00), in full precision; a date's infinity is text the
// scanner's bounds do not read (an open side).
func TestParquetTimeCatalog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cat.parquet")
	parquettest.DuckDB(t, `SET TimeZone = 'UTC'; COPY (SELECT 'c' || i || '.arrow' AS url, DATE '2024-01-01' + i::INT AS segment_id,
	  TIMESTAMP '2024-05-01 10:00:00.25' + i * INTERVAL 1 minute AS version,
	  DATE '2024-01-01' + i::INT AS min_d, CASE WHEN i = 1 THEN 'infinity'::DATE ELSE DATE '2024-01-01' + i::INT END AS max_d,
	  TIMESTAMP '2024-01-01 00:00:00' + i * INTERVAL 1 day AS min_ts, TIMESTAMP '2024-01-01 23:59:59.999999' + i * INTERVAL 1 day AS max_ts,
	  TIMESTAMPTZ '2024-01-01 00:00:00+01' + i * INTERVAL 1 day AS min_tz, NULL::TIMESTAMPTZ AS max_tz,
	  TIMESTAMP_NS '2024-01-01 00:00:00.000000001' AS min_ns
	  FROM range(2) r(i)) TO '`+path+`' (FORMAT parquet)`)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Parse(data, Parquet, "/cat.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if c := chunks[1]; c.SegmentID != "2024-01-02" || c.Version != "2024-05-01 10:01:00.25" {
		t.Errorf("row 1: segment_id %q, version %q", c.SegmentID, c.Version)
	}
	for col, want := range map[string][2][2]any{
		"d":  {{"2024-01-01", "2024-01-01"}, {"2024-01-02", "infinity"}},
		"ts": {{"2024-01-01 00:00:00", "2024-01-01 23:59:59.999999"}, {"2024-01-02 00:00:00", "2024-01-02 23:59:59.999999"}},
		"tz": {{"2023-12-31 23:00:00+00", nil}, {"2024-01-01 23:00:00+00", nil}},
		"ns": {{"2024-01-01 00:00:00.000000001", nil}, {"2024-01-01 00:00:00.000000001", nil}},
	} {
		for i, w := range want {
			if lo, hi := chunks[i].Bounds.Of(col); lo != w[0] || hi != w[1] {
				t.Errorf("row %d: %s in [%#v, %#v], want [%#v, %#v]", i, col, lo, hi, w[0], w[1])
			}
		}
	}
}

// A date or timestamp with no text (beyond the year 9999, short of
// DuckDB's infinity) is an error naming the catalog's row and column.
func TestParquetTimeCatalogOutOfRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cat.parquet")
	parquettest.DuckDB(t, `COPY (SELECT 'c' || i || '.arrow' AS url,
	  CASE WHEN i = 2 THEN DATE '12345-01-01' ELSE DATE '2024-01-01' END AS max_d FROM range(3) r(i)) TO '`+path+`' (FORMAT parquet)`)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(data, Parquet, "/cat.parquet")
	var ce *Error
	if !errors.As(err, &ce) || ce.Row != 2 || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "catalog /cat.parquet row 2: ") ||
		!strings.Contains(err.Error(), `"max_d" is a DATE of day 3789391: in the year 12345`) {
		t.Fatalf("error %v, want one naming row 2's max_d", err)
	}
}

// timeBoundsCatalog is n rows of a url and min_ts / max_ts, as TIMESTAMP
// (microseconds, UTC) or, for comparison, as INT64.
func timeBoundsCatalog(t testing.TB, n int, timestamps bool) []byte {
	typ := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if timestamps {
		typ = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "min_ts", Type: typ},
		{Name: "max_ts", Type: typ},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("seg%d/chunk-%d.arrow", i/1000, i))
		lo := 1_704_067_200_000_000 + int64(i)*60_000_000 + 123
		if timestamps {
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(lo))
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(lo + 59_999_999))
		} else {
			b.Field(1).(*array.Int64Builder).Append(lo)
			b.Field(2).(*array.Int64Builder).Append(lo + 59_999_999)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return parquettest.WriteArrow(t, rec, parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(64<<10))
}

// retained is the heap a parse of data leaves live, and what the parse
// allocated in all, per row.
func retained(t *testing.T, data []byte, rows int) (held, allocated float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l, err := parse(data, Parquet, "s3://b/ds/cat.parquet", DefaultMaxChunks, nil)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if l.Len() != rows {
		t.Fatalf("%d chunks, want %d", l.Len(), rows)
	}
	runtime.KeepAlive(l)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(rows), float64(after.TotalAlloc-before.TotalAlloc) / float64(rows)
}

// TestTimeBoundsMemory: a chunk's min_/max_ bounds cost it little (as
// integers, a pair in a slice and two boxed values), and TIMESTAMP ones,
// held as text, little more than the same bounds as integers.
func TestTimeBoundsMemory(t *testing.T) {
	const rows = 200_000
	ints := timeBoundsCatalog(t, rows, false)
	times := timeBoundsCatalog(t, rows, true)
	heldInts, allocInts := retained(t, ints, rows)
	heldTimes, allocTimes := retained(t, times, rows)
	t.Logf("a chunk: integer bounds %.0f bytes held (%.0f allocated), timestamp bounds %.0f held (%.0f allocated)", heldInts, allocInts, heldTimes, allocTimes)
	// Two bounds a chunk, as integers: a slice of one column's pair and
	// two boxed values (a map per chunk held several times that).
	if heldInts > 128 {
		t.Errorf("integer bounds: %.0f bytes held a chunk, want at most 128", heldInts)
	}
	if heldTimes > heldInts+112 || allocTimes > allocInts+144 {
		t.Errorf("timestamp bounds: %.0f bytes held a chunk (%.0f allocated), integer bounds %.0f (%.0f): more than 112 (144) bytes more",
			heldTimes, allocTimes, heldInts, allocInts)
	}
}
