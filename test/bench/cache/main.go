// Command cache measures the local cache of remote chunks (cache_dir) in
// one run, on versitygw behind test/faultproxy (30 ms per request):
//
//	go run ./test/bench/cache [-out build/bench] [-reps 3] [-md build/bench/cache.md]
//
// For W2 (1,024 objects of ~120 KiB) and W1 (16 large chunks; -w1-mib sets
// its size, 969 in BENCHMARKS.md's W1) it times, as medians of -reps
// interleaved runs of the scanner package's pipeline at max_parallel_io 64:
//
//   - the scan without a cache, and the cold scan filling an empty cache;
//   - the warm scan of a catalog carrying `version` (no request to the
//     store), against the same chunks as local files; and the same scan
//     as the first of a new scanner.Process, which sums each entry it
//     reads in place (a process remembers the entries it checked);
//   - the warm scan with the default checks (LIST pages of the objects'
//     prefix, a HEAD for each object they do not show), and one HEAD per
//     object alone on a scheduler of 64 slots (what such checks cost on
//     this machine, where the goal counts the proxy's latency only);
//   - the warm scan of the same objects named by a glob, whose listing at
//     bind gave their versions (no check);
//   - writing the same bytes from memory to files, just after the last
//     copy was deleted and diskPause after it: what the cold scan's fills
//     write, and what growing the page cache costs on this machine;
//
// counting the proxy's GETs, HEADs and LISTs and this process's CPU time per scan
// (user and system: the store's server is another process; less swayed
// than wall time by other load on a shared machine), and, with a cache of -hot-mib, a hot
// set read twice, then a pass over twice the cache's size of other objects,
// then the hot set again: the share of it still resident.
//
// The goal lines say met or not met; the figures are ratios within the run.
// -scanprofile P writes a CPU profile of each timed scan to P.<kind>.<n>
// (kinds: none, cold, coldV, warmV, warmV1, warmC, warmG, local): `go tool pprof` adds
// up the files of one kind, and -diff_base compares two kinds.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner"
	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/faultproxy"
	"github.com/remote-segments/remote_segments/test/s3server"
)

var (
	outDir   = flag.String("out", "build/bench", "working directory (datasets, caches)")
	mdPath   = flag.String("md", "", "also write the section (markdown) to this file")
	reps     = flag.Int("reps", 3, "runs of each measurement (medians)")
	latency  = flag.Duration("latency", 30*time.Millisecond, "the proxy's latency per request")
	w1MiB    = flag.Int("w1-mib", 240, "size of the W1 dataset in MiB (BENCHMARKS.md's W1 is 969)")
	w2Segs   = flag.Int("w2-segments", 128, "segments of 8 objects in the W2 dataset (128: 1,024 objects)")
	skipW1   = flag.Bool("no-w1", false, "skip W1")
	skipW2   = flag.Bool("no-w2", false, "skip W2 and the hot set")
	cpuProf  = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	scanProf = flag.String("scanprofile", "", "write a CPU profile of each timed scan to a file named by this prefix, the scan's kind and its number (not with -cpuprofile)")
)

// dataset is one workload: its objects on S3 and as local files.
type dataset struct {
	name  string
	keys  []string
	local []string
	sizes []int64
	bytes int64
	rows  int64
	sumX  int64
}

// proxyCount counts what reaches the store through the proxy.
type proxyCount struct{ gets, heads, lists atomic.Int64 }

type bench struct {
	srv   *s3server.Server
	proxy *faultproxy.Proxy
	count proxyCount
	proc  *scanner.Process
	md    strings.Builder
	met   []string
	// dropped counts the fills the cold scans dropped (checkFilled).
	dropped int64
	// kind names the next timed scan (workload), for -scanprofile;
	// profiled counts the profiles written.
	kind     string
	profiled int
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	root, err := filepath.Abs(filepath.Join(*outDir, "cache"))
	if err != nil {
		log.Fatal(err)
	}
	os.RemoveAll(root)
	defer os.RemoveAll(root)
	ctx := context.Background()
	srv, err := s3server.Start(ctx, filepath.Join(root, "s3"), "bench")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	b := &bench{srv: srv, proc: scanner.NewProcess(0)}
	defer b.proc.Close()
	b.proxy, err = faultproxy.New(srv.Endpoint, faultproxy.Config{Latency: *latency, Rule: func(r *http.Request, _ int64) (faultproxy.Fault, bool) {
		switch r.Method {
		case http.MethodGet:
			if r.URL.Query().Get("list-type") != "" {
				b.count.lists.Add(1)
				break
			}
			b.count.gets.Add(1)
		case http.MethodHead:
			b.count.heads.Add(1)
		}
		return faultproxy.Fault{}, true
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer b.proxy.Close()

	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	fmt.Fprintf(&b.md, "## Local cache (cache_dir)\n\nMeasured %s at commit %s by `go run ./test/bench/cache` (part of `make bench`). "+
		"versitygw behind the fault proxy (%v per request), max_parallel_io 64, medians of %d runs; "+
		"the scanner's pipeline in one process. Speeds are the objects' bytes over the scan's wall time.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), strings.TrimSpace(string(commit)), *latency, *reps)
	if *skipW2 {
		*w2Segs = 1
	}
	w2 := b.prepare(root, "w2", datagen.Spec{Segments: *w2Segs, ChunksPerSegment: 8, RowsPerChunk: 1600, BatchesPerChunk: 1, Seed: 8})
	if !*skipW2 {
		b.workload(root, w2)
		b.hotSet(root, w2)
	}
	if !*skipW1 {
		rowsPerChunk := *w1MiB << 20 / 16 / 38 // about 38 bytes a row
		w1 := b.prepare(root, "w1", datagen.Spec{Segments: 16, ChunksPerSegment: 1, RowsPerChunk: rowsPerChunk, BatchesPerChunk: 4, Seed: 10})
		b.workload(root, w1)
	}
	// As every section BENCHMARKS.md gathers (test/bench/peers,
	// readSections): the goal lines, the marker, then the section.
	goals := strings.Join(b.met, "\n") + "\n"
	fmt.Print(b.md.String() + "\n" + goals)
	if *mdPath != "" {
		if err := os.WriteFile(*mdPath, []byte(goals+"<!-- sections -->\n"+b.md.String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// prepare writes a dataset, keeps its files and uploads them.
func (b *bench) prepare(root, name string, spec datagen.Spec) *dataset {
	dir := filepath.Join(root, name)
	stats, err := datagen.Write(dir, spec)
	if err != nil {
		log.Fatal(err)
	}
	d := &dataset{name: name}
	for _, s := range stats {
		d.rows += s.Rows
		d.sumX += s.SumX
	}
	filepath.WalkDir(filepath.Join(dir, "chunks"), func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			d.local = append(d.local, p)
		}
		return err
	})
	slices.Sort(d.local)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, p := range d.local {
		data, err := os.ReadFile(p)
		if err != nil {
			log.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		key := filepath.ToSlash(rel)
		d.keys = append(d.keys, key)
		d.sizes = append(d.sizes, int64(len(data)))
		d.bytes += int64(len(data))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := b.srv.PutObject(context.Background(), "bench", key, data); err != nil {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()
	fmt.Printf("dataset %s: %d objects, %.1f MiB, %d rows\n", name, len(d.keys), float64(d.bytes)/(1<<20), d.rows)
	return d
}

// globVersion, as scan's version, scans by a glob.
const globVersion = "\x00glob"

// run is one timed scan.
type run struct {
	wall, cpu          time.Duration // cpu: this process's, user and system
	gets, heads, lists int64
	hits, chunks       int64
}

// scan scans objects [lo, hi) of d: from S3 through the proxy (local
// false) or from the local files, with cacheDir ("" none) and, if version
// is not "", a catalog version on every row; version globVersion scans
// all of d's objects by a glob instead of a catalog. The proxy is the same for
// every scan: the cache keys objects by their endpoint too.
func (b *bench) scan(d *dataset, lo, hi int, local bool, cacheDir string, cacheSize int64, version string) run {
	gets0, heads0, lists0 := b.count.gets.Load(), b.count.heads.Load(), b.count.lists.Load()
	rows := make([]scanner.Row, 0, hi-lo)
	var want int64 = -1
	if lo == 0 && hi == len(d.keys) {
		want = d.sumX
	}
	for i := lo; i < hi; i++ {
		r := scanner.Row{"url": "s3://bench/" + d.keys[i], "length": d.sizes[i]}
		if local {
			r["url"] = d.local[i]
		}
		if version != "" && version != globVersion {
			r["version"] = version
		}
		rows = append(rows, r)
	}
	cfg := scanner.Config{Process: b.proc, Rows: rows, MaxParallelIO: 64, CacheDir: cacheDir, CacheSize: cacheSize,
		Store: store.Options{S3Endpoint: b.proxy.URL, S3AccessKeyID: b.srv.AccessKey, S3SecretAccessKey: b.srv.SecretKey, S3Region: b.srv.Region}}
	if local {
		cfg.MaxParallelIO = 0 // the local default
	}
	if version == globVersion {
		cfg.Rows, cfg.Source = nil, "s3://bench/"+d.name+"/chunks/**"
	}
	stop := b.profileScan()
	defer stop()
	start, cpu0 := time.Now(), cpuTime()
	ctx := context.Background()
	plan, err := scanner.Bind(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	s, err := plan.Start(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	var sumX atomic.Int64
	var wg sync.WaitGroup
	for range 2 { // two consumers, as DuckDB's threads
		wg.Go(func() { sumX.Add(consume(s)) })
	}
	wg.Wait()
	s.Close()
	wall, cpu := time.Since(start), cpuTime()-cpu0
	if want >= 0 && sumX.Load() != want {
		log.Fatalf("%s: sum(x) %d, want %d", d.name, sumX.Load(), want)
	}
	st := s.Stats()
	return run{wall: wall, cpu: cpu, gets: b.count.gets.Load() - gets0, heads: b.count.heads.Load() - heads0, lists: b.count.lists.Load() - lists0,
		hits: st.CacheHits, chunks: st.Chunks}
}

// settlePause is how long the warm scans wait after the fill (workload).
const settlePause = 250 * time.Millisecond

// diskPause is how long the second disk reference waits after deleting
// the last copy before it writes (diskWrite).
const diskPause = 3 * time.Second

// cpuTime is the CPU time this process has used, user and system: what
// a scan costs the machine beside its wall time, less swayed by other
// load on it (the store's server is another process).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// consume takes batches of s until its end and returns their sum of x;
// an error ends the program.
func consume(s *scanner.Scan) int64 {
	var total int64
	for {
		batch, err := s.Next()
		if err != nil {
			log.Fatal(err)
		}
		if batch == nil {
			return total
		}
		x := batch.Column(0).(*array.Int64)
		for i := range x.Len() {
			if x.IsValid(i) {
				total += x.Value(i)
			}
		}
		batch.Consumed(batch.Record.NumRows())
		batch.Close()
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// goal records a goal line.
func (b *bench) goal(name string, ok bool, detail string) {
	verdict := "not met"
	if ok {
		verdict = "met"
	}
	b.met = append(b.met, fmt.Sprintf("- **%s: %s** (%s)", name, verdict, detail))
}

// workload measures d: no cache, cold, warm with versions, warm with
// checks, local files, interleaved.
func (b *bench) workload(root string, d *dataset) {
	n := len(d.keys)
	var none, cold, coldV, warmV, warmV1, warmC, warmG, local, heads []time.Duration
	cpu := map[string][]time.Duration{}
	// scan(kind).scan makes a timed scan of that kind: -scanprofile
	// names its profile so.
	scan := func(kind string) *bench { b.kind = kind; return b }
	timed := func(kind string, r run) time.Duration {
		cpu[kind] = append(cpu[kind], r.cpu)
		return r.wall
	}
	var lastV, lastC, lastG run
	warmDir := filepath.Join(root, d.name+"-warm")
	warmVDir := filepath.Join(root, d.name+"-warmv")
	// Fill the warm caches: again while a scan still fetches (a fill
	// that found 64 MiB pending was dropped), so that the timed warm
	// scans read every chunk from the cache.
	for _, v := range []struct{ dir, version string }{{warmDir, ""}, {warmVDir, "v1"}} {
		for try := 0; b.scan(d, 0, n, false, v.dir, 0, v.version).gets > 0; try++ {
			if try == 5 {
				log.Fatalf("%s: the cache in %s is not filled after %d scans", d.name, v.dir, try+1)
			}
		}
	}
	// A later query comes a moment after the fill: a process remembers the
	// entries it checked only if their packs changed at least 100 ms
	// before the read (iosched/cache, checked.go), so the first warm scan
	// that follows the fill at once sums them all and remembers none.
	// Measured so, the repeat scans' median mixes scans that sum with
	// scans that do not, by how the runs fall. The first scan of a new
	// process, which sums every entry, has a row of its own.
	time.Sleep(settlePause)
	// The warm scans and the local one first and side by side: a cold
	// scan's writes are still going to the disk as the next scan runs.
	for rep := range *reps {
		local = append(local, timed("local", scan("local").scan(d, 0, n, true, "", 0, "")))
		lastV = scan("warmV").scan(d, 0, n, false, warmVDir, 0, "v1")
		warmV = append(warmV, timed("warmV", lastV))
		// The same in a process of its own, as a CLI started for the
		// query: the first read of each entry in a process sums it.
		shared := b.proc
		b.proc = scanner.NewProcess(0)
		warmV1 = append(warmV1, timed("warmV1", scan("warmV1").scan(d, 0, n, false, warmVDir, 0, "v1")))
		b.proc.Close()
		b.proc = shared
		lastC = scan("warmC").scan(d, 0, n, false, warmDir, 0, "")
		warmC = append(warmC, timed("warmC", lastC))
		lastG = scan("warmG").scan(d, 0, n, false, warmDir, 0, globVersion)
		warmG = append(warmG, timed("warmG", lastG))
		none = append(none, timed("none", scan("none").scan(d, 0, n, false, "", 0, "")))
		heads = append(heads, b.headsAlone(d))
		// A directory of its own for each cold scan: the process keeps the
		// caches it opened, and a fill into a directory removed under it
		// (the previous cold scan's) fails instead of writing.
		coldDir := filepath.Join(root, fmt.Sprintf("%s-cold-%d", d.name, rep))
		coldVDir := filepath.Join(root, fmt.Sprintf("%s-coldv-%d", d.name, rep))
		if rep%2 == 0 { // alternate which cold scan comes first
			coldV = append(coldV, timed("coldV", scan("coldV").scan(d, 0, n, false, coldVDir, 0, "v1")))
		}
		cold = append(cold, timed("cold", scan("cold").scan(d, 0, n, false, coldDir, 0, "")))
		if rep%2 == 1 {
			coldV = append(coldV, timed("coldV", scan("coldV").scan(d, 0, n, false, coldVDir, 0, "v1")))
		}
		b.checkFilled(coldDir, coldVDir)
		os.RemoveAll(coldDir)
		os.RemoveAll(coldVDir)
	}
	objects := readObjects(d)
	diskWalls, diskCPUs := diskWrite(root, d.name, objects, 0)
	pausedWalls, pausedCPUs := diskWrite(root, d.name, objects, diskPause)
	mib := float64(d.bytes) / (1 << 20)
	speed := func(t time.Duration) float64 { return mib / t.Seconds() }
	mNone, mCold, mColdV, mV, mV1, mC, mG, mLocal := median(none), median(cold), median(coldV), median(warmV), median(warmV1), median(warmC), median(warmG), median(local)
	c := func(kind string) time.Duration { return median(cpu[kind]).Round(time.Millisecond) }
	fmt.Fprintf(&b.md, "### %s: %d objects, %.1f MiB\n\n| scan | median wall | MiB/s | GETs | HEADs | LISTs | CPU (this process) |\n|---|---|---|---|---|---|---|\n", strings.ToUpper(d.name), n, mib)
	fmt.Fprintf(&b.md, "| no cache | %v | %.0f | | | | %v |\n", mNone.Round(time.Millisecond), speed(mNone), c("none"))
	fmt.Fprintf(&b.md, "| cold (filling an empty cache), default checks | %v | %.0f | | | | %v |\n", mCold.Round(time.Millisecond), speed(mCold), c("cold"))
	fmt.Fprintf(&b.md, "| cold (filling an empty cache), catalog `version` | %v | %.0f | | | | %v |\n", mColdV.Round(time.Millisecond), speed(mColdV), c("coldV"))
	row := func(name string, m time.Duration, r run, kind string) {
		fmt.Fprintf(&b.md, "| %s | %v | %.0f | %d | %d | %d | %v |\n", name, m.Round(time.Millisecond), speed(m), r.gets, r.heads, r.lists, c(kind))
	}
	row("warm, catalog `version`", mV, lastV, "warmV")
	fmt.Fprintf(&b.md, "| warm, catalog `version`, the first scan of a new scanner.Process (each entry larger than 1 MiB summed: the process has not checked it yet) | %v | %.0f | | | | %v |\n", mV1.Round(time.Millisecond), speed(mV1), c("warmV1"))
	row("warm, default checks", mC, lastC, "warmC")
	row("warm, glob (the versions its listing gave)", mG, lastG, "warmG")
	fmt.Fprintf(&b.md, "| the same chunks as local files | %v | %.0f | | | | %v |\n", mLocal.Round(time.Millisecond), speed(mLocal), c("local"))
	fmt.Fprintf(&b.md, "| (reference: one HEAD per object alone, on a scheduler of 64 slots) | %v | | | %d | | |\n", median(heads).Round(time.Millisecond), n)
	spread := func(ds []time.Duration) string {
		return fmt.Sprintf("%v (%v–%v)", median(ds).Round(time.Millisecond), slices.Min(ds).Round(time.Millisecond), slices.Max(ds).Round(time.Millisecond))
	}
	fmt.Fprintf(&b.md, "| (reference: writing the same bytes, already in memory, to the cache's disk, one file per object, no sync, just after the last copy was deleted; median (min–max) of %d) | %s | %.0f | | | | %s |\n",
		len(diskWalls), spread(diskWalls), speed(median(diskWalls)), spread(diskCPUs))
	fmt.Fprintf(&b.md, "| (the same, %v after the last copy was deleted, as a cold scan meets it) | %s | %.0f | | | | %s |\n\n",
		diskPause, spread(pausedWalls), speed(median(pausedWalls)), spread(pausedCPUs))
	up := strings.ToUpper(d.name)
	b.goal(up+" warm (version) ≥ 0.9× local files, 0 requests", speed(mV) >= 0.9*speed(mLocal) && lastV.gets+lastV.heads == 0,
		fmt.Sprintf("%.2f× local, %d requests; the first scan of a new process %.2f×", speed(mV)/speed(mLocal), lastV.gets+lastV.heads, speed(mV1)/speed(mLocal)))
	checks := time.Duration((n+63)/64)*(*latency) + mLocal // whole waves of 64 HEADs
	b.goal(up+" warm (default checks): 0 body bytes, ≤ checks' round trips + local scan", lastC.gets == 0 && mC <= checks,
		fmt.Sprintf("%d GETs, %v against %v", lastC.gets, mC.Round(time.Millisecond), checks.Round(time.Millisecond)))
	b.goal(up+" cold ≤ 1.05× no cache", float64(max(mCold, mColdV)) <= 1.05*float64(mNone),
		fmt.Sprintf("%.2f× with the default checks, %.2f× with a catalog version; %d fills dropped", float64(mCold)/float64(mNone), float64(mColdV)/float64(mNone), b.dropped))
	b.dropped = 0
}

// profileScan profiles the scan about to run, if it is one of workload's
// timed scans and -scanprofile is set, until the returned function is
// called: into the file named by -scanprofile, the scan's kind and its
// number (go tool pprof adds up the files of a kind given together).
func (b *bench) profileScan() (stop func()) {
	kind := b.kind
	b.kind = ""
	if *scanProf == "" || kind == "" {
		return func() {}
	}
	b.profiled++
	f, err := os.Create(fmt.Sprintf("%s.%s.%d", *scanProf, kind, b.profiled))
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// headsAlone times a version check (HEAD) of each of d's objects through
// a scheduler of 64 slots, each a batch of its own as a scan queues them,
// and nothing else: what the default checks cost on this machine, which
// the goal's round trips (objects ÷ 64 × latency) leave out.
func (b *bench) headsAlone(d *dataset) time.Duration {
	opts := store.Options{S3Endpoint: b.proxy.URL, S3AccessKeyID: b.srv.AccessKey, S3SecretAccessKey: b.srv.SecretKey,
		S3Region: b.srv.Region, MaxConns: 64 + 64/8 + 1}
	st, _, err := store.Open("s3://bench/"+d.keys[0], opts)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	sched := iosched.New(iosched.Options{Parallelism: 64})
	defer sched.Close()
	ctx := context.Background()
	start := time.Now()
	batches := make([]*iosched.Batch, len(d.keys))
	for i, key := range d.keys {
		name, err := store.Name("s3://bench/" + key)
		if err != nil {
			log.Fatal(err)
		}
		batches[i] = sched.Submit(ctx, []iosched.Request{{Store: st, Name: name, Priority: iosched.Priority{Seq: int64(i)}, Version: func(string) {}}})
	}
	for _, bt := range batches {
		if _, err := bt.Wait(); err != nil {
			log.Fatal(err)
		}
	}
	return time.Since(start)
}

// checkFilled ends the program if a cold scan filling one of dirs failed
// to store what it read (a cold scan whose fills fail costs less than one
// that writes, and would flatter the cold ratio), and counts the fills
// dropped (the queue full: the disk slower than the scan).
func (b *bench) checkFilled(dirs ...string) {
	for _, st := range b.proc.CacheStats() {
		for _, dir := range dirs {
			if abs, _ := filepath.Abs(dir); st.Dir == abs {
				if st.Errors > 0 || st.Fills == 0 {
					log.Fatalf("cold scan into %s: %d fills, %d failed", dir, st.Fills, st.Errors)
				}
				b.dropped += st.Dropped
			}
		}
	}
}

// readObjects returns the bytes of d's objects, from its local files.
func readObjects(d *dataset) [][]byte {
	data := make([][]byte, len(d.local))
	for i, p := range d.local {
		var err error
		if data[i], err = os.ReadFile(p); err != nil {
			log.Fatal(err)
		}
	}
	return data
}

// diskWrite times writing data (a dataset's objects, in memory) as one
// file per object under root, -reps times, each run pause after the last
// one's files were deleted: what a cold scan's fills write (without their
// checksums and packs), the reference for the cold scan's cost. It
// returns each run's wall time and this process's CPU time. The pause is
// a finding of its own: on a virtual machine that gives freed memory back
// to its host, a page cache that grows into pages freed a few seconds
// before (what a cold scan meets: the bench deletes the last cold cache
// seconds before) may cost several times what it costs at once, and the
// same write varies that much from run to run.
func diskWrite(root, name string, data [][]byte, pause time.Duration) (walls, cpus []time.Duration) {
	for range *reps {
		dir := filepath.Join(root, name+"-disk")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		time.Sleep(pause)
		start, cpu0 := time.Now(), cpuTime()
		for i, bytes := range data {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), bytes, 0o644); err != nil {
				log.Fatal(err)
			}
		}
		walls, cpus = append(walls, time.Since(start)), append(cpus, cpuTime()-cpu0)
		if err := os.RemoveAll(dir); err != nil {
			log.Fatal(err)
		}
	}
	return walls, cpus
}

// hotSet fills a cache of a quarter of d with a hot set of half its size
// (read twice), passes over twice the cache's size of other objects once,
// and reports how much of the hot set is still resident.
func (b *bench) hotSet(root string, d *dataset) {
	size := d.bytes / 4
	dir := filepath.Join(root, d.name+"-hot")
	hot := 0
	var hotBytes int64
	for hotBytes < size/2 {
		hotBytes += d.sizes[hot]
		hot++
	}
	passEnd := hot
	for pass := int64(0); pass < 2*size && passEnd < len(d.keys); passEnd++ {
		pass += d.sizes[passEnd]
	}
	for range 2 {
		b.scan(d, 0, hot, false, dir, size, "v1")
	}
	b.scan(d, hot, passEnd, false, dir, size, "v1")
	r := b.scan(d, 0, hot, false, dir, size, "v1")
	share := float64(r.hits) / float64(hot)
	fmt.Fprintf(&b.md, "### Admission: cache_size %.1f MiB, hot set %d objects (%.1f MiB) read twice, then %d other objects (%.1f× cache_size) once\n\n"+
		"The hot set's share still resident: %.0f %%.\n\n", float64(size)/(1<<20), hot, float64(hotBytes)/(1<<20), passEnd-hot,
		float64(sumSizes(d.sizes[hot:passEnd]))/float64(size), 100*share)
	b.goal("a pass over 2× cache_size leaves the hot set ≥ 90 % resident", share >= 0.9, fmt.Sprintf("%.0f %%", 100*share))
}

func sumSizes(s []int64) int64 {
	var n int64
	for _, x := range s {
		n += x
	}
	return n
}
