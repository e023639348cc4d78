package policy

import (
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
