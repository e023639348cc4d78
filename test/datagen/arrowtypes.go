package datagen

import (
	"encoding/csv"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The arrow_types dataset: every type arrow-go writes that remote_segments
// reads, in every format it may come in (IPCFormats: both byte orders, no
// compression, LZ4 and ZSTD, file and stream), with NULLs and with batches
// of no rows between the others; and beside it, files that must fail with
// an error naming the column: values out of their DuckDB type's range,
// and types that are not supported.
//
//	arrow_types/all/<format>        ArrowTypesRows rows each, the same in
//	                                every file; arrow_types_expected.csv
//	                                holds DuckDB's text of each value
//	arrow_types/empty/<format>      no batches at all, or only empty ones
//	arrow_types/nodict/<format>.arrow   the IPC files of all/ without
//	                                their dictionary columns and with a
//	                                last column "pad" of incompressible
//	                                bytes: a scan of some of their columns
//	                                reads them column by column (a file
//	                                with dictionaries is always read whole)
//	arrow_types/extreme/<column>.arrow   one column whose values do not fit
//	                                its DuckDB type (ExtremeColumns)
//	arrow_types/unsupported/<column>.arrow   one column of a type that is
//	                                not supported (UnsupportedColumns)

// ArrowTypesRows is how many rows each arrow_types/all file holds.
const ArrowTypesRows = 1000

// arrowTypesBatches are the row ranges of each file's batches: empty ones
// first, between and last, the others crossing DuckDB's vector size.
var arrowTypesBatches = [][2]int{{0, 0}, {0, 400}, {400, 400}, {400, ArrowTypesRows}, {ArrowTypesRows, ArrowTypesRows}}

// moreTypedColumns are the types the types dataset lacks: decimals of
// 32, 64 and 256 bits, time32[s], durations of every unit, a zoned
// timestamp in milliseconds.
func moreTypedColumns() []typedColumn {
	tod := func(r int) time.Duration { return time.Duration(r*7_654_321_123) % (24 * time.Hour) }
	cols := []typedColumn{
		{arrow.Field{Name: "dec32", Type: &arrow.Decimal32Type{Precision: 7, Scale: 2}}, func(b array.Builder, r int) {
			b.(*array.Decimal32Builder).Append(decimal.Decimal32(int32(r*7919 - 4_000_000)))
		}, func(r int) string { return fmtDecimal(big.NewInt(int64(r*7919-4_000_000)), 2) }},
		{arrow.Field{Name: "dec64", Type: &arrow.Decimal64Type{Precision: 15, Scale: 3}}, func(b array.Builder, r int) {
			b.(*array.Decimal64Builder).Append(decimal.Decimal64(int64(r)*123_456_789_011 - 5e13))
		}, func(r int) string { return fmtDecimal(big.NewInt(int64(r)*123_456_789_011-5e13), 3) }},
		{arrow.Field{Name: "dec256", Type: &arrow.Decimal256Type{Precision: 30, Scale: 5}}, func(b array.Builder, r int) {
			v := new(big.Int).Mul(big.NewInt(int64(r*7919-4_000_000)), big.NewInt(1e18))
			b.(*array.Decimal256Builder).Append(decimal256.FromBigInt(v))
		}, func(r int) string {
			return fmtDecimal(new(big.Int).Mul(big.NewInt(int64(r*7919-4_000_000)), big.NewInt(1e18)), 5)
		}},
		{arrow.Field{Name: "time32s", Type: arrow.FixedWidthTypes.Time32s}, func(b array.Builder, r int) { b.(*array.Time32Builder).Append(arrow.Time32(tod(r) / time.Second)) }, func(r int) string {
			return epoch.Add(tod(r).Truncate(time.Second)).Format("15:04:05")
		}},
		{arrow.Field{Name: "dur_s", Type: arrow.FixedWidthTypes.Duration_s}, func(b array.Builder, r int) { b.(*array.DurationBuilder).Append(arrow.Duration(r*37 - 9000)) }, func(r int) string {
			return fmt.Sprintf("%d microseconds", int64(r*37-9000)*1_000_000)
		}},
		{arrow.Field{Name: "dur_us", Type: arrow.FixedWidthTypes.Duration_us}, func(b array.Builder, r int) { b.(*array.DurationBuilder).Append(arrow.Duration(r*1_000_003 - 7)) }, func(r int) string {
			return fmt.Sprintf("%d microseconds", r*1_000_003-7)
		}},
		{arrow.Field{Name: "dur_ns", Type: arrow.FixedWidthTypes.Duration_ns}, func(b array.Builder, r int) {
			b.(*array.DurationBuilder).Append(arrow.Duration(r*1_234_567_000 + r%1000))
		}, func(r int) string {
			return fmt.Sprintf("%d microseconds", r*1_234_567)
		}},
		{arrow.Field{Name: "tstz_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "America/New_York"}}, func(b array.Builder, r int) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(int64(r)*86_399_999 - 1e11))
		}, func(r int) string { return strconv.FormatInt((int64(r)*86_399_999-1e11)*1000, 10) }},
	}
	for i := range cols {
		cols[i].field.Nullable = true
	}
	return cols
}

// arrowTypedColumns are the columns of arrow_types/all.
func arrowTypedColumns() []typedColumn { return append(typedColumns(), moreTypedColumns()...) }

// ArrowTypesSchema is the schema of arrow_types/all: rid, then one column per type.
func ArrowTypesSchema() *arrow.Schema {
	fields := []arrow.Field{{Name: "rid", Type: arrow.PrimitiveTypes.Int64}}
	for _, c := range arrowTypedColumns() {
		fields = append(fields, c.field)
	}
	return arrow.NewSchema(fields, nil)
}

// ArrowTypesBatches returns the batches of every arrow_types/all file; the
// caller releases them. They are slices of one batch, so that their
// dictionaries are one (an IPC file holds one dictionary per field).
func ArrowTypesBatches() []arrow.RecordBatch {
	whole := typesBatch(ArrowTypesSchema(), arrowTypedColumns(), 0, ArrowTypesRows)
	defer whole.Release()
	var recs []arrow.RecordBatch
	for _, b := range arrowTypesBatches {
		recs = append(recs, whole.NewSlice(int64(b[0]), int64(b[1])))
	}
	return recs
}

// ArrowTypesNoDict returns the schema and batches of arrow_types/nodict:
// those of arrow_types/all without the dictionary columns. The caller
// releases the batches.
func ArrowTypesNoDict() (*arrow.Schema, []arrow.RecordBatch) {
	all := ArrowTypesSchema()
	var keep []int
	var fields []arrow.Field
	for i, f := range all.Fields() {
		if f.Type.ID() != arrow.DICTIONARY {
			keep = append(keep, i)
			fields = append(fields, f)
		}
	}
	schema := arrow.NewSchema(fields, nil)
	var recs []arrow.RecordBatch
	for _, r := range ArrowTypesBatches() {
		cols := make([]arrow.Array, len(keep))
		for j, i := range keep {
			cols[j] = r.Column(i)
		}
		recs = append(recs, array.NewRecordBatch(schema, cols, r.NumRows()))
		r.Release()
	}
	return schema, recs
}

// NoDictPadBytes is the size of each row's value of the pad column of
// arrow_types/nodict: enough that its files are larger than what bind
// reads whole, and that reading some of their columns saves more bytes
// than the cost model asks of a projected read before it measured the
// store.
const NoDictPadBytes = 5 << 10

// withPad returns recs (of schema) with a last column "pad" of
// NoDictPadBytes random bytes a row; the caller releases them, and still
// owns recs.
func withPad(schema *arrow.Schema, recs []arrow.RecordBatch) (*arrow.Schema, []arrow.RecordBatch) {
	padded := arrow.NewSchema(append(schema.Fields(), arrow.Field{Name: "pad", Type: arrow.BinaryTypes.Binary}), nil)
	rng := rand.New(rand.NewPCG(7, 11))
	value := make([]byte, NoDictPadBytes)
	var out []arrow.RecordBatch
	for _, r := range recs {
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		for range r.NumRows() {
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
			b.Append(value)
		}
		pad := b.NewArray()
		b.Release()
		out = append(out, array.NewRecordBatch(padded, append(r.Columns(), pad), r.NumRows()))
		pad.Release()
	}
	return padded, out
}

// ExtremeColumn is one file of arrow_types/extreme: a column whose values
// do not fit its DuckDB type, which a query must refuse naming the column.
type ExtremeColumn struct {
	Name   string
	Type   arrow.DataType
	Values []int64
}

// ExtremeColumns: INT64_MIN and INT64_MAX seconds (as a duration and a
// timestamp) and milliseconds (timestamp, date64) overflow DuckDB's
// microseconds; the date64 also lies outside DuckDB's dates. The
// *_infinity columns hold values DuckDB's own types keep for ±infinity
// (INT64_MAX microseconds or nanoseconds, ±INT32_MAX days), which in
// Arrow are instants like any other.
func ExtremeColumns() []ExtremeColumn {
	ext := []int64{0, math.MinInt64, math.MaxInt64}
	return []ExtremeColumn{
		{"dur_s_extreme", arrow.FixedWidthTypes.Duration_s, ext},
		{"ts_s_extreme", &arrow.TimestampType{Unit: arrow.Second}, ext},
		{"ts_ms_extreme", &arrow.TimestampType{Unit: arrow.Millisecond}, ext},
		{"tstz_s_extreme", &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}, ext},
		{"date64_extreme", arrow.FixedWidthTypes.Date64, ext},
		{"ts_us_infinity", &arrow.TimestampType{Unit: arrow.Microsecond}, []int64{0, math.MaxInt64}},
		{"tstz_us_infinity", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, []int64{0, -math.MaxInt64}},
		{"ts_ns_infinity", &arrow.TimestampType{Unit: arrow.Nanosecond}, []int64{0, math.MaxInt64}},
		{"date32_infinity", arrow.FixedWidthTypes.Date32, []int64{0, math.MaxInt32}},
		{"date32_ninfinity", arrow.FixedWidthTypes.Date32, []int64{0, -math.MaxInt32}},
	}
}

// UnsupportedColumns are the columns of arrow_types/unsupported, one file
// each: types arrow-go writes that remote_segments does not read.
func UnsupportedColumns() []arrow.Field {
	return []arrow.Field{
		{Name: "sparse_u", Type: arrow.SparseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, []arrow.UnionTypeCode{0}), Nullable: true},
		{Name: "dense_u", Type: arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, []arrow.UnionTypeCode{0}), Nullable: true},
		{Name: "ree", Type: arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "lview", Type: arrow.ListViewOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "list_of_ree", Type: arrow.ListOf(arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64)), Nullable: true},
	}
}

// WriteArrowTypes writes the arrow_types dataset under dir and
// dir/arrow_types_expected.csv.
func WriteArrowTypes(dir string) error {
	root := filepath.Join(dir, "arrow_types")
	for _, sub := range []string{"all", "empty", "nodict", "extreme", "unsupported"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
			return err
		}
	}
	schema := ArrowTypesSchema()
	recs := ArrowTypesBatches()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, f := range IPCFormats() {
		if err := WriteIPC(filepath.Join(root, "all", f.Name()), schema, recs, f); err != nil {
			return fmt.Errorf("datagen: %s: %w", f.Name(), err)
		}
		// No batches (the file and the stream) or only empty ones.
		empty := recs[:0]
		if f.Codec != CodecNone {
			empty = recs[len(recs)-1:]
		}
		if err := WriteIPC(filepath.Join(root, "empty", f.Name()), schema, empty, f); err != nil {
			return fmt.Errorf("datagen: empty %s: %w", f.Name(), err)
		}
	}
	ndSchema, ndRecs := ArrowTypesNoDict()
	defer ReleaseAll(ndRecs)
	ndSchema, padded := withPad(ndSchema, ndRecs)
	defer ReleaseAll(padded)
	for _, f := range IPCFormats() {
		if !f.File {
			continue // a stream is always read whole
		}
		if err := WriteIPC(filepath.Join(root, "nodict", f.Name()), ndSchema, padded, f); err != nil {
			return fmt.Errorf("datagen: nodict %s: %w", f.Name(), err)
		}
	}
	for _, c := range ExtremeColumns() {
		s := arrow.NewSchema([]arrow.Field{{Name: "rid", Type: arrow.PrimitiveTypes.Int64}, {Name: c.Name, Type: c.Type, Nullable: true}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		for i, v := range c.Values {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			switch fb := b.Field(1).(type) {
			case *array.DurationBuilder:
				fb.Append(arrow.Duration(v))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(v))
			case *array.Date64Builder:
				fb.Append(arrow.Date64(v))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(v))
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		err := WriteIPC(filepath.Join(root, "extreme", c.Name+".arrow"), s, []arrow.RecordBatch{rec}, IPCFormat{File: true})
		rec.Release()
		if err != nil {
			return err
		}
	}
	for _, f := range UnsupportedColumns() {
		s := arrow.NewSchema([]arrow.Field{{Name: "rid", Type: arrow.PrimitiveTypes.Int64}, f}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		b.Field(0).(*array.Int64Builder).Append(0)
		b.Field(1).AppendNull()
		rec := b.NewRecordBatch()
		b.Release()
		err := WriteIPC(filepath.Join(root, "unsupported", f.Name+".arrow"), s, []arrow.RecordBatch{rec}, IPCFormat{File: true})
		rec.Release()
		if err != nil {
			return fmt.Errorf("datagen: unsupported %s: %w", f.Name, err)
		}
	}
	return writeTypesExpected(filepath.Join(dir, "arrow_types_expected.csv"), arrowTypedColumns(), ArrowTypesRows)
}

// writeTypesExpected writes DuckDB's text of rows [0, rows) of cols ("NULL"
// for NULL), with a header: rid, then the columns' names.
func writeTypesExpected(path string, cols []typedColumn, rows int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	header := []string{"rid"}
	for _, c := range cols {
		header = append(header, c.field.Name)
	}
	_ = w.Write(header)
	for r := 0; r < rows; r++ {
		row := []string{strconv.Itoa(r)}
		for ci, c := range cols {
			if isNull(r, ci) {
				row = append(row, "NULL")
			} else {
				row = append(row, c.text(r))
			}
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
