package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/remote-segments/remote_segments/test/s3server"
)

// usage is what one CLI process cost, from its rusage.
type usage struct {
	wall      time.Duration
	cpu       time.Duration // user + system
	rss       int64         // peak, bytes
	minflt    int64
	out       string
	loadAvg1m string
}

// measure runs sql in a fresh CLI with the extension loaded.
func measure(ext, sql string, env ...string) usage {
	cmd := exec.Command(*duckdb, "-unsigned", "-csv", "-noheader", "-c", "LOAD '"+ext+"'; "+sql)
	cmd.Env = append(append(os.Environ(), "DUCKDB_AGENT_MODE=0"), env...)
	var sb strings.Builder
	cmd.Stdout = &sb
	cmd.Stderr = &sb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Fatalf("duckdb: %v\n%s\n%s", err, sb.String(), sql)
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return usage{wall: wall, cpu: cpu, rss: ru.Maxrss * 1024, minflt: ru.Minflt, out: sb.String(), loadAvg1m: loadAvg()}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// sweepPoint is one budget of the sweep on one store.
type sweepPoint struct {
	label   string
	budget  int64 // 0: the default
	fast    usage // sums, every DuckDB thread
	slow    usage // one thread, a costly expression
	capUsed int64 // the budget cap the scan chose (the default's value)
}

// budgetSweep scans the dataset from local files and from versitygw at
// several budgets, each query in a fresh CLI: MiB/s, peak RSS, RSS − budget,
// page faults and CPU seconds per GiB of a fast consumer (sums), and peak
// RSS of a slow one. It writes an SVG of throughput and RSS against the
// budget to svgPath.
func budgetSweep(ext, dir string, size int64, svgPath string) {
	fmt.Printf("== budget sweep: each query in a fresh CLI; fast = sums on every thread (best of %d), slow = one thread and a costly expression\n", *reps)
	fmt.Printf("   (load average 1 min at each run in brackets; speeds are ratios within this run)\n")
	budgets := []struct {
		label string
		n     int64
	}{{"64MiB", 64 << 20}, {"128MiB", 128 << 20}, {"512MiB", 512 << 20}, {"1GiB", 1 << 30}, {"default", 0}}

	s3root := filepath.Join(filepath.Dir(dir), "s3root")
	srv := startS3(s3root, dir)
	defer srv.Close()
	sources := []struct{ name, src, params string }{
		{"local", dir + "/**/*.arrow", ""},
		{"s3", "s3://bench/**/*.arrow", fmt.Sprintf(", s3_endpoint := '%s', s3_access_key_id := '%s', s3_secret_access_key := '%s', s3_region := '%s', s3_url_style := 'path'",
			srv.Endpoint, srv.AccessKey, srv.SecretKey, srv.Region)},
	}
	gib := float64(size) / (1 << 30)
	results := map[string][]sweepPoint{}
	for _, so := range sources {
		fmt.Printf("-- %s (%.2f GiB)\n", so.name, gib)
		fmt.Printf("%-8s %9s %10s %10s %12s %8s %9s %12s %15s %9s\n", "budget", "cap", "MiB/s", "peak RSS", "RSS-cap", "faults", "CPU s/GiB", "slow RSS", "slow RSS-cap", "load")
		for _, b := range budgets {
			param := ""
			if b.n > 0 {
				param = fmt.Sprintf(", memory_budget := '%d'", b.n)
			}
			stats := "SELECT budget_cap FROM remote_segments_stats();"
			// The fastest of -reps runs counts, with its own faults and CPU.
			var fast usage
			for r := range *reps {
				u := measure(ext, fmt.Sprintf("SELECT sum(x), sum(i), sum(d), sum(length(s)) FROM remote_segments('%s'%s%s); %s", so.src, so.params, param, stats))
				if r == 0 || u.wall < fast.wall {
					fast = u
				}
			}
			slow := measure(ext, fmt.Sprintf("SET threads = 1; SELECT sum(hash(s || CAST(x AS VARCHAR))) FROM remote_segments('%s'%s%s); %s", so.src, so.params, param, stats))
			p := sweepPoint{label: b.label, budget: b.n, fast: fast, slow: slow, capUsed: lastInt(fast.out)}
			results[so.name] = append(results[so.name], p)
			budget := p.capUsed // what the scan held at most: the knee may be below the budget asked for
			fmt.Printf("%-8s %9s %10.0f %10s %12s %8d %9.2f %12s %15s %9s\n", b.label, mib(p.capUsed),
				float64(size)/(1<<20)/fast.wall.Seconds(), mib(fast.rss), mib(fast.rss-budget), fast.minflt,
				fast.cpu.Seconds()/gib, mib(slow.rss), mib(slow.rss-budget), fast.loadAvg1m+"/"+slow.loadAvg1m)
		}
		pts := results[so.name]
		base, top := pts[0], pts[3]
		best := pts[0]
		for _, p := range pts {
			if p.fast.wall < best.fast.wall {
				best = p
			}
		}
		def := pts[len(pts)-1]
		fmt.Printf("   1GiB / 64MiB throughput = %.2f (goal >= 0.95); default / best (%s) = %.2f at RSS %s vs %s (goal >= 0.95 at no more RSS)\n",
			base.fast.wall.Seconds()/top.fast.wall.Seconds(), best.label, best.fast.wall.Seconds()/def.fast.wall.Seconds(), mib(def.fast.rss), mib(best.fast.rss))
	}
	if *mdPath != "" {
		if err := os.WriteFile(*mdPath, []byte(sweepMarkdown(results, size, svgPath)), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("   wrote %s\n", *mdPath)
	}
	if svgPath != "" {
		if err := os.WriteFile(svgPath, []byte(sweepSVG(results, size)), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("   wrote %s\n", svgPath)
	}
	fmt.Println()
}

// lastInt is the integer on the last line of out (a stats query's answer).
func lastInt(out string) int64 {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	n, _ := strconv.ParseInt(strings.TrimSpace(lines[len(lines)-1]), 10, 64)
	return n
}

// startS3 serves the dataset from versitygw on 127.0.0.1: its posix backend
// serves each directory of root as a bucket, and bucket "bench" holds hard
// links to the dataset's files (no copy), or copies where links fail.
func startS3(root, dir string) *s3server.Server {
	bucket := filepath.Join(root, "bench")
	os.RemoveAll(root)
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".arrow") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		to := filepath.Join(bucket, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if os.Link(p, to) == nil {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := s3server.Start(context.Background(), root)
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// sweepSVG draws MiB/s (solid) and peak RSS (dashed) against the budget
// asked for, one colour per store; the default is a dot at the cap it chose.
func sweepSVG(results map[string][]sweepPoint, size int64) string {
	const W, H, L, R, T, B = 720, 360, 70, 70, 30, 50
	var maxRate, maxRSS float64
	for _, pts := range results {
		for _, p := range pts {
			maxRate = max(maxRate, float64(size)/(1<<20)/p.fast.wall.Seconds())
			maxRSS = max(maxRSS, float64(max(p.fast.rss, p.slow.rss))/(1<<20))
		}
	}
	maxCap := 1024.0
	x := func(capMiB float64) float64 { return L + (W-L-R)*capMiB/maxCap }
	yRate := func(v float64) float64 { return H - B - (H-B-T)*v/(maxRate*1.1) }
	yRSS := func(v float64) float64 { return H - B - (H-B-T)*v/(maxRSS*1.1) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="18">remote_segments budget sweep, %.2f GiB: MiB/s (solid, left axis) and peak RSS of the slow consumer (dashed, right axis)</text>`+"\n", L-40, float64(size)/(1<<30))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, H-B, W-R, H-B)
	for _, c := range []float64{64, 128, 256, 512, 768, 1024} {
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%.0f</text>`+"\n", x(c), H-B+16, c)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">memory_budget (MiB)</text>`+"\n", (W+L-R)/2, H-12)
	for i := 0; i <= 4; i++ {
		v := maxRate * 1.1 * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%.0f</text>`+"\n", L-6, yRate(v)+4, v)
		r := maxRSS * 1.1 * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.0f">%.0f</text>`+"\n", W-R+6, yRSS(r)+4, r)
	}
	colours := map[string]string{"local": "#1f77b4", "s3": "#d62728"}
	row := 0
	for _, name := range []string{"local", "s3"} {
		pts := results[name]
		var rate, rss []string
		for _, p := range pts[:len(pts)-1] {
			cx := x(float64(p.budget) / (1 << 20)) // the budget asked for; the cap may be the knee below it
			rate = append(rate, fmt.Sprintf("%.1f,%.1f", cx, yRate(float64(size)/(1<<20)/p.fast.wall.Seconds())))
			rss = append(rss, fmt.Sprintf("%.1f,%.1f", cx, yRSS(float64(p.slow.rss)/(1<<20))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colours[name], strings.Join(rate, " "))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6,4" points="%s"/>`+"\n", colours[name], strings.Join(rss, " "))
		def := pts[len(pts)-1]
		cx := x(float64(def.capUsed) / (1 << 20))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>`+"\n", cx, yRate(float64(size)/(1<<20)/def.fast.wall.Seconds()), colours[name])
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s (dot: the default budget)</text>`+"\n", L+10, T+16+16*row, colours[name], name)
		row++
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// sweepMarkdown is the W4 section of BENCHMARKS.md: goal lines, then a line
// "<!-- sections -->", then the section (see test/bench/peers).
func sweepMarkdown(results map[string][]sweepPoint, size int64, svgPath string) string {
	var goals, body strings.Builder
	g := func(f string, a ...any) { fmt.Fprintf(&goals, f, a...) }
	w := func(f string, a ...any) { fmt.Fprintf(&body, f, a...) }
	gib := float64(size) / (1 << 30)
	rate := func(p sweepPoint) float64 { return float64(size) / (1 << 20) / p.fast.wall.Seconds() }
	w("## W4: the budget sweep, %.2f GiB, local files and versitygw\n\n", gib)
	w("The same dataset (%.2f GiB of Arrow IPC files, columns x, i, d, s) read with `SELECT sum(x), sum(i), sum(d), sum(length(s))` at each `memory_budget`, each query in a fresh DuckDB CLI (`.tools/bin/duckdb`) with the extension: MiB/s of the fastest of %d runs with that run's peak RSS, page faults and CPU seconds per GiB (from its rusage); *slow* is one DuckDB thread computing a costly expression (`SET threads = 1; sum(hash(s || x))`), where the pipeline runs ahead of the consumer and the budget is what bounds memory. `default` is the adaptive budget (the cap it chose is shown). Measured %s (`go run ./test/bench/scan -sections sweep -md …`).\n\n",
		gib, *reps, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	for _, name := range []string{"local", "s3"} {
		pts := results[name]
		if len(pts) < 5 {
			continue
		}
		w("| %s: memory_budget | cap | MiB/s | peak RSS | page faults / GiB | CPU s / GiB | slow: peak RSS | slow: RSS − cap | load avg |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n", name)
		for _, p := range pts {
			b := p.capUsed // the knee may have set it below the budget asked for
			w("| %s | %s | %.0f | %s | %.0fk | %.2f | %s | %s | %s / %s |\n", p.label, mib(p.capUsed), rate(p), mib(p.fast.rss),
				float64(p.fast.minflt)/gib/1000, p.fast.cpu.Seconds()/gib, mib(p.slow.rss), mib(p.slow.rss-b), p.fast.loadAvg1m, p.slow.loadAvg1m)
		}
		base, top, def := pts[0], pts[3], pts[len(pts)-1]
		best := pts[0]
		for _, p := range pts {
			if p.fast.wall < best.fast.wall {
				best = p
			}
		}
		oneG := rate(top) / rate(base)
		defBest := rate(def) / rate(best)
		var worst int64
		for _, p := range pts {
			worst = max(worst, p.slow.rss-p.capUsed)
		}
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "not met"
		}
		w("\n%s: 1 GiB ÷ 64 MiB throughput %.2f (goal ≥ 0.95: %s); default ÷ best (%s) %.2f at %s against %s peak RSS (goal ≥ 0.95 at no more RSS: %s); slow consumer RSS − cap at most %s (goal ≤ 200 MiB: %s).\n\n",
			name, oneG, verdict(oneG >= 0.95), best.label, defBest, mib(def.fast.rss), mib(best.fast.rss), verdict(defBest >= 0.95 && def.fast.rss <= best.fast.rss),
			mib(worst), verdict(worst <= 200<<20))
		g("- **W4** (%s, %.2f GiB): 1 GiB budget ÷ 64 MiB throughput **%.2f** (goal ≥ 0.95: %s); the default budget %.2f× the best budget's throughput at %s peak RSS; slow consumer RSS − cap ≤ %s (goal ≤ 200 MiB: %s).\n",
			name, gib, oneG, verdict(oneG >= 0.95), defBest, mib(def.fast.rss), mib(worst), verdict(worst <= 200<<20))
	}
	if svgPath != "" {
		link := "@/" + svgPath // relative to the repository's root (test/bench/peers)
		if filepath.IsAbs(svgPath) {
			link = svgPath
		}
		w("![throughput and peak RSS against the budget](%s)\n\n", link)
	}
	return goals.String() + "<!-- sections -->\n" + body.String()
}
