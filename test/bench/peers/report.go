package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/remote-segments/remote_segments/test/bench/benchsvg"
)

type report struct {
	c            config
	d            *dataset
	cs           []contender
	results      map[string][]measurement
	started      time.Time
	load0, load1 float64
	node         *nodeEnv
	prepTime     time.Duration
	floors       []floor
}

// row is one contender's line of the table.
type row struct {
	ct                contender
	mibps, lo, hi     float64 // median, min, max MiB/s
	rss, rssLo, rssHi float64 // MiB
	process           float64 // median process wall time, s
	cpuPerGiB         float64 // median CPU s of the whole process per GiB of IPC
	faultsPerGiB      float64 // median page faults of the whole process per GiB of IPC
	loadLo, loadHi    float64
	ofRaw             float64
	runs              int
}

func (r *report) rows() []row {
	var out []row
	for _, ct := range r.cs {
		ms := r.results[ct.key]
		if len(ms) == 0 {
			continue
		}
		speed, rss := speedOf(r.d), rssMiB
		x := row{ct: ct, runs: len(ms), mibps: medianBy(ms, speed), rss: medianBy(ms, rss),
			process: medianBy(ms, func(m measurement) float64 { return m.process.Seconds() })}
		gib := float64(r.d.IPCBytes) / (1 << 30)
		x.cpuPerGiB = medianBy(ms, func(m measurement) float64 { return m.cpu.Seconds() / gib })
		x.faultsPerGiB = medianBy(ms, func(m measurement) float64 { return float64(m.faults) / gib })
		x.lo, x.hi = minMax(ms, speed)
		x.rssLo, x.rssHi = minMax(ms, rss)
		x.loadLo, x.loadHi = minMax(ms, func(m measurement) float64 { return m.load })
		out = append(out, x)
	}
	raw := r.results["raw"]
	for i := range out {
		if len(raw) > 0 {
			out[i].ofRaw = r.ratio(out[i].ct.key, "raw", speedOf(r.d))
		}
	}
	return out
}

func speedOf(d *dataset) func(measurement) float64 {
	return func(m measurement) float64 { return mibps(d.IPCBytes, m.scan) }
}

func rssMiB(m measurement) float64 { return float64(m.rss) / (1 << 20) }

// ratio is the median over the rounds of key(a)/key(b) within each round:
// the two ran close together in time, so the load from elsewhere that varies
// between rounds cancels better than in a ratio of medians.
func (r *report) ratio(a, b string, key func(measurement) float64) float64 {
	as, bs := r.results[a], r.results[b]
	n := min(len(as), len(bs))
	if n == 0 {
		return 0
	}
	v := make([]float64, n)
	for i := range n {
		v[i] = key(as[i]) / key(bs[i])
	}
	slices.Sort(v)
	return v[n/2]
}

func minMax(ms []measurement, key func(measurement) float64) (float64, float64) {
	lo, hi := key(ms[0]), key(ms[0])
	for _, m := range ms[1:] {
		lo, hi = min(lo, key(m)), max(hi, key(m))
	}
	return lo, hi
}

// goal evaluates the W1 goal for one remote_segments row against the best
// peer (highest median throughput among the peer engines).
func (r *report) goal(rs row, rows []row) (best row, thr, mem float64, met bool, ok bool) {
	for _, x := range rows {
		if x.ct.group == "peer" && x.mibps > best.mibps {
			best, ok = x, true
		}
	}
	if !ok {
		return best, 0, 0, false, false
	}
	thr, mem = r.ratio(rs.ct.key, best.ct.key, speedOf(r.d)), r.ratio(rs.ct.key, best.ct.key, rssMiB)
	return best, thr, mem, thr >= 1.2 && mem <= 0.5, true
}

// peerMatrix writes the ratios of both remote_segments rows against every
// peer, and which peer was fastest in each round: with a noisy machine the
// best peer can change between rounds, and the verdict with it.
func (r *report) peerMatrix(w func(string, ...any), rows []row) {
	var peers []row
	for _, x := range rows {
		if x.ct.group == "peer" {
			peers = append(peers, x)
		}
	}
	if len(peers) == 0 {
		return
	}
	w("\n| against each peer (per-round ratios) |")
	for _, p := range peers {
		w(" %s: MiB/s × | RSS × |", p.ct.name)
	}
	w("\n|---|" + strings.Repeat("--:|--:|", len(peers)) + "\n")
	for _, key := range []string{"rs", "rs64"} {
		i := slices.IndexFunc(rows, func(x row) bool { return x.ct.key == key })
		if i < 0 {
			continue
		}
		w("| %s |", rows[i].ct.name)
		for _, p := range peers {
			w(" %.2f | %.2f |", r.ratio(key, p.ct.key, speedOf(r.d)), r.ratio(key, p.ct.key, rssMiB))
		}
		w("\n")
	}
	var best []string
	for round := range r.c.runs {
		name, top := "", 0.0
		for _, p := range peers {
			if ms := r.results[p.ct.key]; round < len(ms) && speedOf(r.d)(ms[round]) > top {
				name, top = p.ct.name, speedOf(r.d)(ms[round])
			}
		}
		best = append(best, fmt.Sprintf("round %d: %s (%.0f MiB/s)", round+1, name, top))
	}
	w("\nFastest peer in each round: %s.", strings.Join(best, "; "))
	if !allSame(best) {
		w(" The fastest peer changes between rounds at this load, so the verdict depends on the run: read it with the table above.")
	}
	w("\n")
}

func allSame(best []string) bool {
	name := func(s string) string {
		s = strings.SplitN(s, ": ", 2)[1]
		return s[:strings.LastIndex(s, " (")]
	}
	for _, b := range best[1:] {
		if name(b) != name(best[0]) {
			return false
		}
	}
	return true
}

func (r *report) write() error {
	rows := r.rows()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	sections := readSections(r.c.sections, r.c.report)
	w("# Benchmarks\n\n")
	if sections.goals != "" {
		w("**Goals tracked**, each measured in this run or in the `make bench` run that wrote its section (dated there):\n\n%s\n", sections.goals)
	}
	w("**W1: remote_segments reaches ≥ 1.2× the best peer engine's throughput at ≤ 0.5× its peak RSS.**\n\n")
	var metBy []string
	for _, key := range []string{"rs", "rs64"} {
		i := slices.IndexFunc(rows, func(x row) bool { return x.ct.key == key })
		if i < 0 {
			continue
		}
		best, thr, mem, met, ok := r.goal(rows[i], rows)
		if !ok {
			w("- %s: no peer engine measured in this run.\n", rows[i].ct.name)
			continue
		}
		verdict := "**met**"
		if met {
			metBy = append(metBy, rows[i].ct.name)
		}
		if !met {
			var short []string
			if thr < 1.2 {
				short = append(short, fmt.Sprintf("throughput %.2f× is %.0f %% short of 1.2×", thr, (1.2-thr)/1.2*100))
			}
			if mem > 0.5 {
				short = append(short, fmt.Sprintf("RSS %.2f× is %.0f %% over 0.5×", mem, (mem-0.5)/0.5*100))
			}
			verdict = "**not met**: " + strings.Join(short, "; ")
		} else {
			verdict += fmt.Sprintf(" (throughput margin %.0f %% above 1.2×, RSS %.0f %% under 0.5×)", (thr-1.2)/1.2*100, (0.5-mem)/0.5*100)
		}
		w("- %s: %.0f MiB/s = **%.2f×** %s (%.0f MiB/s), peak RSS %.0f MiB = **%.2f×** its %.0f MiB: %s.\n",
			rows[i].ct.name, rows[i].mibps, thr, best.ct.name, best.mibps, rows[i].rss, mem, best.rss, verdict)
	}
	if len(metBy) > 0 {
		w("\n**W1 goal: met** by %s.\n", strings.Join(metBy, " and "))
	} else {
		w("\n**W1 goal: not met** in this run (by how much: above).\n")
	}
	r.peerMatrix(w, rows)
	w("\nRatios are medians over the rounds of the ratio within a round (the contenders of one round ran within about a minute of each other, so load from elsewhere that changes between rounds cancels); "+
		"MiB/s and MiB are medians over the runs. Measured %s UTC (%s run, %d interleaved run(s) per contender) on a machine shared with other work "+
		"(1-minute load average %.2f at the start, %.2f at the end on %d cores, and beside every figure below): absolute figures are low and noisy under such load; "+
		"only ratios within one run compare, and machines here differ by up to 4× between sessions.\n\n",
		r.started.Format("2006-01-02 15:04"), r.c.label, r.c.runs, r.load0, r.load1, runtime.NumCPU())

	w("## Machine and versions\n\n")
	w("| | |\n|---|---|\n")
	w("| CPU | %d cores (`nproc`), %s |\n", runtime.NumCPU(), cpuModel())
	w("| memory | %s |\n", memTotal())
	w("| kernel | %s |\n", cmdOut("uname", "-sr"))
	w("| load average (1 min) | %.2f at the start, %.2f at the end |\n", r.load0, r.load1)
	w("| DuckDB CLI | %s (`%s`) |\n", cmdOut(r.c.duckdb, "-version"), r.c.duckdb)
	w("| remote_segments | commit %s, `%s` |\n", cmdOut("git", "rev-parse", "--short", "HEAD")+dirty(), r.c.ext)
	w("| Go contenders | %s, %s, through `iosched/store` (requests signed with aws-sdk-go-v2 %s's SigV4 signer) |\n", runtime.Version(), "arrow-go "+modVersion("github.com/apache/arrow-go/v18"), modVersion("github.com/aws/aws-sdk-go-v2"))
	w("| S3 server | versitygw %s (posix backend) on 127.0.0.1 |\n", strings.TrimSpace(readFile(".tools/bin/versitygw.version")))
	w("| Node.js | %s |\n", cmdOut("node", "--version"))
	w("| Polars | nodejs-polars %s + nodejs-polars-linux-x64-gnu %s |\n", r.node.version("nodejs-polars"), r.node.version("nodejs-polars-linux-x64-gnu"))
	w("| LanceDB | @lancedb/lancedb %s (+ lancedb-linux-x64-gnu %s), apache-arrow %s |\n", r.node.version("@lancedb/lancedb"), r.node.version("@lancedb/lancedb-linux-x64-gnu"), r.node.version("apache-arrow"))
	w("\n")

	w("## W1: %s in %d large chunks, sums over every column\n\n", mib(r.d.IPCBytes), r.d.Chunks)
	w("%d rows × (`id` int64, `x` float64, `s` utf8 of 2–6 bytes, `payload` utf8 of 192–256 bytes) in %d Arrow IPC files of %s each "+
		"(%s in all; the same rows are %s as zstd Parquet and %s as a Lance dataset). "+
		"Every contender computes `count(*), sum(id), sum(x), sum(strlen(s)), sum(strlen(payload))` and its answer is checked against the one computed while writing the data "+
		"(the raw loop, which does not decode, is checked on the bytes it read). All S3 contenders read the same versitygw on 127.0.0.1.\n\n",
		r.d.Rows, r.d.Chunks, mib(r.d.IPCBytes/int64(r.d.Chunks)), mib(r.d.IPCBytes), mib(r.d.parquetSz), mib(r.d.lanceSz))
	w("MiB/s is the Arrow IPC size of the rows (%s) over the scan's wall time as the contender measures it (DuckDB's `.timer`, or a clock around the query in the Go and Node programs), "+
		"whatever the format's size on the wire, so every column is the same work. Peak RSS is `/usr/bin/time -v` of the contender's own process. "+
		"Spread is min–max over the runs. Process s, CPU s (user + system) and page faults are of the whole process, start-up included, "+
		"CPU and faults per GiB of the rows' IPC size: on 2 shared cores, CPU per GiB is what decides throughput under load.\n\n", mib(r.d.IPCBytes))
	w("![W1 throughput and peak RSS](%s)\n\n", relPath(r.c.report, r.c.svg))
	w("| contender | reads | MiB/s | × raw loop (per round) | peak RSS MiB | MiB/s spread | RSS spread | process s | CPU s / GiB | page faults / GiB | load avg |\n")
	w("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range rows {
		w("| %s | %s | %.0f | %.2f | %.0f | %.0f–%.0f | %.0f–%.0f | %.1f | %.2f | %.0fk | %.2f–%.2f |\n",
			x.ct.name, x.ct.reads, x.mibps, x.ofRaw, x.rss, x.lo, x.hi, x.rssLo, x.rssHi, x.process, x.cpuPerGiB, x.faultsPerGiB/1000, x.loadLo, x.loadHi)
	}
	w("\nSettings: remote_segments at its defaults (max_parallel_io 64, request_size 8 MiB) except the budget; "+
		"the Go contenders at %d requests in flight in 8 MiB ranges (nested: %s over %d segments of %d chunks; channel: cap %s of decoded batches, "+
		"fetched chunks not counted, as in the design it stands for); "+
		"Polars and LanceDB at their defaults (POLARS_CONCURRENCY_BUDGET, LANCE_IO_THREADS unset), Polars with `collectSync({engine: 'streaming'})`, "+
		"LanceDB streaming `query().select([...]).execute()` and summing in JavaScript over the Arrow buffers. "+
		"DuckDB's own readers run on local files (the page cache: no network), as the reference for what decoding costs.\n\n",
		r.c.p, nestedShape(r.c.p, r.c.segments, r.d.Chunks, r.d.IPCBytes/int64(r.d.Chunks)), r.c.segments, (r.d.Chunks+r.c.segments-1)/r.c.segments, mib(r.c.capBytes))
	for _, key := range []string{"rs", "rs64"} {
		if ms := r.results[key]; len(ms) > 0 && ms[0].budget[0] > 0 {
			i := slices.IndexFunc(r.cs, func(c contender) bool { return c.key == key })
			w("%s: budget cap %s, budget peak %s (median; from `remote_segments_stats()`). ", r.cs[i].name, mib(ms[0].budget[0]),
				mib(int64(medianBy(ms, func(m measurement) float64 { return float64(m.budget[1]) }))))
		}
	}
	w("versitygw runs on the same cores; its CPU is in no row.\n\n")
	w("Peak RSS of the host processes with the engine loaded and nothing scanned (the floor under each row above):")
	for i, f := range r.floors {
		sep := ","
		if i == len(r.floors)-1 {
			sep = "."
		}
		w(" %s %.0f MiB%s", f.name, float64(f.rss)/(1<<20), sep)
	}
	w("\n\n")
	w("Reproduce: `make %s` (this run: `%s`).", r.c.target, strings.Join(os.Args, " "))
	if r.node.installTime > 0 {
		w(" The peers' install (`npm ci` into `%s/node`) took %.0f s in this run.", r.c.work, r.node.installTime.Seconds())
	}
	w(" Data made or checked in %.0f s (cached under `%s`).\n\n", r.prepTime.Seconds(), r.c.work)

	b.WriteString(sections.body)

	if err := os.MkdirAll(filepath.Dir(r.c.report), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(r.c.report, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.c.svg), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(r.c.svg, []byte(barsSVG(rows, r.started, r.c.label, r.d)), 0o644); err != nil {
		return err
	}
	logf("wrote %s and %s", r.c.report, r.c.svg)
	fmt.Print(b.String())
	return nil
}

func relPath(from, to string) string {
	rel, err := filepath.Rel(filepath.Dir(from), to)
	if err != nil {
		return to
	}
	return filepath.ToSlash(rel)
}

func cmdOut(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// dirty says whether the checkout has uncommitted changes besides what
// `make bench` itself writes (this report and the pictures under
// test/bench/).
func dirty() string {
	for _, line := range strings.Split(cmdOut("git", "status", "--porcelain", "--untracked-files=no"), "\n") {
		path := strings.TrimSpace(line)
		if len(path) > 3 {
			path = strings.TrimSpace(path[2:])
		}
		if path == "" || path == "BENCHMARKS.md" || strings.HasPrefix(path, "test/bench/") && strings.HasSuffix(path, ".svg") {
			continue
		}
		return " (with uncommitted changes)"
	}
	return ""
}

func readFile(p string) string { b, _ := os.ReadFile(p); return string(b) }

func cpuModel() string {
	for _, l := range strings.Split(readFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func memTotal() string {
	for _, l := range strings.Split(readFile("/proc/meminfo"), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return "?"
}

func modVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "?"
}

// barsSVG draws two panels of horizontal bars: throughput (median, with
// the min–max spread as a whisker) and peak RSS per contender.
func barsSVG(rows []row, when time.Time, label string, d *dataset) string {
	c := benchsvg.Chart{
		Title: fmt.Sprintf("W1: %s in %d Arrow IPC chunks on versitygw (127.0.0.1), sums over every column (%s run, %s UTC)",
			mib(d.IPCBytes), d.Chunks, label, when.Format("2006-01-02 15:04")),
		Panels: []benchsvg.Panel{
			{Title: "MiB/s, higher is better (median; line: min–max)"},
			{Title: "peak RSS MiB, lower is better (median)", Opacity: 0.7},
		},
		Groups: []benchsvg.Group{
			{Key: "rs", Name: "remote_segments", Colour: benchsvg.ColourRS}, {Key: "go", Name: "Go: ceiling and replaced designs", Colour: benchsvg.ColourGo},
			{Key: "duck", Name: "DuckDB on local files", Colour: benchsvg.ColourDuck}, {Key: "peer", Name: "peer engines", Colour: benchsvg.ColourPeer},
		},
	}
	for _, x := range rows {
		c.Rows = append(c.Rows, benchsvg.Row{Name: x.ct.name, Group: x.ct.group,
			Bars: [][]benchsvg.Bar{{{Value: x.mibps, Lo: x.lo, Hi: x.hi}}, {{Value: x.rss}}}})
	}
	return c.SVG()
}
