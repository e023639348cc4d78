package cabi

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestTypeFor: each Arrow type becomes the DuckDB type and copy kernel the
// README's type table promises (kinds are enum rs_kind: 1 fixed, 2 bool,
// 3 utf8, 5 view, 6 fixed binary, 7 scale int64, 8 int32 to int64, 9 date64,
// 10 decimal, 11 duration, 12-14 intervals, 15 float16, 16 dictionary,
// 17 list, 18 array, 19 struct, 20 date32).
func TestTypeFor(t *testing.T) {
	for _, c := range []struct {
		in   arrow.DataType
		want string
	}{
		{arrow.PrimitiveTypes.Int8, "TINYINT kind=1 width=1"},
		{arrow.PrimitiveTypes.Uint64, "UBIGINT kind=1 width=8"},
		{arrow.PrimitiveTypes.Float64, "DOUBLE kind=1 width=8"},
		{arrow.FixedWidthTypes.Boolean, "BOOLEAN kind=2"},
		{arrow.FixedWidthTypes.Float16, "FLOAT kind=15"},
		{arrow.BinaryTypes.String, "VARCHAR kind=3 width=4"},
		{arrow.BinaryTypes.LargeString, "VARCHAR kind=3 width=8"},
		{arrow.BinaryTypes.LargeBinary, "BLOB kind=3 width=8"},
		{arrow.BinaryTypes.StringView, "VARCHAR kind=5"},
		{&arrow.FixedSizeBinaryType{ByteWidth: 16}, "BLOB kind=6 width=16"},
		{arrow.FixedWidthTypes.Date32, "DATE kind=20 unit=1 lo=-2147483646 hi=2147483646"},
		{arrow.FixedWidthTypes.Date64, "DATE kind=9 unit=-86400000 lo=-2147483646 hi=2147483646"},
		{&arrow.TimestampType{Unit: arrow.Nanosecond}, "TIMESTAMP_NS kind=7 unit=1 lo=-9223372036854775806 hi=9223372036854775806"},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, "TIMESTAMP kind=7 unit=1 lo=-9223372036854775806 hi=9223372036854775806"},
		{&arrow.TimestampType{Unit: arrow.Second}, "TIMESTAMP_S kind=7 unit=1 lo=-9223372036854 hi=9223372036854"},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "TIMESTAMP_TZ kind=7 unit=1 lo=-9223372036854775806 hi=9223372036854775806"},
		{&arrow.TimestampType{Unit: arrow.Millisecond}, "TIMESTAMP_MS kind=7 unit=1 lo=-9223372036854775 hi=9223372036854775"},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, "TIMESTAMP_TZ kind=7 unit=1000 lo=-9223372036854775806 hi=9223372036854775806"},
		{&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, "TIMESTAMP_TZ kind=7 unit=-1000 lo=-9223372036854775806 hi=9223372036854775806"},
		{arrow.FixedWidthTypes.Time32s, "TIME kind=8 unit=1000000 hi=86400000000"},
		{arrow.FixedWidthTypes.Time64us, "TIME kind=7 unit=1 hi=86400000000"},
		{arrow.FixedWidthTypes.Time64ns, "TIME kind=7 unit=-1000 hi=86400000000"},
		{arrow.FixedWidthTypes.Duration_ms, "INTERVAL kind=11 unit=1000 lo=-9223372036854775808 hi=9223372036854775807"},
		{arrow.FixedWidthTypes.MonthInterval, "INTERVAL kind=12"},
		{arrow.FixedWidthTypes.DayTimeInterval, "INTERVAL kind=13"},
		{arrow.FixedWidthTypes.MonthDayNanoInterval, "INTERVAL kind=14"},
		{&arrow.Decimal128Type{Precision: 4, Scale: 2}, "DECIMAL(4,2) kind=10 width=2 in_width=16 hi=4"},
		{&arrow.Decimal128Type{Precision: 18, Scale: 0}, "DECIMAL(18,0) kind=10 width=8 in_width=16 hi=18"},
		{&arrow.Decimal256Type{Precision: 38, Scale: 10}, "DECIMAL(38,10) kind=10 width=16 in_width=32 hi=38"},
		{&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String},
			"VARCHAR kind=16 in_width=2 signed (VARCHAR kind=3 width=4)"},
		{&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint8, ValueType: arrow.PrimitiveTypes.Int64},
			"BIGINT kind=16 in_width=1 (BIGINT kind=1 width=8)"},
		{arrow.ListOf(arrow.BinaryTypes.String), "LIST kind=17 width=4 (VARCHAR kind=3 width=4)"},
		{arrow.LargeListOf(arrow.PrimitiveTypes.Int32), "LIST kind=17 width=8 (INTEGER kind=1 width=4)"},
		{arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), "ARRAY kind=18 width=3 (FLOAT kind=1 width=4)"},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64),
			"MAP kind=17 width=4 (STRUCT kind=19 (key VARCHAR kind=3 width=4, value BIGINT kind=1 width=8))"},
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean}),
			"STRUCT kind=19 (a INTEGER kind=1 width=4, b BOOLEAN kind=2)"},
	} {
		got, err := typeFor(c.in)
		if err != nil {
			t.Errorf("typeFor(%s): %v", c.in, err)
			continue
		}
		if got.String() != c.want {
			t.Errorf("typeFor(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestTypeForRefuses: types without a DuckDB counterpart are errors that
// say which part of the type is the problem.
func TestTypeForRefuses(t *testing.T) {
	for _, c := range []struct {
		in   arrow.DataType
		want string
	}{
		{arrow.Null, "has no DuckDB counterpart"},
		{arrow.ListOf(arrow.Null), "list element: "},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.Null), "map value: "},
		{arrow.StructOf(arrow.Field{Name: "n", Type: arrow.Null}), `field "n": `},
		{arrow.StructOf(), "a STRUCT needs at least one field"},
		{&arrow.Decimal256Type{Precision: 40, Scale: 2}, "DECIMAL holds 1 to 38 digits"},
	} {
		if got, err := typeFor(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("typeFor(%s) = %s, %v; want an error containing %q", c.in, got, err, c.want)
		}
	}
}
