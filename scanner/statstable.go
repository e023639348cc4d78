package scanner

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// tableColumn is one column of a table function's rows of T, such as
// remote_segments_stats()'s of ScanInfo: its name, Arrow type and value
// for a row.
type tableColumn[T any] struct {
	name  string
	typ   arrow.DataType
	value func(r *T) any // int64, float64, bool, string, or nil
}

// tableSchema is the schema of a table of cols, every column nullable.
func tableSchema[T any](cols []tableColumn[T]) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

var statsColumns = []tableColumn[ScanInfo]{
	{"scan_id", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return int64(s.ID) }},
	{"source", arrow.BinaryTypes.String, func(s *ScanInfo) any { return s.Source }},
	{"state", arrow.BinaryTypes.String, func(s *ScanInfo) any { return s.State }},
	{"error", arrow.BinaryTypes.String, func(s *ScanInfo) any {
		if s.Error == "" {
			return nil
		}
		return s.Error
	}},
	{"chunks", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Chunks }},
	{"batches", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Batches }},
	{"rows", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Rows }},
	{"wire_bytes", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.WireBytes }},
	{"requests", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Requests }},
	{"gets", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.GETs }},
	{"retries", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Retries }},
	{"hedges", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.HedgesIssued }},
	{"hedges_won", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.HedgesWon }},
	{"coalesced", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Coalesced }},
	{"splits", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Splits }},
	{"projected_io", arrow.FixedWidthTypes.Boolean, func(s *ScanInfo) any { return s.ProjectedIO }},
	{"max_parallel_io", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return int64(s.Parallelism) }},
	{"io_utilization", arrow.PrimitiveTypes.Float64, func(s *ScanInfo) any { return s.IOUtilization }},
	{"budget_cap", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Budget.Cap }},
	{"budget_peak", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Budget.Peak }},
	{"budget_in_use", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Budget.InUse }},
	{"budget_waits", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Budget.Waits }},
	{"budget_wait_ms", arrow.PrimitiveTypes.Float64, func(s *ScanInfo) any { return float64(s.Budget.TotalWait.Microseconds()) / 1000 }},
	{"budget_oversize", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Budget.OversizeAdmits }},
	{"budget_ratio", arrow.PrimitiveTypes.Float64, func(s *ScanInfo) any { return s.Budget.Multiplier }},
	{"wall_ms", arrow.PrimitiveTypes.Float64, func(s *ScanInfo) any { return float64(s.Wall.Microseconds()) / 1000 }},
	// The IO path's columns: sequential round trips per chunk, the chunks
	// read column by column and the bytes that saved, throttled answers,
	// and the throttling limit on requests in flight (lowest and final).
	{"round_trips_per_chunk", arrow.PrimitiveTypes.Float64, func(s *ScanInfo) any {
		if s.Chunks == 0 {
			return nil
		}
		return float64(s.RoundTrips) / float64(s.Chunks)
	}},
	{"projected_chunks", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.ProjectedChunks }},
	{"projection_saved_bytes", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.ProjectionSaved }},
	{"throttled", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Throttled }},
	{"io_limit_min", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return int64(s.LimitMin) }},
	{"io_limit_final", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return int64(s.LimitFinal) }},
	{"budget_limit", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.BudgetLimit }},
	{"pool_fresh", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Pool.Fresh }},
	{"pool_reused", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Pool.Reused }},
	{"pool_adopted", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Pool.Adopted }},
	{"budget_overcommits", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Budget.Overcommits }},
	// The chunks of the source the scan never requested (shard := 'k/n',
	// and in the 2.0 edition WHERE segment_id / chunk_id = or IN, and
	// filters on a column the catalog's min_/max_ bound).
	{"pruned", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.Pruned }},
	// How often the budget's cap grew from the starting cap because the budget
	// kept DuckDB waiting.
	{"budget_cap_raises", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.CapRaises }},
	// The share of the scan's bytes handed to DuckDB: what the 2.0 edition
	// reports to DuckDB's progress bar.
	{"progress", arrow.PrimitiveTypes.Float64, func(s *ScanInfo) any { return s.Progress }},
	// What bind read of the chunks for the schema (a file's footer, a
	// stream's first message, a small chunk whole), in none of the
	// columns above; the catalog and listings are not counted.
	{"schema_requests", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.SchemaRequests }},
	{"schema_bytes", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.SchemaBytes }},
	// The ranges read from the local cache instead of the store, and
	// their bytes (cache_dir).
	{"cache_hits", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.CacheHits }},
	{"cache_bytes", arrow.PrimitiveTypes.Int64, func(s *ScanInfo) any { return s.CacheBytes }},
}

// StatsSchema is the schema of remote_segments_stats(): one column per
// counter of a scan, every column nullable.
func StatsSchema() *arrow.Schema { return tableSchema(statsColumns) }

// StatsTable is scans as the rows of remote_segments_stats(), in
// StatsSchema.
func StatsTable(scans []ScanInfo) arrow.RecordBatch {
	return buildTable(StatsSchema(), statsColumns, scans)
}

// buildTable builds the rows of a table whose columns cols take from
// each of rows.
func buildTable[T any](schema *arrow.Schema, cols []tableColumn[T], rows []T) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range rows {
		for c, col := range cols {
			switch v := col.value(&rows[i]).(type) {
			case nil:
				b.Field(c).AppendNull()
			case int64:
				b.Field(c).(*array.Int64Builder).Append(v)
			case float64:
				b.Field(c).(*array.Float64Builder).Append(v)
			case bool:
				b.Field(c).(*array.BooleanBuilder).Append(v)
			case string:
				b.Field(c).(*array.StringBuilder).Append(v)
			default:
				panic(fmt.Sprintf("scanner: table column %s: value of type %T", col.name, v))
			}
		}
	}
	return b.NewRecordBatch()
}
