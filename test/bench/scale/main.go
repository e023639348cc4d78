// Command scale measures remote_segments at the sizes DISTRIBUTED.md plans
// for, each through the DuckDB CLI with the extension, with its reference
// in the same run:
//
//   - catalogs of 10 k / 100 k / 1 M rows (Parquet written by DuckDB) on
//     local disk and on versitygw: the time to the first row of a LIMIT 1
//     query, the CLI's peak RSS, and the bytes a chunk costs (peak RSS over
//     the CLI's own, that of a query of no chunk, divided by the rows);
//   - many tiny local files through a glob: their bytes a second against
//     a plain loop that reads the same files, and the requests a chunk;
//   - an S3 glob of many objects behind the fault proxy at 30 ms a request:
//     the time to the first row.
//
// It prints the figures, each goal met or not, with the load average, and
// writes them as a markdown section (goal lines, the sections marker, the
// section) for test/bench/peers to gather into BENCHMARKS.md.
//
//	go run ./test/bench/scale [-out build/bench] [-md build/bench/scale.md]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/faultproxy"
	"github.com/remote-segments/remote_segments/test/s3server"
)

var (
	duckdb  = flag.String("duckdb", ".tools/bin/duckdb", "DuckDB CLI")
	ext     = flag.String("ext", "build/release/remote_segments.duckdb_extension", "the extension")
	out     = flag.String("out", "build/bench", "folder for the data (scale/ under it)")
	md      = flag.String("md", "", "write the markdown section here")
	rowsArg = flag.String("rows", "10000,100000,1000000", "catalog sizes")
	files   = flag.Int("files", 20000, "tiny local files")
	objects = flag.Int("objects", 10000, "objects of the S3 glob")
	reps    = flag.Int("reps", 3, "runs of each measurement (the median counts)")
	only    = flag.String("sections", "catalog,tiny,glob", "what to measure: catalog, tiny, glob (comma-separated)")
)

// want reports whether -sections names section.
func want(section string) bool {
	for _, s := range strings.Split(*only, ",") {
		if strings.TrimSpace(s) == section {
			return true
		}
	}
	return false
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		log.Fatalf("scale: %v", err)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	extPath, err := filepath.Abs(*ext)
	if err != nil {
		return err
	}
	*ext = extPath
	dir, err := filepath.Abs(filepath.Join(*out, "scale"))
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	// Four small chunks the catalogs name over and over: a LIMIT 1 query
	// reads one (and bind's prefetch a few), so the catalog is what costs.
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 4, ChunksPerSegment: 1, RowsPerChunk: 150, BatchesPerChunk: 1, Seed: 7}); err != nil {
		return err
	}
	var sizes []int
	for _, f := range strings.Split(*rowsArg, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("-rows: %v", err)
		}
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		sql := fmt.Sprintf(`COPY (SELECT 'chunks/segment=s' || (i %% 4) || '/chunk-0.arrow' AS url, 's' || (i // 1000) AS segment_id, 'c' || i AS chunk_id FROM range(%d) t(i)) TO '%s'`,
			n, catalogPath(dir, n))
		if out, err := exec.Command(*duckdb, "-c", sql).CombinedOutput(); err != nil {
			return fmt.Errorf("writing the catalog of %d rows: %v: %s", n, err, out)
		}
	}
	// The S3 server only for the sections that use it: -sections tiny runs
	// without versitygw installed.
	var srv *s3server.Server
	var env []string
	if want("catalog") || want("glob") {
		if srv, err = s3server.Start(ctx, filepath.Join(dir, "s3"), "bench"); err != nil {
			return err
		}
		defer srv.Close()
		env = []string{"REMOTE_SEGMENTS_S3_ENDPOINT=" + srv.Endpoint, "REMOTE_SEGMENTS_S3_REGION=" + srv.Region,
			"REMOTE_SEGMENTS_S3_ACCESS_KEY_ID=" + srv.AccessKey, "REMOTE_SEGMENTS_S3_SECRET_ACCESS_KEY=" + srv.SecretKey}
		for _, rel := range []string{"chunks/segment=s0/chunk-0.arrow", "chunks/segment=s1/chunk-0.arrow", "chunks/segment=s2/chunk-0.arrow", "chunks/segment=s3/chunk-0.arrow"} {
			if err := putFile(ctx, srv, filepath.Join(dir, rel), rel); err != nil {
				return err
			}
		}
		for _, n := range sizes {
			if err := putFile(ctx, srv, catalogPath(dir, n), filepath.Base(catalogPath(dir, n))); err != nil {
				return err
			}
		}
	}

	var goals, body strings.Builder
	when := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	fmt.Fprintf(&body, "### Scale: a million chunks, tiny chunks, large listings\n\nMeasured %s by `go run ./test/bench/scale` (part of `make bench`), each figure the median of %d runs, each run a fresh DuckDB CLI with the extension; load average beside each row (the machine is shared).\n\n", when, *reps)

	// Catalogs.
	base := measure(ctx, nil, "SELECT 1;")
	fmt.Printf("CLI with the extension loaded, no chunk: peak RSS %s (load %s)\n", mib(base.rss), loadavg())
	fmt.Fprintf(&body, "**Catalog rows** (Parquet written by DuckDB: `url`, `segment_id`, `chunk_id`), `SELECT segment_id, chunk_id FROM remote_segments(catalog) LIMIT 1`: seconds to the first row (the query's `.timer`), the CLI's peak RSS, and bytes a chunk = (peak RSS − %s, the CLI's own with the extension loaded) ÷ rows. Goal: 1 M rows in ≤ 1 s and ≤ 100 bytes a chunk.\n\n", mib(base.rss))
	body.WriteString("| store | rows | first row s | peak RSS | bytes a chunk | load avg |\n|---|--:|--:|--:|--:|--:|\n")
	for _, store := range []string{"local", "s3"} {
		if !want("catalog") {
			break
		}
		for _, n := range sizes {
			src := catalogPath(dir, n)
			var e []string
			if store == "s3" {
				src, e = "s3://bench/"+filepath.Base(src), env
			}
			r := measure(ctx, e, fmt.Sprintf("SELECT segment_id, chunk_id FROM remote_segments('%s') LIMIT 1;", src))
			per := float64(r.rss-base.rss) / float64(n)
			fmt.Printf("catalog %-5s %8d rows: first row %.2f s, peak RSS %s, %.0f bytes a chunk (load %s)\n", store, n, r.seconds, mib(r.rss), per, r.load)
			fmt.Fprintf(&body, "| %s | %d | %.2f | %s | %.0f | %s |\n", store, n, r.seconds, mib(r.rss), per, r.load)
			if n == sizes[len(sizes)-1] {
				fmt.Fprintf(&goals, "- **Catalog of %d rows, %s**: first row in **%.2f s** (goal ≤ 1 s: %s), **%.0f bytes a chunk** (goal ≤ 100: %s).\n",
					n, store, r.seconds, verdict(r.seconds <= 1), per, verdict(per <= 100))
			}
		}
	}
	body.WriteString("\n")

	if want("tiny") {
		if err := tinyFiles(ctx, dir, &goals, &body); err != nil {
			return err
		}
	}
	if want("glob") {
		if err := s3Glob(ctx, dir, srv, env, &goals, &body); err != nil {
			return err
		}
	}
	fmt.Print("\n", goals.String())
	if *md != "" {
		if err := os.MkdirAll(filepath.Dir(*md), 0o755); err != nil {
			return err
		}
		return os.WriteFile(*md, []byte(goals.String()+"<!-- sections -->\n"+body.String()), 0o644)
	}
	return nil
}

// tinyFiles measures a glob of -files tiny local files against a plain
// read loop.
func tinyFiles(ctx context.Context, dir string, goals, body *strings.Builder) error {
	tiny := filepath.Join(dir, "tiny")
	chunk, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow"))
	if err != nil {
		return err
	}
	for i := range *files {
		d := filepath.Join(tiny, fmt.Sprintf("s%d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("c%d.arrow", i)), chunk, 0o644); err != nil {
			return err
		}
	}
	total := int64(*files) * int64(len(chunk))
	loop := readLoop(tiny) // once to warm the page cache, as the scans find it
	var loopTimes, scanTimes []float64
	var st stats
	for range *reps {
		loop = readLoop(tiny)
		loopTimes = append(loopTimes, loop.Seconds())
		var r result
		r, st = scanStats(ctx, fmt.Sprintf("SELECT count(*), sum(x) FROM remote_segments('%s/**/*.arrow');", tiny))
		scanTimes = append(scanTimes, r.seconds)
	}
	loopS, scanS := median(loopTimes), median(scanTimes)
	ratio := loopS / scanS
	perChunk := float64(st.Requests) / float64(max(1, st.Chunks))
	fmt.Printf("tiny local files: %d of %d bytes: plain loop %.2f s, remote_segments %.2f s: %.2f× the loop, %.2f requests a chunk (load %s)\n",
		*files, len(chunk), loopS, scanS, ratio, perChunk, loadavg())
	fmt.Fprintf(body, "**Tiny local chunks**: %d files of %d bytes through a glob, `SELECT count(*), sum(x)`, against a plain loop reading the same files one after the other (`os.ReadFile`, page cache warm) in the same run: loop %.2f s (%.0f MiB/s), remote_segments %.2f s (%.0f MiB/s, %.0f chunks/s): **%.2f×** the loop; %d requests, %d GETs for %d chunks (**%.2f requests a chunk**). Load %s.\n\n",
		*files, len(chunk), loopS, float64(total)/(1<<20)/loopS, scanS, float64(total)/(1<<20)/scanS, float64(*files)/scanS, ratio, st.Requests, st.GETs, st.Chunks, perChunk, loadavg())
	fmt.Fprintf(goals, "- **Tiny local chunks** (%d files of %d bytes): **%.2f×** a plain read loop (goal ≥ 0.8: %s), **%.2f requests a chunk** (goal 1: %s).\n",
		*files, len(chunk), ratio, verdict(ratio >= 0.8), perChunk, verdict(perChunk <= 1.0001))

	return nil
}

// s3Glob measures the first row of an S3 glob of -objects objects behind
// the fault proxy at 30 ms a request.
func s3Glob(ctx context.Context, dir string, srv *s3server.Server, env []string, goals, body *strings.Builder) error {
	chunk, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow"))
	if err != nil {
		return err
	}
	if err := putMany(ctx, srv, chunk, *objects); err != nil {
		return err
	}
	slow, err := faultproxy.New(srv.Endpoint, faultproxy.Config{Latency: 30 * time.Millisecond})
	if err != nil {
		return err
	}
	defer slow.Close()
	slowEnv := append(append([]string(nil), env...), "REMOTE_SEGMENTS_S3_ENDPOINT="+slow.URL)
	query := "SELECT segment_id, chunk_id FROM remote_segments('s3://bench/glob/**/*.arrow') LIMIT 1;"
	g := measure(ctx, slowEnv, query)
	direct := measure(ctx, env, query) // the server's own time, the reference
	fmt.Printf("S3 glob of %d objects at 30 ms a request: first row %.2f s; without the proxy %.2f s (load %s)\n", *objects, g.seconds, direct.seconds, g.load)
	fmt.Fprintf(body, "**S3 glob**: `SELECT … FROM remote_segments('s3://bench/glob/**/*.arrow') LIMIT 1` over %d objects in %d folders on versitygw behind the fault proxy at 30 ms a request: first row in **%.2f s**; the same query straight to versitygw %.2f s (load %s).\n\n",
		*objects, (*objects+999)/1000, g.seconds, direct.seconds, g.load)
	fmt.Fprintf(goals, "- **S3 glob of %d objects at 30 ms a request**: first row in **%.2f s** (goal ≤ 0.5 s: %s).\n", *objects, g.seconds, verdict(g.seconds <= 0.5))
	return nil
}

func catalogPath(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("cat-%d.parquet", n))
}

func putFile(ctx context.Context, srv *s3server.Server, path, key string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return srv.PutObject(ctx, "bench", key, b)
}

// putMany puts n copies of chunk under glob/, a thousand a folder, sixteen
// at a time.
func putMany(ctx context.Context, srv *s3server.Server, chunk []byte, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := srv.PutObject(ctx, "bench", fmt.Sprintf("glob/s%d/c%d.arrow", i/1000, i), chunk); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// readLoop reads every file under dir, one after the other.
func readLoop(dir string) time.Duration {
	start := time.Now()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	return time.Since(start)
}

// result is one measurement: the query's seconds (median of -reps runs,
// each in a fresh CLI), the largest peak RSS of those CLIs, and the load
// average after.
type result struct {
	seconds float64
	rss     int64
	load    string
}

var runTime = regexp.MustCompile(`Run Time \(s\): real ([0-9.]+)`)

// measure runs query -reps times, each in a fresh CLI with the extension
// loaded and env added to its environment.
func measure(ctx context.Context, env []string, query string) result {
	var times []float64
	var r result
	for range *reps {
		t, rss, _ := cli(ctx, env, query)
		times = append(times, t)
		r.rss = max(r.rss, rss)
	}
	r.seconds, r.load = median(times), loadavg()
	return r
}

// stats is the row of remote_segments_stats() of a query.
type stats struct {
	Chunks   int64 `json:"chunks"`
	Requests int64 `json:"requests"`
	GETs     int64 `json:"gets"`
}

// scanStats runs query once in a fresh CLI and returns its time and its
// scan's stats.
func scanStats(ctx context.Context, query string) (result, stats) {
	t, rss, outText := cli(ctx, nil, query+"\n.timer off\n.mode json\nSELECT chunks, requests, gets FROM remote_segments_stats();")
	var st []stats
	i := strings.LastIndex(outText, "[{")
	if i < 0 || json.Unmarshal([]byte(strings.TrimSpace(outText[i:])), &st) != nil || len(st) != 1 {
		log.Fatalf("no stats in:\n%s", outText)
	}
	return result{seconds: t, rss: rss, load: loadavg()}, st[0]
}

// cli runs the extension and query in a fresh CLI with .timer on, and
// returns the query's time, the CLI's peak RSS in bytes, and its output.
func cli(ctx context.Context, env []string, query string) (float64, int64, string) {
	cmd := exec.CommandContext(ctx, *duckdb, "-unsigned", "-csv", "-noheader")
	cmd.Stdin = strings.NewReader("LOAD '" + *ext + "';\n.timer on\n" + query + "\n")
	cmd.Env = append(append(os.Environ(), "DUCKDB_AGENT_MODE=0"), env...)
	outBytes, err := cmd.CombinedOutput()
	if err != nil {
		log.Fatalf("duckdb: %v\n%s", err, outBytes)
	}
	var t float64 = -1
	sc := bufio.NewScanner(bytes.NewReader(outBytes))
	for sc.Scan() {
		if m := runTime.FindStringSubmatch(sc.Text()); m != nil && t < 0 {
			t, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	if t < 0 {
		log.Fatalf("no timing in:\n%s", outBytes)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var rss int64
	if ru != nil {
		rss = ru.Maxrss << 10
	}
	return t, rss, string(outBytes)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
