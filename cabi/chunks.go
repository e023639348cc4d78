package cabi

/*
#include "rs.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/internal/policy"
	"github.com/remote-segments/remote_segments/scanner"
)

// namedText is the text of named parameter name as bind sees it: the
// query's value, else the environment default REMOTE_SEGMENTS_<NAME>;
// ok is false when neither is set (or the query's value is NULL).
func namedText(info C.duckdb_bind_info, name string) (v string, ok bool) {
	if v, ok := namedValue(info, name); ok {
		return v, true
	}
	if v, ok := os.LookupEnv(policy.EnvName(name)); ok && v != "" {
		return v, true
	}
	return "", false
}

// readShard reads the shard parameter (readNamedParameters has already
// checked its text and reported a bad one naming the parameter).
func readShard(info C.duckdb_bind_info) (policy.Shard, error) {
	v, ok := namedText(info, "shard")
	if !ok {
		return policy.Shard{}, nil
	}
	s, err := policy.ParseShard(v)
	if err != nil {
		return policy.Shard{}, fmt.Errorf("remote_segments: shard %v", err)
	}
	return s, nil
}

// chunksColumns are the columns of remote_segments_chunks(). The first
// seven and the last (version) are the catalog fields a LIST of STRUCT
// source accepts, so list(c) of its rows is a catalog any worker can scan,
// with the cache keys the catalog vouched for. version comes last so that
// the positions of the columns before it stay as they were.
var chunksColumns = []arrow.Field{
	{Name: "url", Type: arrow.BinaryTypes.String},
	{Name: "segment_id", Type: arrow.BinaryTypes.String},
	{Name: "chunk_id", Type: arrow.BinaryTypes.String},
	{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "length", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "num_rows", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "decoded_bytes", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "catalog_row", Type: arrow.PrimitiveTypes.Int64},
	{Name: "url_redacted", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "segment_hash", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "shard", Type: arrow.PrimitiveTypes.Int64},
	{Name: "version", Type: arrow.BinaryTypes.String, Nullable: true},
}

//export rsChunksBind
func rsChunksBind(info C.duckdb_bind_info) {
	defer func() {
		if r := recover(); r != nil {
			setBindError(info, errorText(r))
		}
	}()
	if err := chunksBind(info); err != nil {
		setBindError(info, err.Error())
	}
}

// chunksBind resolves the source exactly as the scan's bind does (same
// source forms, named parameters, sandbox) but reads no chunk, and lists
// the chunks; with shard := 'k/n', only those the scan of that shard reads.
func chunksBind(info C.duckdb_bind_info) error {
	host, cfg, shard, err := bindConfig(info)
	if err != nil {
		return err
	}
	n := max(shard.Count(), 1)
	if v, ok := namedText(info, "shards"); ok {
		if n, err = policy.ParseShardCount(v); err != nil {
			return fmt.Errorf("remote_segments_chunks: shards %v", err)
		}
		if shard.Count() > 1 && n != shard.Count() {
			return fmt.Errorf("remote_segments_chunks: shards := %d disagrees with shard := '%d/%d'", n, shard.Index(), shard.Count())
		}
	}
	chunks, err := scanner.Resolve(host.statement(info)(), cfg)
	if err != nil {
		return err
	}
	if cfg.Admit != nil { // the scan would refuse these chunks: so does the list
		for i := range chunks {
			if err := cfg.Admit(chunks[i].URL); err != nil {
				return &scanner.ChunkError{Chunk: &chunks[i], Err: err}
			}
		}
	}
	kept := chunks[:0]
	for _, c := range chunks {
		if shard.Holds(c.SegmentID) {
			kept = append(kept, c)
		}
	}
	schema := arrow.NewSchema(chunksColumns, nil)
	cols, err := recordColumns(schema)
	if err != nil {
		return err
	}
	C.rs_bind_set_cardinality(info, C.idx_t(len(kept)), true)
	setBindData(info, cols, func([]int) (*rowSource, error) {
		return oneRecord(chunksRecord(schema, kept, n)), nil // per run: a prepared statement runs many times
	})
	return nil
}

// chunksRecord is one row per chunk, in catalog order, with each chunk's
// shard of n.
func chunksRecord(schema *arrow.Schema, chunks []scanner.Chunk, n uint64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	str := func(i int) *array.StringBuilder { return b.Field(i).(*array.StringBuilder) }
	i64 := func(i int) *array.Int64Builder { return b.Field(i).(*array.Int64Builder) }
	known := func(i int, v int64) {
		if v < 0 {
			b.Field(i).AppendNull()
		} else {
			i64(i).Append(v)
		}
	}
	for i := range chunks {
		c := &chunks[i]
		u := scanner.RedactURL(c.URL) // as errors and stats show it: no credential
		length := c.Length
		if length < 0 && c.Size >= 0 { // a listed object: its size says
			length = c.Size - c.Offset
		}
		h := policy.SegmentHash(c.SegmentID)
		str(0).Append(u)
		str(1).Append(c.SegmentID)
		str(2).Append(c.ChunkID)
		i64(3).Append(c.Offset)
		known(4, length)
		known(5, c.NumRows)
		known(6, c.DecodedBytes)
		i64(7).Append(int64(c.Row))
		b.Field(8).(*array.BooleanBuilder).Append(u != c.URL)
		b.Field(9).(*array.Uint64Builder).Append(h)
		i64(10).Append(int64(h % n))
		if c.Version == "" {
			b.Field(11).AppendNull()
		} else {
			str(11).Append(c.Version)
		}
	}
	return b.NewRecordBatch()
}

// oneRecord is a row source that hands out rec once, to one thread.
func oneRecord(rec arrow.RecordBatch) *rowSource {
	var taken atomic.Bool
	return &rowSource{
		next: func() (*scanner.Batch, error) {
			if taken.Swap(true) {
				return nil, nil
			}
			return &scanner.Batch{Record: rec}, nil
		},
		close: func() {
			if !taken.Swap(true) {
				rec.Release()
			}
		},
		threads: 1,
	}
}
