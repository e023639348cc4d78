package parquet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

// DuckDB's DATE, TIMESTAMP of each unit and TIMESTAMP WITH TIME ZONE, as
// its COPY writes them (a logical TIMESTAMP beside the legacy converted
// type, a DATE with the converted type), read as their text in full
// precision; its infinities as "infinity"; TIME and DECIMAL refused.
func TestParquetDatesAndTimestamps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "time.parquet")
	parquettest.DuckDB(t, `SET TimeZone = 'UTC'; COPY (SELECT DATE '2024-01-31' + i::INT AS d,
	  TIMESTAMP '2024-01-31 12:00:00.123456' + i * INTERVAL 1 hour AS ts, TIMESTAMPTZ '2024-01-31 12:00:00.5+01' AS tz,
	  TIMESTAMP_NS '2024-01-31 12:00:00.123456789' AS ns, TIMESTAMP_MS '1969-12-31 23:59:59.999' AS ms, TIMESTAMP_S '0001-01-01 00:00:01' AS s,
	  CASE WHEN i = 1 THEN 'infinity'::DATE WHEN i = 2 THEN '-infinity'::DATE END AS dinf,
	  CASE WHEN i = 1 THEN 'infinity'::TIMESTAMP WHEN i = 2 THEN '-infinity'::TIMESTAMP END AS tinf,
	  TIME '12:00:00' AS t, 1.5::DECIMAL(4,2) AS dec FROM range(3) r(i)) TO '`+path+`' (FORMAT parquet)`)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := checkOracle(t, data)
	for col, want := range map[string][3]any{
		"d":    {"2024-01-31", "2024-02-01", "2024-02-02"},
		"ts":   {"2024-01-31 12:00:00.123456", "2024-01-31 13:00:00.123456", "2024-01-31 14:00:00.123456"},
		"tz":   {"2024-01-31 11:00:00.5+00", "2024-01-31 11:00:00.5+00", "2024-01-31 11:00:00.5+00"},
		"ns":   {"2024-01-31 12:00:00.123456789", "2024-01-31 12:00:00.123456789", "2024-01-31 12:00:00.123456789"},
		"ms":   {"1969-12-31 23:59:59.999", "1969-12-31 23:59:59.999", "1969-12-31 23:59:59.999"},
		"s":    {"0001-01-01 00:00:01", "0001-01-01 00:00:01", "0001-01-01 00:00:01"},
		"dinf": {nil, "infinity", "-infinity"},
		"tinf": {nil, "infinity", "-infinity"},
	} {
		for i, w := range want {
			if got := rows[i][col]; got != w {
				t.Errorf("row %d %s = %v (%T), want %v", i, col, got, got, w)
			}
		}
	}
	for _, col := range []string{"t", "dec"} {
		if _, err := Read(data, func(c string) bool { return c == col }, true, maxRows); err == nil || !strings.Contains(err.Error(), "column \""+col+"\"") {
			t.Errorf("column %s read strictly: %v, want an error naming it", col, err)
		}
	}
}

// pqarrow's dates and timestamps (its own schema: logical types only;
// seconds coerced to milliseconds, DATE64 stored as DATE), with and
// without a time zone; the oracle compares every value's text.
func TestParquetArrowTimestamps(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d32", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "d64", Type: arrow.FixedWidthTypes.Date64},
		{Name: "s", Type: &arrow.TimestampType{Unit: arrow.Second}},
		{Name: "ms_tz", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Paris"}},
		{Name: "us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "ns_tz", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 500 {
		n := int64(i*7919 - 1000)
		if i%4 == 1 {
			b.Field(0).AppendNull()
			b.Field(4).AppendNull()
		} else {
			b.Field(0).(*array.Date32Builder).Append(arrow.Date32(n))
			b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(n * 1_000_003))
		}
		b.Field(1).(*array.Date64Builder).Append(arrow.Date64(n * 86_400_000))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(n * 86_399))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(n * 3_600_007))
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(n * 1_000_000_007_001))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rows := checkOracle(t, parquettest.WriteArrow(t, rec))
	if rows[0]["d32"] != "1967-04-07" || rows[0]["ns_tz"] != "1969-12-20 10:13:19.992999+00" || rows[0]["ms_tz"] != "1969-11-20 07:59:53+00" ||
		rows[0]["us"] != "1969-12-31 23:43:19.997" || rows[1]["us"] != nil {
		t.Fatalf("row 0 read %v, row 1 %v", rows[0], rows[1])
	}
}

// The legacy converted types alone (older writers): DATE, and
// TIMESTAMP_MILLIS / TIMESTAMP_MICROS, which the format defines as
// adjusted to UTC; a TIMESTAMP on the wrong physical type, or of a unit
// the reader does not know, is unsupported.
func TestConvertTimeTypes(t *testing.T) {
	for _, tc := range []struct {
		e    pqSchemaElem
		v    int64
		want any
	}{
		{pqSchemaElem{typ: ptInt32, converted: ctDate}, 19753, "2024-01-31"},
		{pqSchemaElem{typ: ptInt32, converted: ctDate}, -719162, "0001-01-01"},
		{pqSchemaElem{typ: ptInt64, converted: ctMillis}, 1706702400001, "2024-01-31 12:00:00.001+00"},
		{pqSchemaElem{typ: ptInt64, converted: ctMicros}, 1706702400000001, "2024-01-31 12:00:00.000001+00"},
		{pqSchemaElem{typ: ptInt64, converted: typeNone, logical: ltTimestamp, timeUnit: Nanos}, 1706702400000000001, "2024-01-31 12:00:00.000000001"},
		{pqSchemaElem{typ: ptInt64, converted: typeNone, logical: ltTimestamp, timeUnit: Micros, timeUTC: true}, 0, "1970-01-01 00:00:00+00"},
	} {
		if got := converterOf(tc.e).int(tc.v).Any(); got != tc.want {
			t.Errorf("%+v of %d = %v (%T), want %v", tc.e, tc.v, got, got, tc.want)
		}
	}
	for _, e := range []pqSchemaElem{
		{typ: ptInt64, converted: ctDate},
		{typ: ptInt32, converted: ctMicros},
		{typ: ptInt32, converted: typeNone, logical: ltTimestamp, timeUnit: Micros},
		{typ: ptInt64, converted: typeNone, logical: ltTimestamp}, // no unit
		{typ: ptInt96, converted: typeNone},
	} {
		if c := converterOf(e); c.kind != kindUnsupported {
			t.Errorf("%+v: converter kind %d, want unsupported", e, c.kind)
		}
	}
	// Beyond the years 1 to 9999 (short of DuckDB's infinities) there is
	// no text: an error naming the value.
	for _, v := range []Value{{Kind: KindDate, Int: 2932897}, {Kind: KindDate, Int: -719163}, {Kind: KindTimestamp, Unit: Micros, Int: 1 << 62}} {
		if s, err := v.Text(); err == nil || !strings.Contains(err.Error(), "outside 1 to 9999") {
			t.Errorf("%+v: %q, %v; want an error", v, s, err)
		}
	}
}
