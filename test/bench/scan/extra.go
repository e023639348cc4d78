package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/scanner"
)

// smallChunks scans 2,000 chunks of about 4.4 KiB under a 64 MiB budget in
// the CLI: the data fits, so the pipeline should never wait, and the
// budget's peak should stay within twice the data.
func smallChunks(ext, out string) {
	fmt.Println("== small chunks: 2,000 chunks of ~4.4 KiB, memory_budget := '64MiB'")
	dir, _ := filepath.Abs(filepath.Join(out, "small-data"))
	_, size := prepare(dir, 2000, 120)
	sql := fmt.Sprintf(`SELECT sum(x) FROM remote_segments('%s/**/*.arrow', memory_budget := '64MiB');
SELECT budget_waits, budget_peak, round(budget_wait_ms), wall_ms FROM remote_segments_stats();`, dir)
	u := measure(ext, sql)
	lines := strings.Split(strings.TrimSpace(u.out), "\n")
	f := strings.Split(lines[len(lines)-1], ",")
	fmt.Printf("data %s (%.1f KiB a chunk): budget waits %s, budget peak %s bytes = %.2f × the data (goal: 0 waits, <= 2×), waited %s ms of a %s ms scan\n\n",
		mib(size), float64(size)/2000/1024, f[0], f[1], atof(f[1])/float64(size), f[2], f[3])
}

func atof(s string) float64 {
	var v float64
	fmt.Sscan(s, &v)
	return v
}

// concurrent runs, in a child process of this command (so that its peak RSS
// is the scans' alone), four scans of the whole dataset at once under one
// process memory limit of 512 MiB, each asking for a 1 GiB budget, with
// consumers that sum every column: peak RSS against the limit, each answer
// against the first, and each scan's time against the others'.
func concurrent(dir string) {
	fmt.Println("== 4 concurrent scans in one process, process memory limit 512 MiB, memory_budget 1 GiB each (Go consumers, no DuckDB; the Go soft memory limit at limit + 64 MiB, as the extension sets it)")
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(self, "-sections", "concurrent-child", "-out", *out)
	cmd.Env = append(os.Environ(), scanner.MemoryLimitEnv+"=512MiB")
	outBytes, err := cmd.CombinedOutput()
	if err != nil {
		log.Fatalf("child: %v\n%s", err, outBytes)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	fmt.Print(string(outBytes))
	fmt.Printf("peak RSS of the process %s: limit + %s (goal: <= limit + 200 MiB); load %s\n\n", mib(ru.Maxrss*1024), mib(ru.Maxrss*1024-512<<20), loadAvg())
}

// concurrentChild is the child's side of concurrent.
func concurrentChild(dir string) {
	proc, err := scanner.ProcessFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	// As the loadable extension does (cabi): the Go runtime serves only the
	// scans, so its soft memory limit is theirs plus 64 MiB of headroom.
	debug.SetMemoryLimit(proc.Memory.Stats().Cap + 64<<20)
	type result struct {
		sum    int64
		rows   int64
		wall   time.Duration
		err    error
		pool   budget.PoolStats
		hedges int64
	}
	res := make([]result, 4)
	var wg sync.WaitGroup
	for q := range res {
		wg.Go(func() {
			start := time.Now()
			plan, err := scanner.Bind(context.Background(), scanner.Config{Source: dir + "/**/*.arrow", MemoryBudget: 1 << 30, Process: proc})
			if err != nil {
				res[q].err = err
				return
			}
			scan, err := plan.Start(context.Background(), nil)
			if err != nil {
				res[q].err = err
				return
			}
			defer scan.Close()
			var mu sync.Mutex
			var cw sync.WaitGroup
			for range 2 {
				cw.Go(func() {
					for {
						b, err := scan.Next()
						if err != nil || b == nil {
							if err != nil {
								mu.Lock()
								res[q].err = err
								mu.Unlock()
							}
							return
						}
						x := b.Column(0).(*array.Int64)
						var s int64
						for {
							from, n := b.Take(2048)
							if n == 0 {
								break
							}
							for i := from; i < from+n; i++ {
								s += x.Value(int(i))
							}
							b.Consumed(n)
						}
						mu.Lock()
						res[q].sum += s
						res[q].rows += b.Record.NumRows()
						mu.Unlock()
						b.Close()
					}
				})
			}
			cw.Wait()
			res[q].wall = time.Since(start)
			st := scan.Stats()
			res[q].pool = st.Pool
			res[q].hedges = st.HedgesIssued
		})
	}
	wg.Wait()
	var slowest, fastest time.Duration
	for q, r := range res {
		if r.err != nil {
			log.Fatalf("scan %d: %v", q, r.err)
		}
		right := r.sum == res[0].sum && r.rows == res[0].rows
		fmt.Printf("scan %d: rows %d sum(x) %d (same as scan 0: %v), %.2f s; pooled buffers %d fresh, %d reused; hedged GETs %d\n", q, r.rows, r.sum, right, r.wall.Seconds(), r.pool.Fresh, r.pool.Reused, r.hedges)
		slowest = max(slowest, r.wall)
		if fastest == 0 || r.wall < fastest {
			fastest = r.wall
		}
	}
	st := proc.Memory.Stats()
	fmt.Printf("slowest / fastest = %.2f (goal <= 2: none starves); process limit %s, its peak %s, waits of the scans at it: queued now %d\n",
		slowest.Seconds()/fastest.Seconds(), mib(st.Cap), mib(st.Peak), st.Queued)
}
