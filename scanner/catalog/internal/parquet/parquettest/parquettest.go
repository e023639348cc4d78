// Package parquettest writes Parquet files for the tests of the catalog and
// its Parquet reader (arrow-go's writer, the DuckDB CLI) and reads them with
// arrow-go's reader as the oracle. Only tests may import it: it links
// arrow-go's Parquet packages, which the extension must not.
package parquettest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// OracleRows reads data with pqarrow, mapping values as the catalog did
// before it had its own reader.
func OracleRows(data []byte) (rows []map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("pqarrow panicked: %v", r)
		}
	}()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	rows = make([]map[string]any, tbl.NumRows())
	for i := range rows {
		rows[i] = map[string]any{}
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		i := 0
		for _, chunk := range col.Data().Chunks() {
			for j := 0; j < chunk.Len(); j++ {
				if i >= len(rows) {
					return nil, errors.New("pqarrow: more values than rows")
				}
				if v := arrowValue(chunk, j); v != nil {
					rows[i][col.Name()] = v
				}
				i++
			}
		}
	}
	return rows, nil
}

// arrowValue is what parquetRows made of an arrow value before: string,
// int64, uint64, float64, nil, or "unsupported <type>".
func arrowValue(a arrow.Array, j int) any {
	if a.IsNull(j) {
		return nil
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(j)
	case *array.LargeString:
		return a.Value(j)
	case *array.StringView:
		return a.Value(j)
	case *array.Binary:
		return string(a.Value(j))
	case *array.Int8:
		return int64(a.Value(j))
	case *array.Int16:
		return int64(a.Value(j))
	case *array.Int32:
		return int64(a.Value(j))
	case *array.Int64:
		return a.Value(j)
	case *array.Uint8:
		return int64(a.Value(j))
	case *array.Uint16:
		return int64(a.Value(j))
	case *array.Uint32:
		return int64(a.Value(j))
	case *array.Uint64:
		return a.Value(j)
	case *array.Float32:
		return float64(a.Value(j))
	case *array.Float64:
		return a.Value(j)
	case *array.Dictionary:
		return arrowValue(a.Dictionary(), a.GetValueIndex(j))
	case *array.Date32:
		return textOfTime(a.Value(j).ToTime(), time.DateOnly, false)
	case *array.Timestamp:
		typ := a.DataType().(*arrow.TimestampType)
		t, err := typ.GetToTimeFunc()
		if err != nil {
			break
		}
		return textOfTime(t(a.Value(j)).UTC(), "2006-01-02 15:04:05.999999999", typ.TimeZone != "")
	}
	return fmt.Sprintf("unsupported %s", a.DataType())
}

// timeText is the oracle's value of a date or timestamp: its text as the
// catalog's reader gives it.
type timeText string

// textOfTime is a date's or timestamp's timeText, or "unsupported" outside
// the years the catalog's reader writes.
func textOfTime(t time.Time, layout string, utc bool) any {
	if t.Year() < 1 || t.Year() > 9999 {
		return "unsupported year " + strconv.Itoa(t.Year())
	}
	if utc {
		return timeText(t.Format(layout) + "+00")
	}
	return timeText(t.Format(layout))
}

// SameRows compares our rows with the oracle's: equal values of equal Go
// types, except where the oracle had no catalog value for the type
// ("unsupported ..."): there ours is unsupported too, or a string (we read
// FIXED_LEN_BYTE_ARRAY and UUID as text); and where the oracle has a date
// or timestamp: ours is its text, or unsupported (an INT96 timestamp, which
// pqarrow reads and ours does not). Of the reader's values only the
// unsupported ones are fmt.Stringers.
func SameRows(ours, theirs []map[string]any) error {
	if len(ours) != len(theirs) {
		return fmt.Errorf("%d rows, the oracle %d", len(ours), len(theirs))
	}
	for i := range ours {
		for k, tv := range theirs[i] {
			ov, ok := ours[i][k]
			if tt, isTime := tv.(timeText); isTime {
				if _, isUns := ov.(fmt.Stringer); ok && (isUns || ov == string(tt)) {
					continue
				}
				return fmt.Errorf("row %d %q: %v (%T), the oracle %q", i, k, ov, ov, string(tt))
			}
			if s, isStr := tv.(string); isStr && strings.HasPrefix(s, "unsupported ") {
				if _, isUns := ov.(fmt.Stringer); ok && !isUns {
					if _, isStr := ov.(string); !isStr {
						return fmt.Errorf("row %d %q: %v (%T), the oracle %q", i, k, ov, ov, s)
					}
				}
				continue
			}
			if !ok || !reflect.DeepEqual(ov, tv) {
				if f1, ok1 := ov.(float64); ok1 {
					if f2, ok2 := tv.(float64); ok2 && f1 != f1 && f2 != f2 {
						continue // both NaN
					}
				}
				return fmt.Errorf("row %d %q: %v (%T), the oracle %v (%T)", i, k, ov, ov, tv, tv)
			}
		}
		for k, ov := range ours[i] {
			if _, ok := theirs[i][k]; !ok {
				return fmt.Errorf("row %d %q: %v (%T), the oracle has no value", i, k, ov, ov)
			}
		}
	}
	return nil
}

// CheckOracle reads data with read (all columns) and with the oracle, and
// compares.
func CheckOracle(t *testing.T, data []byte, read func([]byte) ([]map[string]any, error)) []map[string]any {
	t.Helper()
	ours, err := read(data)
	if err != nil {
		t.Fatalf("our reader: %v", err)
	}
	theirs, err := OracleRows(data)
	if err != nil {
		t.Fatalf("pqarrow: %v", err)
	}
	if err := SameRows(ours, theirs); err != nil {
		t.Fatal(err)
	}
	return ours
}

// DuckDB runs the DuckDB CLI, or skips saying why.
func DuckDB(t *testing.T, sql string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cli := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "..", ".tools", "bin", "duckdb")
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("no DuckDB CLI at %s (%v): the DuckDB-written files are not tested", cli, err)
	}
	out, err := exec.Command(cli, "-c", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
}

// ArrowTable is a record of every flat type pqarrow writes, with NULLs in
// the optional columns, n rows.
func ArrowTable(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "opt_str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "fixed", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		null := i%5 == 3
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("seg%d/chunk-%d.arrow", i/50, i))
		if null {
			for _, f := range []int{1, 2, 3, 5, 8, 10, 12, 13, 14, 15} {
				b.Field(f).AppendNull()
			}
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i%17))
			b.Field(2).(*array.BinaryBuilder).Append([]byte{byte(i), 0, 255})
			b.Field(3).(*array.Int8Builder).Append(int8(i))
			b.Field(5).(*array.Int32Builder).Append(int32(i * -100003))
			b.Field(8).(*array.Uint16Builder).Append(uint16(i * 31))
			b.Field(10).(*array.Uint64Builder).Append(uint64(i) * 0x8000000000001)
			b.Field(12).(*array.Float64Builder).Append(float64(i) / 3)
			b.Field(13).(*array.BooleanBuilder).Append(i%2 == 0)
			b.Field(14).(*array.FixedSizeBinaryBuilder).Append([]byte{'a', byte('a' + i%26), 'z'})
			b.Field(15).(*array.Date32Builder).Append(arrow.Date32(i))
		}
		b.Field(4).(*array.Int16Builder).Append(int16(i - 1000))
		b.Field(6).(*array.Int64Builder).Append(int64(i) * 1e12)
		b.Field(7).(*array.Uint8Builder).Append(uint8(i))
		b.Field(9).(*array.Uint32Builder).Append(uint32(i) * 3000000)
		b.Field(11).(*array.Float32Builder).Append(float32(i) / 7)
	}
	return b.NewRecordBatch()
}

func WriteArrow(t testing.TB, rec arrow.RecordBatch, opts ...parquet.WriterProperty) []byte {
	t.Helper()
	return WriteArrowBatches(t, []arrow.RecordBatch{rec}, opts...)
}

// WriteArrowBatches writes each record as its own row group (pqarrow's
// Write makes one per call, also for a record of 0 rows).
func WriteArrowBatches(t testing.TB, recs []arrow.RecordBatch, opts ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(recs[0].Schema(), &buf, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// AllNullTable is n rows of a url and catalog columns that are all NULL.
func AllNullTable(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "segment_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "length", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "num_rows", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "nothing", Type: arrow.Null, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("c%d.arrow", i))
		for f := 1; f < len(schema.Fields()); f++ {
			b.Field(f).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

// CatalogFile writes a Parquet catalog with integer columns of several
// widths, as DuckDB's COPY would.
func CatalogFile(t testing.TB) []byte {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "segment_id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "length", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "num_rows", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"a.arrow", "sub/b.arrow"}, nil)
	b.Field(1).(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
	b.Field(2).(*array.Uint64Builder).AppendValues([]uint64{10, 0}, []bool{true, false})
	b.Field(3).(*array.Int16Builder).AppendValues([]int16{3, 4}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	return WriteArrow(t, rec)
}
