package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// v2Edition measures what only the DuckDB 2.0 edition does, in one run on
// the 2.0 CLI: a query pruned to one segment against the same query
// unpruned (the v1.2.0 file, whose filter DuckDB applies after the scan),
// and GROUP BY segment_id as a partitioned aggregate (2.0 edition) against
// the hash aggregate the v1.2.0 file gets. Both files scan with the same
// code; the machine is shared, so the ratios are informative only.
func v2Edition(ext, extV2, dir string) {
	fmt.Println("== v2 edition: segment pruning and partitioned aggregates (2.0 CLI; median of", *reps, "; informative under load)")
	src := fmt.Sprintf("remote_segments('%s/**/*.arrow')", dir)
	where := " WHERE segment_id = '3'"
	lastScan := "SELECT chunks, pruned, wire_bytes, gets FROM remote_segments_stats() ORDER BY scan_id DESC LIMIT 1;"

	type run struct {
		name, ext, query string
	}
	prune := []run{
		{"unpruned (v1.2.0 file, DuckDB filters)", ext, "SELECT sum(x) FROM " + src + where + ";"},
		{"pruned (2.0 edition)", extV2, "SELECT sum(x) FROM " + src + where + ";"},
		{"whole dataset (2.0 edition)", extV2, "SELECT sum(x) FROM " + src + ";"},
	}
	fmt.Printf("%-42s %10s %8s %8s %12s %6s\n", "query: sum(x) of segment 3 of 8", "time", "chunks", "pruned", "wire bytes", "GETs")
	var times []time.Duration
	var bytes []int64
	for _, r := range prune {
		d := timed(*duckdb, r.ext, "", r.query)
		out, _ := cli(r.ext, r.query+lastScan)
		f := strings.Split(strings.TrimSpace(lastLine(out)), ",")
		if len(f) < 4 {
			fmt.Printf("%-42s %10.3f s  (no stats: %q)\n", r.name, d.Seconds(), out)
			continue
		}
		wire, _ := strconv.ParseInt(f[2], 10, 64)
		times, bytes = append(times, d), append(bytes, wire)
		fmt.Printf("%-42s %8.3f s %8s %8s %12s %6s\n", r.name, d.Seconds(), f[0], f[1], mib(wire), f[3])
	}
	if len(times) >= 2 && times[1] > 0 && bytes[1] > 0 {
		fmt.Printf("ratio unpruned / pruned: time %.2f, wire bytes %.2f\n", times[0].Seconds()/times[1].Seconds(), float64(bytes[0])/float64(bytes[1]))
	}

	group := "SELECT segment_id, count(*), sum(x), sum(d) FROM " + src + " GROUP BY segment_id;"
	explain := func(e string) string {
		out, _ := cli(e, "EXPLAIN "+group)
		if strings.Contains(out, "PARTITIONED_AGGREGATE") || strings.Contains(out, "Partitioned Aggregate") {
			return "partitioned aggregate"
		}
		return "hash aggregate"
	}
	with := timed(*duckdb, extV2, "", group)
	without := timed(*duckdb, ext, "", group)
	fmt.Printf("%-42s %8.3f s  (%s)\n", "GROUP BY segment_id, 2.0 edition", with.Seconds(), explain(extV2))
	fmt.Printf("%-42s %8.3f s  (%s)\n", "GROUP BY segment_id, v1.2.0 file", without.Seconds(), explain(ext))
	fmt.Printf("ratio without / with partitions: %.2f\n\n", without.Seconds()/with.Seconds())
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
