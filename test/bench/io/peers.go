package main

// The peer engines on W2 and W3: Polars (scanIPC) and LanceDB, each run as
// its own node process (test/bench/peers/polars.mjs, lance.mjs, installed
// by `bench-peers -install` into build/peers/node) against the same
// versitygw through a fresh fault proxy, exactly as the Go contenders are.
// Polars' scanIPC reads IPC files only, so it reads a copy of the rows in
// which every stream is written again as a file (prefix "<name>f/"), and
// remote_segments and the raw loop read that copy too in the same rounds:
// ratios compare like with like. LanceDB reads the same rows written as a
// Lance dataset by one createTable call (its own layout: a few large files,
// not one object per chunk).

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/remote-segments/remote_segments/test/faultproxy"
)

var (
	nodeDir     = flag.String("node", "", "the peers' npm install (build/peers/node, made by `bench-peers -install`): run Polars and LanceDB on W2 and W3 too (empty: no peers)")
	scriptsDir  = flag.String("scripts", "test/bench/peers", "the peers' node scripts")
	peerMixRuns = flag.Int("peer-mix-runs", 3, "runs of each peer (and of remote_segments on the IPC-file copy) fault-free and under the W3 fault mix")
	peerTimeout = flag.Duration("peer-timeout", 2*time.Minute, "a peer run that takes longer is killed and counted as failed (under the W3 mix: longer than this or 10× its fault-free run, whichever is more)")
	peerList    = flag.String("peers", "cli,cli64,polars,lance", "which contenders beside the in-process scan run on W2 and W3 with -node (cli64: the DuckDB CLI at memory_budget 64MiB)")
	duckdbCLI   = flag.String("duckdb", ".tools/bin/duckdb", "DuckDB CLI, for remote_segments in its own process beside the peers")
	extPath     = flag.String("ext", "build/release/remote_segments.duckdb_extension", "the extension, for the same")
)

// peerData is what the peers read of one dataset: the IPC-file copy and the
// Lance dataset.
type peerData struct {
	files    *dataset // same rows, every chunk an IPC file
	lanceURI string
	lanceSz  int64
}

// peerKind is one peer contender of the W2/W3 tables.
type peerKind struct {
	key, name, reads string
}

var peerKinds = []peerKind{
	{"cli", "remote_segments in the DuckDB CLI (glob)", "IPC-file copy"},
	{"cli64", "remote_segments in the DuckDB CLI (glob, memory_budget 64MiB)", "IPC-file copy"},
	{"polars", "Polars scanIPC (streaming)", "IPC-file copy"},
	{"lance", "LanceDB query().execute()", "Lance dataset"},
}

func peersOn() bool { return *nodeDir != "" }

// peerOn says whether -peers names kind.
func peerOn(kind string) bool { return slices.Contains(strings.Split(*peerList, ","), kind) }

// writeLance writes the rows of the local chunk files as a Lance dataset
// on the server (directly, not through a proxy) and returns its URI.
func (b *bench) writeLance(name string, paths []string) (string, int64, error) {
	uri := "s3://bench/" + name + "-lance"
	cmd := b.nodeCmd(context.Background(), b.srv.Endpoint, append([]string{"lance.mjs", "write-one", uri}, paths...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("writing the Lance dataset %s: %v\n%s", uri, err, out.String())
	}
	return uri, dirSize(filepath.Join(b.srv.Dir, "bench", name+"-lance")), nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// nodeCmd is node running one of the scripts against the S3 endpoint,
// with the private node_modules.
func (b *bench) nodeCmd(ctx context.Context, endpoint string, args ...string) *exec.Cmd {
	scripts, _ := filepath.Abs(*scriptsDir)
	nodeModules, _ := filepath.Abs(filepath.Join(*nodeDir, "node_modules"))
	args[0] = filepath.Join(scripts, args[0])
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+nodeModules, "LANCE_TABLE=t",
		"AWS_ENDPOINT_URL="+endpoint, "AWS_ACCESS_KEY_ID="+b.srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+b.srv.SecretKey,
		"AWS_REGION="+b.srv.Region, "AWS_DEFAULT_REGION="+b.srv.Region, "AWS_ALLOW_HTTP=true", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST=false")
	return cmd
}

// cliCmd is the DuckDB CLI with the extension, scanning glob on the S3
// endpoint and printing the answer as a RESULT line; budget is the scan's
// memory_budget ("": the adaptive default).
func (b *bench) cliCmd(ctx context.Context, endpoint, glob string, wide bool, budget string) *exec.Cmd {
	ext, _ := filepath.Abs(*extPath)
	sel := resultSelect(wide)
	if budget != "" {
		budget = fmt.Sprintf(", memory_budget := '%s'", budget)
	}
	sql := fmt.Sprintf("SELECT %s FROM remote_segments('%s', s3_endpoint := '%s', s3_access_key_id := '%s', s3_secret_access_key := '%s', s3_region := '%s', s3_url_style := 'path'%s);",
		sel, glob, endpoint, b.srv.AccessKey, b.srv.SecretKey, b.srv.Region, budget)
	cmd := exec.CommandContext(ctx, *duckdbCLI, "-unsigned", "-csv", "-noheader", "-c", "LOAD '"+ext+"';", "-c", sql)
	cmd.Env = append(os.Environ(), "DUCKDB_AGENT_MODE=0")
	return cmd
}

var (
	resultKV = regexp.MustCompile(`(\w+)=(-?[0-9.e+]+)`)
	maxRSS   = regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`)
)

// expected is the answer a query over d must print: rows and sum(x); the
// wide query also sum(i), sum(d), count of true b and the bytes of s.
func (d *dataset) expected(wide bool) map[string]float64 {
	m := map[string]float64{"rows": float64(d.rows), "sum_x": float64(d.sumX)}
	if wide {
		m["sum_i"], m["sum_d"], m["true_b"], m["len_s"] = float64(d.sumI), d.sumD, float64(d.trueB), float64(d.lenS)
	}
	return m
}

// peer runs one peer query over d (its answer checked against d's sums)
// through a fresh proxy with cfg, under /usr/bin/time -v for its peak RSS.
// A peer that fails, times out or answers wrongly returns its error in
// the result: on W2 and W3 that is a finding, reported, not fatal.
func (b *bench) peer(kind string, pd *peerData, cfg faultproxy.Config, wide bool, timeout time.Duration) runResult {
	proxy, err := faultproxy.New(b.srv.Endpoint, cfg)
	if err != nil {
		return runResult{err: err}
	}
	defer proxy.Close()
	mode := "w2-narrow"
	if wide {
		mode = "w2-wide"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cmd *exec.Cmd
	switch kind {
	case "cli", "cli64":
		budget := ""
		if kind == "cli64" {
			budget = "64MiB"
		}
		cmd = b.cliCmd(ctx, proxy.URL, "s3://bench/"+pd.files.name+"/chunks/**/*.arrow", wide, budget)
	case "polars":
		cmd = b.nodeCmd(ctx, proxy.URL, "polars.mjs", mode, "s3://bench/"+pd.files.name+"/chunks/*/*.arrow")
	case "lance":
		cmd = b.nodeCmd(ctx, proxy.URL, "lance.mjs", mode, pd.lanceURI)
	default:
		return runResult{err: fmt.Errorf("unknown peer %q", kind)}
	}
	r, stdout, stderr, runErr := runTimed(cmd, proxy)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.err = fmt.Errorf("%s %s: killed after %v", kind, mode, timeout.Round(time.Second))
	case runErr != nil:
		r.err = fmt.Errorf("%s %s: %v: %s", kind, mode, runErr, lastLine(stderr))
	default:
		r.err = checkAnswer(stdout, pd.files.expected(wide))
		if r.err != nil {
			r.err = fmt.Errorf("%s %s: %w", kind, mode, r.err)
		}
	}
	return r
}

// runTimed runs cmd under /usr/bin/time -v in a process group of its own
// (so that a timeout kills all of it, not only time) and measures it at
// proxy: the window and requests, its wall time, peak RSS and CPU time.
func runTimed(cmd *exec.Cmd, proxy *faultproxy.Proxy) (r runResult, stdout, stderr string, err error) {
	tf, err := os.CreateTemp("", "iobench-time-*")
	if err != nil {
		return runResult{}, "", "", err
	}
	tf.Close()
	defer os.Remove(tf.Name())
	cmd.Args = append([]string{"/usr/bin/time", "-v", "-o", tf.Name()}, cmd.Args...)
	cmd.Path = "/usr/bin/time"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cpu0 := cpuTime()
	start := time.Now()
	err = cmd.Run()
	r = measured(runResult{}, proxy, cpu0)
	r.wall = time.Since(start)
	if tv, rerr := os.ReadFile(tf.Name()); rerr == nil {
		if x := maxRSS.FindSubmatch(tv); x != nil {
			kb, _ := strconv.ParseInt(string(x[1]), 10, 64)
			r.rss = kb << 10
		}
		r.hostCPU = timeCPU(string(tv))
	}
	return r, out.String(), errOut.String(), err
}

// checkAnswer compares the RESULT line in out with want.
func checkAnswer(out string, want map[string]float64) error {
	i := strings.Index(out, "RESULT ")
	if i < 0 {
		return fmt.Errorf("no RESULT line in %q", lastLine(out))
	}
	line, _, _ := strings.Cut(out[i:], "\n")
	got := map[string]float64{}
	for _, m := range resultKV.FindAllStringSubmatch(line, -1) {
		got[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok || g != v {
			return fmt.Errorf("wrong answer %q: %s is %v, want %v", line, k, g, v)
		}
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// table2Peers runs W3 for the peers, and for remote_segments on the
// IPC-file copy they read: -peer-mix-runs runs of each, every run of the
// mix just after a fault-free run of the same contender (the same seeds as
// remote_segments' runs). Failures are counted, never fatal.
func (b *bench) table2Peers(pd *peerData) {
	fmt.Printf("\n2b. the same rows for the peers (%s/, every chunk an IPC file; %s), %d runs each, fault-free then the mix\n",
		pd.files.name, pd.lanceURI, *peerMixRuns)
	b.md.w3peers = map[string][]w3Run{}
	for run := range *peerMixRuns {
		clean := faultproxy.Config{Latency: *latency}
		mix := faultproxy.Config{Latency: *latency, SlowDown: 0.05, Reset: 0.01, Stall: 0.01, StallFor: 5 * time.Second, Seed: uint64(100 + run)}
		for _, ck := range contenders() {
			k := ck.key
			var c, m runResult
			if k == "rs" {
				c, m = b.scan(pd.files, clean, 64, []int{0}), b.scan(pd.files, mix, 64, []int{0})
			} else {
				c = b.peer(k, pd, clean, false, *peerTimeout)
				timeout := *peerTimeout
				if c.err == nil {
					timeout = max(timeout, 10*c.wall)
				}
				m = b.peer(k, pd, mix, false, timeout)
			}
			b.md.w3peers[k] = append(b.md.w3peers[k], w3Run{clean: c, mix: m, load: loadAvg1()})
			state := func(r runResult) string {
				if r.err != nil {
					return "FAILED (" + r.err.Error() + ")"
				}
				return fmt.Sprintf("%v, %d requests, RSS %s%s", r.window.Round(time.Millisecond), r.requests, rssText(r.rss), wallText(r))
			}
			fmt.Printf("  run %d %-7s fault-free %s; mix %s\n", run+1, k, state(c), state(m))
		}
	}
}

// contenders are remote_segments' pipeline in this process (key "rs", on
// the IPC-file copy) and the peer kinds -peers names, in the tables' order.
func contenders() []peerKind {
	ks := []peerKind{{"rs", "remote_segments (pipeline in process, catalog)", "IPC-file copy"}}
	for _, k := range peerKinds {
		if peerOn(k.key) {
			ks = append(ks, k)
		}
	}
	return ks
}

// wallText is a peer process's wall time, start-up included: what its run
// adds to the bench's time ("" for what runs in this process).
func wallText(r runResult) string {
	if r.wall == 0 {
		return ""
	}
	return fmt.Sprintf(", process %.2fs", r.wall.Seconds())
}

func rssText(n int64) string {
	if n == 0 {
		return "(in process)"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}
