package policy

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

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

// Shard is shard k of n (0 ≤ k < n); the zero value selects everything.
type Shard struct{ k, n uint64 }

// ParseShard reads 'k/n': k is 0-based, so shard 0/1 is the whole source
// and the shards of 3 are 0/3, 1/3 and 2/3.
func ParseShard(v string) (Shard, error) {
	ks, ns, ok := strings.Cut(strings.TrimSpace(v), "/")
	k, kerr := strconv.ParseUint(strings.TrimSpace(ks), 10, 64)
	n, nerr := strconv.ParseUint(strings.TrimSpace(ns), 10, 64)
	switch {
	case !ok || kerr != nil || nerr != nil:
		return Shard{}, fmt.Errorf("must be 'k/n' (shard k of n, k from 0 to n-1, such as '0/4'), not %q", v)
	case n < 1 || n > maxShards:
		return Shard{}, fmt.Errorf("%q: n must be from 1 to %d", v, maxShards)
	case k >= n:
		return Shard{}, fmt.Errorf("%q: k must be from 0 to %d (shards are numbered from 0)", v, n-1)
	}
	return Shard{k: k, n: n}, nil
}

// ParseShardCount reads n of shards := n.
func ParseShardCount(v string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 1 || n > maxShards {
		return 0, fmt.Errorf("must be an integer from 1 to %d, not %q", maxShards, v)
	}
	return n, nil
}

// Index is k of shard k of n.
func (s Shard) Index() uint64 { return s.k }

// Count is n of shard k of n; 0 for the zero Shard.
func (s Shard) Count() uint64 { return s.n }

// Holds reports whether a chunk of segment lies in the shard.
func (s Shard) Holds(segment string) bool {
	return s.n <= 1 || SegmentHash(segment)%s.n == s.k
}

// Keep is the shard as scanner.Config.Keep (nil: every chunk): Bind drops
// the chunks outside it (never requested, counted as pruned in the scan's
// stats).
func (s Shard) Keep() func(c *scanner.Chunk) bool {
	if s.n <= 1 {
		return nil
	}
	return func(c *scanner.Chunk) bool { return s.Holds(c.SegmentID) }
}
