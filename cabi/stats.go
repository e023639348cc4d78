package cabi

/*
#include "rs.h"
*/
import "C"

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/scanner"
)

// statsSchema is the schema of remote_segments_stats(): one row per running
// scan and per recently finished one.
var statsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "scan_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "source", Type: arrow.BinaryTypes.String},
	{Name: "state", Type: arrow.BinaryTypes.String},
	{Name: "error", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "chunks", Type: arrow.PrimitiveTypes.Int64},
	{Name: "batches", Type: arrow.PrimitiveTypes.Int64},
	{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
	{Name: "wire_bytes", Type: arrow.PrimitiveTypes.Int64},
	{Name: "wall_ms", Type: arrow.PrimitiveTypes.Float64},
}, nil)

//export rsStatsBind
func rsStatsBind(info C.duckdb_bind_info) {
	defer func() {
		if r := recover(); r != nil {
			setBindError(info, errorText(r))
		}
	}()
	cols, err := recordColumns(statsSchema)
	if err != nil {
		setBindError(info, err.Error())
		return
	}
	setBindData(info, cols, func() (*rowSource, error) {
		rec := statsRecord(scanner.Scans())
		batch := &scanner.Batch{Record: rec}
		done := false
		return &rowSource{
			next: func() (*scanner.Batch, error) {
				if done {
					return nil, nil
				}
				done = true
				return batch, nil
			},
			close:   func() {},
			threads: 1,
		}, nil
	})
}

func statsRecord(scans []scanner.ScanInfo) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, statsSchema)
	defer b.Release()
	for _, s := range scans {
		b.Field(0).(*array.Int64Builder).Append(s.ID)
		b.Field(1).(*array.StringBuilder).Append(s.Source)
		b.Field(2).(*array.StringBuilder).Append(s.State)
		if s.Error == "" {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(s.Error)
		}
		b.Field(4).(*array.Int64Builder).Append(s.Chunks)
		b.Field(5).(*array.Int64Builder).Append(s.Batches)
		b.Field(6).(*array.Int64Builder).Append(s.Rows)
		b.Field(7).(*array.Int64Builder).Append(s.WireBytes)
		b.Field(8).(*array.Float64Builder).Append(float64(s.Wall.Microseconds()) / 1000)
	}
	return b.NewRecordBatch()
}
