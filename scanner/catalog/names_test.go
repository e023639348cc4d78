package catalog

import "testing"

// TestResolveRawKeys: an s3:// catalog's relative rows resolve as keys,
// taken as written: '#', '?' and '%' are characters of the catalog's key
// and of the row's, and only the row's dot segments are resolved; a URL
// parser would have ended the base's path at '#' or '?' and resolved
// against the folder above it.
func TestResolveRawKeys(t *testing.T) {
	for _, tt := range []struct{ base, ref, want string }{
		{"s3://b/names/c#1/cat.csv", "x.arrow", "s3://b/names/c#1/x.arrow"},
		{"s3://b/names/q?1/cat.csv", "x.arrow", "s3://b/names/q?1/x.arrow"},
		{"s3://b/names/p%41/cat.csv", "x.arrow", "s3://b/names/p%41/x.arrow"},
		{"s3://b/names/p%41/cat.csv", "y%41#2.arrow", "s3://b/names/p%41/y%41#2.arrow"},
		{"s3://b/a/b/cat.csv", "../x.arrow", "s3://b/a/x.arrow"},
		{"s3://b/a/b/cat.csv", "./x/./y.arrow", "s3://b/a/b/x/y.arrow"},
		{"s3://b/a/b/cat.csv", "../../../../x.arrow", "s3://b/x.arrow"},
		{"s3://b/a/b/cat.csv", "x/..", "s3://b/a/b/"},
		{"s3://b/a/b/cat.csv", "x//y.arrow", "s3://b/a/b/x//y.arrow"},
		{"s3://b/a/b/cat.csv", "/top.arrow", "s3://b/top.arrow"},
		{"s3://b/cat.csv", "x.arrow", "s3://b/x.arrow"},
		{"S3://b/a#/cat.csv", "x.arrow", "S3://b/a#/x.arrow"},
		{"s3://b/a/cat.csv", "s3://o/k#1/x.arrow", "s3://o/k#1/x.arrow"},
	} {
		got, err := resolveURL(tt.base, tt.ref)
		if err != nil || got != tt.want {
			t.Errorf("resolveURL(%q, %q) = %q, %v; want %q", tt.base, tt.ref, got, err, tt.want)
		}
	}
}

// TestObjectPathIDs: segment and chunk ids are the name as the store
// reads it: a path and an s3:// key as written, a file:// or http(s)://
// URL decoded, a query cut from an http(s) URL only.
func TestObjectPathIDs(t *testing.T) {
	for _, tt := range []struct{ url, segment, chunk string }{
		{"/d/c#1/x.arrow", "c#1", "x"},
		{"/d/q?1/x.arrow", "q?1", "x"},
		{"s3://b/d/c#1/x.arrow", "c#1", "x"},
		{"s3://b/d/q?1/x%41.arrow", "q?1", "x%41"},
		{"file:///d/c%231/x.arrow", "c#1", "x"},
		{"file:///d/p%2541/segment=s%201/x%20y.arrow", "s 1", "x y"},
		{"https://h/d/c%231/x.arrow?sig=a/b#f", "c#1", "x"},
		{"http://h/d/seg/x.arrow#frag/z", "seg", "x"},
		{"s3://b/x.arrow", "", "x"},
		{"file:///d/bad%zz/x.arrow", "bad%zz", "x"},
	} {
		if s, c := segmentOf(tt.url), chunkIDOf(tt.url); s != tt.segment || c != tt.chunk {
			t.Errorf("%q: segment %q, chunk %q; want %q, %q", tt.url, s, c, tt.segment, tt.chunk)
		}
	}
}

// TestChunkIDIn: a row's chunk id taken from its folder and name apart is
// the one taken from its whole URL, for every kind of URL and name.
func TestChunkIDIn(t *testing.T) {
	folders := []string{"", "/d/", "/d/c#1/", "d/p%41/", "s3://b/", "s3://b/q?1/", "file:///d/", "file:///d/c%231/",
		"file:///d/bad%zz/", "file:///d/end%2/", "https://h/d/", "http://h/d%20e/", "HTTPS://h/x/", "https://h/d?a=1/", "https://h/d#f/"}
	names := []string{"x.arrow", "x", "x%41.arrow", "x%2Fy.arrow", "x%zz.arrow", "x.arrow?sig=1", "x.arrow#f", "%", "..", ".", "a.b.c", "?q"}
	for _, f := range folders {
		for _, n := range names {
			if got, want := chunkIDIn(f, n), chunkIDOf(f+n); got != want {
				t.Errorf("chunkIDIn(%q, %q) = %q; chunkIDOf(%q) = %q", f, n, got, f+n, want)
			}
		}
	}
}
