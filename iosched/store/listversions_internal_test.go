package store

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestListVersionsBounded: a listing that never ends (every page
// truncated, with a new token) or runs far past the names asked is given
// up after listPagesFor pages, its names left to be asked one by one;
// fewer than MinListedVersions names are not listed at all; the versions
// it returns are those of the names asked, as the listing gave them.
func TestListVersionsBounded(t *testing.T) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := pages.Add(1)
		var b strings.Builder
		b.WriteString("<ListBucketResult><IsTruncated>true</IsTruncated>")
		fmt.Fprintf(&b, "<NextContinuationToken>t%d</NextContinuationToken>", n)
		if n == 1 {
			// One asked name, one not asked, on the first page.
			b.WriteString(`<Contents><Key>ds/k000</Key><Size>1</Size><ETag>&quot;v0&quot;</ETag></Contents>`)
			b.WriteString(`<Contents><Key>ds/k000x</Key><Size>1</Size><ETag>"vx"</ETag></Contents>`)
		}
		for i := range 1000 {
			fmt.Fprintf(&b, "<Contents><Key>ds/k000-%d-%04d</Key><Size>1</Size><ETag>\"e\"</ETag></Contents>", n, i)
		}
		b.WriteString("</ListBucketResult>")
		io.WriteString(w, b.String())
	}))
	defer srv.Close()
	st := s3At(t, srv, "http://s3.example.test:9000", "path")
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("bkt/ds/k%03d", i))
	}
	got, sent := st.ListVersions(context.Background(), names, 4)
	if want := listPagesFor(len(names)); sent != want || pages.Load() != int64(want) {
		t.Fatalf("%d pages asked for (%d counted), want %d", pages.Load(), sent, want)
	}
	if len(got) != 1 || got["bkt/ds/k000"] != `etag:"v0"` {
		t.Fatalf("versions %v; want k000's alone", got)
	}
	pages.Store(0)
	if got, sent := st.ListVersions(context.Background(), names[:MinListedVersions-1], 4); len(got) != 0 || sent != 0 || pages.Load() != 0 {
		t.Fatalf("%d names: %v, %d pages", MinListedVersions-1, got, pages.Load())
	}
}
