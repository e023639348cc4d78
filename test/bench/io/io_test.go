package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/test/datagen"
)

// The IPC-file copy the peers read holds the rows of every chunk, stream
// or file, and decodeChunk (the nested design's decoder) reads both.
func TestFileFormatCopy(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 2, RowsPerChunk: 700, BatchesPerChunk: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var wantRows, wantSum int64
	for _, s := range stats {
		wantRows += s.Rows
		wantSum += s.SumX
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "chunks", "*", "*.arrow"))
	if len(paths) != 4 {
		t.Fatalf("%d chunks, want 4", len(paths))
	}
	var rows, sum, rowsCopy, sumCopy int64
	streams := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte("ARROW1")) {
			streams++
		}
		n, s, err := decodeChunk(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		rows, sum = rows+n, sum+s
		file, err := fileFormat(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !bytes.HasPrefix(file, []byte("ARROW1")) {
			t.Errorf("%s: the copy is not an IPC file", p)
		}
		n, s, err = decodeChunk(file)
		if err != nil {
			t.Fatalf("%s (copy): %v", p, err)
		}
		rowsCopy, sumCopy = rowsCopy+n, sumCopy+s
	}
	if streams == 0 {
		t.Fatal("no IPC stream among the chunks: the test would not test the conversion")
	}
	if rows != wantRows || sum != wantSum || rowsCopy != wantRows || sumCopy != wantSum {
		t.Errorf("rows %d / %d (copy), sum(x) %d / %d (copy); want %d, %d", rows, rowsCopy, sum, sumCopy, wantRows, wantSum)
	}
}

func TestCheckAnswer(t *testing.T) {
	d := &dataset{rows: 10, sumX: -5, sumI: 7, sumD: 2.25, trueB: 3, lenS: 40}
	for _, c := range []struct {
		out  string
		wide bool
		ok   bool
	}{
		{"noise\nRESULT rows=10 sum_x=-5 scan_ms=12.5\n", false, true},
		{"RESULT rows=10 sum_x=-5 sum_i=7 sum_d=2.25 true_b=3 len_s=40 scan_ms=1", true, true},
		{"RESULT rows=10 sum_x=-4 scan_ms=1", false, false},
		{"RESULT rows=10 sum_x=-5 scan_ms=1", true, false}, // the wide sums missing
		{"RESULT rows=10 sum_x=-5 sum_i=7 sum_d=2.50 true_b=3 len_s=40", true, false},
		{"Error: no such file", false, false},
	} {
		err := checkAnswer(c.out, d.expected(c.wide))
		if (err == nil) != c.ok {
			t.Errorf("checkAnswer(%q, wide %v) = %v, want ok %v", c.out, c.wide, err, c.ok)
		}
	}
}

func TestSegmentsOf(t *testing.T) {
	d := &dataset{keys: []string{"m/chunks/segment=s0/chunk-0.arrow", "m/chunks/segment=s0/chunk-1.arrow", "m/chunks/segment=s1/chunk-0.arrow",
		"m/chunks/segment=s10/chunk-0.arrow", "m/chunks/segment=s1/chunk-1.arrow"}}
	got := segmentsOf(d)
	want := [][]int{{0, 1}, {2, 4}, {3}}
	if len(got) != len(want) {
		t.Fatalf("segmentsOf = %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("segment %d: %v, want %v", i, got[i], want[i])
		}
	}
	for _, c := range []struct{ p, segs, per, k1, k2 int }{{64, 128, 8, 8, 8}, {16, 128, 8, 4, 4}, {4, 128, 8, 2, 2}, {64, 2000, 1, 8, 1}} {
		if k1, k2 := splitP(c.p, c.segs, c.per); k1 != c.k1 || k2 != c.k2 {
			t.Errorf("splitP(%d, %d, %d) = %d×%d, want %d×%d", c.p, c.segs, c.per, k1, k2, c.k1, c.k2)
		}
	}
}

// The W2 and W3 pictures draw every contender that ran, say "in the bench
// process" where a peak RSS would be for what runs in this process (never a
// zero bar), and say a contender whose runs all failed.
func TestPeerPictures(t *testing.T) {
	files := &dataset{name: "midf", keys: make([]string, 8), bytes: 8 << 20}
	run := func(ms int, rssMiB int64) runResult {
		return runResult{window: time.Duration(ms) * time.Millisecond, rss: rssMiB << 20}
	}
	bad := runResult{err: errors.New("killed")}
	m := &markdown{
		midPeers: &peerData{files: files}, tinyPeers: &peerData{files: files},
		w2: []w2Row{{p: 64, peers: map[string][]runResult{
			"raw-files": {run(100, 0)},
			"rs-narrow": {run(125, 0)}, "rs-wide": {run(125, 0)},
			"cli-narrow": {run(200, 150)}, "cli-wide": {run(250, 170)},
			"cli64-narrow": {run(200, 110)}, "cli64-wide": {run(250, 120)},
			"polars-narrow": {bad}, "polars-wide": {bad},
		}}},
		w3peers: map[string][]w3Run{
			"rs":    {{clean: run(1000, 0), mix: run(1100, 0)}},
			"cli64": {{clean: run(1000, 100), mix: run(1500, 104)}},
		},
	}
	w2 := m.w2BarsSVG()
	for _, want := range []string{
		"remote_segments in the DuckDB CLI (glob, memory_budget 64MiB)", "Polars scanIPC", "failed (1 of 1 runs)",
		">" + inProcess + "</text>", ">80.0</text>", ">64.0</text>", ">150</text>", ">120</text>",
	} {
		if !strings.Contains(w2, want) {
			t.Errorf("W2 picture: no %q in\n%s", want, w2)
		}
	}
	if strings.Contains(w2, ">0</text>") || strings.Contains(w2, "LanceDB") {
		t.Errorf("W2 picture: a zero RSS bar, or a contender that did not run:\n%s", w2)
	}
	w3 := m.w3BarsSVG()
	for _, want := range []string{">1.10×</text>", ">1.50×</text>", ">104</text>", ">" + inProcess + "</text>", "1.2×: W3's goal"} {
		if !strings.Contains(w3, want) {
			t.Errorf("W3 picture: no %q in\n%s", want, w3)
		}
	}
}
