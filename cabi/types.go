package cabi

/*
#include <stdlib.h>
#include "rs.h"
*/
import "C"

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column kinds, the same numbers as enum rs_kind in rs.h.
const (
	kindFixed       = C.RS_FIXED
	kindBool        = C.RS_BOOL
	kindUTF8        = C.RS_UTF8
	kindConstStr    = C.RS_CONST_STR
	kindView        = C.RS_VIEW
	kindFixedBinary = C.RS_FIXED_BINARY
	kindScaleI64    = C.RS_SCALE_I64
	kindI32ToI64    = C.RS_I32_TO_I64
	kindDate64      = C.RS_DATE64
	kindDate32      = C.RS_DATE32
	kindDecimal     = C.RS_DECIMAL
	kindDuration    = C.RS_DURATION
	kindIntervalYM  = C.RS_INTERVAL_YM
	kindIntervalDT  = C.RS_INTERVAL_DT
	kindIntervalMDN = C.RS_INTERVAL_MDN
	kindFloat16     = C.RS_FLOAT16
	kindDict        = C.RS_DICT
	kindList        = C.RS_LIST
	kindArray       = C.RS_ARRAY
	kindStruct      = C.RS_STRUCT
)

// colType is how one Arrow type becomes one DuckDB type: the DuckDB logical
// type to declare at bind, and the kernel that copies the values (rs_fill).
type colType struct {
	duck     C.duckdb_type
	decWidth uint8 // DECIMAL
	decScale uint8
	kind     int
	width    int // see enum rs_kind: value width, offset width or list size
	inWidth  int // DECIMAL and dictionary indices: input integer width
	// unit converts time units to microseconds: multiply by it when
	// positive, floor-divide by -unit when negative (toMicros); 0 for
	// kinds without a unit.
	unit int64
	// lo and hi bound a converted value (kinds that convert: scale, time,
	// date64, duration) to the DuckDB type's range; for DECIMAL, hi is the
	// precision. The copy fails on a value outside them (rs_col).
	lo, hi int64
	// signedIndex: a dictionary's indices are signed integers.
	signedIndex bool
	children    []colType
	names       []string // STRUCT field names
}

// column is one output column: its name, type, and where its values come from.
type column struct {
	name  string
	field int // index of the record's column, or fieldSegmentID / fieldChunkID
	typ   colType
}

// Values of column.field for the two columns that come from the catalog row.
const (
	fieldSegmentID = -1
	fieldChunkID   = -2
)

// outputColumns lists remote_segments' output columns for a chunk schema:
// segment_id, chunk_id, then the chunk's fields.
func outputColumns(schema *arrow.Schema) ([]column, error) {
	str := colType{duck: C.DUCKDB_TYPE_VARCHAR, kind: kindConstStr}
	cols := []column{{name: "segment_id", field: fieldSegmentID, typ: str}, {name: "chunk_id", field: fieldChunkID, typ: str}}
	fields, err := recordColumns(schema)
	return append(cols, fields...), err
}

// recordColumns maps every field of schema to a column; a field whose Arrow
// type has no DuckDB counterpart is an error naming it.
func recordColumns(schema *arrow.Schema) ([]column, error) {
	var cols []column
	for i, f := range schema.Fields() {
		t, err := typeFor(f.Type)
		if err != nil {
			return nil, fmt.Errorf("remote_segments: column %q: %w", f.Name, err)
		}
		cols = append(cols, column{name: f.Name, field: i, typ: t})
	}
	return cols, nil
}

// fixedTypes are the Arrow types whose values have DuckDB's in-memory layout:
// a vector of them is one memcpy.
var fixedTypes = map[arrow.Type]struct {
	duck  C.duckdb_type
	width int
}{
	arrow.INT8:    {C.DUCKDB_TYPE_TINYINT, 1},
	arrow.INT16:   {C.DUCKDB_TYPE_SMALLINT, 2},
	arrow.INT32:   {C.DUCKDB_TYPE_INTEGER, 4},
	arrow.INT64:   {C.DUCKDB_TYPE_BIGINT, 8},
	arrow.UINT8:   {C.DUCKDB_TYPE_UTINYINT, 1},
	arrow.UINT16:  {C.DUCKDB_TYPE_USMALLINT, 2},
	arrow.UINT32:  {C.DUCKDB_TYPE_UINTEGER, 4},
	arrow.UINT64:  {C.DUCKDB_TYPE_UBIGINT, 8},
	arrow.FLOAT32: {C.DUCKDB_TYPE_FLOAT, 4},
	arrow.FLOAT64: {C.DUCKDB_TYPE_DOUBLE, 8},
}

// toMicros is the factor from a time unit to microseconds for the kernels'
// scale() (colType.unit): multiply when positive, floor-divide by -unit
// when negative. It is never written.
var toMicros = map[arrow.TimeUnit]int64{arrow.Second: 1_000_000, arrow.Millisecond: 1_000, arrow.Microsecond: 1, arrow.Nanosecond: -1_000}

// microsPerDay is the largest TIME: 24:00:00.
const microsPerDay = 86_400_000_000

// typeFor maps an Arrow type to its DuckDB counterpart, or says why there is none.
func typeFor(dt arrow.DataType) (colType, error) {
	if ft, ok := fixedTypes[dt.ID()]; ok {
		return colType{duck: ft.duck, kind: kindFixed, width: ft.width}, nil
	}
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return colType{duck: C.DUCKDB_TYPE_BOOLEAN, kind: kindBool}, nil
	case *arrow.Float16Type:
		return colType{duck: C.DUCKDB_TYPE_FLOAT, kind: kindFloat16}, nil
	case *arrow.StringType:
		return colType{duck: C.DUCKDB_TYPE_VARCHAR, kind: kindUTF8, width: 4}, nil
	case *arrow.LargeStringType:
		return colType{duck: C.DUCKDB_TYPE_VARCHAR, kind: kindUTF8, width: 8}, nil
	case *arrow.BinaryType:
		return colType{duck: C.DUCKDB_TYPE_BLOB, kind: kindUTF8, width: 4}, nil
	case *arrow.LargeBinaryType:
		return colType{duck: C.DUCKDB_TYPE_BLOB, kind: kindUTF8, width: 8}, nil
	case *arrow.StringViewType:
		return colType{duck: C.DUCKDB_TYPE_VARCHAR, kind: kindView}, nil
	case *arrow.BinaryViewType:
		return colType{duck: C.DUCKDB_TYPE_BLOB, kind: kindView}, nil
	case *arrow.FixedSizeBinaryType:
		return colType{duck: C.DUCKDB_TYPE_BLOB, kind: kindFixedBinary, width: t.ByteWidth}, nil
	case *arrow.Date32Type:
		// Its values are DATE's, but DATE's largest and smallest mean
		// ±infinity, which Arrow has no way to say: checked, not copied.
		return colType{duck: C.DUCKDB_TYPE_DATE, kind: kindDate32, unit: 1, lo: -math.MaxInt32 + 1, hi: math.MaxInt32 - 1}, nil
	case *arrow.Date64Type:
		// DATE is int32 days; its largest and smallest values mean
		// ±infinity, which Arrow has no way to say.
		return colType{duck: C.DUCKDB_TYPE_DATE, kind: kindDate64, unit: -86_400_000, lo: -math.MaxInt32 + 1, hi: math.MaxInt32 - 1}, nil
	case *arrow.TimestampType:
		// DuckDB reads every timestamp as microseconds at some point, and
		// takes ±MaxInt64 microseconds for ±infinity: a value is checked
		// whenever its unit is coarser, where the product may overflow.
		if t.TimeZone != "" {
			// TIMESTAMP WITH TIME ZONE exists in microseconds only.
			return colType{duck: C.DUCKDB_TYPE_TIMESTAMP_TZ, kind: kindScaleI64, unit: toMicros[t.Unit], lo: -math.MaxInt64 + 1, hi: math.MaxInt64 - 1}, nil
		}
		switch t.Unit {
		case arrow.Second, arrow.Millisecond: // stored as they are, checked: unit 1
			duck := map[arrow.TimeUnit]C.duckdb_type{arrow.Second: C.DUCKDB_TYPE_TIMESTAMP_S, arrow.Millisecond: C.DUCKDB_TYPE_TIMESTAMP_MS}[t.Unit]
			max := (math.MaxInt64 - 1) / toMicros[t.Unit]
			return colType{duck: duck, kind: kindScaleI64, unit: 1, lo: -max, hi: max}, nil
		default: // microseconds and nanoseconds: DuckDB's own units, checked for ±infinity
			duck := map[arrow.TimeUnit]C.duckdb_type{arrow.Microsecond: C.DUCKDB_TYPE_TIMESTAMP, arrow.Nanosecond: C.DUCKDB_TYPE_TIMESTAMP_NS}[t.Unit]
			return colType{duck: duck, kind: kindScaleI64, unit: 1, lo: -math.MaxInt64 + 1, hi: math.MaxInt64 - 1}, nil
		}
	case *arrow.Time32Type:
		return colType{duck: C.DUCKDB_TYPE_TIME, kind: kindI32ToI64, unit: toMicros[t.Unit], lo: 0, hi: microsPerDay}, nil
	case *arrow.Time64Type:
		// Checked in every unit: a TIME outside the day makes DuckDB fail
		// with an internal error where it prints or casts it.
		return colType{duck: C.DUCKDB_TYPE_TIME, kind: kindScaleI64, unit: toMicros[t.Unit], lo: 0, hi: microsPerDay}, nil
	case *arrow.DurationType:
		return colType{duck: C.DUCKDB_TYPE_INTERVAL, kind: kindDuration, unit: toMicros[t.Unit], lo: math.MinInt64, hi: math.MaxInt64}, nil
	case *arrow.MonthIntervalType:
		return colType{duck: C.DUCKDB_TYPE_INTERVAL, kind: kindIntervalYM}, nil
	case *arrow.DayTimeIntervalType:
		return colType{duck: C.DUCKDB_TYPE_INTERVAL, kind: kindIntervalDT}, nil
	case *arrow.MonthDayNanoIntervalType:
		return colType{duck: C.DUCKDB_TYPE_INTERVAL, kind: kindIntervalMDN}, nil
	case arrow.DecimalType:
		return decimalType(t)
	case *arrow.DictionaryType:
		v, err := typeFor(t.ValueType)
		if err != nil {
			return v, err
		}
		idx, ok := t.IndexType.(arrow.FixedWidthDataType)
		if !ok || !arrow.IsInteger(t.IndexType.ID()) {
			return v, fmt.Errorf("dictionary index type %s is not an integer", t.IndexType)
		}
		d := v
		d.kind, d.width, d.inWidth, d.unit, d.children = kindDict, 0, idx.BitWidth()/8, 0, []colType{v}
		d.signedIndex = arrow.IsSignedInteger(t.IndexType.ID())
		return d, nil
	case *arrow.ListType:
		return listType(t.Elem(), 4)
	case *arrow.LargeListType:
		return listType(t.Elem(), 8)
	case *arrow.FixedSizeListType:
		elem, err := typeFor(t.Elem())
		if err != nil {
			return elem, err
		}
		return colType{duck: C.DUCKDB_TYPE_ARRAY, kind: kindArray, width: int(t.Len()), children: []colType{elem}}, nil
	case *arrow.MapType:
		// DuckDB's MAP is a LIST of STRUCT(key, value), as Arrow's map is.
		key, err := typeFor(t.KeyType())
		if err != nil {
			return key, fmt.Errorf("map key: %w", err)
		}
		val, err := typeFor(t.ItemType())
		if err != nil {
			return val, fmt.Errorf("map value: %w", err)
		}
		entry := colType{duck: C.DUCKDB_TYPE_STRUCT, kind: kindStruct, children: []colType{key, val}, names: []string{"key", "value"}}
		return colType{duck: C.DUCKDB_TYPE_MAP, kind: kindList, width: 4, children: []colType{entry}}, nil
	case *arrow.StructType:
		st := colType{duck: C.DUCKDB_TYPE_STRUCT, kind: kindStruct}
		for _, f := range t.Fields() {
			ft, err := typeFor(f.Type)
			if err != nil {
				return ft, fmt.Errorf("field %q: %w", f.Name, err)
			}
			st.children = append(st.children, ft)
			st.names = append(st.names, f.Name)
		}
		if len(st.children) == 0 {
			return st, fmt.Errorf("Arrow type %s: a STRUCT needs at least one field", dt)
		}
		return st, nil
	}
	return colType{}, fmt.Errorf("Arrow type %s has no DuckDB counterpart", dt)
}

func listType(elem arrow.DataType, offsetWidth int) (colType, error) {
	e, err := typeFor(elem)
	if err != nil {
		return e, fmt.Errorf("list element: %w", err)
	}
	return colType{duck: C.DUCKDB_TYPE_LIST, kind: kindList, width: offsetWidth, children: []colType{e}}, nil
}

func decimalType(t arrow.DecimalType) (colType, error) {
	p, s := t.GetPrecision(), t.GetScale()
	if p > 38 || p < 1 || s < 0 || s > p {
		return colType{}, fmt.Errorf("Arrow type %s: DuckDB's DECIMAL holds 1 to 38 digits with 0 <= scale <= width", t)
	}
	width := 16
	switch {
	case p <= 4:
		width = 2
	case p <= 9:
		width = 4
	case p <= 18:
		width = 8
	}
	inWidth := t.(arrow.FixedWidthDataType).BitWidth() / 8
	return colType{duck: C.DUCKDB_TYPE_DECIMAL, decWidth: uint8(p), decScale: uint8(s), kind: kindDecimal, width: width, inWidth: inWidth, hi: int64(p)}, nil
}

// logicalType creates the DuckDB logical type of t; the caller destroys it
// with C.rs_type_destroy.
func logicalType(t colType) C.duckdb_logical_type {
	if t.kind == kindDict {
		return logicalType(t.children[0]) // dictionaries come out as their values
	}
	switch t.duck {
	case C.DUCKDB_TYPE_DECIMAL:
		return C.rs_type_decimal(C.uint8_t(t.decWidth), C.uint8_t(t.decScale))
	case C.DUCKDB_TYPE_LIST, C.DUCKDB_TYPE_ARRAY:
		child := logicalType(t.children[0])
		defer C.rs_type_destroy(child)
		if t.duck == C.DUCKDB_TYPE_ARRAY {
			return C.rs_type_array(child, C.idx_t(t.width))
		}
		return C.rs_type_list(child)
	case C.DUCKDB_TYPE_MAP:
		entry := t.children[0]
		key, val := logicalType(entry.children[0]), logicalType(entry.children[1])
		defer C.rs_type_destroy(key)
		defer C.rs_type_destroy(val)
		return C.rs_type_map(key, val)
	case C.DUCKDB_TYPE_STRUCT:
		n := len(t.children)
		// C arrays: they hold C pointers only, and C reads them.
		types := unsafe.Slice((*C.duckdb_logical_type)(C.malloc(C.size_t(n)*C.size_t(unsafe.Sizeof(C.duckdb_logical_type(nil))))), n)
		names := unsafe.Slice((**C.char)(C.malloc(C.size_t(n)*C.size_t(unsafe.Sizeof((*C.char)(nil))))), n)
		defer C.free(unsafe.Pointer(&types[0]))
		defer C.free(unsafe.Pointer(&names[0]))
		for i, c := range t.children {
			types[i] = logicalType(c)
			names[i] = C.CString(t.names[i])
		}
		defer func() {
			for i := range n {
				C.rs_type_destroy(types[i])
				C.free(unsafe.Pointer(names[i]))
			}
		}()
		return C.rs_type_struct(&types[0], &names[0], C.idx_t(n))
	}
	return C.rs_type_primitive(t.duck)
}

// logicalName names the DuckDB type t declares, for error messages.
func logicalName(t colType) string {
	switch {
	case t.kind == kindDict:
		return logicalName(t.children[0])
	case t.duck == C.DUCKDB_TYPE_DECIMAL:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.decWidth, t.decScale)
	}
	return duckNames[t.duck]
}

// duckNames names the DuckDB types typeFor produces, for String.
var duckNames = map[C.duckdb_type]string{
	C.DUCKDB_TYPE_BOOLEAN: "BOOLEAN", C.DUCKDB_TYPE_TINYINT: "TINYINT", C.DUCKDB_TYPE_SMALLINT: "SMALLINT",
	C.DUCKDB_TYPE_INTEGER: "INTEGER", C.DUCKDB_TYPE_BIGINT: "BIGINT", C.DUCKDB_TYPE_UTINYINT: "UTINYINT",
	C.DUCKDB_TYPE_USMALLINT: "USMALLINT", C.DUCKDB_TYPE_UINTEGER: "UINTEGER", C.DUCKDB_TYPE_UBIGINT: "UBIGINT",
	C.DUCKDB_TYPE_FLOAT: "FLOAT", C.DUCKDB_TYPE_DOUBLE: "DOUBLE", C.DUCKDB_TYPE_DATE: "DATE", C.DUCKDB_TYPE_TIME: "TIME",
	C.DUCKDB_TYPE_TIMESTAMP: "TIMESTAMP", C.DUCKDB_TYPE_TIMESTAMP_S: "TIMESTAMP_S", C.DUCKDB_TYPE_TIMESTAMP_MS: "TIMESTAMP_MS",
	C.DUCKDB_TYPE_TIMESTAMP_NS: "TIMESTAMP_NS", C.DUCKDB_TYPE_TIMESTAMP_TZ: "TIMESTAMP_TZ", C.DUCKDB_TYPE_INTERVAL: "INTERVAL",
	C.DUCKDB_TYPE_VARCHAR: "VARCHAR", C.DUCKDB_TYPE_BLOB: "BLOB", C.DUCKDB_TYPE_DECIMAL: "DECIMAL", C.DUCKDB_TYPE_LIST: "LIST",
	C.DUCKDB_TYPE_ARRAY: "ARRAY", C.DUCKDB_TYPE_MAP: "MAP", C.DUCKDB_TYPE_STRUCT: "STRUCT",
}

// String describes t as the DuckDB type it declares and how its values are
// copied: the type name, then the fields of the copy that are set, then the
// children in parentheses, such as "TIMESTAMP_TZ kind=7 unit=-1000" or
// "LIST kind=17 width=4 (VARCHAR kind=3 width=4)".
func (t colType) String() string {
	var b strings.Builder
	b.WriteString(duckNames[t.duck])
	if t.duck == C.DUCKDB_TYPE_DECIMAL {
		fmt.Fprintf(&b, "(%d,%d)", t.decWidth, t.decScale)
	}
	fmt.Fprintf(&b, " kind=%d", t.kind)
	for _, f := range []struct {
		name string
		v    int64
	}{{"width", int64(t.width)}, {"in_width", int64(t.inWidth)}, {"unit", t.unit}, {"lo", t.lo}, {"hi", t.hi}} {
		if f.v != 0 {
			fmt.Fprintf(&b, " %s=%d", f.name, f.v)
		}
	}
	if t.signedIndex {
		b.WriteString(" signed")
	}
	if len(t.children) > 0 {
		b.WriteString(" (")
		for i, c := range t.children {
			if i > 0 {
				b.WriteString(", ")
			}
			if i < len(t.names) {
				b.WriteString(t.names[i] + " ")
			}
			b.WriteString(c.String())
		}
		b.WriteString(")")
	}
	return b.String()
}
