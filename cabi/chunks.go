package cabi

/*
#include "rs.h"
*/
import "C"

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/scanner"
)

// Shards: a source's chunks are split by segment, so a per-segment
// aggregate never spans two shards, and every process on every machine
// computes the same split from the segment id alone:
//
//	shard of a chunk = FNV-1a 64 (the UTF-8 bytes of segment_id) mod n
//
// with shards numbered 0 to n-1. README.md ("Distributed: shards")
// specifies it for other engines; remote_segments_chunks prints both the
// hash and the shard.

// maxShards bounds n in 'k/n' and shards := n: far more than the chunks
// any catalog holds, and small enough that a typo is caught.
const maxShards = 1 << 20

// SegmentHash is FNV-1a 64 of the UTF-8 bytes of segmentID: the hash the
// shards of a source are computed from.
func SegmentHash(segmentID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(segmentID))
	return h.Sum64()
}

// shardSpec is shard k of n (0 ≤ k < n); the zero value selects everything.
type shardSpec struct{ k, n uint64 }

// parseShard reads 'k/n': k is 0-based, so shard 0/1 is the whole source
// and the shards of 3 are 0/3, 1/3 and 2/3.
func parseShard(v string) (shardSpec, error) {
	ks, ns, ok := strings.Cut(strings.TrimSpace(v), "/")
	k, kerr := strconv.ParseUint(strings.TrimSpace(ks), 10, 64)
	n, nerr := strconv.ParseUint(strings.TrimSpace(ns), 10, 64)
	switch {
	case !ok || kerr != nil || nerr != nil:
		return shardSpec{}, fmt.Errorf("must be 'k/n' (shard k of n, k from 0 to n-1, such as '0/4'), not %q", v)
	case n < 1 || n > maxShards:
		return shardSpec{}, fmt.Errorf("%q: n must be from 1 to %d", v, maxShards)
	case k >= n:
		return shardSpec{}, fmt.Errorf("%q: k must be from 0 to %d (shards are numbered from 0)", v, n-1)
	}
	return shardSpec{k: k, n: n}, nil
}

// holds reports whether a chunk of segment lies in the shard.
func (s shardSpec) holds(segment string) bool {
	return s.n <= 1 || SegmentHash(segment)%s.n == s.k
}

// namedText is the text of named parameter name as bind sees it: the
// query's value, else the environment default REMOTE_SEGMENTS_<NAME>;
// ok is false when neither is set (or the query's value is NULL).
func namedText(info C.duckdb_bind_info, name string) (v string, ok bool) {
	if v, ok := namedValue(info, name); ok {
		return v, true
	}
	if v, ok := os.LookupEnv(envName(name)); ok && v != "" {
		return v, true
	}
	return "", false
}

// readShard reads the shard parameter (readNamedParameters has already
// checked its text and reported a bad one naming the parameter).
func readShard(info C.duckdb_bind_info) (shardSpec, error) {
	v, ok := namedText(info, "shard")
	if !ok {
		return shardSpec{}, nil
	}
	s, err := parseShard(v)
	if err != nil {
		return shardSpec{}, fmt.Errorf("remote_segments: shard %v", err)
	}
	return s, nil
}

// keep is the shard as scanner.Config.Keep (nil: every chunk): Bind drops
// the chunks outside it (never requested, counted as pruned in the scan's
// stats).
func (s shardSpec) keep() func(c *scanner.Chunk) bool {
	if s.n <= 1 {
		return nil
	}
	return func(c *scanner.Chunk) bool { return s.holds(c.SegmentID) }
}

// chunksColumns are the columns of remote_segments_chunks(). The first
// seven are the catalog fields a LIST of STRUCT source accepts, so
// list(c) of its rows is a catalog any worker can scan.
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
	n := max(shard.n, 1)
	if v, ok := namedText(info, "shards"); ok {
		if n, err = parseShards(v); err != nil {
			return fmt.Errorf("remote_segments_chunks: shards %v", err)
		}
		if shard.n > 1 && n != shard.n {
			return fmt.Errorf("remote_segments_chunks: shards := %d disagrees with shard := '%d/%d'", n, shard.k, shard.n)
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
		if shard.holds(c.SegmentID) {
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

func parseShards(v string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 1 || n > maxShards {
		return 0, fmt.Errorf("must be an integer from 1 to %d, not %q", maxShards, v)
	}
	return n, nil
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
		h := SegmentHash(c.SegmentID)
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
