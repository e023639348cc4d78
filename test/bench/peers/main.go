// Command peers runs the W1 comparison of BENCHMARKS.md: ~1 GiB in 16 large
// Arrow IPC chunks on versitygw (127.0.0.1), summed over every column by
// remote_segments in the DuckDB CLI, by the raw ranged-GET loop and the two
// designs remote_segments replaces (in Go, behind the project's S3 store), by
// DuckDB on local Parquet and on a native table, and by the peer engines
// Polars and LanceDB on the same server:
//
//	go build -o build/peers/bench-peers ./test/bench/peers && build/peers/bench-peers
//
// Data (IPC, Parquet, the native table, the Lance dataset, the server's
// files) is made once and cached under -work; the peers are installed from
// test/bench/peers/package-lock.json with npm ci into -work/node. Every
// contender runs as its own process under /usr/bin/time -v (peak RSS), prints
// its answer, which must equal the answer computed while writing the data,
// and its scan time. Runs are interleaved; the report shows medians and the
// spread, and writes BENCHMARKS.md and an SVG.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/remote-segments/remote_segments/test/s3server"
)

type config struct {
	work, duckdb, ext, report, svg, only string
	rows                                 int64
	chunks, runs, p, segments            int
	capBytes                             int64
	label, target                        string
	sections                             string // markdown files of the other workloads (see sections.go)
}

func main() {
	var c config
	var cc childConfig
	var capStr string
	var installOnly bool
	flag.StringVar(&c.work, "work", "build/peers", "where the data, the server's files and the peers' install go")
	flag.StringVar(&c.duckdb, "duckdb", ".tools/bin/duckdb", "DuckDB CLI")
	flag.StringVar(&c.ext, "ext", "build/release/remote_segments.duckdb_extension", "the extension")
	flag.StringVar(&c.report, "report", "BENCHMARKS.md", "the report to write")
	flag.StringVar(&c.svg, "svg", "test/bench/peers_w1.svg", "the bar picture to write")
	flag.StringVar(&c.only, "only", "", "comma-separated contender keys to run (default all; the report needs all)")
	flag.StringVar(&c.label, "label", "full", "what kind of run this is, for the report (full, quick)")
	flag.StringVar(&c.target, "target", "bench-peers", "the make target that runs this, for the report")
	flag.StringVar(&c.sections, "sections", "build/bench/io.md,build/bench/sweep.md,build/bench/scale.md,build/bench/cache.md,test/bench/figures.md", "comma-separated markdown files of W2-W4, the scale and the cache sections written by test/bench/io, test/bench/scan, test/bench/scale and test/bench/cache -md, and the hand-written figures behind comments (missing files are named as missing)")
	flag.Int64Var(&c.rows, "rows", 4_000_000, "rows of the W1 dataset")
	flag.IntVar(&c.chunks, "chunks", 16, "chunks (IPC files) of the W1 dataset")
	flag.IntVar(&c.runs, "runs", 3, "interleaved runs of every contender")
	flag.IntVar(&c.p, "p", 64, "requests in flight of the Go contenders (remote_segments' default max_parallel_io)")
	flag.IntVar(&c.segments, "segments", 4, "segments the chunks are grouped into (the nested design's outer level)")
	flag.StringVar(&capStr, "cap", "64MiB", "the byte cap of the channel design")
	flag.BoolVar(&installOnly, "install", false, "only install the peers (npm ci into -work/node unless there from the same lock file) and exit: test/bench/io runs them on W2 and W3")
	flag.StringVar(&cc.name, "child", "", "internal: run one Go contender (raw, channel, nested)")
	flag.StringVar(&cc.prefix, "prefix", "", "internal: s3:// prefix of the IPC chunks")
	flag.StringVar(&cc.endpoint, "endpoint", "", "internal: S3 endpoint")
	flag.Parse()
	log.SetFlags(0)
	var err error
	if c.capBytes, err = parseSize(capStr); err != nil {
		log.Fatal(err)
	}
	if cc.name != "" {
		cc.p, cc.capBytes, cc.segments = c.p, c.capBytes, c.segments
		if err := runChild(cc); err != nil {
			log.Fatalf("%s: %v", cc.name, err)
		}
		return
	}
	if installOnly {
		scripts, _ := filepath.Abs("test/bench/peers")
		work, _ := filepath.Abs(c.work)
		n, err := installPeers(work, scripts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("peers installed in %s\n", n.dir)
		return
	}
	if err := run(c); err != nil {
		log.Fatal(err)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(s, u.suffix) {
			mult, s = u.mult, strings.TrimSuffix(s, u.suffix)
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// nodeEnv is the peers' private install: node_modules under dir.
type nodeEnv struct {
	dir, scripts string
	installTime  time.Duration // zero when the install was already there
}

// installPeers runs npm ci into work/node unless node_modules was installed
// from the same package-lock.json. Nothing is installed system-wide.
func installPeers(work, scripts string) (*nodeEnv, error) {
	n := &nodeEnv{dir: filepath.Join(work, "node"), scripts: scripts}
	lock, err := os.ReadFile(filepath.Join(scripts, "package-lock.json"))
	if err != nil {
		return nil, err
	}
	pkg, err := os.ReadFile(filepath.Join(scripts, "package.json"))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append(pkg, lock...))
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(n.dir, "node_modules", ".bench-peers-stamp")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return n, nil
	}
	logf("installing the peers with npm ci into %s", n.dir)
	start := time.Now()
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "package.json"), pkg, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "package-lock.json"), lock, 0o644); err != nil {
		return nil, err
	}
	// No install scripts: every package needed ships prebuilt binaries. No
	// optional dependencies: package.json lists the linux-x64 binaries, and
	// the rest (LanceDB's embedding helpers, other platforms) is not needed.
	cmd := exec.Command("npm", "ci", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("npm ci in %s: %w", n.dir, err)
	}
	n.installTime = time.Since(start)
	return n, os.WriteFile(stamp, []byte(want), 0o644)
}

// command runs one of the scripts with the private node_modules.
func (n *nodeEnv) command(script string, args ...string) *exec.Cmd {
	cmd := exec.Command("node", append([]string{filepath.Join(n.scripts, script)}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(n.dir, "node_modules"))
	return cmd
}

// version returns the version in node_modules/<pkg>/package.json.
func (n *nodeEnv) version(pkg string) string {
	b, err := os.ReadFile(filepath.Join(n.dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return "?"
	}
	m := regexp.MustCompile(`"version"\s*:\s*"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		return "?"
	}
	return string(m[1])
}

// contender is one process to time: argv (run under /usr/bin/time -v) and
// extra environment.
type contender struct {
	key, name, reads, group string
	argv                    []string
	env                     []string
	checks                  bool // prints the answer (all but the raw loop, which prints bytes)
}

type measurement struct {
	scan    time.Duration // what the contender timed around its scan
	process time.Duration // the process's wall time
	rss     int64         // bytes
	cpu     time.Duration // user + system time of the process
	faults  int64         // minor and major page faults of the process
	budget  [2]int64      // remote_segments' budget cap and peak, from remote_segments_stats()
	wire    int64         // the raw loop's bytes
	load    float64       // 1-minute load average just before the run
}

func run(c config) error {
	for _, bin := range []string{"/usr/bin/time", "node", "npm", c.duckdb} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s is needed: %v", bin, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	scripts, _ := filepath.Abs("test/bench/peers")
	work, _ := filepath.Abs(c.work)
	ext, _ := filepath.Abs(c.ext)
	started := time.Now().UTC()
	load0 := loadAvg()

	node, err := installPeers(work, scripts)
	if err != nil {
		return err
	}
	t0 := time.Now()
	d, err := makeDataset(work, c.rows, c.chunks)
	if err != nil {
		return err
	}
	if err := makeLocalCopies(d, c.duckdb, ext); err != nil {
		return err
	}
	ctx := context.Background()
	srv, err := s3server.Start(ctx, filepath.Join(work, "s3"))
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := upload(ctx, srv, d, node); err != nil {
		return err
	}
	prepTime := time.Since(t0)
	if err := warm(filepath.Join(srv.Dir, bucket, d.Name)); err != nil {
		return err
	}
	if err := warm(d.dir); err != nil {
		return err
	}
	logf("dataset %s: %d rows, IPC %s, Parquet %s, Lance %s; server %s",
		d.Name, d.Rows, mib(d.IPCBytes), mib(d.parquetSz), mib(d.lanceSz), srv.Endpoint)

	cs := contenders(c, d, srv, self, ext, node)
	if c.only != "" {
		keep := strings.Split(c.only, ",")
		cs = slices.DeleteFunc(cs, func(x contender) bool { return !slices.Contains(keep, x.key) })
	}
	results := make(map[string][]measurement)
	for r := range c.runs {
		// Interleaved, each round starting one contender later, so that
		// load from elsewhere and the order itself hit every contender.
		for i := range cs {
			ct := cs[(i+r)%len(cs)]
			m, err := measure(ct, d)
			if err != nil {
				return fmt.Errorf("%s (round %d): %w", ct.name, r+1, err)
			}
			logf("round %d %-34s %7.1f MiB/s  scan %6.2f s  RSS %5.0f MiB  load %.2f", r+1, ct.name,
				mibps(d.IPCBytes, m.scan), m.scan.Seconds(), float64(m.rss)/(1<<20), m.load)
			results[ct.key] = append(results[ct.key], m)
		}
	}
	fl, err := floors(c, srv, self, ext, node)
	if err != nil {
		return err
	}
	rep := report{
		c: c, d: d, cs: cs, results: results, started: started, floors: fl,
		load0: load0, load1: loadAvg(), node: node, prepTime: prepTime,
	}
	return rep.write()
}

func contenders(c config, d *dataset, srv *s3server.Server, self, ext string, node *nodeEnv) []contender {
	ipcGlob := "s3://" + bucket + "/" + d.ipcPrefix() + "*.arrow"
	pqGlob := "s3://" + bucket + "/" + d.parquetPrefix() + "*.parquet"
	sums := "count(*), sum(id), sum(x), sum(strlen(s)), sum(strlen(payload))"
	rs := func(extra string) string {
		return fmt.Sprintf("SELECT %s FROM remote_segments('%s', s3_endpoint := '%s', s3_access_key_id := '%s', s3_secret_access_key := '%s', s3_region := '%s'%s);",
			sums, ipcGlob, srv.Endpoint, srv.AccessKey, srv.SecretKey, srv.Region, extra) +
			" SELECT 'budget', budget_cap, budget_peak FROM remote_segments_stats();"
	}
	duck := func(db, sql string) []string {
		argv := []string{c.duckdb, "-unsigned", "-csv", "-noheader"}
		if db != "" {
			argv = append(argv, "-readonly", db)
		}
		return append(argv, "-c", "LOAD '"+ext+"';", "-c", ".timer on", "-c", sql)
	}
	child := func(name string) []string {
		return []string{self, "-child", name, "-prefix", "s3://" + bucket + "/" + d.ipcPrefix(), "-endpoint", srv.Endpoint,
			"-p", strconv.Itoa(c.p), "-cap", strconv.FormatInt(c.capBytes, 10), "-segments", strconv.Itoa(c.segments)}
	}
	nodeArgv := func(script string, args ...string) []string {
		return append([]string{"node", filepath.Join(node.scripts, script)}, args...)
	}
	env := s3Env(srv)
	nodeEnv := append(slices.Clone(env), "NODE_PATH="+filepath.Join(node.dir, "node_modules"))
	cs := []contender{
		{key: "rs", name: "remote_segments (default budget)", group: "rs", reads: "IPC on S3", argv: duck("", rs("")), checks: true},
		{key: "rs64", name: "remote_segments (memory_budget 64MiB)", group: "rs", reads: "IPC on S3", argv: duck("", rs(", memory_budget := '64MiB'")), checks: true},
		{key: "raw", name: "raw ranged-GET loop (ceiling)", group: "go", reads: "IPC on S3", argv: child("raw")},
		{key: "channel", name: fmt.Sprintf("byte-capped channel (%s cap)", mib(c.capBytes)), group: "go", reads: "IPC on S3", argv: child("channel"), checks: true},
		{key: "nested", name: "nested buffered(k)", group: "go", reads: "IPC on S3", argv: child("nested"), checks: true},
		{key: "duck_parquet", name: "DuckDB read_parquet (local disk)", group: "duck", reads: "Parquet on local disk", argv: duck("", fmt.Sprintf("SELECT %s FROM read_parquet('%s');", sums, d.parquet)), checks: true},
		{key: "duck_native", name: "DuckDB native table (local disk)", group: "duck", reads: "DuckDB file on local disk", argv: duck(d.nativeDB, fmt.Sprintf("SELECT %s FROM t;", sums)), checks: true},
		{key: "polars_ipc", name: "Polars scanIPC (streaming)", group: "peer", reads: "IPC on S3", argv: nodeArgv("polars.mjs", "ipc", ipcGlob), env: nodeEnv, checks: true},
		{key: "polars_parquet", name: "Polars scanParquet (streaming)", group: "peer", reads: "Parquet on S3", argv: nodeArgv("polars.mjs", "parquet", pqGlob), env: nodeEnv, checks: true},
		{key: "lancedb", name: "LanceDB query().execute()", group: "peer", reads: "Lance on S3", argv: nodeArgv("lance.mjs", "read", d.lanceURI()), env: nodeEnv, checks: true},
	}
	for i := range cs {
		if cs[i].env == nil {
			cs[i].env = env
		}
	}
	return cs
}

var (
	resultLine = regexp.MustCompile(`RESULT rows=(\d+) sum_id=(-?\d+) sum_x=([0-9.e+]+) len_s=(\d+) len_payload=(\d+) wire_bytes=(\d+) scan_ms=([0-9.]+)|RESULT rows=(\d+) sum_id=(-?\d+) sum_x=([0-9.e+]+) len_s=(\d+) len_payload=(\d+) scan_ms=([0-9.]+)`)
	budgetLine = regexp.MustCompile(`(?m)^budget,(\d+),(\d+)$`)
	runTime    = regexp.MustCompile(`Run Time \(s\): real ([0-9.]+)`)
	maxRSS     = regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`)
	cpuTime    = regexp.MustCompile(`(?:User|System) time \(seconds\): ([0-9.]+)`)
	pageFaults = regexp.MustCompile(`(?:Major|Minor) \([a-z ]+\) page faults: (\d+)`)
	elapsed    = regexp.MustCompile(`Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([0-9.]+)`)
)

// measure runs one contender once and checks its answer.
func measure(ct contender, d *dataset) (measurement, error) {
	m := measurement{load: loadAvg()}
	stdout, tv, err := timeV(ct.argv, ct.env)
	if err != nil {
		return m, err
	}
	if x := maxRSS.FindSubmatch(tv); x != nil {
		kb, _ := strconv.ParseInt(string(x[1]), 10, 64)
		m.rss = kb << 10
	}
	for _, x := range cpuTime.FindAllSubmatch(tv, -1) {
		v, _ := strconv.ParseFloat(string(x[1]), 64)
		m.cpu += time.Duration(v * float64(time.Second))
	}
	for _, x := range pageFaults.FindAllSubmatch(tv, -1) {
		v, _ := strconv.ParseInt(string(x[1]), 10, 64)
		m.faults += v
	}
	if x := elapsed.FindSubmatch(tv); x != nil {
		h, _ := strconv.ParseFloat(string(x[1]), 64)
		mi, _ := strconv.ParseFloat(string(x[2]), 64)
		s, _ := strconv.ParseFloat(string(x[3]), 64)
		m.process = time.Duration((h*3600 + mi*60 + s) * float64(time.Second))
	}
	got, scan, wire, err := parseAnswer(stdout)
	if err != nil {
		return m, fmt.Errorf("%v; output:\n%s", err, stdout)
	}
	m.scan, m.wire = scan, wire
	if x := budgetLine.FindStringSubmatch(stdout); x != nil {
		m.budget[0], _ = strconv.ParseInt(x[1], 10, 64)
		m.budget[1], _ = strconv.ParseInt(x[2], 10, 64)
	}
	if ct.checks && got != d.Expected {
		return m, fmt.Errorf("wrong answer: got %v, want %v", got, d.Expected)
	}
	if !ct.checks && wire != d.IPCBytes {
		return m, fmt.Errorf("read %d bytes, want %d", wire, d.IPCBytes)
	}
	return m, nil
}

// timeV runs argv under /usr/bin/time -v and returns its standard output
// and time's report.
func timeV(argv, env []string) (string, []byte, error) {
	tf, err := os.CreateTemp("", "peers-time-*")
	if err != nil {
		return "", nil, err
	}
	tf.Close()
	defer os.Remove(tf.Name())
	cmd := exec.Command("/usr/bin/time", append([]string{"-v", "-o", tf.Name()}, argv...)...)
	cmd.Env = append(append(os.Environ(), "DUCKDB_AGENT_MODE=0"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	tv, _ := os.ReadFile(tf.Name())
	if runErr != nil {
		return "", tv, fmt.Errorf("%v\n%s\n%s\n%s", runErr, stdout.String(), lastLines(stderr.String(), 20), tv)
	}
	return stdout.String(), tv, nil
}

// floor is the peak RSS of a contender's host process with its engine
// loaded and nothing scanned.
type floor struct {
	name string
	rss  int64
}

// floors measures the host processes the contenders run in, idle.
func floors(c config, srv *s3server.Server, self, ext string, node *nodeEnv) ([]floor, error) {
	nodePath := "NODE_PATH=" + filepath.Join(node.dir, "node_modules")
	var out []floor
	for _, f := range []struct {
		name string
		argv []string
		env  []string
	}{
		{"DuckDB CLI with remote_segments loaded (`SELECT 1`)", []string{c.duckdb, "-unsigned", "-csv", "-c", "LOAD '" + ext + "';", "-c", "SELECT 1;"}, nil},
		{"Go contender with its S3 store", []string{self, "-child", "idle", "-prefix", "s3://" + bucket + "/", "-endpoint", srv.Endpoint}, s3Env(srv)},
		{"node with nodejs-polars loaded", []string{"node", "-e", "require('nodejs-polars')"}, []string{nodePath}},
		{"node with @lancedb/lancedb and apache-arrow loaded", []string{"node", "-e", "require('@lancedb/lancedb'); require('apache-arrow')"}, []string{nodePath}},
	} {
		_, tv, err := timeV(f.argv, f.env)
		if err != nil {
			return nil, fmt.Errorf("floor %s: %w", f.name, err)
		}
		fl := floor{name: f.name}
		if x := maxRSS.FindSubmatch(tv); x != nil {
			kb, _ := strconv.ParseInt(string(x[1]), 10, 64)
			fl.rss = kb << 10
		}
		out = append(out, fl)
	}
	return out, nil
}

// parseAnswer reads a RESULT line, or the DuckDB CLI's CSV row and timer.
func parseAnswer(out string) (answer, time.Duration, int64, error) {
	var a answer
	if x := resultLine.FindStringSubmatch(out); x != nil {
		f := x[1:8]
		if x[1] == "" {
			f = append(append([]string{}, x[8:13]...), "0", x[13])
		}
		a.Rows, _ = strconv.ParseInt(f[0], 10, 64)
		a.SumID, _ = strconv.ParseInt(f[1], 10, 64)
		a.SumX, _ = strconv.ParseFloat(f[2], 64)
		a.LenS, _ = strconv.ParseInt(f[3], 10, 64)
		a.LenPayload, _ = strconv.ParseInt(f[4], 10, 64)
		wire, _ := strconv.ParseInt(f[5], 10, 64)
		ms, _ := strconv.ParseFloat(f[6], 64)
		return a, time.Duration(ms * float64(time.Millisecond)), wire, nil
	}
	t := runTime.FindStringSubmatch(out)
	if t == nil {
		return a, 0, 0, fmt.Errorf("no RESULT line and no DuckDB timer")
	}
	s, _ := strconv.ParseFloat(t[1], 64)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) != 5 {
			continue
		}
		var err error
		if a.Rows, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			continue
		}
		a.SumID, _ = strconv.ParseInt(f[1], 10, 64)
		a.SumX, _ = strconv.ParseFloat(f[2], 64)
		a.LenS, _ = strconv.ParseInt(f[3], 10, 64)
		a.LenPayload, _ = strconv.ParseInt(f[4], 10, 64)
		return a, time.Duration(s * float64(time.Second)), 0, nil
	}
	return a, 0, 0, fmt.Errorf("no answer row in the DuckDB output")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// loadAvg returns the 1-minute load average.
func loadAvg() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func mibps(bytes int64, d time.Duration) float64 { return float64(bytes) / (1 << 20) / d.Seconds() }

// medianBy returns the median of xs by key (the upper one of an even count).
func medianBy(xs []measurement, key func(measurement) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = key(x)
	}
	slices.SortFunc(v, cmp.Compare[float64])
	return v[len(v)/2]
}
