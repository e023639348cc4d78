package cabi

/*
#include "rs.h"
*/
import "C"

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/remote-segments/remote_segments/scanner"
)

// rsStatsBind binds remote_segments_stats(): the scans of this host's
// database as scanner.StatsTable has them.
//
//export rsStatsBind
func rsStatsBind(info C.duckdb_bind_info) {
	defer func() {
		if r := recover(); r != nil {
			setBindError(info, errorText(r))
		}
	}()
	host := hostOf(info)
	bindTable(info, scanner.StatsSchema(), func() arrow.RecordBatch { return scanner.StatsTable(host.Process.ScansOf(host.owner)) })
}

// bindTable binds a table function whose rows are one record of schema,
// made by rows when the scan starts.
func bindTable(info C.duckdb_bind_info, schema *arrow.Schema, rows func() arrow.RecordBatch) {
	cols, err := recordColumns(schema)
	if err != nil {
		setBindError(info, err.Error())
		return
	}
	setBindData(info, cols, func([]int) (*rowSource, error) {
		batch := &scanner.Batch{Record: rows()}
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
