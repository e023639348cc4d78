// Command concurrent runs 4 scans at once through DuckDB connections of one
// process: the Go-driver host (database/sql + remotesql), whose connections
// share one DuckDB database, one process memory limit and the Go runtime's
// memory-limit tuning the loadable extension also uses:
//
//	go run ./test/bench/concurrent [-gib 0.5] [-limit 512MiB] [-out build/bench]
//
// The parent writes (or reuses) a dataset of uncompressed Arrow IPC files,
// then runs a child process with REMOTE_SEGMENTS_MEMORY_LIMIT set. The child
// runs one scan alone (the reference), then 4 at once, each on its own
// connection, summing every column and each asking for memory_budget 1 GiB
// (more than the process limit allows them together), and prints each
// answer, wall time and budget figures from remote_segments_stats(). The parent prints the child's peak
// RSS against the limit.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	remotesql "github.com/remote-segments/remote_segments/sql"
	"github.com/remote-segments/remote_segments/test/datagen"
)

var (
	out   = flag.String("out", "build/bench", "where the dataset goes (shared with test/bench/scan)")
	gib   = flag.Float64("gib", 0.5, "dataset size in GiB")
	limit = flag.String("limit", "512MiB", "REMOTE_SEGMENTS_MEMORY_LIMIT of the process")
	n     = flag.Int("n", 4, "concurrent scans")
	child = flag.String("child", "", "internal: the dataset's glob; run the scans")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *child != "" {
		runChild(*child)
		return
	}
	dir, _ := filepath.Abs(filepath.Join(*out, "concurrent-data"))
	rowsPerChunk := 1 << 20
	chunks := int(math.Ceil(*gib * (1 << 30) / float64(rowsPerChunk) / 33)) // ~33 bytes a row
	stamp := filepath.Join(dir, fmt.Sprintf(".complete-%d-%d", chunks, rowsPerChunk))
	if _, err := os.Stat(stamp); err != nil {
		os.RemoveAll(dir)
		if _, _, err := datagen.WriteBench(dir, chunks, rowsPerChunk); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(stamp, nil, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("== %d concurrent scans through DuckDB connections (Go-driver host), process memory limit %s, memory_budget 1GiB each, %d chunks of %d rows (load %s)\n",
		*n, *limit, chunks, rowsPerChunk, loadAvg())
	cmd := exec.Command(self, "-child", dir+"/**/*.arrow", "-n", strconv.Itoa(*n))
	cmd.Env = append(os.Environ(), "REMOTE_SEGMENTS_MEMORY_LIMIT="+*limit)
	outBytes, err := cmd.CombinedOutput()
	fmt.Print(string(outBytes))
	if err != nil {
		log.Fatalf("child: %v", err)
	}
	limitBytes, err := parseMiB(*limit)
	if err != nil {
		log.Fatal(err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rss := ru.Maxrss * 1024
	fmt.Printf("peak RSS of the process %.0f MiB = limit + %.0f MiB (goal: <= limit + 200 MiB); CPU %.1f s; load %s\n\n",
		float64(rss)/(1<<20), float64(rss-limitBytes)/(1<<20), float64(ru.Utime.Nano()+ru.Stime.Nano())/1e9, loadAvg())
}

func parseMiB(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSuffix(s, "MiB"), 10, 64)
	return v << 20, err
}

type result struct {
	rows, sum   int64
	sumI        int64
	sumLen      int64
	wall        time.Duration
	cap, peak   int64
	waits       int64
	overcommits int64
	err         error
	statsFound  bool
}

// scan runs the query on its own connection and reads its stats row.
func scan(db *sql.DB, glob string) result {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return result{err: err}
	}
	defer conn.Close()
	start := time.Now()
	var r result
	q := fmt.Sprintf("SELECT count(*), sum(x), sum(i), sum(length(s)) FROM remote_segments('%s', memory_budget := '1GiB')", glob)
	if err := conn.QueryRowContext(ctx, q).Scan(&r.rows, &r.sum, &r.sumI, &r.sumLen); err != nil {
		return result{err: err}
	}
	r.wall = time.Since(start)
	// This connection's scan is the last one it started.
	err = conn.QueryRowContext(ctx, `SELECT budget_cap, budget_peak, budget_waits, budget_overcommits FROM remote_segments_stats()
		WHERE state = 'done' ORDER BY scan_id DESC LIMIT 1`).Scan(&r.cap, &r.peak, &r.waits, &r.overcommits)
	r.statsFound = err == nil
	return r
}

func runChild(glob string) {
	connector, err := remotesql.NewConnector("", remotesql.WithMemoryLimitTuning())
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	alone := scan(db, glob)
	if alone.err != nil {
		log.Fatalf("alone: %v", alone.err)
	}
	fmt.Printf("alone:  rows %d sum(x) %d, %.2f s, budget cap %d MiB peak %d MiB\n", alone.rows, alone.sum, alone.wall.Seconds(), alone.cap>>20, alone.peak>>20)
	res := make([]result, *n)
	var wg sync.WaitGroup
	start := time.Now()
	for q := range res {
		wg.Go(func() { res[q] = scan(db, glob) })
	}
	wg.Wait()
	all := time.Since(start)
	var slowest, fastest time.Duration
	for q, r := range res {
		if r.err != nil {
			log.Fatalf("scan %d: %v", q, r.err)
		}
		if r.rows != alone.rows || r.sum != alone.sum || r.sumI != alone.sumI || r.sumLen != alone.sumLen {
			log.Fatalf("scan %d: rows %d sum(x) %d, alone: %d %d", q, r.rows, r.sum, alone.rows, alone.sum)
		}
		fmt.Printf("scan %d: same answer as alone, %.2f s, budget cap %d MiB peak %d MiB, %d waits, %d overcommits\n", q, r.wall.Seconds(), r.cap>>20, r.peak>>20, r.waits, r.overcommits)
		slowest = max(slowest, r.wall)
		if fastest == 0 || r.wall < fastest {
			fastest = r.wall
		}
	}
	fmt.Printf("all %d: %.2f s = %.2f× one alone (the same work %d times); slowest / fastest %.2f (goal <= 2: none starves)\n",
		*n, all.Seconds(), all.Seconds()/alone.wall.Seconds(), *n, slowest.Seconds()/fastest.Seconds())
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
