// Command io measures the scan's remote IO against a raw ranged-GET loop over
// the same objects at the same concurrency, in one run, on versitygw behind
// test/faultproxy (30 ms per request by default):
//
//		go run ./test/bench/io [-out build/bench] [-mix-runs 10]
//
//	 1. ~1,000 objects of ~120 KiB (half IPC file, half IPC stream), a catalog
//	    with lengths: the narrow scan (one column, x) and the wide one (every
//	    column) at max_parallel_io 4, 16 and 64, each as the objects' bytes
//	    over the time from the first to the last request at the proxy,
//	    against the raw loop (P goroutines GETting whole objects);
//	 2. ~2,000 objects of a few KiB, one column: fault-free against the mix
//	    (5 % 503 SlowDown, 1 % connection resets mid-body, 1 % 5-s stalls),
//	    several runs of the mix, failures counted;
//	 3. overload: a proxy that serves 16 GETs at once and answers 503
//	    SlowDown beyond: the scan asking 64 against the scan told 16;
//	 4. large objects (64 MiB chunks, split into 8 MiB request_size parts):
//	    the scan against the raw loop of the same parts at P 16.
//
// The scan is the scanner package (the table function's pipeline without
// DuckDB): Bind, Start with the query's columns, two goroutines taking
// batches and summing x, which is checked against the generator's sums.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner"
	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/faultproxy"
	"github.com/remote-segments/remote_segments/test/s3server"
)

var (
	out      = flag.String("out", "build/bench", "where the datasets and versitygw's files go")
	latency  = flag.Duration("latency", 30*time.Millisecond, "latency the proxy adds to every request")
	mixRuns  = flag.Int("mix-runs", 10, "runs of the small-object scan under the fault mix")
	largeN   = flag.Int("large", 4, "64 MiB chunks in the large-object case, half IPC files, half streams (0: skip it)")
	parallel = flag.String("p", "4,16,64", "max_parallel_io values of the first table")
	tables   = flag.String("tables", "1,2,3,4", "which tables to run")
	budget   = flag.String("budget", "", "memory_budget of every scan (empty: the adaptive default)")
	rounds   = flag.Int("rounds", 3, "interleaved rounds of the first table (raw, narrow, wide in each); ratios are medians of the rounds' ratios")
	mdPath   = flag.String("md", "", "also write the W2 and W3 sections of BENCHMARKS.md (markdown) to this file")
	svgPath  = flag.String("svg", "test/bench/w2_inflight.svg", "where the picture of requests in flight over time at the proxy (W2, the highest -p) goes (empty: none)")
	w2SVG    = flag.String("w2-svg", "test/bench/w2_peers.svg", "with -node: where the bar picture of W2 against the peers (throughput and peak RSS per contender) goes (empty: none)")
	w3SVG    = flag.String("w3-svg", "test/bench/w3_peers.svg", "with -node: where the bar picture of W3 for the peers (the mix × fault-free, peak RSS under the mix) goes (empty: none)")
	midSegs  = flag.Int("mid-segments", 128, "segments of 8 objects in the W2 dataset")
	tinyObjs = flag.Int("tiny-objects", 2000, "objects in the W3 dataset")
)

// dataset is a set of objects on S3 with its catalog and expected sums.
type dataset struct {
	name  string
	keys  []string
	sizes []int64
	bytes int64
	rows  int64
	sumX  int64
	// The wide query's other sums, for the peers' answers.
	sumI, trueB, lenS int64
	sumD              float64
}

// runResult is one measured run.
type runResult struct {
	window   time.Duration // first to last request at the proxy
	inFlight float64       // time-averaged requests in flight at the proxy over the window
	cpu      time.Duration // this process's CPU time (proxy, client, decode; not versitygw)
	requests int64
	proxy    faultproxy.Stats
	stats    scanner.Stats
	err      error
	events   []faultproxy.Sample // the proxy's in-flight changes, for the picture
	rss      int64               // peak RSS of a peer's process (0: the scan ran in this process)
	wall     time.Duration       // a peer's process wall time
	hostCPU  time.Duration       // a host's process CPU time (user + system)
	storeCPU time.Duration       // versitygw's CPU time over the run (0: not measured)
	busy     float64             // the share of the machine's CPU time busy over the run (any process: other load shows here)
}

// accounted runs f and sets its result's storeCPU and busy.
func (b *bench) accounted(f func() runResult) runResult {
	c0, err0 := b.srv.CPU()
	m0, merr0 := machineCPU()
	r := f()
	if c1, err1 := b.srv.CPU(); err0 == nil && err1 == nil {
		r.storeCPU = c1 - c0
	}
	if m1, merr1 := machineCPU(); merr0 == nil && merr1 == nil && m1.total > m0.total {
		r.busy = float64(m1.busy-m0.busy) / float64(m1.total-m0.total)
	}
	return r
}

// cpuTicks are the machine's CPU times since boot, over all CPUs, in
// /proc/stat's ticks: all of them, and those not idle nor waiting for IO.
type cpuTicks struct{ total, busy int64 }

// machineCPU reads the first line of /proc/stat ("cpu user nice system
// idle iowait irq softirq steal ...").
func machineCPU() (cpuTicks, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTicks{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var t cpuTicks
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuTicks{}, fmt.Errorf("/proc/stat: %w", err)
		}
		t.total += n
		if i != 3 && i != 4 {
			t.busy += n
		}
	}
	return t, nil
}

func (r runResult) mibps(d *dataset) float64 {
	return float64(d.bytes) / (1 << 20) / r.window.Seconds()
}

type bench struct {
	srv    *s3server.Server
	traces int
	// proc is the run's one Process: every scan shares its store domains,
	// as a host's scans do.
	proc *scanner.Process
	md   markdown // what -md writes
	// root holds the bench's files; catalogs, the hosts' catalog file
	// of each dataset by name.
	root     string
	catalogs map[string]string
}

// tracePath is where the next scan writes its Chrome trace when
// IOBENCH_TRACE names a path prefix ("": no trace).
func (b *bench) tracePath() string {
	prefix := os.Getenv("IOBENCH_TRACE")
	if prefix == "" {
		return ""
	}
	b.traces++
	return fmt.Sprintf("%s.%d.json", prefix, b.traces)
}

func main() {
	if rawChild() {
		return
	}
	flag.Parse()
	log.SetFlags(0)
	fmt.Printf("io benchmark: versitygw behind faultproxy (%v per request), memory_budget %q; %s\n", *latency, *budget, loadAvg())
	root, _ := filepath.Abs(filepath.Join(*out, "io-bench"))
	os.RemoveAll(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	srv, err := s3server.Start(context.Background(), filepath.Join(root, "s3"), "bench")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	b := &bench{srv: srv, proc: scanner.NewProcess(0), root: root}

	mid, midPeers := b.prepare(root, "mid", datagen.Spec{Segments: *midSegs, ChunksPerSegment: 8, RowsPerChunk: 1600, BatchesPerChunk: 1, Seed: 8}, peersOn())
	tiny, tinyPeers := b.prepare(root, "tiny", datagen.Spec{Segments: *tinyObjs, ChunksPerSegment: 1, RowsPerChunk: 100, BatchesPerChunk: 1, Seed: 9}, peersOn())
	var large *dataset
	if *largeN > 0 {
		large, _ = b.prepare(root, "large", datagen.Spec{Segments: *largeN, ChunksPerSegment: 1, RowsPerChunk: 1_750_000, BatchesPerChunk: 4, Seed: 10}, false)
	}
	b.md.midPeers, b.md.tinyPeers = midPeers, tinyPeers
	if os.Getenv("IOBENCH_SERVE") != "" {
		b.serve(mid)
		return
	}

	run := func(n string) bool { return slices.Contains(strings.Split(*tables, ","), n) }
	if run("1") {
		b.table1(mid, midPeers)
	}
	if run("2") {
		b.table2(tiny, tinyPeers)
	}
	if run("3") {
		b.table3(mid)
	}
	if large != nil && run("4") {
		b.table4(large)
	}
	fmt.Printf("\nend: %s\n", loadAvg())
	if *mdPath != "" {
		if err := b.md.write(*mdPath, mid, tiny); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("wrote %s\n", *mdPath)
	}
	for _, pic := range []struct {
		path string
		ok   bool
		draw func() string
	}{
		{*svgPath, len(b.md.w2) > 0, func() string { return b.md.inflightSVG(mid) }},
		{*w2SVG, b.md.hasW2Peers(), b.md.w2BarsSVG},
		{*w3SVG, b.md.hasW3Peers(), b.md.w3BarsSVG},
	} {
		if pic.path == "" || !pic.ok {
			continue
		}
		if err := os.WriteFile(pic.path, []byte(pic.draw()), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("wrote %s\n", pic.path)
	}
}

// prepare writes a dataset with the generator and uploads it; with peers,
// also its IPC-file copy (prefix name+"f") and its Lance dataset.
func (b *bench) prepare(root, name string, spec datagen.Spec, peers bool) (*dataset, *peerData) {
	dir := filepath.Join(root, name)
	stats, err := datagen.Write(dir, spec)
	if err != nil {
		log.Fatal(err)
	}
	d := &dataset{name: name}
	for _, s := range stats {
		d.rows += s.Rows
		d.sumX += s.SumX
		d.sumI += s.SumI
		d.sumD += s.SumD
		d.trueB += s.TrueB
		d.lenS += s.LenS
	}
	var pd *peerData
	if peers {
		files := *d
		files.name, files.keys, files.sizes, files.bytes = name+"f", nil, nil, 0
		pd = &peerData{files: &files}
	}
	var paths []string
	filepath.Walk(filepath.Join(dir, "chunks"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			paths = append(paths, p)
		}
		return err
	})
	sort.Strings(paths)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		key := filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			log.Fatal(err)
		}
		d.keys = append(d.keys, key)
		d.sizes = append(d.sizes, int64(len(data)))
		d.bytes += int64(len(data))
		put := func(key string, data []byte) {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := b.srv.PutObject(context.Background(), "bench", key, data); err != nil {
					mu.Lock()
					log.Fatal(err)
				}
			})
		}
		put(key, data)
		if pd != nil {
			fdata, err := fileFormat(data)
			if err != nil {
				log.Fatalf("%s: %v", key, err)
			}
			fkey := pd.files.name + strings.TrimPrefix(key, name)
			pd.files.keys = append(pd.files.keys, fkey)
			pd.files.sizes = append(pd.files.sizes, int64(len(fdata)))
			pd.files.bytes += int64(len(fdata))
			put(fkey, fdata)
		}
	}
	wg.Wait()
	if pd != nil {
		if pd.lanceURI, pd.lanceSz, err = b.writeLance(name, paths); err != nil {
			log.Fatal(err)
		}
	}
	os.RemoveAll(dir)
	fmt.Printf("dataset %-5s: %d objects, %.1f MiB (%.1f KiB each on average), %d rows\n",
		name, len(d.keys), float64(d.bytes)/(1<<20), float64(d.bytes)/float64(len(d.keys))/1024, d.rows)
	if pd != nil {
		fmt.Printf("  for the peers: %s/ (every chunk an IPC file) %.1f MiB; %s %.1f MiB\n", pd.files.name, float64(pd.files.bytes)/(1<<20),
			pd.lanceURI, float64(pd.lanceSz)/(1<<20))
	}
	return d, pd
}

// storeOptions point at the proxy.
func (b *bench) storeOptions(p *faultproxy.Proxy) store.Options {
	return store.Options{S3Endpoint: p.URL, S3AccessKeyID: b.srv.AccessKey, S3SecretAccessKey: b.srv.SecretKey, S3Region: b.srv.Region}
}

// measured fills r's window (from the first request's arrival at the proxy
// to the last one's end), the average in flight over it, and the CPU time
// since cpu0.
func measured(r runResult, p *faultproxy.Proxy, cpu0 time.Duration) runResult {
	ev := p.Events()
	if len(ev) > 0 {
		r.window = ev[len(ev)-1].T.Sub(ev[0].T)
		r.inFlight = faultproxy.Average(ev, ev[0].T, ev[len(ev)-1].T)
	}
	r.events = ev
	if os.Getenv("IOBENCH_SHAPE") != "" && len(ev) > 0 {
		// Requests in flight averaged over each 50 ms of the window: where
		// a run loses time (its start, its middle, its tail).
		var sb strings.Builder
		for t := ev[0].T; t.Before(ev[len(ev)-1].T); t = t.Add(50 * time.Millisecond) {
			fmt.Fprintf(&sb, " %.0f", faultproxy.Average(ev, t, t.Add(50*time.Millisecond)))
		}
		fmt.Printf("      in flight per 50 ms:%s\n", sb.String())
	}
	r.proxy = p.Stats()
	r.requests = r.proxy.Requests
	r.cpu = cpuTime() - cpu0
	return r
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// open starts a proxy in front of the server with cfg and the S3 store
// through it for p requests in flight (the Go contenders' store); the
// caller closes both.
func (b *bench) open(cfg faultproxy.Config, p int) (*faultproxy.Proxy, store.Store) {
	proxy, err := faultproxy.New(b.srv.Endpoint, cfg)
	if err != nil {
		log.Fatal(err)
	}
	so := b.storeOptions(proxy)
	so.MaxConns = p + 1
	st, _, err := store.Open("s3://bench/", so)
	if err != nil {
		log.Fatal(err)
	}
	return proxy, st
}

// raw GETs every object (in parts of at most part bytes) with p goroutines.
func (b *bench) raw(d *dataset, cfg faultproxy.Config, p int, part int64) runResult {
	proxy, st := b.open(cfg, p)
	defer proxy.Close()
	defer st.Close()
	cpu0 := cpuTime()
	var pieces []rawPiece
	for i, size := range d.sizes {
		for off := int64(0); off < size; off += part {
			pieces = append(pieces, rawPiece{"bench/" + d.keys[i], off, min(part, size-off)})
		}
	}
	got, err := rawLoop(st, p, pieces)
	r := measured(runResult{}, proxy, cpu0)
	if err != nil {
		r.err = err
	} else if got != d.bytes {
		r.err = fmt.Errorf("raw loop read %d of %d bytes", got, d.bytes)
	}
	return r
}

// scan runs the scanner over d at max_parallel_io p, reading fields (nil:
// all), and checks the rows and sum(x).
func (b *bench) scan(d *dataset, pcfg faultproxy.Config, p int, fields []int) runResult {
	proxy, err := faultproxy.New(b.srv.Endpoint, pcfg)
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()
	rows := make([]scanner.Row, len(d.keys))
	for i, k := range d.keys {
		rows[i] = scanner.Row{"url": "s3://bench/" + k, "length": d.sizes[i]}
	}
	ctx := context.Background()
	cpu0 := cpuTime()
	cfg := scanner.Config{Process: b.proc, Rows: rows, Store: b.storeOptions(proxy), MaxParallelIO: p, Trace: b.tracePath()}
	if *budget != "" {
		if cfg.MemoryBudget, err = scanner.ParseBytes(*budget); err != nil {
			log.Fatal(err)
		}
	}
	plan, err := scanner.Bind(ctx, cfg)
	if err != nil {
		return runResult{err: err}
	}
	s, err := plan.Start(ctx, fields)
	if err != nil {
		return runResult{err: err}
	}
	var nrows, sumX atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				batch, err := s.Next()
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				if batch == nil {
					return
				}
				x := batch.Column(0).(*array.Int64)
				var sum int64
				for i := range x.Len() {
					if x.IsValid(i) {
						sum += x.Value(i)
					}
				}
				sumX.Add(sum)
				nrows.Add(batch.Record.NumRows())
				batch.Consumed(batch.Record.NumRows())
				batch.Close()
			}
		})
	}
	wg.Wait()
	s.Close()
	r := measured(runResult{stats: s.Stats()}, proxy, cpu0)
	if e := firstErr.Load(); e != nil {
		r.err = *e
	} else if nrows.Load() != d.rows || sumX.Load() != d.sumX {
		r.err = fmt.Errorf("%d rows, sum(x) %d; want %d and %d", nrows.Load(), sumX.Load(), d.rows, d.sumX)
	}
	return r
}

func must(what string, r runResult) runResult {
	if r.err != nil {
		log.Fatalf("%s: %v", what, r.err)
	}
	return r
}

// table1: narrow and wide scans against the raw loop at each P, in
// -rounds interleaved rounds (raw, narrow, wide in each): the ratio of a
// round compares runs a few seconds apart, so load from elsewhere that
// changes between rounds cancels.
func (b *bench) table1(d *dataset, pd *peerData) {
	fmt.Printf("\n1. %d objects × ~%.0f KiB (IPC file and stream), catalog with lengths, proxy %v: scan MiB/s ÷ raw loop MiB/s, %d interleaved rounds (%s)\n",
		len(d.keys), float64(d.bytes)/float64(len(d.keys))/1024, *latency, *rounds, loadAvg())
	fmt.Printf("%4s %5s %9s %9s %7s %9s %7s %10s %10s %10s %9s %9s %9s\n", "P", "round", "raw MiB/s", "narrow", "ratio", "wide", "ratio",
		"req narrow", "req wide", "rt/chunk n", "inflight", "n", "w")
	cfg := faultproxy.Config{Latency: *latency}
	ps := strings.Split(*parallel, ",")
	for pi, f := range ps {
		var p int
		fmt.Sscan(f, &p)
		row := w2Row{p: p, peers: map[string][]runResult{}, hosts: map[string][]runResult{}}
		for round := range max(1, *rounds) {
			raw := must("raw", b.accounted(func() runResult { return b.raw(d, cfg, p, 8<<20) }))
			narrow := must("narrow", b.accounted(func() runResult { return b.scan(d, cfg, p, []int{0}) }))
			wide := must("wide", b.accounted(func() runResult { return b.scan(d, cfg, p, nil) }))
			nested := must("nested", b.nested(d, cfg, p))
			channel := must("channel", b.channel(d, cfg, p))
			row.raw = append(row.raw, raw)
			row.narrow = append(row.narrow, narrow)
			row.wide = append(row.wide, wide)
			row.nested = append(row.nested, nested)
			row.channel = append(row.channel, channel)
			row.load = append(row.load, loadAvg1())
			for _, h := range hostsOn() {
				for _, wide := range []bool{false, true} {
					key := h + map[bool]string{false: "-narrow", true: "-wide"}[wide]
					r := b.accounted(func() runResult { return b.hostScan(h, d, cfg, p, wide) })
					row.hosts[key] = append(row.hosts[key], r)
					if r.err != nil {
						fmt.Printf("       %-14s FAILED: %v\n", key, r.err)
						continue
					}
					fmt.Printf("       %-14s %9.1f MiB/s  %5.2f× the raw loop  %5d requests  in flight %5.1f  RSS %s, process %.2fs, cpu %.2fs, store cpu %.2fs, CPUs %.0f%% busy\n", key, r.mibps(d),
						raw.window.Seconds()/r.window.Seconds(), r.requests, r.inFlight, rssText(r.rss), r.wall.Seconds(), r.hostCPU.Seconds(), r.storeCPU.Seconds(), 100*r.busy)
				}
			}
			if pd != nil && pi == len(ps)-1 {
				// The peers at the highest P, in the same round: the
				// raw loop and remote_segments on the IPC-file copy
				// Polars reads, then each peer, narrow and wide.
				add := func(key string, r runResult) {
					row.peers[key] = append(row.peers[key], r)
					if r.err != nil {
						fmt.Printf("       %-14s FAILED: %v\n", key, r.err)
						return
					}
					fmt.Printf("       %-14s %9.1f MiB/s  %5.2f× the raw loop of the file copy  %5d requests  in flight %5.1f  RSS %s%s\n", key, r.mibps(pd.files),
						row.peers["raw-files"][round].window.Seconds()/r.window.Seconds(), r.requests, r.inFlight, rssText(r.rss), wallText(r))
				}
				add("raw-files", must("raw on the file copy", b.raw(pd.files, cfg, p, 8<<20)))
				add("rs-narrow", must("narrow on the file copy", b.scan(pd.files, cfg, p, []int{0})))
				add("rs-wide", must("wide on the file copy", b.scan(pd.files, cfg, p, nil)))
				for _, k := range peerKinds {
					if !peerOn(k.key) {
						continue
					}
					add(k.key+"-narrow", b.peer(k.key, pd, cfg, false, *peerTimeout))
					add(k.key+"-wide", b.peer(k.key, pd, cfg, true, *peerTimeout))
				}
			}
			fmt.Printf("%4d %5d %9.1f %9.1f %6.2f× %9.1f %6.2f× %10d %10d %10.2f %9.1f %9.1f %9.1f   cpu s raw %.2f n %.2f w %.2f, store %.2f %.2f %.2f, CPUs busy %.0f%% %.0f%% %.0f%%\n", p, round+1, raw.mibps(d),
				narrow.mibps(d), raw.window.Seconds()/narrow.window.Seconds(),
				wide.mibps(d), raw.window.Seconds()/wide.window.Seconds(),
				narrow.requests, wide.requests,
				float64(narrow.stats.RoundTrips)/float64(max(1, narrow.stats.Chunks)),
				raw.inFlight, narrow.inFlight, wide.inFlight, raw.cpu.Seconds(), narrow.cpu.Seconds(), wide.cpu.Seconds(),
				raw.storeCPU.Seconds(), narrow.storeCPU.Seconds(), wide.storeCPU.Seconds(),
				100*raw.busy, 100*narrow.busy, 100*wide.busy)
			fmt.Printf("           nested buffered(k) %.1f MiB/s = %.2f× the raw loop, in flight %.1f; byte-capped channel %.1f MiB/s = %.2f×, in flight %.1f\n",
				nested.mibps(d), raw.window.Seconds()/nested.window.Seconds(), nested.inFlight,
				channel.mibps(d), raw.window.Seconds()/channel.window.Seconds(), channel.inFlight)
			if os.Getenv("IOBENCH_VERBOSE") != "" {
				for _, r := range []runResult{narrow, wide} {
					fmt.Printf("      limit min %d, hedges %d, budget cap %d peak %d waits %d (%v), io_utilization %.2f, wall %v\n",
						r.stats.LimitMin, r.stats.HedgesIssued, r.stats.Budget.Cap, r.stats.Budget.Peak, r.stats.Budget.Waits,
						r.stats.Budget.TotalWait, r.stats.IOUtilization, r.stats.Wall)
				}
			}
		}
		n, nlo, nhi := row.ratios(row.narrow)
		w, wlo, whi := row.ratios(row.wide)
		fmt.Printf("%4d  all: narrow %.2f× (%.2f–%.2f), wide %.2f× (%.2f–%.2f): medians of the rounds' ratios (min–max)\n", p, n, nlo, nhi, w, wlo, whi)
		for _, h := range hostsOn() {
			if hn, hw, ok := row.hostRatios(h); ok {
				fmt.Printf("%4d  %s: narrow %s, wide %s\n", p, hostName(h), hn, hw)
			}
		}
		b.md.w2 = append(b.md.w2, row)
	}
	fmt.Println("requests: at the proxy, bind included; rt/chunk n: sequential request waves per chunk of the narrow scan (the first chunk is read at bind);")
	fmt.Println("inflight: time-averaged requests in flight at the proxy (raw, narrow, wide); cpu s: this process's CPU seconds (proxy + client + decode; versitygw apart); store: versitygw's CPU seconds; CPUs busy: the machine's CPU time not idle over the run, any process's (a machine near 100 % delays every request's client work)")
}

// table2: small objects, fault-free against the mix, interleaved: each mix
// run is compared with the fault-free run just before it, so that load
// from elsewhere on the machine hits both.
func (b *bench) table2(d *dataset, pd *peerData) {
	fmt.Printf("\n2. %d objects × ~%.1f KiB, one column, max_parallel_io 64, proxy %v: fault-free against 5 %% 503 + 1 %% resets + 1 %% 5-s stalls, interleaved (%s)\n",
		len(d.keys), float64(d.bytes)/float64(len(d.keys))/1024, *latency, loadAvg())
	var ratios []float64
	failures := 0
	for run := range *mixRuns {
		clean := must("fault-free", b.scan(d, faultproxy.Config{Latency: *latency}, 64, []int{0}))
		cfg := faultproxy.Config{Latency: *latency, SlowDown: 0.05, Reset: 0.01, Stall: 0.01, StallFor: 5 * time.Second, Seed: uint64(100 + run)}
		r := b.scan(d, cfg, 64, []int{0})
		if r.err != nil {
			failures++
			fmt.Printf("  run %2d: fault-free %v; mix FAILED: %v\n", run+1, clean.window.Round(time.Millisecond), r.err)
			b.md.w3 = append(b.md.w3, w3Run{clean: clean, mix: r, load: loadAvg1()})
			continue
		}
		ratio := r.window.Seconds() / clean.window.Seconds()
		ratios = append(ratios, ratio)
		b.md.w3 = append(b.md.w3, w3Run{clean: clean, mix: r, load: loadAvg1()})
		fmt.Printf("  run %2d: fault-free %v (%d requests, %.2f per object); mix %v = %.2f×; %d requests, faults %v; retries %d, hedges %d (won %d), throttled %d, limit min %d final %d\n",
			run+1, clean.window.Round(time.Millisecond), clean.requests, float64(clean.requests)/float64(len(d.keys)),
			r.window.Round(time.Millisecond), ratio, r.requests, r.proxy.Faults, r.stats.Retries, r.stats.HedgesIssued, r.stats.HedgesWon,
			r.stats.Throttled, r.stats.LimitMin, r.stats.LimitFinal)
	}
	if pd != nil {
		b.table2Peers(pd)
	}
	slices.Sort(ratios)
	if len(ratios) > 0 {
		fmt.Printf("mix: %d runs, %d failures; time ÷ fault-free: median %.2f×, worst %.2f×\n", *mixRuns, failures, ratios[len(ratios)/2], ratios[len(ratios)-1])
	}
}

// table3: overload.
func (b *bench) table3(d *dataset) {
	fmt.Printf("\n3. overload: a store that serves 16 GETs at once (503 SlowDown beyond), %d objects, every column (%s)\n", len(d.keys), loadAvg())
	cfg := faultproxy.Config{Latency: *latency, Capacity: 16}
	for round := range max(1, *rounds) { // interleaved: told 16, then asks 64, in each round
		told16 := must("told 16", b.scan(d, cfg, 16, nil))
		asks64 := must("asks 64", b.scan(d, cfg, 64, nil))
		b.md.overload = append(b.md.overload, [2]runResult{told16, asks64})
		for _, h := range hostsOn() {
			if h == rawProcHost {
				continue // no scan: nothing to throttle
			}
			ht16, ha64 := b.hostScan(h, d, cfg, 16, true), b.hostScan(h, d, cfg, 64, true)
			if b.md.hostOverload == nil {
				b.md.hostOverload = map[string][][2]runResult{}
			}
			b.md.hostOverload[h] = append(b.md.hostOverload[h], [2]runResult{ht16, ha64})
			if ht16.err != nil || ha64.err != nil {
				fmt.Printf("         %s: FAILED: %v %v\n", h, ht16.err, ha64.err)
				continue
			}
			fmt.Printf("         %s: told 16 %v, asks 64 %v = %.2f× told 16; %d requests, %d SlowDowns (%.1f %%)\n", h,
				ht16.window.Round(time.Millisecond), ha64.window.Round(time.Millisecond), ha64.window.Seconds()/ht16.window.Seconds(),
				ha64.requests, ha64.proxy.OverCapacity, 100*float64(ha64.proxy.OverCapacity)/float64(max(1, ha64.requests)))
		}
		fmt.Printf("round %d: told 16: %v, %d requests, %d SlowDowns\n", round+1, told16.window.Round(time.Millisecond), told16.requests, told16.proxy.OverCapacity)
		fmt.Printf("         asks 64: %v = %.2f× told 16; %d requests, %d SlowDowns (%.1f %%); limit min %d final %d\n",
			asks64.window.Round(time.Millisecond), asks64.window.Seconds()/told16.window.Seconds(), asks64.requests,
			asks64.proxy.OverCapacity, 100*float64(asks64.proxy.OverCapacity)/float64(asks64.requests), asks64.stats.LimitMin, asks64.stats.LimitFinal)
	}
}

// table4: large objects.
func (b *bench) table4(d *dataset) {
	fmt.Printf("\n4. %d objects × ~%.0f MiB, request_size 8 MiB, max_parallel_io 16, proxy %v (%s)\n",
		len(d.keys), float64(d.bytes)/float64(len(d.keys))/(1<<20), *latency, loadAvg())
	cfg := faultproxy.Config{Latency: *latency}
	l := &largeResult{d: d}
	for round := range max(1, *rounds) { // interleaved: raw, wide, narrow in each round
		raw := must("raw", b.raw(d, cfg, 16, 8<<20))
		wide := must("wide", b.scan(d, cfg, 16, nil))
		narrow := must("narrow", b.scan(d, cfg, 16, []int{0}))
		l.raw, l.wide, l.narrow = append(l.raw, raw), append(l.wide, wide), append(l.narrow, narrow)
		fmt.Printf("round %d: raw loop of 8 MiB parts: %.1f MiB/s, %d requests\n", round+1, raw.mibps(d), raw.requests)
		fmt.Printf("         wide scan:   %.1f MiB/s = %.2f× raw; %d requests\n", wide.mibps(d), raw.window.Seconds()/wide.window.Seconds(), wide.requests)
		fmt.Printf("         narrow scan: %v (%.2f× the raw loop's time); %d requests, %d chunks projected, %.1f MiB not fetched, %.2f round trips per chunk\n",
			narrow.window.Round(time.Millisecond), raw.window.Seconds()/narrow.window.Seconds(), narrow.requests, narrow.stats.ProjectedChunks,
			float64(narrow.stats.ProjectionSaved)/(1<<20), float64(narrow.stats.RoundTrips)/float64(max(1, narrow.stats.Chunks)))
	}
	b.md.large = l
}

func loadAvg() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "uptime: " + err.Error()
	}
	s := strings.TrimSpace(string(out))
	if i := strings.Index(s, "load average"); i >= 0 {
		return s[i:]
	}
	return s
}
