package datagen

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// typedColumn is one column of the types dataset: its Arrow field, how to
// append row r, and DuckDB's text for row r (CAST(col AS VARCHAR), or the
// expression the SQL test names), "" with ok=false for NULL.
type typedColumn struct {
	field  arrow.Field
	append func(b array.Builder, r int)
	text   func(r int) string
}

// isNull says whether row r of column c is NULL: every column has NULLs, each
// on other rows.
func isNull(r, c int) bool { return (r+c)%9 == 4 }

// TypesRows is how many rows WriteTypes writes, over two chunks; more than one
// DuckDB vector each, so nested values cross vector boundaries.
const TypesRows = 5000

var epoch = time.Unix(0, 0).UTC()

// fmtFrac renders t like DuckDB: seconds, then a fraction without trailing zeros.
func fmtFrac(layout string, t time.Time, digits int) string {
	s := t.Format(layout)
	frac := fmt.Sprintf("%09d", t.Nanosecond())[:digits]
	if frac = strings.TrimRight(frac, "0"); frac != "" {
		s += "." + frac
	}
	return s
}

func fmtFloat(v float64, bits int) string {
	s := strconv.FormatFloat(v, 'f', -1, bits)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// fmtDecimal renders an unscaled integer with scale digits after the point.
func fmtDecimal(v *big.Int, scale int) string {
	neg := v.Sign() < 0
	digits := new(big.Int).Abs(v).String()
	for len(digits) <= scale {
		digits = "0" + digits
	}
	s := digits[:len(digits)-scale]
	if scale > 0 {
		s += "." + digits[len(digits)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// fmtBlob renders bytes as DuckDB's BLOB to VARCHAR cast does.
func fmtBlob(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c >= 32 && c < 127 && c != '\\' {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "\\x%02X", c)
		}
	}
	return sb.String()
}

func str(r int) string {
	if r%3 == 0 {
		return fmt.Sprintf("a string longer than twelve bytes, row %d ✓", r)
	}
	return fmt.Sprintf("s%d", r)
}

func blob(r int) []byte {
	if r%4 == 0 {
		return []byte(fmt.Sprintf("binary\x00value\x01row %d is long", r))
	}
	return []byte(fmt.Sprintf("b%d", r))
}

var colours = []string{"red", "green", "blue", "a colour with a long name"}

func typedColumns() []typedColumn {
	ts := func(r int) time.Time {
		return epoch.Add(time.Duration(r)*1_234_567_891_011 + time.Duration(r%7)*time.Nanosecond)
	}
	day := func(r int) int { return r*13 - 20000 }
	tod := func(r int) time.Duration { return time.Duration(r*7_654_321_123) % (24 * time.Hour) }
	dec := func(r int, scale int64) *big.Int {
		v := big.NewInt(int64(r*7919 - 4_000_000))
		return v.Mul(v, big.NewInt(scale))
	}
	todText := func(d time.Duration, digits int) string { return fmtFrac("15:04:05", epoch.Add(d), digits) }
	list := func(r int) []int32 { // 0 to 4 elements
		out := make([]int32, r%5)
		for i := range out {
			out[i] = int32(r*10 + i)
		}
		return out
	}
	intList := func(v []int32, nullAt int) string {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = strconv.Itoa(int(x))
			if i == nullAt {
				parts[i] = "NULL"
			}
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	mdn := func(r int) arrow.MonthDayNanoInterval {
		return arrow.MonthDayNanoInterval{Months: int32(r % 25), Days: int32(r%40 - 10), Nanoseconds: int64(r) * 1_001_000}
	}
	fixed := func(r int) string { return fmt.Sprintf("%04d", r%10000) }
	cols := []typedColumn{
		{arrow.Field{Name: "i8", Type: arrow.PrimitiveTypes.Int8}, func(b array.Builder, r int) { b.(*array.Int8Builder).Append(int8(r%256 - 128)) }, func(r int) string { return strconv.Itoa(r%256 - 128) }},
		{arrow.Field{Name: "i16", Type: arrow.PrimitiveTypes.Int16}, func(b array.Builder, r int) { b.(*array.Int16Builder).Append(int16(r*7 - 10000)) }, func(r int) string { return strconv.Itoa(r*7 - 10000) }},
		{arrow.Field{Name: "i32", Type: arrow.PrimitiveTypes.Int32}, func(b array.Builder, r int) { b.(*array.Int32Builder).Append(int32(r*100003 - 50_000_000)) }, func(r int) string { return strconv.Itoa(r*100003 - 50_000_000) }},
		{arrow.Field{Name: "i64", Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder, r int) { b.(*array.Int64Builder).Append(int64(r)*1e12 - 7) }, func(r int) string { return strconv.FormatInt(int64(r)*1e12-7, 10) }},
		{arrow.Field{Name: "u8", Type: arrow.PrimitiveTypes.Uint8}, func(b array.Builder, r int) { b.(*array.Uint8Builder).Append(uint8(r)) }, func(r int) string { return strconv.Itoa(r % 256) }},
		{arrow.Field{Name: "u16", Type: arrow.PrimitiveTypes.Uint16}, func(b array.Builder, r int) { b.(*array.Uint16Builder).Append(uint16(r * 13)) }, func(r int) string { return strconv.Itoa(r * 13 % 65536) }},
		{arrow.Field{Name: "u32", Type: arrow.PrimitiveTypes.Uint32}, func(b array.Builder, r int) { b.(*array.Uint32Builder).Append(uint32(r) * 2654435761) }, func(r int) string { return strconv.FormatUint(uint64(uint32(r)*2654435761), 10) }},
		{arrow.Field{Name: "u64", Type: arrow.PrimitiveTypes.Uint64}, func(b array.Builder, r int) { b.(*array.Uint64Builder).Append(^uint64(0) - uint64(r)) }, func(r int) string { return strconv.FormatUint(^uint64(0)-uint64(r), 10) }},
		{arrow.Field{Name: "f16", Type: arrow.FixedWidthTypes.Float16}, func(b array.Builder, r int) { b.(*array.Float16Builder).Append(float16.New(float32(r%64) * 0.5)) }, func(r int) string { return fmtFloat(float64(r%64)*0.5, 32) }},
		{arrow.Field{Name: "f32", Type: arrow.PrimitiveTypes.Float32}, func(b array.Builder, r int) { b.(*array.Float32Builder).Append(float32(r%1000)*0.25 - 100) }, func(r int) string { return fmtFloat(float64(r%1000)*0.25-100, 32) }},
		{arrow.Field{Name: "f64", Type: arrow.PrimitiveTypes.Float64}, func(b array.Builder, r int) { b.(*array.Float64Builder).Append(float64(r)*0.125 - 3.5) }, func(r int) string { return fmtFloat(float64(r)*0.125-3.5, 64) }},
		{arrow.Field{Name: "bool", Type: arrow.FixedWidthTypes.Boolean}, func(b array.Builder, r int) { b.(*array.BooleanBuilder).Append(r%3 == 0) }, func(r int) string { return strconv.FormatBool(r%3 == 0) }},
		{arrow.Field{Name: "dec4", Type: &arrow.Decimal128Type{Precision: 4, Scale: 1}}, func(b array.Builder, r int) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(int64(r%19999 - 9999)))
		}, func(r int) string { return fmtDecimal(big.NewInt(int64(r%19999-9999)), 1) }},
		{arrow.Field{Name: "dec9", Type: &arrow.Decimal128Type{Precision: 9, Scale: 3}}, func(b array.Builder, r int) { b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(dec(r, 1))) }, func(r int) string { return fmtDecimal(dec(r, 1), 3) }},
		{arrow.Field{Name: "dec18", Type: &arrow.Decimal128Type{Precision: 18, Scale: 6}}, func(b array.Builder, r int) { b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(dec(r, 1e9))) }, func(r int) string { return fmtDecimal(dec(r, 1e9), 6) }},
		{arrow.Field{Name: "dec38", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}}, func(b array.Builder, r int) {
			b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(new(big.Int).Mul(dec(r, 1e18), big.NewInt(1e11))))
		}, func(r int) string { return fmtDecimal(new(big.Int).Mul(dec(r, 1e18), big.NewInt(1e11)), 10) }},
		{arrow.Field{Name: "date32", Type: arrow.FixedWidthTypes.Date32}, func(b array.Builder, r int) { b.(*array.Date32Builder).Append(arrow.Date32(day(r))) }, func(r int) string { return epoch.AddDate(0, 0, day(r)).Format("2006-01-02") }},
		{arrow.Field{Name: "date64", Type: arrow.FixedWidthTypes.Date64}, func(b array.Builder, r int) {
			b.(*array.Date64Builder).Append(arrow.Date64(int64(day(r)) * 86_400_000))
		}, func(r int) string { return epoch.AddDate(0, 0, day(r)).Format("2006-01-02") }},
		{arrow.Field{Name: "time32ms", Type: arrow.FixedWidthTypes.Time32ms}, func(b array.Builder, r int) { b.(*array.Time32Builder).Append(arrow.Time32(tod(r).Milliseconds())) }, func(r int) string { return todText(tod(r).Truncate(time.Millisecond), 3) }},
		{arrow.Field{Name: "time64us", Type: arrow.FixedWidthTypes.Time64us}, func(b array.Builder, r int) { b.(*array.Time64Builder).Append(arrow.Time64(tod(r).Microseconds())) }, func(r int) string { return todText(tod(r).Truncate(time.Microsecond), 6) }},
		{arrow.Field{Name: "time64ns", Type: arrow.FixedWidthTypes.Time64ns}, func(b array.Builder, r int) {
			b.(*array.Time64Builder).Append(arrow.Time64(tod(r).Nanoseconds() + int64(r%1000)))
		}, func(r int) string {
			return todText((tod(r) + time.Duration(r%1000)).Truncate(time.Microsecond), 6)
		}},
		{arrow.Field{Name: "ts_s", Type: &arrow.TimestampType{Unit: arrow.Second}}, func(b array.Builder, r int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts(r).Unix())) }, func(r int) string { return ts(r).Format("2006-01-02 15:04:05") }},
		{arrow.Field{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}}, func(b array.Builder, r int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts(r).UnixMilli())) }, func(r int) string { return fmtFrac("2006-01-02 15:04:05", ts(r), 3) }},
		{arrow.Field{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}, func(b array.Builder, r int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts(r).UnixMicro())) }, func(r int) string { return fmtFrac("2006-01-02 15:04:05", ts(r), 6) }},
		{arrow.Field{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}}, func(b array.Builder, r int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts(r).UnixNano())) }, func(r int) string { return fmtFrac("2006-01-02 15:04:05", ts(r), 9) }},
		// With a time zone: the SQL test compares epoch_us(col), which does not depend on the session's zone.
		{arrow.Field{Name: "tstz_s", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}}, func(b array.Builder, r int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts(r).Unix())) }, func(r int) string { return strconv.FormatInt(ts(r).Unix()*1e6, 10) }},
		{arrow.Field{Name: "tstz_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}}, func(b array.Builder, r int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts(r).UnixMicro())) }, func(r int) string { return strconv.FormatInt(ts(r).UnixMicro(), 10) }},
		{arrow.Field{Name: "tstz_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}}, func(b array.Builder, r int) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts(r).UnixNano())) }, func(r int) string { return strconv.FormatInt(ts(r).UnixMicro(), 10) }},
		// Intervals: the SQL test compares with CAST(expected AS INTERVAL), rendered by DuckDB on both sides.
		{arrow.Field{Name: "dur_ms", Type: arrow.FixedWidthTypes.Duration_ms}, func(b array.Builder, r int) { b.(*array.DurationBuilder).Append(arrow.Duration(r * 1500)) }, func(r int) string { return fmt.Sprintf("%d microseconds", r*1500*1000) }},
		{arrow.Field{Name: "iv_ym", Type: arrow.FixedWidthTypes.MonthInterval}, func(b array.Builder, r int) { b.(*array.MonthIntervalBuilder).Append(arrow.MonthInterval(r%30 - 5)) }, func(r int) string { return fmt.Sprintf("%d months", r%30-5) }},
		{arrow.Field{Name: "iv_dt", Type: arrow.FixedWidthTypes.DayTimeInterval}, func(b array.Builder, r int) {
			b.(*array.DayTimeIntervalBuilder).Append(arrow.DayTimeInterval{Days: int32(r % 50), Milliseconds: int32(r * 3)})
		}, func(r int) string { return fmt.Sprintf("%d days %d microseconds", r%50, r*3000) }},
		{arrow.Field{Name: "iv_mdn", Type: arrow.FixedWidthTypes.MonthDayNanoInterval}, func(b array.Builder, r int) { b.(*array.MonthDayNanoIntervalBuilder).Append(mdn(r)) }, func(r int) string {
			v := mdn(r)
			return fmt.Sprintf("%d months %d days %d microseconds", v.Months, v.Days, v.Nanoseconds/1000)
		}},
		{arrow.Field{Name: "str", Type: arrow.BinaryTypes.String}, func(b array.Builder, r int) { b.(*array.StringBuilder).Append(str(r)) }, str},
		{arrow.Field{Name: "lstr", Type: arrow.BinaryTypes.LargeString}, func(b array.Builder, r int) { b.(*array.LargeStringBuilder).Append(str(r + 1)) }, func(r int) string { return str(r + 1) }},
		{arrow.Field{Name: "vstr", Type: arrow.BinaryTypes.StringView}, func(b array.Builder, r int) { b.(*array.StringViewBuilder).Append(str(r + 2)) }, func(r int) string { return str(r + 2) }},
		{arrow.Field{Name: "bin", Type: arrow.BinaryTypes.Binary}, func(b array.Builder, r int) { b.(*array.BinaryBuilder).Append(blob(r)) }, func(r int) string { return fmtBlob(blob(r)) }},
		{arrow.Field{Name: "lbin", Type: arrow.BinaryTypes.LargeBinary}, func(b array.Builder, r int) { b.(*array.BinaryBuilder).Append(blob(r + 1)) }, func(r int) string { return fmtBlob(blob(r + 1)) }},
		{arrow.Field{Name: "vbin", Type: arrow.BinaryTypes.BinaryView}, func(b array.Builder, r int) { b.(*array.BinaryViewBuilder).Append(blob(r + 2)) }, func(r int) string { return fmtBlob(blob(r + 2)) }},
		{arrow.Field{Name: "fbin", Type: &arrow.FixedSizeBinaryType{ByteWidth: 4}}, func(b array.Builder, r int) { b.(*array.FixedSizeBinaryBuilder).Append([]byte(fixed(r))) }, fixed},
		{arrow.Field{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}}, func(b array.Builder, r int) {
			_ = b.(*array.BinaryDictionaryBuilder).AppendString(colours[r%len(colours)])
		}, func(r int) string { return colours[r%len(colours)] }},
		{arrow.Field{Name: "dict_u8", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint8, ValueType: arrow.PrimitiveTypes.Int64}}, func(b array.Builder, r int) {
			_ = b.(*array.Int64DictionaryBuilder).Append(int64(r%3) * 1_000_000_000_000)
		}, func(r int) string { return strconv.FormatInt(int64(r%3)*1_000_000_000_000, 10) }},
		{arrow.Field{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}, func(b array.Builder, r int) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			for i, v := range list(r) {
				if i == 1 {
					lb.ValueBuilder().AppendNull()
				} else {
					lb.ValueBuilder().(*array.Int32Builder).Append(v)
				}
			}
		}, func(r int) string { return intList(list(r), 1) }},
		// The SQL test renders string lists with array_to_string(col, '|').
		{arrow.Field{Name: "llist", Type: arrow.LargeListOf(arrow.BinaryTypes.String)}, func(b array.Builder, r int) {
			lb := b.(*array.LargeListBuilder)
			lb.Append(true)
			for i := range r % 4 {
				lb.ValueBuilder().(*array.StringBuilder).Append(str(r + i))
			}
		}, func(r int) string {
			parts := make([]string, r%4)
			for i := range parts {
				parts[i] = str(r + i)
			}
			return strings.Join(parts, "|")
		}},
		{arrow.Field{Name: "arr", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int64)}, func(b array.Builder, r int) {
			lb := b.(*array.FixedSizeListBuilder)
			lb.Append(true)
			for i := range 3 {
				lb.ValueBuilder().(*array.Int64Builder).Append(int64(r*3 + i))
			}
		}, func(r int) string { return fmt.Sprintf("[%d, %d, %d]", r*3, r*3+1, r*3+2) }},
		{arrow.Field{Name: "nested", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int32))}, func(b array.Builder, r int) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			inner := lb.ValueBuilder().(*array.ListBuilder)
			for i := range r % 3 {
				inner.Append(true)
				for _, v := range list(r + i) {
					inner.ValueBuilder().(*array.Int32Builder).Append(v)
				}
			}
		}, func(r int) string {
			parts := make([]string, r%3)
			for i := range parts {
				parts[i] = intList(list(r+i), -1)
			}
			return "[" + strings.Join(parts, ", ") + "]"
		}},
		// The SQL test reads struct fields (st.a, st.b) and map keys and values separately.
		{arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})}, func(b array.Builder, r int) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(r))
			sb.FieldBuilder(1).(*array.StringBuilder).Append(str(r))
		}, func(r int) string { return fmt.Sprintf("%d|%s", r, str(r)) }},
		{arrow.Field{Name: "mp", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)}, func(b array.Builder, r int) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			for i := range r % 3 {
				mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", i))
				mb.ItemBuilder().(*array.Int32Builder).Append(int32(r + i))
			}
		}, func(r int) string {
			var k, v []string
			for i := range r % 3 {
				k = append(k, fmt.Sprintf("k%d", i))
				v = append(v, strconv.Itoa(r+i))
			}
			return strings.Join(k, "|") + "/" + strings.Join(v, "|")
		}},
	}
	for i := range cols {
		cols[i].field.Nullable = true
	}
	return cols
}

// TypesSchema is the schema of the types dataset: rid, then one column per type.
func TypesSchema() *arrow.Schema {
	fields := []arrow.Field{{Name: "rid", Type: arrow.PrimitiveTypes.Int64}}
	for _, c := range typedColumns() {
		fields = append(fields, c.field)
	}
	return arrow.NewSchema(fields, nil)
}

// WriteTypes writes the types dataset: dir/types/part-0.arrow (IPC file, LZ4
// buffers) and part-1.arrows (IPC stream, ZSTD buffers), and
// dir/types_expected.csv with DuckDB's text for every value ("NULL" for NULL).
func WriteTypes(dir string) error {
	cols := typedColumns()
	schema := TypesSchema()
	if err := os.MkdirAll(filepath.Join(dir, "types"), 0o755); err != nil {
		return err
	}
	half := TypesRows / 2
	parts := []struct {
		name       string
		from, to   int
		fileFormat bool
		opt        ipc.Option
	}{
		{"part-0.arrow", 0, half, true, ipc.WithLZ4()},
		{"part-1.arrows", half, TypesRows, false, ipc.WithZstd()},
	}
	for _, p := range parts {
		var recs []arrow.RecordBatch
		for from := p.from; from < p.to; from += 900 { // batches of 900 rows
			recs = append(recs, typesBatch(schema, cols, from, min(from+900, p.to)))
		}
		err := writeChunkOpts(filepath.Join(dir, "types", p.name), recs, p.fileFormat, p.opt)
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return err
		}
	}
	return writeTypesExpected(filepath.Join(dir, "types_expected.csv"), cols, TypesRows)
}

func typesBatch(schema *arrow.Schema, cols []typedColumn, from, to int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for r := from; r < to; r++ {
		b.Field(0).(*array.Int64Builder).Append(int64(r))
		for ci, c := range cols {
			fb := b.Field(ci + 1)
			if isNull(r, ci) {
				fb.AppendNull()
				continue
			}
			c.append(fb, r)
		}
	}
	return b.NewRecordBatch()
}
