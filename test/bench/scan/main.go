// Command scan measures remote_segments in the real DuckDB CLI, each figure
// a ratio against a reference measured in the same run:
//
//		go run ./test/bench/scan [-gib 1] [-out build/bench]
//
//	 1. memory: a scan of ≥ 1 GiB with a slow consumer (one DuckDB thread and
//	    a costly expression), at memory_budget 64 MiB and 512 MiB: the CLI's
//	    peak RSS (getrusage of the child), against the budget; and the budget's
//	    own peak from remote_segments_stats();
//	 2. IO: the same files over HTTP behind the fault proxy with 30 ms per
//	    request, max_parallel_io := 32: the time-averaged in-flight count at
//	    the proxy during the scan, divided by 32, and its maximum;
//	 3. speed: SELECT sum(…) over fixed-width and short-string columns of the
//	    local files, rows/s against DuckDB's read_parquet of the same rows and
//	    against a native DuckDB table, in interleaved rounds (with -md, a
//	    section of the W4 markdown when the sweep runs too);
//	 4. budget sweep: 64 MiB, 128 MiB, 512 MiB, 1 GiB and the default, from
//	    local files and from versitygw, each query in a fresh CLI: MiB/s, peak
//	    RSS, RSS − budget, page faults and CPU s/GiB of a fast consumer, peak
//	    RSS of a slow one; an SVG of throughput and RSS against the budget.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/faultproxy"
)

var (
	duckdb = flag.String("duckdb", ".tools/bin/duckdb", "DuckDB CLI")
	ext    = flag.String("ext", "build/release/remote_segments.duckdb_extension", "the extension")
	goHost = flag.String("gohost", "build/bench/gohost", "the Go-driver host (test/host/gohost built without -race), for the speed section (absent: skipped)")
	extV2  = flag.String("ext-v2", "build/release/v2.0.0/remote_segments.duckdb_extension", "the extension's DuckDB 2.0 edition (section v2)")
	out    = flag.String("out", "build/bench", "where the dataset goes")
	gib    = flag.Float64("gib", 1.1, "dataset size in GiB")
	reps   = flag.Int("reps", 3, "interleaved rounds of the budget sweep, and repetitions of each timed query of the other sections (medians count)")
	only   = flag.String("sections", "memory,io,speed,sweep,small,concurrent,v2", "sections to run, comma-separated")
	svg    = flag.String("svg", "test/bench/scan_budget_sweep.svg", "where the budget sweep's SVG goes (empty: none)")
	mdPath = flag.String("md", "", "also write the budget sweep as the W4 section of BENCHMARKS.md (markdown) to this file")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	absExt, _ := filepath.Abs(*ext)
	dir, _ := filepath.Abs(filepath.Join(*out, "scan-data"))
	rowsPerChunk := 1 << 20
	chunks := int(math.Ceil(*gib * (1 << 30) / float64(rowsPerChunk) / 33)) // ~33 bytes a row
	rows, size := prepare(dir, chunks, rowsPerChunk)
	if *only != "concurrent-child" {
		fmt.Printf("dataset: %d chunks, %d rows, %.2f GiB of uncompressed Arrow IPC files in %s\n\n", chunks, rows, float64(size)/(1<<30), dir)
	}

	run := func(name string) bool { return strings.Contains(","+*only+",", ","+name+",") }
	if run("memory") {
		memory(absExt, dir, size)
	}
	if run("io") {
		io(absExt, dir, chunks)
	}
	var speedMD string // the W4 markdown gains it when the sweep runs too
	if run("speed") {
		speedMD = speed(absExt, dir, rows, size)
	}
	if run("sweep") {
		budgetSweep(absExt, dir, size, *svg, speedMD)
	}
	if run("small") {
		smallChunks(absExt, *out)
	}
	if run("concurrent") {
		concurrent(dir)
	}
	if run("v2") {
		absV2, _ := filepath.Abs(*extV2)
		v2Edition(absExt, absV2, dir)
	}
	if run("concurrent-child") {
		concurrentChild(dir)
	}
}

// prepare writes the dataset unless a complete one is there.
func prepare(dir string, chunks, rowsPerChunk int) (int64, int64) {
	stamp := filepath.Join(dir, fmt.Sprintf(".complete-%d-%d", chunks, rowsPerChunk))
	if data, err := os.ReadFile(stamp); err == nil {
		f := strings.Fields(string(data))
		r, _ := strconv.ParseInt(f[0], 10, 64)
		s, _ := strconv.ParseInt(f[1], 10, 64)
		return r, s
	}
	os.RemoveAll(dir)
	rows, size, err := datagen.WriteBench(dir, chunks, rowsPerChunk)
	if err != nil {
		log.Fatal(err)
	}
	os.WriteFile(stamp, []byte(fmt.Sprintf("%d %d", rows, size)), 0o644)
	return rows, size
}

// cli runs sql in a fresh CLI with the extension loaded and returns its
// output and peak RSS in bytes.
func cli(ext, sql string, env ...string) (string, int64) {
	cmd := exec.Command(*duckdb, "-unsigned", "-csv", "-noheader", "-c", "LOAD '"+ext+"'; "+sql)
	cmd.Env = append(append(os.Environ(), "DUCKDB_AGENT_MODE=0"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("duckdb: %v\n%s\n%s", err, stderr.String(), sql)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return stdout.String(), ru.Maxrss * 1024
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func memory(ext, dir string, size int64) {
	fmt.Println("== memory: one DuckDB thread, a costly expression per row (slow consumer)")
	fmt.Printf("%-10s %12s %14s %12s %12s %10s\n", "budget", "peak RSS", "RSS - budget", "budget peak", "budget cap", "waits")
	for _, budget := range []int64{64 << 20, 512 << 20} {
		sql := fmt.Sprintf(`SET threads = 1;
SELECT sum(hash(s || CAST(x AS VARCHAR))) FROM remote_segments('%s/**/*.arrow', memory_budget := '%d');
SELECT budget_peak, budget_cap, budget_waits, budget_oversize FROM remote_segments_stats();`, dir, budget)
		outText, rss := cli(ext, sql)
		lines := strings.Split(strings.TrimSpace(outText), "\n")
		f := strings.Split(lines[len(lines)-1], ",")
		peak, _ := strconv.ParseInt(f[0], 10, 64)
		cap, _ := strconv.ParseInt(f[1], 10, 64)
		fmt.Printf("%-10s %12s %14s %12s %12s %10s   (goal: RSS - budget <= 200 MiB; peak <= cap unless oversize=%s)\n",
			mib(budget), mib(rss), mib(rss-budget), mib(peak), mib(cap), f[2], f[3])
	}
	fmt.Printf("(the dataset is %s: without the budget a scan could hold all of it)\n\n", mib(size))
}

func io(ext, dir string, chunks int) {
	fmt.Println("== IO: HTTP behind the fault proxy, 30 ms per request, max_parallel_io := 32")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	go srv.Serve(ln)
	defer srv.Close()
	proxy, err := faultproxy.New("http://"+ln.Addr().String(), faultproxy.Config{Latency: 30 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()
	var urls []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".arrow") {
			rel, _ := filepath.Rel(dir, p)
			// A catalog row with its length, as catalogs carry: the
			// scheduler can split a known range into parallel parts.
			urls = append(urls, fmt.Sprintf("{url: '%s/%s', length: %d}", proxy.URL, filepath.ToSlash(rel), info.Size()))
		}
		return nil
	})
	sort.Strings(urls)
	sql := fmt.Sprintf(`SELECT sum(x) FROM remote_segments([%s], max_parallel_io := 32, memory_budget := '1GiB');
SELECT gets, retries, hedges, round(io_utilization, 3), wall_ms FROM remote_segments_stats();`, strings.Join(urls, ", "))
	proxy.ResetMax()
	proxy.StartWindow()
	start := time.Now()
	outText, _ := cli(ext, sql)
	wall := time.Since(start)
	avg, max, window := proxy.Window()
	lines := strings.Split(strings.TrimSpace(outText), "\n")
	// The window spans the CLI's start and bind, when nothing is in flight;
	// the scan's share is what the stats time: correct the average for it.
	f := strings.Split(lines[len(lines)-1], ",")
	scanMs, _ := strconv.ParseFloat(f[4], 64)
	scanAvg := avg * window.Seconds() / (scanMs / 1000)
	fmt.Printf("one column (projected IO: footer, batch metadata, then only x's buffers): GETs %s (retries %s, hedges %s), scan %.0f ms of %.0f ms\n", f[0], f[1], f[2], scanMs, float64(wall.Milliseconds()))
	fmt.Printf("in flight at the proxy: time-average during the scan %.1f / 32 = %.2f (goal >= 0.90), max %d (goal <= 32 + hedges)\n",
		scanAvg, scanAvg/32, max)
	fmt.Printf("scheduler's own utilization figure: %s\n\n", f[3])
}

var runTime = regexp.MustCompile(`Run Time \(s\): real ([0-9.]+)`)

// timed runs setup, then query reps times with .timer on in host (the
// DuckDB CLI, or the Go host, which reads the same input), and returns the
// median time.
func timed(host, ext, setup, query string) time.Duration {
	var sb strings.Builder
	sb.WriteString(setup + "\n.timer on\n")
	for range *reps {
		sb.WriteString(query + "\n")
	}
	args := []string{"-unsigned"}
	if host == *duckdb {
		args = append(args, "-csv", "-noheader")
	}
	cmd := exec.Command(host, args...)
	cmd.Stdin = strings.NewReader("LOAD '" + ext + "';\n" + sb.String())
	cmd.Env = append(os.Environ(), "DUCKDB_AGENT_MODE=0")
	outBytes, err := cmd.CombinedOutput()
	if err != nil {
		log.Fatalf("duckdb: %v\n%s", err, outBytes)
	}
	var times []float64
	sc := bufio.NewScanner(bytes.NewReader(outBytes))
	for sc.Scan() {
		if m := runTime.FindStringSubmatch(sc.Text()); m != nil {
			s, _ := strconv.ParseFloat(m[1], 64)
			times = append(times, s)
		}
	}
	if len(times) == 0 {
		log.Fatalf("no timing in:\n%s", outBytes)
	}
	med, _, _ := medianMinMax(times)
	return time.Duration(med * float64(time.Second))
}

// speed times SELECT sum(…) over the local files against DuckDB's
// read_parquet of the same rows and a native DuckDB table, in -reps
// interleaved rounds (each contender once per round, in a fresh CLI that
// runs the query -reps times: the median counts; each round starts at the
// next contender), the ratios taken within each round; then what one query
// costs in a fresh CLI each (rusage). It returns the markdown of the W4
// speed section: goal lines, the sections marker, the section.
func speed(ext, dir string, rows, size int64) string {
	rounds := max(1, *reps)
	fmt.Printf("== speed: SELECT sum(x), sum(i), sum(d), sum(length(s)) over local files, %d interleaved rounds (median of %d queries in one CLI each)\n", rounds, *reps)
	parquet := filepath.Join(filepath.Dir(dir), "scan-data.parquet")
	db := filepath.Join(filepath.Dir(dir), "scan-data.duckdb")
	if _, err := os.Stat(parquet); err != nil {
		cli(ext, fmt.Sprintf(`COPY (SELECT x, i, d, s FROM remote_segments('%s/**/*.arrow')) TO '%s' (FORMAT parquet);`, dir, parquet))
	}
	agg := "sum(x), sum(i), sum(d), sum(length(s))"
	rsQuery := fmt.Sprintf("SELECT %s FROM remote_segments('%s/**/*.arrow');", agg, dir)
	contenders := []struct{ name, host, ext, setup, query string }{
		{"remote_segments (IPC)", *duckdb, ext, "", rsQuery},
		{"read_parquet (same rows)", *duckdb, ext, "", fmt.Sprintf("SELECT %s FROM read_parquet('%s');", agg, parquet)},
		{"native DuckDB table", *duckdb, ext, fmt.Sprintf("CREATE TABLE t AS SELECT x, i, d, s FROM read_parquet('%s');", parquet), fmt.Sprintf("SELECT %s FROM t;", agg)},
	}
	// The same scan through the other ways users run it, when built.
	others := 0
	for _, o := range []struct{ name, host, ext string }{
		{"remote_segments (IPC), 2.0 edition", *duckdb, *extV2},
		{"remote_segments (IPC), Go host", *goHost, ext},
	} {
		if _, err := os.Stat(o.host); err != nil {
			fmt.Printf("(%s: skipped, %v)\n", o.name, err)
			continue
		}
		if _, err := os.Stat(o.ext); err != nil {
			fmt.Printf("(%s: skipped, %v)\n", o.name, err)
			continue
		}
		oe, _ := filepath.Abs(o.ext)
		contenders = append(contenders, struct{ name, host, ext, setup, query string }{o.name, o.host, oe, "", rsQuery})
		others++
	}
	times := make([][]float64, len(contenders)) // seconds, by contender, in round order
	for r := range rounds {
		for k := range contenders {
			i := (k + r) % len(contenders)
			c := contenders[i]
			times[i] = append(times[i], timed(c.host, c.ext, c.setup, c.query).Seconds())
		}
	}
	var rowsMD strings.Builder
	for i, c := range contenders {
		med, lo, hi := medianMinMax(times[i])
		fmt.Printf("%-36s %8.3f s (%.3f–%.3f) %8.1f M rows/s\n", c.name, med, lo, hi, float64(rows)/med/1e6)
		fmt.Fprintf(&rowsMD, "| %s | %.3f | %.3f–%.3f | %.1f |\n", c.name, med, lo, hi, float64(rows)/med/1e6)
	}
	// remote_segments against contender i, within each round.
	ratio := func(i int) (med, lo, hi float64) {
		return perRound(rounds, func(r int) float64 { return times[i][r] / times[0][r] })
	}
	pq, pqLo, pqHi := ratio(1)
	nat, natLo, natHi := ratio(2)
	fmt.Printf("ratio remote_segments / read_parquet = %.2f (%.2f–%.2f; goal >= 1: faster)\n", pq, pqLo, pqHi)
	fmt.Printf("ratio remote_segments / native table = %.2f (%.2f–%.2f; goal >= 0.5)\n", nat, natLo, natHi)

	// What each byte costs: one query in a fresh CLI each, from its rusage
	// (the native table lives in a database file made once, so that making
	// it is not counted).
	if _, err := os.Stat(db); err != nil {
		cmd := exec.Command(*duckdb, db, "-c", fmt.Sprintf("CREATE TABLE t AS SELECT x, i, d, s FROM read_parquet('%s');", parquet))
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("duckdb: %v\n%s", err, out)
		}
	}
	gib := float64(size) / (1 << 30)
	var costMD strings.Builder
	fmt.Printf("one query per fresh CLI (rusage):  %12s %10s %10s %10s\n", "CPU s/GiB", "faults", "peak RSS", "load")
	for _, r := range []struct{ name, sql string }{
		{"remote_segments (IPC)", contenders[0].query},
		{"read_parquet (same rows)", contenders[1].query},
		{"native table (database file)", fmt.Sprintf("ATTACH '%s' AS n (READ_ONLY); SELECT %s FROM n.t;", db, agg)},
	} {
		u := measure(ext, r.sql)
		fmt.Printf("%-34s %12.2f %10d %10s %10s\n", r.name, u.cpu.Seconds()/gib, u.minflt, mib(u.rss), u.loadAvg1m)
		fmt.Fprintf(&costMD, "| %s | %.2f | %d | %s | %s |\n", r.name, u.cpu.Seconds()/gib, u.minflt, mib(u.rss), u.loadAvg1m)
	}

	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "not met"
	}
	var md strings.Builder
	fmt.Fprintf(&md, "- **W4 speed** (local files, %.2f GiB, medians of %d interleaved rounds): remote_segments ÷ read_parquet of the same rows **%.2f×** (%.2f–%.2f; goal ≥ 1.0: %s), ÷ a native DuckDB table **%.2f×** (%.2f–%.2f; goal ≥ 0.5: %s).\n",
		gib, rounds, pq, pqLo, pqHi, verdict(pq >= 1), nat, natLo, natHi, verdict(nat >= 0.5))
	var hostsMD strings.Builder
	for i := len(contenders) - others; i < len(contenders); i++ {
		h, hlo, hhi := ratio(i)
		fmt.Printf("ratio %s / the CLI with the v1.2.0 file = %.2f (%.2f–%.2f; goal <= 1.10)\n", contenders[i].name, h, hlo, hhi)
		fmt.Fprintf(&hostsMD, "; %s takes **%.2f×** the CLI's time with the v1.2.0 file (%.2f–%.2f; goal ≤ 1.10: %s)", contenders[i].name, h, hlo, hhi, verdict(h <= 1.10))
	}
	if hostsMD.Len() > 0 {
		fmt.Fprintf(&md, "- **W4 speed, other hosts** (the same scan and rounds)%s.\n", hostsMD.String())
	}
	md.WriteString("<!-- sections -->\n")
	fmt.Fprintf(&md, "### W4: local speed against DuckDB's own readers\n\n`SELECT %s` over the same %.2f GiB of Arrow IPC files (remote_segments, default budget), a Parquet file of the same rows (`read_parquet`) and a native DuckDB table made from it (`CREATE TABLE t AS …` in the same CLI, in memory), in %d interleaved rounds: each contender once per round in a fresh CLI that runs the query %d times with `.timer on` (the median counts), each round starting at the next contender. Seconds are medians over the rounds (min–max); the ratios are taken within each round, then their median (min–max). Measured %s (`go run ./test/bench/scan -sections speed`).\n\n",
		agg, gib, rounds, *reps, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	md.WriteString("| contender | seconds | min–max | M rows/s |\n|---|--:|--:|--:|\n")
	md.WriteString(rowsMD.String())
	fmt.Fprintf(&md, "\nremote_segments ÷ read_parquet **%.2f×** (%.2f–%.2f; goal ≥ 1.0: %s); ÷ the native table **%.2f×** (%.2f–%.2f; goal ≥ 0.5: %s).\n\n",
		pq, pqLo, pqHi, verdict(pq >= 1), nat, natLo, natHi, verdict(nat >= 0.5))
	md.WriteString("What one query costs, each in a fresh CLI (its rusage; the native table here is a database file attached read-only, so that making it is not counted):\n\n| query | CPU s / GiB | minor page faults | peak RSS | load avg |\n|---|--:|--:|--:|--:|\n")
	md.WriteString(costMD.String())
	md.WriteString("\n")
	return md.String()
}
