package cabi

/*
#include "rs.h"
*/
import "C"

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column kinds, the same numbers as enum rs_kind in rs.h.
const (
	kindFixed     = C.RS_FIXED
	kindBool      = C.RS_BOOL
	kindUTF8      = C.RS_UTF8
	kindLargeUTF8 = C.RS_LARGE_UTF8
	kindConstStr  = C.RS_CONST_STR
)

// column is one output column: its DuckDB type, where its values come from
// and how rs_fill copies them.
type column struct {
	name     string
	duckType C.duckdb_type
	field    int // index of the record's column, or fieldSegmentID / fieldChunkID
	kind     int
	width    int // bytes per value for kindFixed
}

// Values of column.field for the two columns that come from the catalog row.
const (
	fieldSegmentID = -1
	fieldChunkID   = -2
)

// fixedTypes maps Arrow types whose values have DuckDB's in-memory layout to
// their DuckDB type and width: a column of them is one memcpy per vector.
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
	arrow.DATE32:  {C.DUCKDB_TYPE_DATE, 4},
}

// outputColumns lists remote_segments' output columns for a chunk schema:
// segment_id, chunk_id, then the chunk's fields.
func outputColumns(schema *arrow.Schema) ([]column, error) {
	cols := []column{
		{name: "segment_id", duckType: C.DUCKDB_TYPE_VARCHAR, field: fieldSegmentID, kind: kindConstStr},
		{name: "chunk_id", duckType: C.DUCKDB_TYPE_VARCHAR, field: fieldChunkID, kind: kindConstStr},
	}
	fields, err := recordColumns(schema)
	return append(cols, fields...), err
}

// recordColumns maps every field of schema to a column; a field whose Arrow
// type has no DuckDB counterpart is an error naming it.
func recordColumns(schema *arrow.Schema) ([]column, error) {
	var cols []column
	for i, f := range schema.Fields() {
		c, err := columnFor(f, i)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, nil
}

func columnFor(f arrow.Field, field int) (column, error) {
	c := column{name: f.Name, field: field}
	if ft, ok := fixedTypes[f.Type.ID()]; ok {
		c.duckType, c.kind, c.width = ft.duck, kindFixed, ft.width
		return c, nil
	}
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		c.duckType, c.kind = C.DUCKDB_TYPE_BOOLEAN, kindBool
	case *arrow.StringType:
		c.duckType, c.kind = C.DUCKDB_TYPE_VARCHAR, kindUTF8
	case *arrow.LargeStringType:
		c.duckType, c.kind = C.DUCKDB_TYPE_VARCHAR, kindLargeUTF8
	case *arrow.BinaryType:
		c.duckType, c.kind = C.DUCKDB_TYPE_BLOB, kindUTF8
	case *arrow.LargeBinaryType:
		c.duckType, c.kind = C.DUCKDB_TYPE_BLOB, kindLargeUTF8
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			return c, fmt.Errorf("remote_segments: column %q: Arrow type %s is not supported yet (only microsecond timestamps)", f.Name, t)
		}
		c.duckType, c.kind, c.width = C.DUCKDB_TYPE_TIMESTAMP, kindFixed, 8
		if t.TimeZone != "" {
			c.duckType = C.DUCKDB_TYPE_TIMESTAMP_TZ
		}
	default:
		return c, fmt.Errorf("remote_segments: column %q: Arrow type %s has no DuckDB counterpart in this version", f.Name, f.Type)
	}
	return c, nil
}
