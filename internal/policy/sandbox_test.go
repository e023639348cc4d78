package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestAllowListAdmitsOnlyUnderItsPrefixes(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseAllowList(" /data/ok , s3://Bucket/ds/,https://h.example:8443/pub,relative/dir")
	if err != nil {
		t.Fatal(err)
	}
	admitted := []string{
		"/data/ok", "/data/ok/x.arrow", "file:///data/ok/a/b.arrow", "/data/ok/**/*.arrow", "/data/other/../ok/x.arrow",
		"s3://Bucket/ds/x.arrow", "S3://Bucket/ds/sub/", "https://h.example:8443/pub/a.arrow", "https://H.example:8443/pub",
		filepath.Join(wd, "relative/dir/x.arrow"), "relative/dir/y.arrow", "./relative/dir/z/",
	}
	refused := []string{
		"/data/okay/x.arrow", "/data/ok/../secret", "/data/ok/../../etc/passwd", "file:///etc/passwd", "/data/*",
		"s3://bucket/ds", "s3://bucket/dsx/a", "s3://other/ds/x", "https://h.example:8443/public/a", "http://h.example:8443/pub/a",
		"https://h.example/pub/a", "https://h.example:8443/pub/%2e%2e/secret", "relative/other", "gopher://x",
		"", "s3:///nohost",
		// Bucket names and keys are case-sensitive: another bucket, another key.
		"s3://bucket/ds/x.arrow", "s3://BUCKET/ds/x.arrow", "s3://Bucket/DS/x.arrow", "https://h.example:8443/PUB/a",
		// Split where the store splits: the bucket ends at the first "/".
		"s3://Bucket?/ds/x", "s3://Bucket#/ds/x", "s3://x@Bucket/ds/x", "s3://Bucket:1/ds/x",
		// A dot segment, which a server may resolve.
		"s3://Bucket/ds/../other/x", "s3://Bucket/ds/./x", "https://h.example:8443/pub/../x", "https://h.example:8443/pub/a/%2E%2E/%2e%2e/x",
	}
	checkAdmit(t, l.admit, admitted, refused)
}

func TestAllowListEmptyAdmitsEverything(t *testing.T) {
	for _, s := range []string{"", " , ,"} {
		l, err := parseAllowList(s)
		if err != nil || l != nil {
			t.Fatalf("parseAllowList(%q) = %v, %v; want nil, nil", s, l, err)
		}
		if err := l.admit("/anything"); err != nil {
			t.Errorf("nil list refused: %v", err)
		}
	}
}

func TestAllowListRejectsMalformedPrefix(t *testing.T) {
	for _, s := range []string{"s3://", "https://h/ok,http://%zz/"} {
		if l, err := parseAllowList(s); err == nil {
			t.Errorf("parseAllowList(%q) = %v, want an error", s, l)
		}
	}
}

// TestAllowListResolvesLinks: a local source is judged where its links
// lead, as DuckDB's sandbox judges it: a link under a prefix to a file
// elsewhere is refused, one to a file under the prefix admitted; a prefix
// named through a link admits the files it leads to, by either name.
func TestAllowListResolvesLinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"allowed/sub", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"allowed/sub/a.arrow", "other/secret.arrow"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range [][2]string{{"../other/secret.arrow", "allowed/out.arrow"}, {"../other", "allowed/outdir"},
		{"sub/a.arrow", "allowed/in.arrow"}, {"allowed", "alias"}} {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{root + "/allowed/", root + "/alias/"} {
		l, err := parseAllowList(prefix)
		if err != nil {
			t.Fatal(err)
		}
		admitted := []string{root + "/allowed/sub/a.arrow", root + "/allowed/in.arrow", root + "/alias/sub/a.arrow", "file://" + root + "/alias/in.arrow",
			root + "/allowed/sub/", root + "/alias/**/*.arrow"}
		refused := []string{root + "/allowed/out.arrow", root + "/allowed/outdir/secret.arrow", "file://" + root + "/alias/out.arrow",
			root + "/other/secret.arrow", root + "/allowed/outdir/"}
		checkAdmit(t, l.admit, admitted, refused)
		memo := &pathMemo{dirs: map[string]string{}}
		for range 2 { // the memo cold, then warm
			checkAdmit(t, func(s string) error { return l.admitVia(s, memo) }, admitted, refused)
		}
	}
}

// TestPathMemoIsDuckDBLocalPath: a path resolved through a bind's memo of
// folders is the one duckdbLocalPath gives, the memo cold or warm, for
// files, links to files and folders, missing files and folders, dot
// elements and relative paths.
func TestPathMemoIsDuckDBLocalPath(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a/b/f.arrow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"b/f.arrow", "a/flink.arrow"}, {"a/b", "dlink"}, {"nowhere", "a/dangling"}, {"loop2", "a/loop1"}, {"loop1", "a/loop2"}} {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	memo := &pathMemo{dirs: map[string]string{}}
	for range 2 {
		for _, rel := range []string{"a/b/f.arrow", "a/flink.arrow", "dlink/f.arrow", "dlink/missing.arrow", "a/dangling", "a/loop1",
			"missing/x/y.arrow", "a/b/../b/f.arrow", "a/./b/f.arrow", "dlink/../flink.arrow", "a/b", "a/b/", "dlink", "a/**/*.arrow"} {
			p := root + "/" + rel
			want, err1 := duckdbLocalPath(p)
			got, err2 := memo.local(p)
			if got != want || (err1 == nil) != (err2 == nil) {
				t.Errorf("%s: memo %q, %v; duckdbLocalPath %q, %v", rel, got, err2, want, err1)
			}
		}
		if got, want := fmt.Sprint(memo.local("relative/x")), fmt.Sprint(duckdbLocalPath("relative/x")); got != want {
			t.Errorf("a relative path: memo %s, duckdbLocalPath %s", got, want)
		}
	}
}
