package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	lists := fmt.Sprintf("SET allowed_directories = [%s, %s, %s]; SET allowed_paths = [%s]",
		q(root+"/allowed"), q("s3://data/chunks/"), q(web.srv.URL+"/ok/chunks/"), q(root+"/exact/tiny.arrow"))
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
