package scanner

import (
	"context"
	"path/filepath"
	"testing"
)

// TestSelect drops chunks after Bind: the scan reads exactly the kept
// chunks' rows, never requests the others, and counts them as pruned; a
// selection of nothing is an empty scan with the source's schema.
func TestSelect(t *testing.T) {
	dir, stats := writeDataset(t)
	src := filepath.Join(dir, "chunks", "**", "*.arrow")
	chunks, err := Resolve(context.Background(), Config{Process: testProcess(t), Source: src})
	if err != nil {
		t.Fatal(err)
	}
	keepSeg := stats[1].Segment
	tests := []struct {
		name string
		keep func(c *Chunk) bool
		want map[string]int64 // rows per segment
	}{
		{"one segment (not the first chunk's)", func(c *Chunk) bool { return c.SegmentID == keepSeg }, map[string]int64{keepSeg: stats[1].Rows}},
		{"all", func(*Chunk) bool { return true }, map[string]int64{stats[0].Segment: stats[0].Rows, stats[1].Segment: stats[1].Rows, stats[2].Segment: stats[2].Rows}},
		{"none", func(*Chunk) bool { return false }, map[string]int64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Bind(context.Background(), Config{Process: testProcess(t), Source: src})
			if err != nil {
				t.Fatal(err)
			}
			wantKept := 0
			for i := range chunks {
				if tc.keep(&chunks[i]) {
					wantKept++
				}
			}
			if dropped := plan.Select(tc.keep); dropped != len(chunks)-wantKept {
				t.Fatalf("Select dropped %d chunks, want %d", dropped, len(chunks)-wantKept)
			}
			if len(plan.Schema.Fields()) == 0 {
				t.Fatal("the plan lost its schema")
			}
			scan, err := plan.Start(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := drain(t, scan, 2, 0)
			scan.Close()
			if len(rows) != len(tc.want) {
				t.Errorf("rows per segment %v, want %v", rows, tc.want)
			}
			for seg, n := range tc.want {
				if rows[seg] != n {
					t.Errorf("segment %s: %d rows, want %d", seg, rows[seg], n)
				}
			}
			st := scan.Stats()
			if st.Pruned != int64(len(chunks)-wantKept) || st.Chunks != int64(wantKept) {
				t.Errorf("stats: %d chunks read, %d pruned; want %d and %d", st.Chunks, st.Pruned, wantKept, len(chunks)-wantKept)
			}
			if st.GETs > int64(wantKept) {
				t.Errorf("%d GETs for %d kept chunks: a dropped chunk was requested", st.GETs, wantKept)
			}
		})
	}
}
