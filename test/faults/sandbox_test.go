package faults

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// sandboxTree writes the local data of the sandbox rows under a new
// directory and returns it (symbolic links resolved, as DuckDB reports
// allowed_directories):
//
//	allowed/chunks/...     the four chunks
//	allowed/escape.csv     a catalog: one chunk inside, then ../outside/tiny.arrow
//	allowed/out -> ../outside
//	allowed-x/tiny.arrow   a sibling whose name continues "allowed"
//	outside/tiny.arrow
//	exact/tiny.arrow       the allowed path; exact/other.arrow beside it
func sandboxTree(t *testing.T, ds dataset) string {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"allowed/escape.csv":   []byte("url\n" + strings.TrimPrefix(ds.chunks[0], "/") + "\n../outside/tiny.arrow\n"),
		"allowed-x/tiny.arrow": ds.objects["/tiny.arrow"],
		"outside/tiny.arrow":   ds.objects["/tiny.arrow"],
		"exact/tiny.arrow":     ds.objects["/tiny.arrow"],
		"exact/other.arrow":    ds.objects["/tiny.arrow"],
	}
	for _, p := range ds.chunks {
		files["allowed"+p] = ds.objects[p]
	}
	for name, b := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(root, "allowed/out")); err != nil {
		t.Fatal(err)
	}
	return root
}

// runSandbox runs the rows of DuckDB's sandbox (issue 11, item 1): a CLI
// with enable_external_access = false and allowed_directories /
// allowed_paths naming a local directory, an S3 prefix and an HTTP prefix,
// where every case is either refused before anything is read or answers;
// then a CLI with the same lists and external access on, where nothing is
// refused. The next query of each row is the local scan the sandbox admits.
// It returns the rows and the CLIs' transcripts, for the secrets check.
func runSandbox(t *testing.T, duckdb, ext string, ds dataset, sec secrets, good map[string]fault, web *httpData, front *s3Front) ([]outcome, map[string]string) {
	root := sandboxTree(t, ds)
	q := func(p string) string { return "'" + p + "'" }
	local := fault{store: "local", src: q(root + "/allowed/chunks/**/*.arrow"), bound: time.Minute}
	s3p := good["S3"].params
	// The S3 rows name their endpoint in the query (s3p), with the query's
	// own keys: the sandbox admits them only where it admits the URLs the
	// requests go to as well (path style: <endpoint>/data/chunks/...).
	lists := fmt.Sprintf("SET allowed_directories = [%s, %s, %s, %s]; SET allowed_paths = [%s]",
		q(root+"/allowed"), q("s3://data/chunks/"), q(front.srv.URL+"/data/chunks/"), q(web.srv.URL+"/ok/chunks/"), q(root+"/exact/tiny.arrow"))
	refused := "Permission Error: cannot access"
	const b = 15 * time.Second
	off := []fault{
		{store: "local", name: "sandbox: under an allowed directory", injected: "a glob under allowed_directories", src: local.src, bound: b},
		{store: "local", name: "sandbox: outside every entry", injected: "a file in no allowed directory", src: q(root + "/outside/tiny.arrow"), wantErr: refused, bound: b},
		{store: "local", name: "sandbox: sibling directory", injected: "allowed-x/, whose name continues the allowed allowed/", src: q(root + "/allowed-x/tiny.arrow"), wantErr: refused, bound: b},
		{store: "local", name: "sandbox: .. escape", injected: "allowed/../outside/tiny.arrow", src: q(root + "/allowed/../outside/tiny.arrow"), wantErr: refused, bound: b},
		{store: "local", name: "sandbox: symbolic link out", injected: "allowed/out -> ../outside, read through the link", src: q(root + "/allowed/out/tiny.arrow"), wantErr: refused, bound: b},
		{store: "local", name: "sandbox: glob wider than the directory", injected: "<root>/**/*.arrow", src: q(root + "/**/*.arrow"), wantErr: refused, bound: b},
		{store: "local", name: "sandbox: allowed_paths, the file", injected: "exactly the allowed path", src: q(root + "/exact/tiny.arrow"), answer: ds.tiny, bound: b},
		{store: "local", name: "sandbox: allowed_paths, the file beside it", injected: "another file in the allowed path's directory", src: q(root + "/exact/other.arrow"), wantErr: refused, bound: b},
		{store: "local", name: "sandbox: catalog row outside", injected: "a catalog in the allowed directory whose row 1 is ../outside/tiny.arrow", src: q(root + "/allowed/escape.csv"),
			wantErr: "(catalog row 1): remote_segments: " + refused, bound: b},
		{store: "local", name: "sandbox: trace file outside", injected: "an admitted scan with trace := a file outside", src: local.src, params: ", trace := " + q(root+"/outside/trace.json"),
			wantErr: "trace: " + refused, bound: b},
		{store: "S3", name: "sandbox: under an allowed prefix", injected: "s3://data/chunks/... under the allowed s3://data/chunks/", src: good["S3"].src, params: s3p, bound: b},
		{store: "S3", name: "sandbox: outside the prefix", injected: "s3://data/tiny.arrow, same bucket", src: q("s3://data/tiny.arrow"), params: s3p, wantErr: refused, bound: b},
		{store: "HTTP", name: "sandbox: under an allowed prefix", injected: "presigned URLs under the allowed <server>/ok/chunks/", src: good["HTTP"].src, bound: b},
		{store: "HTTP", name: "sandbox: outside the prefix", injected: "<server>/ok/tiny.arrow", src: q(web.url(modeOK, "/tiny.arrow")), wantErr: refused, bound: b},
		{store: "HTTP", name: "sandbox: .. in the URL", injected: "<server>/ok/chunks/../tiny.arrow (the string starts with the prefix)", src: q(web.url(modeOK, "/chunks/../tiny.arrow")),
			wantErr: `".." segment`, bound: b},
	}
	on := []fault{
		{store: "local", name: "sandbox off: outside the lists", injected: "enable_external_access true, a file in no allowed directory", src: q(root + "/outside/tiny.arrow"), answer: ds.tiny, bound: b},
		{store: "S3", name: "sandbox off: outside the lists", injected: "enable_external_access true, s3://data/tiny.arrow", src: q("s3://data/tiny.arrow"), params: s3p, answer: ds.tiny, bound: b},
		{store: "HTTP", name: "sandbox off: outside the lists", injected: "enable_external_access true, <server>/ok/tiny.arrow", src: q(web.url(modeOK, "/tiny.arrow")), answer: ds.tiny, bound: b},
	}
	var outs []outcome
	transcripts := map[string]string{}
	for _, run := range []struct {
		name  string
		setup string
		cases []fault
	}{
		{"external access off", lists + "; SET enable_external_access = false", off},
		{"external access on", lists, on},
	} {
		c := startCLI(t, duckdb, ext)
		for _, s := range append([]string{
			fmt.Sprintf("SET VARIABLE rs_key = '%s'", sec.accessKey),
			fmt.Sprintf("SET VARIABLE rs_secret = '%s'", sec.secretKey),
		}, strings.Split(run.setup, "; ")...) {
			if r := c.exec(s, time.Minute); r.err != "" {
				t.Fatalf("%s: %s: %s", run.name, s, r.err)
			}
		}
		closeConns := func() {
			web.srv.CloseClientConnections()
			front.srv.CloseClientConnections()
		}
		if got := scan(c, local, ""); got.err != "" || got.answer != ds.answer {
			t.Fatalf("%s: the admitted local scan: %q %s, want %s", run.name, got.answer, got.err, ds.answer)
		}
		closeConns()
		fdBase, tmpBase := settledFDs(c, 0), c.tempFiles()
		for _, f := range run.cases {
			t.Run(f.store+"/"+f.name, func(t *testing.T) {
				outs = append(outs, measureCase(t, c, f, ds, local, "", fdBase, tmpBase, closeConns))
			})
		}
		c.exec("SELECT * FROM remote_segments_stats()", time.Minute) // into the transcript
		transcripts["CLI output ("+run.name+")"] = c.output()
	}
	return outs, transcripts
}

// listener is a server on 127.0.0.1 standing for a host nobody admitted
// (an internal service, a metadata endpoint, an attacker's listener): it
// counts the connections it accepts and records the headers of every
// request, answering 404.
type listener struct {
	srv   *httptest.Server
	conns atomic.Int64
	mu    sync.Mutex
	heads []http.Header
}

func newListener(t *testing.T) *listener {
	l := &listener{}
	l.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.heads = append(l.heads, r.Header.Clone())
		l.mu.Unlock()
		http.NotFound(w, r)
	}))
	l.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			l.conns.Add(1)
		}
	}
	l.srv.Start()
	t.Cleanup(l.srv.Close)
	return l
}

// headers returns every recorded request's headers as one text.
func (l *listener) headers() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, h := range l.heads {
		for k, vs := range h {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(vs, ","))
		}
	}
	return b.String()
}

// TestSandboxBoundaries runs the boundaries of the threat model
// (test/RELIABILITY.md, "Threat model") through the DuckDB CLI with the
// extension, with process credentials in the CLI's environment (AWS_*):
// under REMOTE_SEGMENTS_ALLOWED_PREFIXES, under DuckDB's sandbox, and under
// the 2.0 edition's settings, every query-named destination (s3_endpoint,
// an unlocked SET remote_segments_s3_endpoint, a redirect, a catalog row)
// gets no connection; the operator's endpoint (a locked setting) gets the
// signed request; and with no sandbox the query is trusted, which the
// control case shows by what reaches its listener.
func TestSandboxBoundaries(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	root := repoRoot(t)
	duckdb := filepath.Join(root, ".tools/bin/duckdb")
	ext := filepath.Join(root, "build/release/remote_segments.duckdb_extension")
	extV2 := filepath.Join(root, "build/release/v2.0.0/remote_segments.duckdb_extension")
	for _, p := range []string{duckdb, ext, extV2} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make tools release`", err)
		}
	}
	const (
		keyID = "AKIDPROCESSPLANTED01"
		token = "ProcessSessionTokenPlanted"
	)
	awsEnv := []string{"AWS_ACCESS_KEY_ID=" + keyID, "AWS_SECRET_ACCESS_KEY=process-secret-planted", "AWS_SESSION_TOKEN=" + token,
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
	q := func(s string) string { return "'" + s + "'" }

	// A web server whose /ok/ is admitted; /ok/r/<port>/<path> answers 307
	// to http://127.0.0.1:<port>/<path>.
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/ok/r/")
		port, p, _ := strings.Cut(rest, "/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, "http://127.0.0.1:"+port+"/"+p, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(web.Close)
	port := func(l *listener) string { return l.srv.URL[strings.LastIndexByte(l.srv.URL, ':')+1:] }

	type boundary struct {
		name    string
		query   func(l *listener) string
		wantErr string
		reached bool // the listener must see the signed request (the operator chose it)
	}
	viaEndpoint := func(extra string) func(l *listener) string {
		return func(l *listener) string {
			return "SELECT count(*) FROM remote_segments('s3://data/x.arrow', s3_endpoint := " + q(l.srv.URL) + extra + ", retries := 0)"
		}
	}
	ownKeys := ", s3_access_key_id := 'AKIDQUERY', s3_secret_access_key := 'query-secret'"
	redirect := func(l *listener) string {
		return "SELECT count(*) FROM remote_segments(" + q(web.URL+"/ok/r/"+port(l)+"/ok/x.arrow") + ", retries := 0)"
	}
	catalogRow := func(l *listener) string {
		return "SELECT count(*) FROM remote_segments([{url: " + q(l.srv.URL+"/x.arrow") + "}], retries := 0)"
	}
	common := []boundary{
		{"s3_endpoint with the process's credentials", viaEndpoint(""), "process's credentials", false},
		{"s3_endpoint with the query's own keys, endpoint not admitted", viaEndpoint(ownKeys), "Permission Error", false},
		{"a redirect from an admitted URL to a host not admitted", redirect, "a redirect to", false},
		{"a catalog row naming a host not admitted", catalogRow, "Permission Error", false},
	}
	runs := []struct {
		name  string
		ext   string
		env   []string
		setup []string
		cases []boundary
	}{
		{"REMOTE_SEGMENTS_ALLOWED_PREFIXES", ext, []string{"REMOTE_SEGMENTS_ALLOWED_PREFIXES=s3://data/," + web.URL + "/ok/"}, nil,
			append(common,
				boundary{"a bucket in other case than the admitted one", func(l *listener) string {
					return "SELECT count(*) FROM remote_segments('s3://DATA/x.arrow', s3_endpoint := " + q(l.srv.URL) + ownKeys + ")"
				}, "is not under any prefix", false},
				boundary{"a trace file outside the list", func(l *listener) string {
					return "SELECT count(*) FROM remote_segments('s3://data/x.arrow', trace := '/tmp/rs-trace-outside.json')"
				}, "trace: Permission Error", false})},
		{"DuckDB's sandbox", ext, nil, []string{
			"SET allowed_directories = ['s3://data/', " + q(web.URL+"/ok/") + "]", "SET enable_external_access = false"}, common},
		{"2.0 edition settings, allow-list", extV2, []string{"REMOTE_SEGMENTS_ALLOWED_PREFIXES=s3://data/," + web.URL + "/ok/"}, nil, []boundary{
			{"SET remote_segments_s3_endpoint, configuration not locked", func(l *listener) string {
				return "SET remote_segments_s3_endpoint = " + q(l.srv.URL) + "; SELECT count(*) FROM remote_segments('s3://data/x.arrow', retries := 0)"
			}, "process's credentials", false},
		}},
		{"2.0 edition settings, locked by the operator", extV2, []string{"REMOTE_SEGMENTS_ALLOWED_PREFIXES=s3://data/," + web.URL + "/ok/"}, nil, []boundary{
			{"SET GLOBAL remote_segments_s3_endpoint, then lock_configuration: the operator's endpoint", func(l *listener) string {
				return "SET GLOBAL remote_segments_s3_endpoint = " + q(l.srv.URL) + "; SET lock_configuration = true; " +
					"SELECT count(*) FROM remote_segments('s3://data/x.arrow', retries := 0)"
			}, "not found", true},
		}},
		{"no sandbox (control: the query is trusted)", ext, nil, nil, []boundary{
			{"s3_endpoint with the process's credentials", viaEndpoint(""), "not found", true},
			{"a redirect from an S3 endpoint to another port", func(l *listener) string {
				front := httptest.NewServer(http.RedirectHandler(l.srv.URL+"/data/x.arrow", http.StatusTemporaryRedirect))
				t.Cleanup(front.Close)
				return "SELECT count(*) FROM remote_segments('s3://data/x.arrow', s3_endpoint := " + q(front.URL) + ", retries := 0)"
			}, "S3 redirect", false},
		}},
	}
	for _, run := range runs {
		c := startCLI(t, duckdb, run.ext, append(append([]string(nil), awsEnv...), run.env...)...)
		for _, s := range run.setup {
			if r := c.exec(s, time.Minute); r.err != "" {
				t.Fatalf("%s: %s: %s", run.name, s, r.err)
			}
		}
		for _, b := range run.cases {
			l := newListener(t)
			var r result
			for _, s := range strings.Split(b.query(l), "; ") {
				if r = c.exec(s, time.Minute); r.err != "" {
					break
				}
			}
			n, heads := l.conns.Load(), l.headers()
			switch {
			case !strings.Contains(r.err, b.wantErr):
				t.Errorf("%s: %s: error %q, want %q", run.name, b.name, r.err, b.wantErr)
			case !b.reached && n != 0:
				t.Errorf("%s: %s: the listener saw %d connections, want 0; headers:\n%s", run.name, b.name, n, heads)
			case b.reached && (n == 0 || !strings.Contains(heads, keyID) || !strings.Contains(heads, token)):
				t.Errorf("%s: %s: the listener saw %d connections and headers\n%s\nwant the signed request (key id and session token)", run.name, b.name, n, heads)
			default:
				t.Logf("%s: %s: %d connections; %s", run.name, b.name, n, firstLine(r.err))
			}
		}
		if strings.Contains(c.output(), token) || strings.Contains(c.output(), "process-secret-planted") {
			t.Errorf("%s: a process secret appears in the CLI's output", run.name)
		}
	}
}

// TestReportKeepsThreatModel: rewriting the matrix keeps the hand-written
// threat model and the fuzzing section after it, as they were.
func TestReportKeepsThreatModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RELIABILITY.md")
	tail := threatSectionMark + "\n## Threat model\n\nby hand\n\n" + fuzzSectionMark + "\n## Fuzzing\n\nby make fuzz\n"
	if err := os.WriteFile(path, []byte("# old table\n\n"+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	writeReport(t, path, nil, "8|28")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.HasSuffix(s, "\n"+tail) || strings.Contains(s, "# old table") {
		t.Fatalf("the rewritten report does not end with the kept sections:\n%s", s)
	}
}
