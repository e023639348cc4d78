package store_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// endlessS3 is an S3 endpoint whose listing never ends: every page holds
// perPage keys and is truncated, with a continuation token of token(n) for
// page n. It counts the pages asked for.
func endlessS3(t *testing.T, perPage int, token func(n int64) string) (*httptest.Server, *atomic.Int64) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("list-type") != "2" {
			http.Error(w, "not a listing", http.StatusBadRequest)
			return
		}
		n := pages.Add(1)
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name>`)
		for i := 0; i < perPage; i++ {
			fmt.Fprintf(&b, "<Contents><Key>ds/p%09d-%03d.arrow</Key><Size>1</Size></Contents>", n, i)
		}
		fmt.Fprintf(&b, "<KeyCount>%d</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>%s</NextContinuationToken></ListBucketResult>", perPage, token(n))
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	return srv, &pages
}

// TestListEndless: a listing that never ends fails with ErrTooMany after
// the bound on objects, or on pages when its pages are empty, and one that
// repeats its continuation token fails at once; none asks for a page past
// the bound.
func TestListEndless(t *testing.T) {
	leakCheck(t)
	defer store.SetListBounds(95, 20)()
	fresh := func(n int64) string { return fmt.Sprintf("t%d", n) }
	for _, tt := range []struct {
		name     string
		perPage  int
		token    func(int64) string
		want     string
		maxPages int64
	}{
		{"objects", 10, fresh, "too many objects: more than 95 in one listing", 10},
		{"empty pages", 0, fresh, "too many objects: a listing of more than 20 pages", 21},
		{"same token", 10, func(int64) string { return "again" }, `continuation token "again" is empty or the last page's`, 2},
		{"no token", 10, func(int64) string { return "" }, `continuation token "" is empty`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, pages := endlessS3(t, tt.perPage, tt.token)
			st, name := open(t, "s3://bkt/ds/", store.Options{S3Endpoint: srv.URL, S3AccessKeyID: "k", S3SecretAccessKey: "s", S3Region: "us-east-1"})
			defer st.Close()
			objs, err := st.List(context.Background(), name)
			if !strings.Contains(fmt.Sprint(err), tt.want) || !strings.Contains(err.Error(), "LIST s3://bkt/ds/") {
				t.Fatalf("%d objects, err = %v; want %q", len(objs), err, tt.want)
			}
			if tt.perPage > 0 && tt.token(1) == "t1" && !errors.Is(err, store.ErrTooMany) {
				t.Fatalf("err = %v, not ErrTooMany", err)
			}
			if got := pages.Load(); got > tt.maxPages {
				t.Fatalf("%d pages asked for, want at most %d", got, tt.maxPages)
			}
			// The same through a glob's listings by folder, which also asks
			// for the first page of a flat listing.
			pages.Store(0)
			objs, err = store.Glob(context.Background(), st, name+"**", 4)
			if !strings.Contains(fmt.Sprint(err), tt.want) || !strings.Contains(err.Error(), "LIST s3://bkt/ds/") {
				t.Fatalf("glob: %d objects, err = %v; want %q", len(objs), err, tt.want)
			}
			if got := pages.Load(); got > tt.maxPages+1 {
				t.Fatalf("glob: %d pages asked for, want at most %d", got, tt.maxPages)
			}
		})
	}
}

// TestListFileBound: a local listing stops at the bound on objects too;
// one at the bound is whole.
func TestListFileBound(t *testing.T) {
	leakCheck(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"a/1": {1}, "a/2": {2}, "b/3": {3}})
	st, name := open(t, dir+"/", store.Options{})
	defer st.Close()
	restore := store.SetListBounds(3, 3)
	objs, err := st.List(context.Background(), name)
	restore()
	if err != nil || len(objs) != 3 {
		t.Fatalf("at the bound: %d objects, %v", len(objs), err)
	}
	defer store.SetListBounds(2, 2)()
	objs, err = st.List(context.Background(), name)
	if !errors.Is(err, store.ErrTooMany) || !strings.Contains(err.Error(), "more than 2 in one listing") {
		t.Fatalf("past the bound: %d objects, err = %v", len(objs), err)
	}
	if _, err := store.Glob(context.Background(), st, name+"*/*", 4); !errors.Is(err, store.ErrTooMany) {
		t.Fatalf("a glob past the bound: err = %v", err)
	}
}

// fakeS3 is an S3 endpoint that lists the keys it holds as ListObjectsV2
// does (prefix, delimiter "/", start-after, continuation tokens) with
// perPage entries a page, and serves nothing else. Before each listing it
// calls hook, if set, with the request and the listing's prefix: a
// non-zero status fails the listing with it (closeConn: the connection
// closes with no answer). It counts the listings' pages.
type fakeS3 struct {
	keys    []string // sorted
	perPage int
	hook    func(r *http.Request, prefix string) int
	pages   atomic.Int64
	// ignore names the parameters the server ignores, as a broken
	// server or a proxy that drops them would: "prefix", "start-after".
	ignore []string
}

// closeConn is the status a fakeS3 hook returns to close the connection.
const closeConn = -1

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("list-type") != "2" {
		http.Error(w, "not a listing", http.StatusBadRequest)
		return
	}
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	if f.hook != nil {
		switch status := f.hook(r, prefix); status {
		case 0:
		case closeConn:
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		default:
			w.WriteHeader(status)
			return
		}
	}
	f.pages.Add(1)
	if slices.Contains(f.ignore, "prefix") {
		prefix = ""
	}
	after := q.Get("start-after")
	if slices.Contains(f.ignore, "start-after") {
		after = ""
	}
	token := q.Get("continuation-token")
	if token != "" {
		after = token[2:]
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name>`)
	n, last, truncated := 0, "", false
	for _, k := range f.keys {
		if !strings.HasPrefix(k, prefix) || k <= after || (strings.HasPrefix(token, "p:") && strings.HasPrefix(k, after)) {
			continue
		}
		item, folder := k, false
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				item, folder = k[:len(prefix)+i+1], true
				if "p:"+item == last {
					continue
				}
			}
		}
		if n == f.perPage {
			truncated = true
			break
		}
		n++
		var esc strings.Builder
		xml.EscapeText(&esc, []byte(item))
		if folder {
			fmt.Fprintf(&b, "<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>", esc.String())
			last = "p:" + item
		} else {
			fmt.Fprintf(&b, "<Contents><Key>%s</Key><Size>%d</Size></Contents>", esc.String(), len(k))
			last = "k:" + item
		}
	}
	fmt.Fprintf(&b, "<KeyCount>%d</KeyCount><IsTruncated>%t</IsTruncated>", n, truncated)
	if truncated {
		var esc strings.Builder
		xml.EscapeText(&esc, []byte(last))
		fmt.Fprintf(&b, "<NextContinuationToken>%s</NextContinuationToken>", esc.String())
	}
	b.WriteString("</ListBucketResult>")
	w.Header().Set("Content-Type", "application/xml")
	w.Write([]byte(b.String()))
}

// openFake serves f and opens an S3 store on it.
func openFake(t *testing.T, f *fakeS3) store.Store {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st, _ := open(t, "s3://bkt/", store.Options{S3Endpoint: srv.URL, S3AccessKeyID: "k", S3SecretAccessKey: "s", S3Region: "us-east-1"})
	t.Cleanup(func() { st.Close() })
	return st
}

// treeKeys is a tree with objects at several levels: folders that are
// also objects ("ds/s1" and "ds/s1/…", the marker "ds/s2/"), siblings
// that sort between a folder's names ("ds/s1.arrow", "ds/s1-x/…"), an
// empty part ("ds//e.arrow"), folders no pattern part matches, and deep
// and sparse folders.
func treeKeys() []string {
	keys := []string{
		"ds/a.arrow", "ds/s1", "ds/s1.arrow", "ds/s1-x/a.arrow", "ds/s2/", "ds//e.arrow",
		"ds/deep/1/2/3/4/5/6/x.arrow", "ds/deep/1/y.arrow", "ds/deep/1/2/3/z.txt",
		"ds/other.txt", "top.arrow", "dsx/a.arrow",
	}
	for s := range 7 {
		for c := range 5 {
			keys = append(keys, fmt.Sprintf("ds/s%d/c%d.arrow", s, c))
			if c%2 == 0 {
				keys = append(keys, fmt.Sprintf("ds/s%d/sub%d/c%d.arrow", s, c, c))
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// TestGlobByFolder: a glob listed folder by folder, at once, finds what a
// flat listing filtered by the pattern finds, in the same order, whatever
// the parallelism (which moves the split between levels listed with a
// delimiter and ranges).
func TestGlobByFolder(t *testing.T) {
	leakCheck(t)
	// Pages of 1 to 20 names move where the first page ends (and what it
	// tells of the folders' sizes); 1000 holds the whole tree.
	for _, perPage := range []int{1, 3, 20, 1000} {
		t.Run(fmt.Sprint(perPage), func(t *testing.T) { testGlobByFolder(t, perPage) })
	}
}

func testGlobByFolder(t *testing.T, perPage int) {
	f := &fakeS3{keys: treeKeys(), perPage: perPage}
	st := openFake(t, f)
	ctx := context.Background()
	all, err := st.List(ctx, "bkt/")
	if err != nil || len(all) != len(f.keys) {
		t.Fatalf("flat listing: %d objects, %v; want %d", len(all), err, len(f.keys))
	}
	for _, pattern := range []string{
		"ds/**/*.arrow", "ds/**", "**", "ds/*/*.arrow", "ds/s*/**/c?.arrow", "ds/*", "ds/s1*", "ds/deep/**/x.arrow",
		"ds/*/sub*/*", "*/s1/*", "ds//*", "d*/**/*.arrow", "ds/s1/c1*.arrow", "nothing/**",
	} {
		var want []string
		for _, o := range all {
			if store.Match("bkt/"+pattern, o.Name) {
				want = append(want, o.Name)
			}
		}
		for _, parallel := range []int{1, 2, 3, 8, 64} {
			got, err := store.Glob(ctx, st, "bkt/"+pattern, parallel)
			if err != nil {
				t.Fatalf("Glob(%s, %d): %v", pattern, parallel, err)
			}
			var names []string
			for _, o := range got {
				names = append(names, o.Name)
				if o.Size != int64(len(strings.TrimPrefix(o.Name, "bkt/"))) {
					t.Fatalf("Glob(%s, %d): %s of size %d", pattern, parallel, o.Name, o.Size)
				}
			}
			if !slices.Equal(names, want) {
				t.Errorf("Glob(%s, %d) =\n%v\nwant\n%v", pattern, parallel, names, want)
			}
		}
	}
	for _, prefix := range []string{"", "ds/", "ds/s", "ds/s1", "ds/deep/"} {
		want, err := st.List(ctx, "bkt/"+prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, parallel := range []int{2, 5, 64} {
			got, err := store.ListTree(ctx, st, "bkt/"+prefix, parallel)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("ListTree(%q, %d) = %v, %v; want %v", prefix, parallel, got, err, want)
			}
		}
	}
}

// folderKeys is ds/s0/ … ds/s<n-1>/, each with m objects.
func folderKeys(n, m int) []string {
	var keys []string
	for s := range n {
		for c := range m {
			keys = append(keys, fmt.Sprintf("ds/s%d/c%d.arrow", s, c))
		}
	}
	slices.Sort(keys)
	return keys
}

// TestGlobListsAtOnce: the folders of a glob are listed at once, as many
// listings at a time as the parallelism allows and no more, whether the
// folders are listed one by one or in ranges. Each listing below ds/
// waits until want of them run at once: listed one after the other, the
// first would wait for ever (the test's deadline fails it).
func TestGlobListsAtOnce(t *testing.T) {
	leakCheck(t)
	for _, tt := range []struct{ folders, parallel, want int }{
		{4, 8, 4}, // each folder with a delimiter
		{6, 3, 3}, // three ranges of two folders
	} {
		t.Run(fmt.Sprintf("%d folders, parallel %d", tt.folders, tt.parallel), func(t *testing.T) {
			var running, most atomic.Int64
			all := make(chan struct{})
			f := &fakeS3{keys: folderKeys(tt.folders, 5), perPage: 2}
			f.hook = func(r *http.Request, prefix string) int {
				if prefix == "ds/" {
					return 0
				}
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n == int64(tt.want) {
					close(all)
				}
				select {
				case <-all:
				case <-r.Context().Done():
				}
				return 0
			}
			st := openFake(t, f)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got, err := store.Glob(ctx, st, "bkt/ds/**/*.arrow", tt.parallel)
			if err != nil || len(got) != tt.folders*5 {
				t.Fatalf("%d objects, %v; want %d listed by %d listings at once", len(got), err, tt.folders*5, tt.want)
			}
			if m := most.Load(); m != int64(tt.want) {
				t.Fatalf("at most %d listings at once, want %d (parallel %d)", m, tt.want, tt.parallel)
			}
		})
	}
}

// TestGlobCancel: canceling a glob stops every listing it runs, and it
// returns the context's error with no goroutine left (leakCheck).
func TestGlobCancel(t *testing.T) {
	leakCheck(t)
	started := make(chan string, 8)
	f := &fakeS3{keys: folderKeys(4, 3), perPage: 2}
	f.hook = func(r *http.Request, prefix string) int {
		if prefix == "ds/" {
			return 0
		}
		started <- prefix
		<-r.Context().Done()
		return http.StatusServiceUnavailable
	}
	st := openFake(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := store.Glob(ctx, st, "bkt/ds/*/*.arrow", 8)
		done <- err
	}()
	deadline := time.After(20 * time.Second)
	for range 4 {
		select {
		case <-started:
		case <-deadline:
			cancel()
			t.Fatalf("the four folders' listings did not all start (glob: %v)", <-done)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled glob: err = %v, want context.Canceled", err)
	}
}

// TestGlobFolderError: one folder's listing failing fails the glob with
// that listing's error, naming its URL, and stops the others, which would
// otherwise wait for ever; in ranges as in folders.
func TestGlobFolderError(t *testing.T) {
	leakCheck(t)
	for _, tt := range []struct {
		parallel int
		fail     func(r *http.Request, prefix string) bool
		url      string
	}{
		{8, func(_ *http.Request, prefix string) bool { return prefix == "ds/s2/" }, "LIST s3://bkt/ds/s2/: HTTP 500"},
		{2, func(r *http.Request, _ string) bool { return r.URL.Query().Get("start-after") == "ds/s2" }, "LIST s3://bkt/ds/s: HTTP 500"},
	} {
		f := &fakeS3{keys: folderKeys(4, 3), perPage: 2}
		f.hook = func(r *http.Request, prefix string) int {
			switch {
			case prefix == "ds/":
				return 0
			case tt.fail(r, prefix):
				return http.StatusInternalServerError
			}
			<-r.Context().Done()
			return http.StatusServiceUnavailable
		}
		st := openFake(t, f)
		_, err := store.Glob(context.Background(), st, "bkt/ds/**/*.arrow", tt.parallel)
		if err == nil || !strings.Contains(err.Error(), tt.url) {
			t.Fatalf("parallel %d: err = %v, want %q", tt.parallel, err, tt.url)
		}
	}
}

// TestGlobBounds: the bounds on objects and pages hold for the listings of
// one glob together, though each alone is far under them.
func TestGlobBounds(t *testing.T) {
	leakCheck(t)
	f := &fakeS3{keys: folderKeys(6, 5), perPage: 2}
	st := openFake(t, f)
	ctx := context.Background()
	for _, parallel := range []int{2, 8} {
		f.pages.Store(0)
		if _, err := store.Glob(ctx, st, "bkt/ds/**/*.arrow", parallel); err != nil {
			t.Fatal(err)
		}
		pages := int(f.pages.Load())
		for _, tt := range []struct {
			objects, pages int
			want           string
		}{
			{30, pages, ""},
			{29, pages, "more than 29 in one listing"},
			{30, pages - 1, fmt.Sprintf("a listing of more than %d pages", pages-1)},
		} {
			restore := store.SetListBounds(tt.objects, tt.pages)
			objs, err := store.Glob(ctx, st, "bkt/ds/**/*.arrow", parallel)
			restore()
			if tt.want == "" {
				if err != nil || len(objs) != 30 {
					t.Fatalf("parallel %d, at the bounds: %d objects, %v", parallel, len(objs), err)
				}
				continue
			}
			if !errors.Is(err, store.ErrTooMany) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "LIST s3://bkt/ds/") {
				t.Fatalf("parallel %d, bounds %d objects %d pages: err = %v; want %q", parallel, tt.objects, tt.pages, err, tt.want)
			}
		}
	}
}

// TestGlobRequests: what a glob costs in requests at most, as the README
// states it: a tree whose names fit in one page takes the two requests of
// its first round trip; folders that a page holds many of are listed in
// ranges of about a page each; folders larger than a page, one request
// each (of one page each here); a level of more folders than the listing
// may run at once, in that many ranges, a page each per 1000 names and
// one more where a range ends at a page's end.
func TestGlobRequests(t *testing.T) {
	leakCheck(t)
	for _, tt := range []struct {
		folders, objects, requests int
	}{
		{10, 8, 2},     // 80 names: the first page is the answer
		{128, 8, 3},    // the first page holds 124 whole folders: one range for the other 4
		{10, 1000, 12}, // the first page is the first folder: its end, and the other 9
		{100, 1000, 2 + 100 + 64},
	} {
		f := &fakeS3{keys: folderKeys(tt.folders, tt.objects), perPage: 1000}
		st := openFake(t, f)
		got, err := store.Glob(context.Background(), st, "bkt/ds/**/*.arrow", 64)
		if err != nil || len(got) != tt.folders*tt.objects {
			t.Fatalf("%d folders of %d: %d objects, %v", tt.folders, tt.objects, len(got), err)
		}
		if n := f.pages.Load(); n > int64(tt.requests) {
			t.Errorf("%d folders of %d objects: %d requests, want at most %d", tt.folders, tt.objects, n, tt.requests)
		}
	}
}

// TestGlobRetriesPages: a listing page answered 503 SlowDown, or whose
// connection closes before the answer, is asked again, for every listing
// of a glob (they run at once, so one such answer is likely on a store
// under load): the glob's answer is the whole listing, in order. A page
// that is always throttled fails the glob, naming its URL, after a few
// attempts.
func TestGlobRetriesPages(t *testing.T) {
	leakCheck(t)
	keys := folderKeys(6, 5)
	var want []string
	for _, k := range keys {
		if strings.HasSuffix(k, ".arrow") {
			want = append(want, "bkt/"+k)
		}
	}
	var mu sync.Mutex
	tries := map[string]int{} // by request query
	f := &fakeS3{keys: keys, perPage: 4}
	f.hook = func(r *http.Request, prefix string) int {
		mu.Lock()
		tries[r.URL.RawQuery]++
		n := tries[r.URL.RawQuery]
		mu.Unlock()
		switch n {
		case 1:
			return http.StatusServiceUnavailable
		case 2:
			return closeConn
		}
		return 0
	}
	st := openFake(t, f)
	got, err := store.Glob(context.Background(), st, "bkt/ds/**/*.arrow", 4)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range got {
		names = append(names, o.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("glob after retries: %v\nwant %v", names, want)
	}
	mu.Lock()
	for q, n := range tries {
		if n != 3 {
			t.Errorf("listing %q asked %d times, want 3 (503, a closed connection, the page)", q, n)
		}
	}
	mu.Unlock()

	f = &fakeS3{keys: keys, perPage: 4}
	var asked atomic.Int64
	f.hook = func(r *http.Request, prefix string) int {
		asked.Add(1)
		return http.StatusServiceUnavailable
	}
	st = openFake(t, f)
	_, err = store.Glob(context.Background(), st, "bkt/ds/**/*.arrow", 1)
	if err == nil || !strings.Contains(err.Error(), "LIST s3://bkt/ds/") || !errors.Is(err, store.ErrThrottled) {
		t.Fatalf("an always throttled listing: err = %v", err)
	}
	if n := asked.Load(); n < 2 || n > 10 {
		t.Errorf("an always throttled page was asked %d times, want a few", n)
	}
}

// TestGlobFirstPage: GlobFirst and ListTreeFirst hand over the first
// page's matches, once, before they return, and those are the answer's
// first objects; a listing of one page, or a first page with no match,
// hands over nothing (the answer is there as soon).
func TestGlobFirstPage(t *testing.T) {
	leakCheck(t)
	ctx := context.Background()
	for _, perPage := range []int{1, 3, 20, 1000} {
		f := &fakeS3{keys: treeKeys(), perPage: perPage}
		st := openFake(t, f)
		for _, pattern := range []string{"ds/**/*.arrow", "ds/*/*.arrow", "**", "ds/deep/**/x.arrow", "nothing/**"} {
			var calls int
			var first []store.ObjectInfo
			got, err := store.GlobFirst(ctx, st, "bkt/"+pattern, 8, func(objs []store.ObjectInfo) {
				calls++
				first = objs
			})
			if err != nil {
				t.Fatalf("GlobFirst(%s), %d a page: %v", pattern, perPage, err)
			}
			onePage := perPage >= len(f.keys)
			switch {
			case calls > 1:
				t.Fatalf("GlobFirst(%s), %d a page: first called %d times", pattern, perPage, calls)
			case onePage && calls != 0:
				t.Errorf("GlobFirst(%s): first called for a listing of one page", pattern)
			case calls == 1 && (len(first) == 0 || len(first) > len(got) || !slices.Equal(first, got[:len(first)])):
				t.Errorf("GlobFirst(%s), %d a page: first got %v, not the start of the answer %v", pattern, perPage, first, got)
			}
			for _, o := range first {
				if !store.Match("bkt/"+pattern, o.Name) {
					t.Errorf("GlobFirst(%s): first got %s, which does not match", pattern, o.Name)
				}
			}
			if pattern == "ds/**/*.arrow" && !onePage && calls != 1 {
				t.Errorf("GlobFirst(%s), %d a page: first not called", pattern, perPage)
			}
		}
		var calls int
		got, err := store.ListTreeFirst(ctx, st, "bkt/ds/", 8, func(objs []store.ObjectInfo) {
			calls++
			if len(objs) != min(perPage, len(objs)) {
				t.Errorf("ListTreeFirst: %d objects from a page of %d", len(objs), perPage)
			}
		})
		if err != nil || (calls != 1) != (perPage >= len(f.keys)) {
			t.Errorf("ListTreeFirst, %d a page: %d objects, %v, first called %d times", perPage, len(got), err, calls)
		}
	}
}

// TestListIgnoredParameters: a server that ignores a listing's prefix or
// start-after (it answers as if the whole bucket, or the range from its
// start, were asked) costs requests, never a name outside what was asked:
// a listing, a glob and a listing of folders keep only names under their
// prefix and after their start, and find what a good server gives, or
// fail; they never read another folder's objects as the prefix's.
func TestListIgnoredParameters(t *testing.T) {
	leakCheck(t)
	ctx := context.Background()
	good := openFake(t, &fakeS3{keys: treeKeys(), perPage: 3})
	for _, ignore := range [][]string{{"prefix"}, {"start-after"}, {"prefix", "start-after"}} {
		for _, perPage := range []int{3, 1000} {
			bad := openFake(t, &fakeS3{keys: treeKeys(), perPage: perPage, ignore: ignore})
			for _, prefix := range []string{"bkt/ds/s1/", "bkt/ds/", "bkt/ds/deep/1/"} {
				want, err := good.List(ctx, prefix)
				if err != nil {
					t.Fatal(err)
				}
				for _, how := range []string{"List", "ListTree", "Glob"} {
					var got []store.ObjectInfo
					switch how {
					case "List":
						got, err = bad.List(ctx, prefix)
					case "ListTree":
						got, err = store.ListTree(ctx, bad, prefix, 8)
					case "Glob":
						got, err = store.Glob(ctx, bad, prefix+"**", 8)
					}
					for _, o := range got {
						if !strings.HasPrefix(o.Name, prefix) {
							t.Errorf("ignoring %v, %d a page: %s(%s) found %s, outside the prefix", ignore, perPage, how, prefix, o.Name)
						}
					}
					if err != nil && !slices.Contains(ignore, "prefix") {
						t.Errorf("ignoring %v, %d a page: %s(%s): %v", ignore, perPage, how, prefix, err)
					}
					if err != nil && !strings.Contains(err.Error(), "outside the prefix") {
						t.Errorf("ignoring %v, %d a page: %s(%s) fails with %v, which does not say why", ignore, perPage, how, prefix, err)
					}
					if err == nil && !slices.Equal(names(got), names(want)) {
						t.Errorf("ignoring %v, %d a page: %s(%s) = %v, want %v", ignore, perPage, how, prefix, names(got), names(want))
					}
				}
			}
		}
	}
}

func names(objs []store.ObjectInfo) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}
