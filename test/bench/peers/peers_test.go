package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// The Go contenders must compute the answer computed while writing the data,
// whatever the ranges and the concurrency; the raw loop must read every byte.
func TestGoContendersAnswer(t *testing.T) {
	defer goleak.VerifyNone(t)
	old := rangeSize
	rangeSize = 64 << 10 // several ranges per chunk
	t.Cleanup(func() { rangeSize = old })
	d, err := makeDataset(t.TempDir(), 20_000, 5)
	if err != nil {
		t.Fatal(err)
	}
	st, prefix, err := store.Open(d.ipcDir+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	objs, err := st.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []chunkInfo
	for _, o := range objs {
		chunks = append(chunks, chunkInfo{o.Name, o.Size})
	}
	if len(chunks) != 5 {
		t.Fatalf("%d chunks listed, want 5", len(chunks))
	}
	for _, p := range []int{1, 3, 64} {
		wire, err := readRaw(ctx, st, chunks, p)
		if err != nil || wire != d.IPCBytes {
			t.Errorf("raw p=%d: %d bytes, %v; want %d", p, wire, err, d.IPCBytes)
		}
		a, wire, err := readChannel(ctx, st, chunks, p, 1<<10 /* smaller than any batch */)
		if err != nil || a != d.Expected || wire != d.IPCBytes {
			t.Errorf("channel p=%d: %v, %d bytes, %v; want %v, %d", p, a, wire, err, d.Expected, d.IPCBytes)
		}
		for _, segs := range []int{1, 2, 5} {
			a, wire, err := readNested(ctx, st, chunks, p, segs)
			if err != nil || a != d.Expected || wire != d.IPCBytes {
				t.Errorf("nested p=%d segments=%d: %v, %d bytes, %v; want %v", p, segs, a, wire, err, d.Expected)
			}
		}
	}
	// A second makeDataset finds the first one's meta.json.
	again, err := makeDataset(filepath.Dir(d.dir), 20_000, 5)
	if err != nil || again.Expected != d.Expected || again.IPCBytes != d.IPCBytes {
		t.Errorf("cached dataset: %+v, %v; want %+v", again, err, d)
	}
}

func TestParseAnswer(t *testing.T) {
	want := answer{Rows: 4, SumID: 6, SumX: 1.5, LenS: 8, LenPayload: 900}
	for _, tc := range []struct {
		name, out string
		scan      time.Duration
		wire      int64
	}{
		{"go", "RESULT rows=4 sum_id=6 sum_x=1.5 len_s=8 len_payload=900 wire_bytes=77 scan_ms=12.5\n", 12500 * time.Microsecond, 77},
		{"node", "noise\nRESULT rows=4 sum_id=6 sum_x=1.5 len_s=8 len_payload=900 scan_ms=3000.0\n", 3 * time.Second, 0},
		{"duckdb", "4,6,1.5,8,900\nRun Time (s): real 0.250 user 0.4 sys 0.1\n", 250 * time.Millisecond, 0},
	} {
		got, scan, wire, err := parseAnswer(tc.out)
		if err != nil || got != want || scan != tc.scan || wire != tc.wire {
			t.Errorf("%s: %v %v %d %v; want %v %v %d", tc.name, got, scan, wire, err, want, tc.scan, tc.wire)
		}
	}
	if _, _, _, err := parseAnswer("4,6,1.5,8,900\n"); err == nil || !strings.Contains(err.Error(), "timer") {
		t.Errorf("DuckDB output without a timer: %v, want an error", err)
	}
}

func TestSplitNested(t *testing.T) {
	for _, tc := range []struct{ p, segs, perSeg, ranges, k1, k2, k3 int }{
		{64, 4, 4, 8, 2, 4, 8},
		{64, 4, 4, 64, 1, 1, 64},
		{8, 4, 4, 1, 2, 4, 1},
		{1, 4, 4, 8, 1, 1, 1},
	} {
		k1, k2, k3 := splitNested(tc.p, tc.segs, tc.perSeg, tc.ranges)
		if k1 != tc.k1 || k2 != tc.k2 || k3 != tc.k3 || k1*k2*k3 > tc.p {
			t.Errorf("splitNested(%d, %d, %d, %d) = %d×%d×%d, want %d×%d×%d", tc.p, tc.segs, tc.perSeg, tc.ranges, k1, k2, k3, tc.k1, tc.k2, tc.k3)
		}
	}
}

// The verdict compares remote_segments with the fastest peer only, by the
// median of the per-round ratios, on both throughput and peak RSS.
func TestGoal(t *testing.T) {
	d := &dataset{IPCBytes: 1 << 30}
	at := func(secs float64, rssMiB int64) measurement {
		return measurement{scan: time.Duration(secs * float64(time.Second)), rss: rssMiB << 20}
	}
	r := &report{d: d, c: config{runs: 3}, results: map[string][]measurement{
		// 1024 MiB over 1 s = 1024 MiB/s, and so on.
		"rs":         {at(1, 100), at(1, 100), at(2, 100)},
		"rs64":       {at(1, 300), at(1, 300), at(1, 300)},
		"polars_ipc": {at(1.25, 250), at(1.25, 250), at(2.5, 250)}, // fastest peer: rs is 1.25× it
		"lancedb":    {at(4, 1000), at(4, 1000), at(4, 1000)},
	}}
	r.cs = []contender{{key: "rs", group: "rs"}, {key: "rs64", group: "rs"}, {key: "polars_ipc", group: "peer"}, {key: "lancedb", group: "peer"}}
	rows := r.rows()
	best, thr, mem, met, ok := r.goal(rows[0], rows)
	if !ok || best.ct.key != "polars_ipc" || thr != 1.25 || mem != 0.4 || !met {
		t.Errorf("rs: best %s, %.2f×, RSS %.2f×, met %v, ok %v; want polars_ipc, 1.25×, 0.4×, met", best.ct.key, thr, mem, met, ok)
	}
	_, thr, mem, met, _ = r.goal(rows[1], rows)
	if thr != 1.25 || mem != 1.2 || met {
		t.Errorf("rs64: %.2f×, RSS %.2f×, met %v; want 1.25×, 1.2×, not met", thr, mem, met)
	}
	r.results["polars_ipc"][0] = at(0.5, 250) // one round where the peer is faster: the median ratio stays
	if _, thr, _, _, _ := r.goal(r.rows()[0], r.rows()); thr != 1.25 {
		t.Errorf("rs with one outlier round: %.2f×, want 1.25×", thr)
	}
}
