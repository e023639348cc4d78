package scanner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// s3Dir is an S3 server (path style, no signature check) of one bucket
// whose objects are the files under dir, each with an ETag of its
// content; it answers GET, HEAD and ListObjectsV2, and counts them.
type s3Dir struct {
	*httptest.Server
	dir, bucket        string
	gets, heads, lists atomic.Int64
	pageSize           int // keys per listing page
	mu                 sync.Mutex
	listETag           func(key, etag string) string // what a listing says of key (nil: its ETag)
	// beforeList, if set, runs before a listing is answered, and onGet
	// before a GET is (set with hooks).
	beforeList func(r *http.Request)
	onGet      func(key string)
}

// hooks sets s's beforeList and onGet: requests of an earlier bind may
// still be running.
func (s *s3Dir) hooks(beforeList func(r *http.Request), onGet func(key string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeList, s.onGet = beforeList, onGet
}

func etagOf(data []byte) string {
	h := sha256.Sum256(data)
	return `"` + hex.EncodeToString(h[:8]) + `"`
}

func serveS3Dir(t *testing.T, dir, bucket string) *s3Dir {
	s := &s3Dir{dir: dir, bucket: bucket, pageSize: 1000}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// options are the store options that reach s.
func (s *s3Dir) options() store.Options {
	return store.Options{S3Endpoint: s.URL, S3Region: "us-east-1", S3AccessKeyID: "k", S3SecretAccessKey: "s"}
}

func (s *s3Dir) reset() { s.gets.Store(0); s.heads.Store(0); s.lists.Store(0) }

func (s *s3Dir) serve(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, "/"+s.bucket)
	if !ok {
		http.Error(w, "no such bucket", http.StatusNotFound)
		return
	}
	key = strings.TrimPrefix(key, "/")
	if key == "" && r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
		s.lists.Add(1)
		s.mu.Lock()
		before := s.beforeList
		s.mu.Unlock()
		if before != nil {
			before(r)
		}
		s.list(w, r)
		return
	}
	data, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(key)))
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `<Error><Code>NoSuchKey</Code></Error>`)
		return
	}
	switch r.Method {
	case http.MethodHead:
		s.heads.Add(1)
	case http.MethodGet:
		s.gets.Add(1)
		s.mu.Lock()
		onGet := s.onGet
		s.mu.Unlock()
		if onGet != nil {
			onGet(key)
		}
	}
	w.Header().Set("ETag", etagOf(data))
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(data)))
}

// list answers a ListObjectsV2 request: prefix, delimiter "/",
// start-after, continuation-token (the last name of the page before).
func (s *s3Dir) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix, after := q.Get("prefix"), q.Get("start-after")
	if tok := q.Get("continuation-token"); tok > after {
		after = tok
	}
	type object struct {
		key, etag string
		size      int
	}
	var objs []object
	filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(s.dir, p)
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		objs = append(objs, object{key, etagOf(data), len(data)})
		return nil
	})
	slices.SortFunc(objs, func(a, b object) int { return strings.Compare(a.key, b.key) })
	var b strings.Builder
	b.WriteString("<ListBucketResult>")
	n, last, seen := 0, "", map[string]bool{}
	truncated := false
	s.mu.Lock()
	listETag := s.listETag
	s.mu.Unlock()
	for _, o := range objs {
		name := o.key
		folder := false
		if q.Get("delimiter") == "/" {
			if i := strings.IndexByte(o.key[len(prefix):], '/'); i >= 0 {
				name, folder = o.key[:len(prefix)+i+1], true
			}
		}
		if name <= after || seen[name] {
			continue
		}
		if n == s.pageSize {
			truncated = true
			break
		}
		seen[name], last = true, name
		n++
		if folder {
			fmt.Fprintf(&b, "<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>", escapeText(name))
			continue
		}
		etag := o.etag
		if listETag != nil {
			etag = listETag(o.key, etag)
		}
		fmt.Fprintf(&b, "<Contents><Key>%s</Key><Size>%d</Size><ETag>%s</ETag></Contents>", escapeText(o.key), o.size, escapeText(etag))
	}
	fmt.Fprintf(&b, "<IsTruncated>%s</IsTruncated>", strconv.FormatBool(truncated))
	if truncated {
		fmt.Fprintf(&b, "<NextContinuationToken>%s</NextContinuationToken>", escapeText(last))
	}
	b.WriteString("</ListBucketResult>")
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprint(w, b.String())
}

func escapeText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// TestCacheGlobListedVersions: a glob over S3 lists its objects at bind,
// with their ETags, so that the scan after bind serves the cache's
// entries of those versions with no check at all; an object overwritten
// between two glob scans gives the new answer; a later scan of the same
// plan (long after the listing) checks its objects as a catalog's.
func TestCacheGlobListedVersions(t *testing.T) {
	dir, want := writeDataset(t)
	srv := serveS3Dir(t, dir, "bkt")
	cfg := Config{Process: testProcess(t), Source: "s3://bkt/chunks/**/*.arrow", Store: srv.options(), CacheDir: t.TempDir()}
	objects := int64(len(chunkRows(t, dir, "", "")))

	// The listed versions are kept for a cache alone. (Not the cold scan's
	// cache below: these binds' prefetches fill theirs, maybe before that
	// scan, which would then find them.)
	for _, cacheDir := range []string{"", t.TempDir()} {
		c := cfg
		c.CacheDir = cacheDir
		plan, err := Bind(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range plan.Chunks.All() {
			if (ch.Listed == "") != (cacheDir == "") {
				t.Fatalf("cache_dir %q: chunk %s listed version %q", cacheDir, ch.URL, ch.Listed)
			}
		}
	}
	srv.reset()

	scanAll(t, cfg, want)
	if srv.heads.Load() != 0 || srv.gets.Load() < objects {
		t.Fatalf("cold glob scan: %d GETs, %d HEADs", srv.gets.Load(), srv.heads.Load())
	}
	srv.reset()
	st := scanAll(t, cfg, want)
	if g, h := srv.gets.Load(), srv.heads.Load(); g != 0 || h != 0 || st.CacheHits != objects {
		t.Fatalf("warm glob scan: %d GETs, %d HEADs, %d hits; want no request but the listing, %d hits", g, h, st.CacheHits, objects)
	}
	// A scan of one column asks how the cache holds each chunk (whole or
	// in ranges) by the same listed version.
	pc := cfg
	pc.projectModel, pc.PruneAfterBind = 1, true // projected, and no chunk read at bind
	s := startScan(t, pc, []int{0})
	drain(t, s, 2, 0)
	s.Close()
	if g, h := srv.gets.Load(), srv.heads.Load(); g != 0 || h != 0 || s.Stats().CacheHits != objects {
		t.Fatalf("warm glob scan of one column: %d GETs, %d HEADs, %d hits", g, h, s.Stats().CacheHits)
	}

	// A later scan of one plan does not trust the listing made at bind.
	plan, err := Bind(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		srv.reset()
		s, err := plan.Start(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, sum := drain(t, s, 2, 0)
		s.Close()
		checkSegments(t, want, rows, sum)
		if h := srv.heads.Load(); (i == 0) != (h == 0) {
			t.Fatalf("scan %d of one plan made %d HEADs: want none in the first, a check per object after", i, h)
		}
	}

	want2 := rewriteDataset(t, dir, want)
	srv.reset()
	scanAll(t, cfg, want2)
	if srv.gets.Load() == 0 || srv.heads.Load() != 0 {
		t.Fatalf("overwritten: %d GETs, %d HEADs; want GETs and no check", srv.gets.Load(), srv.heads.Load())
	}
}

// TestCacheListedVersionNotTrusted: a listing whose ETags disagree with
// its GETs' (an object written between the listing and the read, or a
// store that lies) fills no entry under the listed version: the ranges
// are stored under the version the GET itself gave.
func TestCacheListedVersionNotTrusted(t *testing.T) {
	dir := t.TempDir()
	want, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 2, RowsPerChunk: 500, BatchesPerChunk: 2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveS3Dir(t, dir, "bkt")
	srv.listETag = func(string, string) string { return `"listed"` }
	cfg := Config{Process: testProcess(t), Source: "s3://bkt/chunks/**/*.arrow", Store: srv.options(), CacheDir: t.TempDir()}
	objects := int64(len(chunkRows(t, dir, "", "")))
	scanAll(t, cfg, want)
	srv.reset()
	if st := scanAll(t, cfg, want); st.CacheHits != 0 || srv.gets.Load() < objects {
		t.Fatalf("the listing's version found %d entries (%d GETs): the fills were keyed by it, not by their GETs'", st.CacheHits, srv.gets.Load())
	}
	// They are under the GETs' versions: a catalog's scan of the same
	// objects, checked by HEAD, finds them.
	rows := sizedRows(t, dir, "s3://bkt", "") // ranges as the glob's sizes make them
	srv.reset()
	if st := scanAll(t, Config{Process: cfg.Process, Rows: rows, Store: srv.options(), CacheDir: cfg.CacheDir}, want); st.CacheHits != objects {
		t.Fatalf("a checked scan found %d entries of %d objects", st.CacheHits, objects)
	}
}

// oddNames copies the chunks datagen wrote under src into dst/chunks,
// each under a name with characters a listing escapes or a URL encodes
// (a space, '&', '<', '+', '=', non-ASCII letters whose UTF-8 share
// a first byte, an emoji), and, if fill > 0, that many empty objects
// named between them. It returns the catalog rows of the chunks, as
// s3://bucket URLs with their lengths and segments.
func oddNames(t *testing.T, src, dst string, fill int) []Row {
	t.Helper()
	var rows []Row
	i := 0
	err := filepath.WalkDir(filepath.Join(src, "chunks"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".arrow") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		odd := []string{"é &<+=", "è 😀"}[i%2]
		i++
		key := fmt.Sprintf("chunks/%s%s%04d.arrow", odd, filepath.Base(filepath.Dir(p)), i)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, key)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, key), data, 0o644); err != nil {
			return err
		}
		for k := range fill {
			os.WriteFile(filepath.Join(dst, fmt.Sprintf("%s.%03d", key, k)), nil, 0o644)
		}
		seg := strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "segment=")
		rows = append(rows, Row{"url": "s3://bkt/" + key, "length": int64(len(data)), "segment_id": seg})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rows, func(a, b Row) int { return strings.Compare(a["url"].(string), b["url"].(string)) })
	return rows
}

// TestCacheChecksByListing: a catalog of many objects of one bucket, with
// no version, is checked by listing their prefix, not one HEAD each (but
// for the first objects, a HEAD each at once): with names a listing
// escapes, a warm scan makes no GET and serves every chunk from the
// cache; objects overwritten between two scans give the new answer; a
// listing whose ETags disagree with the GETs' fills nothing under them.
func TestCacheChecksByListing(t *testing.T) {
	gen := func(seed uint64) (string, []datagen.SegmentStats) {
		dir := t.TempDir()
		want, err := datagen.Write(dir, datagen.Spec{Segments: 16, ChunksPerSegment: 4, RowsPerChunk: 40, BatchesPerChunk: 1, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return dir, want
	}
	src, want := gen(11)
	dir := t.TempDir()
	rows := oddNames(t, src, dir, 0)
	objects := int64(len(rows))
	const slots = 4
	if objects-4*slots < store.MinListedVersions {
		t.Fatalf("%d objects: too few to be listed", objects)
	}
	srv := serveS3Dir(t, dir, "bkt")
	srv.pageSize = 50 // the listing takes pages
	cfg := Config{Process: testProcess(t), Rows: rows, Store: srv.options(), CacheDir: t.TempDir(), MaxParallelIO: slots}
	scanAll(t, cfg, want)
	if srv.lists.Load() != 0 || srv.heads.Load() != 0 {
		t.Fatalf("cold scan: %d LISTs, %d HEADs; want no check of objects never cached", srv.lists.Load(), srv.heads.Load())
	}
	srv.reset()
	st := scanAll(t, cfg, want)
	// HEADs: the objects bind prefetches, and the first the scan checks.
	if g, h, l := srv.gets.Load(), srv.heads.Load(), srv.lists.Load(); g != 0 || h > objects/4 || l == 0 || st.CacheHits != objects {
		t.Fatalf("warm scan: %d GETs, %d HEADs, %d LISTs, %d hits of %d objects; want no GET, a HEAD for few objects, a listing, every chunk a hit",
			g, h, l, st.CacheHits, objects)
	}

	src2, want2 := gen(12)
	cfg2 := cfg
	cfg2.Rows = oddNames(t, src2, dir, 0) // every object overwritten
	if want2[0].SumX == want[0].SumX {
		t.Fatal("the rewritten data has the old answer: the test proves nothing")
	}
	srv.reset()
	if st := scanAll(t, cfg2, want2); st.CacheHits != 0 || srv.gets.Load() < objects {
		t.Fatalf("overwritten: %d hits, %d GETs", st.CacheHits, srv.gets.Load())
	}

	// A listing that gives other ETags than the GETs: no entry is found
	// under them, nor filled.
	oddNames(t, src, dir, 0) // the first data again, cached under its versions
	srv.mu.Lock()
	srv.listETag = func(string, string) string { return `"listed"` }
	srv.mu.Unlock()
	srv.reset()
	// Only the objects checked by HEAD are served from the cache.
	for range 2 {
		if st := scanAll(t, cfg, want); st.CacheHits > srv.heads.Load() || srv.lists.Load() == 0 {
			t.Fatalf("a listing of other versions: %d hits, %d objects checked by HEAD, %d LISTs: a listed version found entries filled under it",
				st.CacheHits, srv.heads.Load(), srv.lists.Load())
		}
		srv.reset()
	}
}

// TestCacheChecksListingBounded: objects asked among many others (a
// prefix that is most of the bucket) are listed for a few pages at most,
// then checked one by one; every chunk is still served right.
func TestCacheChecksListingBounded(t *testing.T) {
	src := t.TempDir()
	want, err := datagen.Write(src, datagen.Spec{Segments: 16, ChunksPerSegment: 4, RowsPerChunk: 40, BatchesPerChunk: 1, Seed: 13})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rows := oddNames(t, src, dir, 30) // 30 other objects after each one asked
	objects := int64(len(rows))
	srv := serveS3Dir(t, dir, "bkt")
	srv.pageSize = 40
	cfg := Config{Process: testProcess(t), Rows: rows, Store: srv.options(), CacheDir: t.TempDir(), MaxParallelIO: 4}
	scanAll(t, cfg, want)
	srv.reset()
	st := scanAll(t, cfg, want)
	// The 60 names listed in one run may take 2 + 3·60/1000 pages.
	if l, h := srv.lists.Load(), srv.heads.Load(); l == 0 || l > 2 || h < objects-2*40 || st.CacheHits != objects || srv.gets.Load() != 0 {
		t.Fatalf("%d LISTs, %d HEADs, %d hits, %d GETs (%d objects)", l, h, st.CacheHits, srv.gets.Load(), objects)
	}
}
