// Command gohost measures the same scan through the Go-driver host
// (database/sql + remotesql, test/host/gohost built without -race) and through
// the DuckDB CLI with the loadable extension, in one run, alternating the two
// (and the Go host opted in to the extension's Go memory-limit tuning, the Go
// host with GOMAXPROCS at twice the CPUs, as the loadable extension sets its
// own, and the pinned engine host: the same DuckDB 1.5.6 as the driver,
// loading the extension) so that load on the machine hits them alike:
//
//	go run ./test/bench/gohost [-gib 0.5] [-reps 3] [-out build/bench]
//
// Each run is a fresh process reading the same script from stdin: LOAD the
// extension (in the Go host: remotesql.Register), SELECT sum(x), sum(i),
// sum(d), sum(length(s)) over local uncompressed Arrow IPC files, then the
// scan's wall time from remote_segments_stats(). It prints, per host, the
// median of the scan's own wall time as rows/s, the process's wall time, and
// its peak RSS (getrusage of the child), each beside the CLI's as a ratio.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/remote-segments/remote_segments/test/datagen"
)

var (
	cliPath    = flag.String("duckdb", ".tools/bin/duckdb", "DuckDB CLI")
	enginePath = flag.String("host", "build/host/duckdb_host", "pinned engine host (empty: leave out)")
	goPath     = flag.String("gohost", "build/bench/gohost", "Go-driver host built without -race")
	ext        = flag.String("ext", "build/release/remote_segments.duckdb_extension", "the extension")
	out        = flag.String("out", "build/bench", "where the dataset goes")
	gib        = flag.Float64("gib", 0.5, "dataset size in GiB")
	reps       = flag.Int("reps", 3, "runs per host")
)

type host struct {
	name string
	cmd  []string
	env  []string
}

type result struct {
	scan, process time.Duration
	rss           int64
	answer        string
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	absExt, _ := filepath.Abs(*ext)
	dir, _ := filepath.Abs(filepath.Join(*out, "gohost-data"))
	const rowsPerChunk = 1 << 20
	chunks := int(math.Ceil(*gib * (1 << 30) / float64(rowsPerChunk) / 33)) // ~33 bytes a row
	rows, size := prepare(dir, chunks, rowsPerChunk)

	procs := 2 * runtime.GOMAXPROCS(0)
	hosts := []host{
		{"cli (DuckDB 2.0.0, extension)", []string{*cliPath, "-unsigned", "-batch", "-init", "/dev/null", "-list", "-noheader"}, []string{"DUCKDB_AGENT_MODE=0", "NO_COLOR=1"}},
		{"go (DuckDB 1.5.6, remotesql)", []string{*goPath}, nil},
		{"go, WithMemoryLimitTuning", []string{*goPath, "-tune-memory-limit"}, nil},
		// What README recommends to a program that mostly scans, and what
		// the loadable extension does to its own runtime.
		{fmt.Sprintf("go, GOMAXPROCS=%d (2 × CPUs)", procs), []string{*goPath}, []string{fmt.Sprintf("GOMAXPROCS=%d", procs)}},
	}
	if *enginePath != "" {
		hosts = append(hosts, host{"engine (DuckDB 1.5.6, extension)", []string{*enginePath, "-unsigned"}, nil})
	}
	script := fmt.Sprintf(`LOAD '%s';
SELECT sum(x), sum(i), sum(d), sum(length(s)) FROM remote_segments('%s/**/*.arrow');
SELECT wall_ms FROM remote_segments_stats() ORDER BY scan_id DESC LIMIT 1;
`, absExt, dir)

	fmt.Printf("dataset: %d chunks, %d rows, %.2f GiB of uncompressed Arrow IPC files in %s\n", chunks, rows, float64(size)/(1<<30), dir)
	fmt.Printf("load average before: %s\n", loadavg())
	results := make([][]result, len(hosts))
	for range *reps {
		for i, h := range hosts { // alternate: load on the machine hits every host alike
			results[i] = append(results[i], run(h, script))
		}
	}
	fmt.Printf("load average after:  %s\n\n", loadavg())

	for i := 1; i < len(hosts); i++ {
		if results[i][0].answer != results[0][0].answer {
			log.Fatalf("%s answered %q, %s %q", hosts[i].name, results[i][0].answer, hosts[0].name, results[0][0].answer)
		}
	}
	fmt.Printf("SELECT sum(x), sum(i), sum(d), sum(length(s)): every host answered %s; median of %d runs each\n", results[0][0].answer, *reps)
	fmt.Printf("%-36s %10s %12s %9s %12s %12s %9s\n", "host", "scan", "M rows/s", "÷ cli", "process", "peak RSS", "÷ cli")
	ref := median(results[0])
	for i, h := range hosts {
		m := median(results[i])
		fmt.Printf("%-36s %8.0fms %12.1f %9.2f %10.0fms %8.0f MiB %9.2f\n", h.name, ms(m.scan),
			float64(rows)/m.scan.Seconds()/1e6, ref.scan.Seconds()/m.scan.Seconds(), ms(m.process),
			float64(m.rss)/(1<<20), float64(m.rss)/float64(ref.rss))
	}
	fmt.Println("(÷ cli: rows/s against the CLI's, > 1 is faster; peak RSS against the CLI's, < 1 is less. Goal: within 10 %.)")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// prepare writes the dataset unless a complete one is there.
func prepare(dir string, chunks, rowsPerChunk int) (int64, int64) {
	stamp := filepath.Join(dir, fmt.Sprintf(".complete-%d-%d", chunks, rowsPerChunk))
	if data, err := os.ReadFile(stamp); err == nil {
		var r, s int64
		if _, err := fmt.Sscan(string(data), &r, &s); err == nil {
			return r, s
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		log.Fatal(err)
	}
	rows, size, err := datagen.WriteBench(dir, chunks, rowsPerChunk)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(stamp, []byte(fmt.Sprintf("%d %d", rows, size)), 0o644); err != nil {
		log.Fatal(err)
	}
	return rows, size
}

// run runs script in a fresh process of h.
func run(h host, script string) result {
	cmd := exec.Command(h.cmd[0], h.cmd[1:]...)
	cmd.Env = append(os.Environ(), h.env...)
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Fatalf("%s: %v\n%s", h.name, err, stderr.String())
	}
	process := time.Since(start)
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		log.Fatalf("%s printed %q, want two lines\n%s", h.name, stdout.String(), stderr.String())
	}
	wallMs, err := strconv.ParseFloat(strings.TrimSpace(lines[1]), 64)
	if err != nil {
		log.Fatalf("%s: scan wall time %q: %v", h.name, lines[1], err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return result{scan: time.Duration(wallMs * float64(time.Millisecond)), process: process, rss: ru.Maxrss * 1024, answer: lines[0]}
}

// median returns the median scan and process times and peak RSS, each taken
// on its own.
func median(rs []result) result {
	pick := func(f func(result) int64) int64 {
		v := make([]int64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return result{
		scan:    time.Duration(pick(func(r result) int64 { return int64(r.scan) })),
		process: time.Duration(pick(func(r result) int64 { return int64(r.process) })),
		rss:     pick(func(r result) int64 { return r.rss }),
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}
