package policy

import (
	"strings"
	"testing"

	"github.com/remote-segments/remote_segments/scanner"
)

// TestSegmentHash pins the documented hash (FNV-1a 64 of the UTF-8 bytes):
// the published FNV-1a test vectors, and a value README.md's Python
// snippet also prints.
func TestSegmentHash(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"", 0xcbf29ce484222325},
		{"a", 0xaf63dc4c8601ec8c},
		{"foobar", 0x85944171f73967e8},
		{"s0", 637538656335744918},
	} {
		if got := SegmentHash(tc.in); got != tc.want {
			t.Errorf("SegmentHash(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in      string
		k, n    uint64
		wantErr string
	}{
		{"0/1", 0, 1, ""},
		{"2/3", 2, 3, ""},
		{" 6 / 7 ", 6, 7, ""},
		{"3/3", 0, 0, "k must be from 0 to 2"},
		{"1/0", 0, 0, "n must be from 1"},
		{"-1/2", 0, 0, "must be 'k/n'"},
		{"1", 0, 0, "must be 'k/n'"},
		{"1/2/3", 0, 0, "must be 'k/n'"},
		{"a/b", 0, 0, "must be 'k/n'"},
		{"", 0, 0, "must be 'k/n'"},
		{"0/2000000", 0, 0, "n must be from 1 to 1048576"},
	} {
		s, err := ParseShard(tc.in)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ParseShard(%q): %v", tc.in, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseShard(%q) = %v, %v; want an error with %q", tc.in, s, err, tc.wantErr)
		case err == nil && (s.k != tc.k || s.n != tc.n):
			t.Errorf("ParseShard(%q) = %d/%d, want %d/%d", tc.in, s.k, s.n, tc.k, tc.n)
		}
	}
}

// TestShardsPartition: for every n, each segment is in exactly one shard.
func TestShardsPartition(t *testing.T) {
	segs := []string{"", "s0", "s1", "2024-01-01", "segment ü", "x/y"}
	for _, n := range []uint64{1, 2, 3, 7, 64} {
		for _, seg := range segs {
			in := 0
			for k := range n {
				if (Shard{k: k, n: n}).Holds(seg) {
					in++
				}
			}
			if in != 1 {
				t.Errorf("n=%d: segment %q is in %d shards", n, seg, in)
			}
		}
	}
}

// TestShardParameter: a bad shard, in the query or in the environment, is
// refused by the one parameter parser with an error naming it.
func TestShardParameter(t *testing.T) {
	none := fromMap(nil)
	for _, tc := range []struct {
		env, query map[string]string
		want       string
	}{
		{nil, map[string]string{"shard": "1/4"}, ""},
		{nil, map[string]string{"shard": "4/4"}, `remote_segments: shard "4/4": k must be from 0 to 3`},
		{map[string]string{"REMOTE_SEGMENTS_SHARD": "x"}, nil, "remote_segments: environment variable REMOTE_SEGMENTS_SHARD: shard must be 'k/n'"},
	} {
		var cfg scanner.Config
		env, query := none, none
		if tc.env != nil {
			env = fromMap(tc.env)
		}
		if tc.query != nil {
			query = fromMap(tc.query)
		}
		err := applyParameters(&cfg, env, query)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %v: %v", tc.env, tc.query, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v %v: error %v, want one with %q", tc.env, tc.query, err, tc.want)
		}
	}
}
