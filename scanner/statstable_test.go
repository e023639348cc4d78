package scanner

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Each scan is one row; a counter lands in its column and an empty error is
// NULL, not "".
func TestStatsTable(t *testing.T) {
	scans := []ScanInfo{
		{ID: 7, Source: "s3://b/p", State: "done", Stats: Stats{Chunks: 3, Progress: 1}},
		{ID: 8, State: "error", Error: "remote_segments: boom", Stats: Stats{Progress: 0.25}},
	}
	rec := StatsTable(scans)
	defer rec.Release()
	if rec.NumRows() != 2 || int(rec.NumCols()) != len(StatsSchema().Fields()) {
		t.Fatalf("%d rows, %d columns", rec.NumRows(), rec.NumCols())
	}
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("column %q appears %d times", name, len(idx))
		}
		return rec.Column(idx[0])
	}
	if v := col("scan_id").(*array.Int64).Value(1); v != 8 {
		t.Errorf("scan_id %d", v)
	}
	if v := col("chunks").(*array.Int64).Value(0); v != 3 {
		t.Errorf("chunks %d", v)
	}
	if p := col("progress").(*array.Float64); p.Value(0) != 1 || p.Value(1) != 0.25 {
		t.Errorf("progress %v %v", p.Value(0), p.Value(1))
	}
	if e := col("error").(*array.String); !e.IsNull(0) || e.Value(1) != "remote_segments: boom" {
		t.Errorf("error column: null %v, %q", e.IsNull(0), e.Value(1))
	}
}
