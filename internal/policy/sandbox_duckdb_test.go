package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sandboxTree makes root/{allowed/{a.arrow,sub/},allowedx/,other/secret,
// allowed/out -> ../other, allowed/in -> sub} and returns root with its
// symbolic links resolved (as DuckDB reports allowed_directories).
func sandboxTree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"allowed/sub", "allowedx", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"allowed/a.arrow", "other/secret", "other/exact.arrow"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../other", filepath.Join(root, "allowed/out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(root, "allowed/in")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestDuckDBSandboxLocalPaths(t *testing.T) {
	root := sandboxTree(t)
	s := &duckdbSandbox{dirs: []string{root + "/allowed/"}, paths: []string{root + "/other/exact.arrow"}}
	admitted := []string{
		root + "/allowed/a.arrow",
		root + "/allowed/not-yet.arrow", // need not exist
		root + "/allowed/sub/",
		root + "/allowed", // the directory itself: a listing
		root + "/allowed/**/*.arrow",
		"file://" + root + "/allowed/a.arrow",
		root + "/allowed/in/x.arrow", // a link that stays inside
		root + "/other/exact.arrow",  // an allowed path
		root + "/allowed/../other/exact.arrow",
		root + "/allowed/sub/../a.arrow",
		root + "/allowed/missing/../a.arrow", // .. over a component that does not exist
	}
	refused := []string{
		root + "/allowedx/a.arrow", // a sibling continuing the name
		root + "/other/secret",     // a sibling directory
		root + "/allowed/../other/secret",
		root + "/allowed/out/secret", // a link that leads out
		root + "/allowed/out/",
		root + "/allowed/missing/../../other/secret",
		root + "/other/exact.arrow/x",
		root + "/other/",
		root + "/**/*.arrow",
		root,
		"file:///etc/passwd",
		"s3://bucket/x.arrow",
		"",
	}
	checkAdmit(t, s.admit, admitted, refused)
	if err := s.admit(refused[0]); err == nil || !strings.Contains(err.Error(), "allowed_directories ["+root+"/allowed/]") {
		t.Errorf("admit(%q): %v does not name the settings", refused[0], err)
	}
}

func TestDuckDBSandboxRelativePath(t *testing.T) {
	root := sandboxTree(t)
	t.Chdir(root)
	s := &duckdbSandbox{dirs: []string{root + "/allowed/"}}
	if err := s.admit("allowed/a.arrow"); err != nil {
		t.Errorf("relative path under the directory: %v", err)
	}
	if err := s.admit("./allowed/../other/secret"); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("relative .. escape: %v, want ErrNotAllowed", err)
	}
}

func TestDuckDBSandboxURLs(t *testing.T) {
	s := &duckdbSandbox{
		dirs:  []string{"https://h.example:8443/pub/", "s3://bucket/ds/"},
		paths: []string{"s3://bucket/one.arrow"},
	}
	admitted := []string{
		"https://h.example:8443/pub/a.arrow", "https://h.example:8443/pub/sub/", "https://h.example:8443/pub/a.arrow?sig=x",
		"s3://bucket/ds/x.arrow", "s3://bucket/ds/**/*.arrow", "s3://bucket/ds/", "s3://bucket/one.arrow",
	}
	refused := []string{
		"https://h.example:8443/public/a", "http://h.example:8443/pub/a", "https://h.example/pub/a",
		"https://h.example:8443/pub/../secret", "https://h.example:8443/pub/%2e%2e/secret", "https://h.example:8443/pub/./a",
		"s3://bucket/dsx/a", "s3://other/ds/x", "s3://bucket/one.arrow.x", "S3://bucket/ds/x.arrow",
		"s3://bucket/ds", // a URL without its slash is an object, as for DuckDB
		"/pub/a.arrow",
		// The store takes an s3:// key as written, "#" and "?" included: the
		// dot segments after them reach the server.
		"s3://bucket/ds/x#/../../other/y", "s3://bucket/ds/x?/../../other/y", "s3://bucket/ds/a/../../other",
		// A bucket name the store refuses.
		"s3://bucket/ds/../../evil.com#/x",
	}
	checkAdmit(t, s.admit, admitted, refused)
}

// checkAdmit asserts that admit takes every source of admitted and refuses
// every one of refused with ErrNotAllowed.
func checkAdmit(t *testing.T, admit func(string) error, admitted, refused []string) {
	t.Helper()
	for _, src := range admitted {
		if err := admit(src); err != nil {
			t.Errorf("admit(%q) = %v, want nil", src, err)
		}
	}
	for _, src := range refused {
		if err := admit(src); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("admit(%q) = %v, want ErrNotAllowed", src, err)
		}
	}
}

// TestDuckDBSandboxURLsInLocalForm: DuckDB 1.5.x (without httpfs) reports a
// URL entry as a path under its working directory; the rule recognizes it,
// but never lets a local directory that holds the working directory admit
// a URL.
func TestDuckDBSandboxURLsInLocalForm(t *testing.T) {
	wd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	s := &duckdbSandbox{dirs: []string{wd + "/http:/127.0.0.1:9/edge/", wd + "/s3:/data/edge/"}, paths: []string{wd + "/s3:/data/one.arrow"}}
	checkAdmit(t, s.admit,
		[]string{"http://127.0.0.1:9/edge/a.arrow", "s3://data/edge/x/y.arrow", "s3://data/one.arrow"},
		[]string{"http://127.0.0.1:9/other/a.arrow", "http://127.0.0.1:9/edge/../other", "s3://data/edgex/a", "s3://data/two.arrow", "https://127.0.0.1:9/edge/a.arrow"})
	// A local directory holding the working directory admits no URL.
	wide := &duckdbSandbox{dirs: []string{wd + "/", "/"}}
	checkAdmit(t, wide.admit, nil, []string{"http://127.0.0.1:9/edge/a.arrow", "s3://data/x"})
}

func TestDuckDBSandboxExternalAccessAdmitsAll(t *testing.T) {
	for _, s := range []*duckdbSandbox{nil, {external: true}, {external: true, dirs: []string{"/nowhere/"}}} {
		for _, src := range []string{"/etc/passwd", "s3://b/k", "https://h/../x", ""} {
			if err := s.admit(src); err != nil {
				t.Errorf("%+v admit(%q) = %v, want nil", s, src, err)
			}
		}
	}
	if err := (&duckdbSandbox{}).admit("/etc/passwd"); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("external access off, nothing allowed: %v, want ErrNotAllowed", err)
	}
}

func TestSandboxesCombineBoth(t *testing.T) {
	env, err := parseAllowList("/data/")
	if err != nil {
		t.Fatal(err)
	}
	both := Sandboxes{env: env, db: &duckdbSandbox{dirs: []string{"/data/edge/"}}}.Sources()
	if err := both("/data/edge/a.arrow"); err != nil {
		t.Errorf("admitted by both: %v", err)
	}
	for src, want := range map[string]string{
		"/data/types/a.arrow": "cannot access",                    // the list admits, DuckDB refuses
		"/etc/passwd":         "REMOTE_SEGMENTS_ALLOWED_PREFIXES", // the list refuses first
	} {
		if err := both(src); !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), want) {
			t.Errorf("sources()(%q) = %v, want ErrNotAllowed saying %q", src, err, want)
		}
	}
	if f := (Sandboxes{}).Sources(); f != nil {
		t.Error("no sandbox: sources() is not nil")
	}
	if err := (Sandboxes{env: env}).output("trace", "/tmp/t.json"); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("the list confines the trace file as it confines sources: %v", err)
	}
	if err := (Sandboxes{env: env}).output("trace", "/data/t.json"); err != nil {
		t.Errorf("a trace under the list: %v", err)
	}
	if err := (Sandboxes{db: &duckdbSandbox{}}).output("trace", "/tmp/t.json"); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("DuckDB's sandbox refuses writes: %v", err)
	}
}
