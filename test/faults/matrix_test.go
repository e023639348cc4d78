package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/s3server"
)

var update = flag.Bool("update", false, "rewrite test/RELIABILITY.md from this run")

// repoRoot is the directory holding go.mod, two levels up.
func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	return root
}

// dataset is what the servers hold: four chunks (two segments), a tiny
// chunk, and catalogs; answers are computed by the data generator.
type dataset struct {
	objects   map[string][]byte // "/chunks/segment=s0/chunk-0.arrow", ...
	chunks    []string          // the four chunk paths, in order
	answer    string            // count(*), sum(x) of the four chunks
	dupAnswer []string          // of the catalogs of dupRows rows
	tiny      string            // count(*), sum(x) of /tiny.arrow
}

// dupRows are the sizes of the catalogs whose rows all name one chunk.
var dupRows = []int{10_000, 100_000}

func writeDataset(t *testing.T) dataset {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 2, RowsPerChunk: 3000, BatchesPerChunk: 2, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	var rows, sum int64
	for _, s := range stats {
		rows, sum = rows+s.Rows, sum+s.SumX
	}
	tiny, err := datagen.Write(filepath.Join(dir, "tiny"), datagen.Spec{Segments: 1, ChunksPerSegment: 1, RowsPerChunk: 8, BatchesPerChunk: 1, Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	d := dataset{objects: map[string][]byte{},
		answer: fmt.Sprintf("%d|%d", rows, sum), tiny: fmt.Sprintf("%d|%d", tiny[0].Rows, tiny[0].SumX)}
	err = filepath.WalkDir(filepath.Join(dir, "chunks"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		d.objects["/"+filepath.ToSlash(rel)] = b
		d.chunks = append(d.chunks, "/"+filepath.ToSlash(rel))
		return err
	})
	if err != nil || len(d.chunks) != 4 {
		t.Fatalf("dataset: %v, %d chunks", err, len(d.chunks))
	}
	if d.objects["/tiny.arrow"], err = os.ReadFile(filepath.Join(dir, "tiny/chunks/segment=s0/chunk-0.arrow")); err != nil {
		t.Fatal(err)
	}
	first := strings.TrimPrefix(d.chunks[0], "/")
	size := len(d.objects[d.chunks[0]])
	d.objects["/past-offset.csv"] = []byte(fmt.Sprintf("url,offset,length\n%s,%d,100\n", first, size+100))
	d.objects["/past-length.csv"] = []byte(fmt.Sprintf("url,offset,length\n%s,0,%d\n", first, size+4096))
	// Two chunks back to back in one object; the catalog names each range.
	a, b := d.objects[d.chunks[0]], d.objects[d.chunks[1]]
	d.objects["/pair.arrow"] = append(append([]byte{}, a...), b...)
	d.objects["/pair.csv"] = []byte(fmt.Sprintf("url,offset,length\npair.arrow,0,%d\npair.arrow,%d,%d\n", len(a), len(a), len(b)))
	for _, n := range dupRows {
		var cat strings.Builder
		cat.WriteString("url\n")
		for range n {
			cat.WriteString("tiny.arrow\n")
		}
		d.objects[fmt.Sprintf("/dup-%d.csv", n)] = []byte(cat.String())
		d.dupAnswer = append(d.dupAnswer, fmt.Sprintf("%d|%d", int64(n)*tiny[0].Rows, int64(n)*tiny[0].SumX))
	}
	return d
}

// secrets are planted in every case; none may appear in any output.
type secrets struct {
	accessKey, secretKey, sessionToken, signature string
	query                                         string // a presigned URL's query string, carrying signature
}

func plant() secrets {
	var b [32]byte
	_, _ = rand.Read(b[:])
	s := secrets{
		accessKey:    s3server.AccessKey, // versitygw's root account: what the server accepts
		secretKey:    s3server.SecretKey,
		sessionToken: "FaultsSessionToken" + hex.EncodeToString(b[:12]),
		signature:    hex.EncodeToString(b[:]),
	}
	s.query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAFAULTS%2F20260101%2Fus-east-1%2Fs3%2Faws4_request" +
		"&X-Amz-Date=20260101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=" + s.signature
	return s
}

func (s secrets) all() map[string]string {
	return map[string]string{"access key": s.accessKey, "secret key": s.secretKey,
		"session token": s.sessionToken, "signed query string": s.signature}
}

// fault is one row of the matrix.
type fault struct {
	name     string
	store    string // "S3" or "HTTP"
	injected string
	src      string // SQL value of the source (kept in a variable, so no error echoes it)
	params   string // named parameters after the source
	wantErr  string // a substring of the error; "" wants the right answer
	answer   string // the right answer when it is not the dataset's
	bound    time.Duration
	arm      func() // just before the query
	after    func() // right after it
	known    string // a known failure: why; the row runs only with -update or FAULTS_ALL=1
	long     string // too slow for make test: why; runs only with -update or FAULTS_ALL=1
}

// outcome is what a case did, for the table.
type outcome struct {
	f                             fault
	result, next                  string
	took                          time.Duration
	budget, fdDelta, tmp, retries string
	ok                            bool
}

func TestFaultMatrix(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // runs last: registered first
	root := repoRoot(t)
	duckdb, ext := filepath.Join(root, ".tools/bin/duckdb"), filepath.Join(root, "build/release/remote_segments.duckdb_extension")
	for _, p := range []string{duckdb, ext} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make tools release`", err)
		}
	}
	ds := writeDataset(t)
	sec := plant()

	tlsBase, tlsHits := tlsTarget(t)
	web := newHTTPData(t, ds.objects, tlsBase, tlsHits)
	s3 := s3server.ForTest(t, "data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p, b := range ds.objects {
		if err := s3.PutObject(ctx, "data", strings.TrimPrefix(p, "/"), b); err != nil {
			t.Fatal(err)
		}
	}
	fronts := map[mode]*s3Front{}
	for _, m := range []mode{modeOK, modeStall, modeShort, modeNoRange, modeGzip, modeShifted, modeRedirect, modeRedirectLoop,
		modeRedirectFile, modeRedirectTLS, modeExpired, modeNoPrefix} {
		fronts[m] = newS3Front(t, s3, m, tlsBase)
	}
	fronts[modeExpired].token, fronts[modeExpired].expireAfter = sec.sessionToken, 2

	traceDir := t.TempDir()
	c := startCLI(t, duckdb, ext)
	for _, v := range [][2]string{{"rs_key", sec.accessKey}, {"rs_secret", sec.secretKey}, {"rs_token", sec.sessionToken}} {
		if r := c.exec(fmt.Sprintf("SET VARIABLE %s = '%s'", v[0], v[1]), time.Minute); r.err != "" {
			t.Fatal(r.err)
		}
	}

	// Sources.
	httpList := func(m mode, base string) string {
		var us []string
		for _, p := range ds.chunks {
			us = append(us, "'"+base+"/"+string(m)+p+"?"+sec.query+"'")
		}
		return "[" + strings.Join(us, ", ") + "]"
	}
	s3List := func() string {
		var us []string
		for _, p := range ds.chunks {
			us = append(us, "'s3://data"+p+"'")
		}
		return "[" + strings.Join(us, ", ") + "]"
	}
	s3Params := func(endpoint string, token bool) string {
		p := fmt.Sprintf(", s3_endpoint := '%s', s3_region := '%s', s3_access_key_id := getvariable('rs_key'), s3_secret_access_key := getvariable('rs_secret')",
			endpoint, s3server.Region)
		if token {
			p += ", s3_session_token := getvariable('rs_token')"
		}
		return p
	}
	closeConns := func() {
		web.srv.CloseClientConnections()
		for _, f := range fronts {
			f.srv.CloseClientConnections()
		}
	}
	good := map[string]fault{
		"HTTP": {src: httpList(modeOK, web.srv.URL), bound: time.Minute},
		"S3":   {src: s3List(), params: s3Params(fronts[modeOK].srv.URL, false), bound: time.Minute},
	}

	// The servers a kill cuts: a TCP forwarder in front of each store.
	killHTTP := newKillable(t, strings.TrimPrefix(web.srv.URL, "http://"))
	killS3 := newKillable(t, strings.TrimPrefix(fronts[modeOK].srv.URL, "http://"))
	killAt := int64(len(ds.objects[ds.chunks[0]]) + 8<<10) // past what bind reads: mid-scan
	refused := closedPort(t)

	const timeout = "request_timeout := '2s'"
	var cases []fault
	for _, st := range []string{"S3", "HTTP"} {
		src := func(m mode) string {
			if st == "HTTP" {
				return httpList(m, web.srv.URL)
			}
			return s3List()
		}
		params := func(m mode) string {
			if st == "HTTP" {
				return ""
			}
			return s3Params(fronts[m].srv.URL, m == modeExpired)
		}
		pairCatalog := func(m mode) string {
			if st == "HTTP" {
				return "'" + web.url(m, "/pair.csv") + "'"
			}
			return "'s3://data/pair.csv'"
		}
		viaKill := func(k *killable) (string, string) {
			if st == "HTTP" {
				return httpList(modeOK, "http://"+k.addr), ""
			}
			return s3List(), s3Params("http://"+k.addr, false)
		}
		k := killHTTP
		if st == "S3" {
			k = killS3
		}
		restartSrc, restartParams := viaKill(k)
		cases = append(cases,
			fault{name: "killed mid-scan, restarted", injected: "server killed (listener closed, connections reset) after the first chunk; up again 50 ms later",
				src: restartSrc, params: restartParams, bound: 30 * time.Second,
				arm: func() {
					k.arm(killAt, func() {
						time.AfterFunc(50*time.Millisecond, func() {
							if err := k.restart(); err != nil {
								t.Errorf("restart: %v", err)
							}
						})
					})
				}},
			fault{name: "killed mid-scan, not restarted", injected: "server killed after the first chunk, never back",
				src: restartSrc, params: restartParams + ", " + timeout, wantErr: "connection refused", bound: 15 * time.Second,
				arm: func() { k.arm(killAt, nil) }},
		)
		refusedSrc, refusedParams := httpList(modeOK, "http://"+refused), ""
		unresSrc, unresParams := httpList(modeOK, "http://data.faults.invalid"), ""
		if st == "S3" {
			refusedSrc, refusedParams = s3List(), s3Params("http://"+refused, false)
			unresSrc, unresParams = s3List(), s3Params("http://s3.faults.invalid:9000", false)
		}
		cases = append(cases,
			fault{name: "connection refused", injected: "nothing listens on the port",
				src: refusedSrc, params: refusedParams + ", " + timeout, wantErr: "connection refused", bound: 15 * time.Second},
			fault{name: "unresolvable host", injected: "a host name under .invalid (RFC 6761)",
				src: unresSrc, params: unresParams + ", " + timeout, wantErr: "no such host", bound: 15 * time.Second},
			fault{name: "headers, body never", injected: "200 and Content-Length, then no byte until the client gives up",
				src: src(modeStall), params: params(modeStall) + ", " + timeout, wantErr: "timeout", bound: 15 * time.Second},
			fault{name: "short body, wrong Content-Length", injected: "200 declaring the whole object, half of it sent, connection closed",
				src: src(modeShort), params: params(modeShort) + ", " + timeout, wantErr: "unexpected EOF", bound: 15 * time.Second},
			fault{name: "Range ignored", injected: "200 with the whole object to every ranged GET",
				src: src(modeNoRange), params: params(modeNoRange), bound: 15 * time.Second},
			fault{name: "Range ignored, chunk at an offset", injected: "200 with the whole object to a GET of a catalog row at offset > 0",
				src: pairCatalog(modeNoRange), params: params(modeNoRange), wantErr: "ignored the Range header", bound: 15 * time.Second},
			fault{name: "redirect, same scheme", injected: "every first GET of an object: 307 to the same URL",
				src: src(modeRedirect), params: params(modeRedirect), bound: 15 * time.Second},
			fault{name: "redirect loop", injected: "307 to itself, for ever",
				src: src(modeRedirectLoop), params: params(modeRedirectLoop), wantErr: "more than 5 redirects", bound: 15 * time.Second},
			fault{name: "redirect to file://", injected: "302 Location: file:///etc/passwd",
				src: src(modeRedirectFile), params: params(modeRedirectFile), wantErr: "to file://", bound: 15 * time.Second},
			fault{name: "redirect to https://", injected: "302 from http:// to an https:// server (another scheme)",
				src: src(modeRedirectTLS), params: params(modeRedirectTLS), wantErr: "to https://", bound: 15 * time.Second,
				arm: func() { tlsHits.Store(0) },
				after: func() {
					if n := tlsHits.Load(); n != 0 {
						t.Errorf("%s: the client followed the redirect to https:// (%d connections)", st, n)
					}
				}},
			fault{name: "gzip on a ranged response", injected: "206 with the range gzipped and Content-Encoding: gzip",
				src: src(modeGzip), params: params(modeGzip), wantErr: "Content-Encoding", bound: 15 * time.Second},
			fault{name: "another range than asked", injected: "206 for the range asked 8 bytes on (or back), its Content-Range naming it, to the GETs of a catalog's ranges",
				src: pairCatalog(modeShifted), params: params(modeShifted), wantErr: "with another range", bound: 15 * time.Second},
		)
		catalog := func(name string) string {
			if st == "HTTP" {
				return "'" + web.url(modeOK, "/"+name) + "'"
			}
			return "'s3://data/" + name + "'"
		}
		cp := ""
		if st == "S3" {
			cp = s3Params(fronts[modeOK].srv.URL, false)
		}
		cases = append(cases,
			fault{name: "catalog offset past the object", injected: "a catalog row whose offset lies past the end",
				src: catalog("past-offset.csv"), params: cp, wantErr: "range outside of the object", bound: 15 * time.Second},
			fault{name: "catalog length past the object", injected: "a catalog row whose offset+length lies past the end",
				src: catalog("past-length.csv"), params: cp, wantErr: "range outside of the object", bound: 15 * time.Second},
		)
		for i, n := range dupRows {
			f := fault{name: fmt.Sprintf("%d-row catalog, one URL", n), injected: fmt.Sprintf("%d catalog rows naming the same 8-row chunk", n),
				src: catalog(fmt.Sprintf("dup-%d.csv", n)), params: cp, answer: ds.dupAnswer[i], bound: time.Minute}
			if n > 10_000 {
				// Every catalog row is one GET (duplicates are not merged):
				// 100,000 rows take 1-3 minutes on 2 cores. The bound is a
				// hang guard; the answer is what is asserted.
				f.bound = 5 * time.Minute
			}
			cases = append(cases, f)
		}
		if st == "S3" {
			cases = append(cases, fault{name: "session token expires mid-scan",
				injected: "temporary credentials; after 2 GETs the store answers 403 ExpiredToken",
				src:      src(modeExpired), params: params(modeExpired), wantErr: "ExpiredToken", bound: 15 * time.Second},
				fault{name: "a listing's prefix ignored",
					injected: "a prefix source listed by a server that drops the prefix: the bucket's names from its start",
					src:      "'s3://data/chunks/segment=s1/'", params: params(modeNoPrefix), wantErr: "outside the prefix", bound: 15 * time.Second})
		}
		for i := range cases {
			if cases[i].store == "" {
				cases[i].store = st
			}
		}
	}

	// Warm up both stores, then take the baselines.
	for _, st := range []string{"S3", "HTTP"} {
		if got := scan(c, good[st], ""); got.err != "" || got.answer != ds.answer {
			t.Fatalf("%s: the good scan: %q %s, want %s", st, got.answer, got.err, ds.answer)
		}
	}
	closeConns()
	fdBase := settledFDs(c, 0)
	tmpBase := c.tempFiles()

	var outs []outcome
	for i, f := range cases {
		t.Run(f.store+"/"+f.name, func(t *testing.T) {
			all := *update || os.Getenv("FAULTS_ALL") != ""
			if f.known != "" && !all {
				t.Skipf("known failure: %s (runs with -update or FAULTS_ALL=1)", f.known)
			}
			if f.long != "" && !all {
				t.Skipf("long: %s (runs with -update or FAULTS_ALL=1)", f.long)
			}
			o := measureCase(t, c, f, ds, good[f.store], filepath.Join(traceDir, fmt.Sprintf("trace-%02d.json", i)), fdBase, tmpBase,
				func() {
					killHTTP.kill()
					killS3.kill()
					closeConns()
				})
			for _, k := range []*killable{killHTTP, killS3} {
				k.arm(0, nil)
				if err := k.restart(); err != nil {
					t.Fatal(err)
				}
			}
			outs = append(outs, o)
		})
	}

	// DuckDB's sandbox, in CLIs of their own: external access cannot be
	// turned back on in a process.
	sbOuts, transcripts := runSandbox(t, duckdb, ext, ds, sec, good, web, fronts[modeOK])
	outs = append(outs, sbOuts...)

	checkSecrets(t, sec, c, traceDir, outs, transcripts)
	if *update {
		writeReport(t, filepath.Join(root, "test/RELIABILITY.md"), outs, ds.answer)
	}
}

// measureCase runs case f in c (runCase), then closes what the case left
// open on the servers' side (closeConns), counts the CLI's descriptors and
// temporary files against the baselines, and reports the outcome on t.
func measureCase(t *testing.T, c *cli, f fault, ds dataset, good fault, trace string, fdBase, tmpBase int, closeConns func()) outcome {
	parent := c.t
	c.t = t
	defer func() { c.t = parent }()
	o := runCase(t, c, f, ds, good, trace)
	closeConns()
	fds := settledFDs(c, fdBase) // bounded wait for the CLI to notice
	o.fdDelta = strconv.Itoa(fds - fdBase)
	o.tmp = strconv.Itoa(c.tempFiles() - tmpBase)
	if o.budget != "0" || o.next != "ok" || fds > fdBase || o.tmp != "0" {
		o.ok = false
	}
	switch {
	case f.known != "" && !o.ok:
		t.Logf("known failure: %s: %s", f.known, o.result)
	case !o.ok:
		t.Errorf("%s; budget %s, fds %s, temp files %s, next query %s", o.result, o.budget, o.fdDelta, o.tmp, o.next)
	case f.known != "":
		t.Errorf("fixed? a known failure passed: %s in %v", o.result, o.took.Round(time.Millisecond))
	default:
		t.Logf("%s in %v", o.result, o.took.Round(time.Millisecond))
	}
	return o
}

// runCase runs f's query, then asks what it left in the budget and runs the
// next (good) query in the same process.
func runCase(t *testing.T, c *cli, f fault, ds dataset, good fault, trace string) outcome {
	o := outcome{f: f}
	last := c.value("SELECT coalesce(max(scan_id), -1) FROM remote_segments_stats()")
	if f.arm != nil {
		f.arm()
	}
	got := scan(c, f, trace)
	if f.after != nil {
		f.after()
	}
	o.took = got.took
	want := ds.answer
	if f.answer != "" {
		want = f.answer
	}
	switch {
	case f.wantErr == "" && got.err == "" && got.answer == want:
		o.result, o.ok = "answer identical", true
	case f.wantErr == "" && got.err == "":
		o.result = fmt.Sprintf("WRONG ANSWER %s (want %s)", got.answer, want)
	case got.err != "":
		o.result = "error: " + firstLine(got.err)
		o.ok = f.wantErr != "" && strings.Contains(got.err, f.wantErr)
	default:
		o.result = "answered " + got.answer + ", want an error"
	}
	if got.took > f.bound {
		o.ok = false
		o.result += fmt.Sprintf(" (took %v, bound %v)", got.took.Round(time.Millisecond), f.bound)
	}
	o.budget = c.value("SELECT coalesce(sum(budget_in_use), 0) FROM remote_segments_stats()")
	if testing.Verbose() {
		r := c.exec("SELECT requests, gets, retries, wall_ms, io_utilization, chunks FROM remote_segments_stats() ORDER BY scan_id DESC LIMIT 1", time.Minute)
		t.Logf("stats: requests, gets, retries, wall_ms, io_utilization, chunks = %v", r.rows)
	}
	// A scan that failed in bind has no stats row.
	o.retries = c.value("SELECT coalesce(max(retries)::VARCHAR, 'no scan (bind failed)') FROM remote_segments_stats() WHERE scan_id > " + last)
	next := scan(c, good, "")
	o.next = "ok"
	if next.err != "" || next.answer != ds.answer {
		o.next = fmt.Sprintf("FAILED: %q %s", next.answer, firstLine(next.err))
	}
	return o
}

// settledFDs counts the CLI's descriptors until the count is at most want
// (want 0: until it stops falling), polling /proc for at most 5 s: closed
// connections leave the process asynchronously and nothing signals it.
func settledFDs(c *cli, want int) int {
	n := c.fds()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if want > 0 && n <= want {
			return n
		}
		time.Sleep(50 * time.Millisecond)
		m := c.fds()
		if want == 0 && m == n {
			return n
		}
		n = m
	}
	return n
}

// hangAfter is when a query is taken for hung: far above every bound, so
// that a slow failure is measured, not cut short.
const hangAfter = 8 * time.Minute

// scanResult is a scan's answer ("count|sum") or error.
type scanResult struct {
	answer, err string
	took        time.Duration
}

// scan runs count(*), sum(x) over f's source; the source goes through a
// variable so that DuckDB's error context never quotes a URL.
func scan(c *cli, f fault, trace string) scanResult {
	if r := c.exec("SET VARIABLE src = "+f.src, time.Minute); r.err != "" {
		c.t.Fatalf("SET VARIABLE src: %s", r.err)
	}
	params := f.params
	if trace != "" {
		params += ", trace := '" + trace + "'"
	}
	r := c.exec("SELECT count(*), sum(x) FROM remote_segments(getvariable('src')"+params+")", hangAfter)
	res := scanResult{err: r.err, took: r.took}
	if r.err == "" && len(r.rows) == 1 {
		res.answer = strings.Join(r.rows[0], "|")
	}
	return res
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// closedPort returns 127.0.0.1:PORT where nothing listens.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
