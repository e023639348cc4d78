package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/remote-segments/remote_segments/test/faultproxy"
)

// The hosts: remote_segments as users run it, a process of its own reading
// the same objects as the in-process scan through the same catalog (every
// object's URL and length), so that the difference between the two is the
// host's, not the listing's; and cli-glob, the CLI finding the same objects
// by a listing, so that the listing's cost is seen apart.
var (
	hostList  = flag.String("hosts", "cli", "hosts that scan W2 and the overload case beside the in-process pipeline, with a catalog: cli (the DuckDB CLI, the v1.2.0 file), cli-v2 (the same CLI, the 2.0 edition), gohost (the Go driver); or with a glob, listing the objects first: cli-glob (the CLI, the v1.2.0 file); or raw-proc, the raw loop in a process of its own (what a fresh process costs, with no DuckDB and no decode); empty: none")
	extV2Path = flag.String("ext-v2", "build/release/v2.0.0/remote_segments.duckdb_extension", "the 2.0 edition, for the host cli-v2")
	goHost    = flag.String("gohost", "build/bench/gohost", "the Go-driver host (test/host/gohost built without -race), for the host gohost")
)

// hostKinds are the hosts -hosts may name, in the tables' order.
var hostKinds = []struct{ key, name string }{
	{"cli", "the DuckDB CLI (v1.2.0 file)"},
	{"cli-v2", "the DuckDB CLI (2.0 edition)"},
	{"gohost", "a Go program (database/sql)"},
	{"cli-glob", "the DuckDB CLI (v1.2.0 file) with a glob"},
	{rawProcHost, "the raw loop in a process of its own"},
}

func hostsOn() []string {
	var on []string
	for _, k := range hostKinds {
		for _, h := range strings.Split(*hostList, ",") {
			if strings.TrimSpace(h) == k.key {
				on = append(on, k.key)
			}
		}
	}
	return on
}

func hostName(key string) string {
	for _, k := range hostKinds {
		if k.key == key {
			return k.name
		}
	}
	return key
}

// catalogFile writes d's catalog as CSV (url, length) under the bench's
// root once and returns its path.
func (b *bench) catalogFile(d *dataset) (string, error) {
	if p, ok := b.catalogs[d.name]; ok {
		return p, nil
	}
	var sb strings.Builder
	sb.WriteString("url,length\n")
	for i, k := range d.keys {
		fmt.Fprintf(&sb, "s3://bench/%s,%d\n", k, d.sizes[i])
	}
	p := filepath.Join(b.root, d.name+"-catalog.csv")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		return "", err
	}
	if b.catalogs == nil {
		b.catalogs = map[string]string{}
	}
	b.catalogs[d.name] = p
	return p, nil
}

// hostScan runs one query over d's catalog in host at max_parallel_io p
// through a fresh proxy with cfg, under /usr/bin/time -v, and checks its
// answer. The window is the proxy's, as for the in-process scan: from the
// first request (bind's) to the last; wall is the whole process's time.
func (b *bench) hostScan(host string, d *dataset, cfg faultproxy.Config, p int, wide bool) runResult {
	proxy, err := faultproxy.New(b.srv.Endpoint, cfg)
	if err != nil {
		return runResult{err: err}
	}
	defer proxy.Close()
	cat, err := b.catalogFile(d)
	if err != nil {
		return runResult{err: err}
	}
	if host == rawProcHost {
		return b.rawProc(d, proxy, cat, p)
	}
	src := cat
	if host == "cli-glob" {
		// The same objects, found by a listing (inside the window: its
		// requests are the first the proxy sees).
		src = "s3://bench/" + d.name + "/chunks/*/*"
	}
	sel := resultSelect(wide)
	if *budget != "" {
		sel += fmt.Sprintf(" FROM remote_segments('%s', max_parallel_io := %d, memory_budget := '%s', ", src, p, *budget)
	} else {
		sel += fmt.Sprintf(" FROM remote_segments('%s', max_parallel_io := %d, ", src, p)
	}
	if prefix := os.Getenv("IOBENCH_TRACE"); prefix != "" {
		b.traces++
		sel += fmt.Sprintf("trace := '%s.%s.%d.json', ", prefix, host, b.traces)
	}
	query := fmt.Sprintf("SELECT %ss3_endpoint := '%s', s3_access_key_id := '%s', s3_secret_access_key := '%s', s3_region := '%s', s3_url_style := 'path');",
		sel, proxy.URL, b.srv.AccessKey, b.srv.SecretKey, b.srv.Region)
	var bin, ext string
	switch host {
	case "cli", "cli-glob":
		bin, ext = *duckdbCLI, *extPath
	case "cli-v2":
		bin, ext = *duckdbCLI, *extV2Path
	case "gohost":
		bin, ext = *goHost, *extPath
	default:
		return runResult{err: fmt.Errorf("unknown host %q", host)}
	}
	ext, _ = filepath.Abs(ext)
	ctx, cancel := context.WithTimeout(context.Background(), *peerTimeout)
	defer cancel()
	args := []string{"-unsigned"}
	if host != "gohost" {
		args = append(args, "-csv", "-noheader")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader("LOAD '" + ext + "';\n" + query + "\n")
	cmd.Env = append(os.Environ(), "DUCKDB_AGENT_MODE=0")
	r, stdout, stderr, runErr := runTimed(cmd, proxy)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.err = fmt.Errorf("%s: killed after %v", host, peerTimeout.Round(time.Second))
	case runErr != nil:
		r.err = fmt.Errorf("%s: %v: %s", host, runErr, lastLine(stderr))
	default:
		if r.err = checkAnswer(stdout, d.expected(wide)); r.err != nil {
			r.err = fmt.Errorf("%s: %w", host, r.err)
		}
	}
	return r
}

// rawProc runs the raw loop over catalog in a process of its own (see
// rawproc.go) through proxy, under /usr/bin/time -v, and checks that it
// read every byte of d.
func (b *bench) rawProc(d *dataset, proxy *faultproxy.Proxy, catalog string, p int) runResult {
	self, err := os.Executable()
	if err != nil {
		return runResult{err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *peerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), rawChildEnv+"="+b.rawChildArgs(proxy.URL, catalog, p))
	r, stdout, stderr, runErr := runTimed(cmd, proxy)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.err = fmt.Errorf("raw-proc: killed after %v", peerTimeout.Round(time.Second))
	case runErr != nil:
		r.err = fmt.Errorf("raw-proc: %v: %s", runErr, lastLine(stderr))
	default:
		if r.err = checkAnswer(stdout, map[string]float64{"bytes": float64(d.bytes)}); r.err != nil {
			r.err = fmt.Errorf("raw-proc: %w", r.err)
		}
	}
	return r
}

// timeCPU is the user + system seconds /usr/bin/time -v reports.
func timeCPU(tv string) time.Duration {
	var total float64
	for _, key := range []string{"User time (seconds): ", "System time (seconds): "} {
		if i := strings.Index(tv, key); i >= 0 {
			f, _ := strconv.ParseFloat(strings.Fields(tv[i+len(key):])[0], 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// resultSelect is the select list of the hosts' and the CLI peer's query:
// a RESULT line with the rows and sum(x); for the wide query also sum(i),
// sum(d), the count of true b and the bytes of s (see dataset.expected).
func resultSelect(wide bool) string {
	if wide {
		return "printf('RESULT rows=%d sum_x=%d sum_i=%d sum_d=%.2f true_b=%d len_s=%d', count(*), CAST(sum(x) AS BIGINT), " +
			"CAST(sum(i) AS BIGINT), sum(d), count_if(b), CAST(sum(strlen(s)) AS BIGINT))"
	}
	return "printf('RESULT rows=%d sum_x=%d', count(*), CAST(sum(x) AS BIGINT))"
}

// serve keeps versitygw and a proxy of -latency in front of it running
// with d uploaded, prints the W2 queries the CLI host runs against them,
// and returns on SIGINT or SIGTERM: for profiling a host by hand
// (perf record, a trace) against the same store as the bench.
func (b *bench) serve(d *dataset) {
	proxy, err := faultproxy.New(b.srv.Endpoint, faultproxy.Config{Latency: *latency})
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()
	cat, err := b.catalogFile(d)
	if err != nil {
		log.Fatal(err)
	}
	for _, wide := range []bool{false, true} {
		fmt.Printf("SELECT %s FROM remote_segments('%s', max_parallel_io := 64, s3_endpoint := '%s', s3_access_key_id := '%s', s3_secret_access_key := '%s', s3_region := '%s', s3_url_style := 'path');\n",
			resultSelect(wide), cat, proxy.URL, b.srv.AccessKey, b.srv.SecretKey, b.srv.Region)
	}
	fmt.Println("serving until SIGINT or SIGTERM")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
