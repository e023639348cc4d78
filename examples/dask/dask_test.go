package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDaskTwoShards runs the example for real: versitygw, a Dask scheduler
// and two workers on 127.0.0.1, one task per shard of two, and a worker
// killed with SIGKILL while its DuckDB scans; Dask runs the task again on
// the other worker and the combined answer equals the generator's
// expected.csv. It skips only when Dask could not be provisioned.
func TestDaskTwoShards(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := findTools(root); errors.Is(err, errNoDask) {
		t.Skipf("skipping: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	err = run(ctx, options{root: root, data: t.TempDir(), shards: 2, workers: 2, kill: true, out: &out})
	t.Logf("%s\n(%.1f s)", out.String(), time.Since(start).Seconds())
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`PLAN .*shard 0: 6 chunks / 2 segments, shard 1: 6 chunks / 2 segments`),
		regexp.MustCompile(`KILL  worker \S+ \(pid \d+\) while its DuckDB \(pid \d+, started \d+ ms before\) scans shard [01]/2`),
		regexp.MustCompile(`DONE  shard [01]/2 .*<- run again: its first worker was killed`),
		regexp.MustCompile(`DASK  workers alive: 1; tasks that were processing on the dead worker \(suspicious\): shard-[01]-of-2 \(1 time\)`),
		regexp.MustCompile(`TOTAL 42204 rows in 4 segments from 2 shards`),
		regexp.MustCompile(`OK    the combined answer equals .*expected.csv`),
	} {
		if !want.MatchString(text) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if strings.Contains(text, "FAIL") {
		t.Error("the example reported a failure")
	}
}
