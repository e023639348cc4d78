package scanner

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/remote-segments/remote_segments/iosched/cache"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/origin"
)

// countingServer serves dir over HTTP with an ETag of each file's content
// (as S3 gives), counting the GETs, their body bytes and the HEADs.
type countingServer struct {
	*httptest.Server
	gets, heads, bytes atomic.Int64
	active             atomic.Int64 // requests being answered
}

// reset zeroes the counts once no request is being answered: a scan's
// last answers can still be counted after the scan has read them (the
// handler counts a write once it returns), and a request the scan gave up
// (a hedge, a cancelled prefetch) may be answered after it ended; either
// would be counted against the next scan.
func (cs *countingServer) reset(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for cs.active.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still being answered", cs.active.Load())
		}
		time.Sleep(time.Millisecond)
	}
	cs.gets.Store(0)
	cs.heads.Store(0)
	cs.bytes.Store(0)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

func serveCounting(t *testing.T, dir string) *countingServer {
	cs := &countingServer{}
	files := origin.Tagged(dir)
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.active.Add(1)
		defer cs.active.Add(-1)
		switch r.Method {
		case http.MethodHead:
			cs.heads.Add(1)
		case http.MethodGet:
			cs.gets.Add(1)
			w = countingWriter{w, &cs.bytes}
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(cs.Close)
	return cs
}

// chunkRows are the catalog rows of the chunks datagen wrote in dir, as
// URLs of srv, with version if not "".
func chunkRows(t *testing.T, dir, base, version string) []Row {
	t.Helper()
	var rows []Row
	err := filepath.WalkDir(filepath.Join(dir, "chunks"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".arrow") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		row := Row{"url": base + "/" + filepath.ToSlash(rel)}
		if version != "" {
			row["version"] = version
		}
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// sizedRows are chunkRows with each chunk's length.
func sizedRows(t *testing.T, dir, base, version string) []Row {
	t.Helper()
	rows := chunkRows(t, dir, base, version)
	for _, r := range rows {
		fi, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(r["url"].(string), base+"/")))
		if err != nil {
			t.Fatal(err)
		}
		r["length"] = fi.Size()
	}
	return rows
}

// scanAll scans cfg whole and checks its answer against want.
func scanAll(t *testing.T, cfg Config, want []datagen.SegmentStats) Stats {
	t.Helper()
	scan := startScan(t, cfg, nil)
	rows, sum := drain(t, scan, 2, 0)
	scan.Close()
	checkSegments(t, want, rows, sum)
	return scan.Stats()
}

// rewriteDataset overwrites writeDataset's dataset in dir, every chunk
// with other values, and returns its stats; the test fails if they give
// the old answer, want.
func rewriteDataset(t *testing.T, dir string, want []datagen.SegmentStats) []datagen.SegmentStats {
	t.Helper()
	spec := datasetSpec
	spec.Seed++
	want2, err := datagen.Write(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want2[0].SumX == want[0].SumX {
		t.Fatal("the rewritten data has the old answer: the test proves nothing")
	}
	return want2
}

// TestCacheWarmScan: a second scan reads every chunk from the cache, after
// one version check per object and no GET; an object overwritten between
// two scans is read anew and gives the new answer.
func TestCacheWarmScan(t *testing.T) {
	dir, want := writeDataset(t)
	srv := serveCounting(t, dir)
	p := testProcess(t)
	cfg := Config{Process: p, Rows: chunkRows(t, dir, srv.URL, ""), CacheDir: t.TempDir()}
	objects := int64(len(cfg.Rows))

	scanAll(t, cfg, want)
	if srv.gets.Load() == 0 || srv.heads.Load() != 0 {
		t.Fatalf("the cold scan made %d GETs, %d HEADs: want GETs and no version check of objects never cached", srv.gets.Load(), srv.heads.Load())
	}
	srv.reset(t)
	st := scanAll(t, cfg, want)
	if g, h, b := srv.gets.Load(), srv.heads.Load(), srv.bytes.Load(); g != 0 || b != 0 || h != objects {
		t.Fatalf("warm scan: %d GETs, %d body bytes, %d HEADs; want 0, 0 and one HEAD per object (%d)", g, b, h, objects)
	}
	if st.CacheHits != objects || st.GETs != 0 {
		t.Fatalf("warm scan stats: %d cache hits, %d GETs", st.CacheHits, st.GETs)
	}

	want2 := rewriteDataset(t, dir, want)
	srv.reset(t)
	scanAll(t, cfg, want2)
	if srv.gets.Load() == 0 {
		t.Fatal("the objects were overwritten, but the scan made no GET")
	}
	if cs := p.CacheStats(); len(cs) != 1 || cs[0].Validations == 0 || cs[0].Hits == 0 || cs[0].Fills == 0 || cs[0].Misses < objects {
		t.Fatalf("cache stats %+v", cs)
	}
	rec := p.CacheTable()
	defer rec.Release()
	hits := rec.Column(rec.Schema().FieldIndices("hits")[0]).(*array.Int64)
	if rec.NumRows() != 1 || hits.Value(0) != p.CacheStats()[0].Hits {
		t.Fatalf("remote_segments_cache(): %d rows, hits %v", rec.NumRows(), hits)
	}
	stats := StatsTable([]ScanInfo{{Stats: st}})
	defer stats.Release()
	if v := stats.Column(stats.Schema().FieldIndices("cache_hits")[0]).(*array.Int64).Value(0); v != st.CacheHits {
		t.Fatalf("remote_segments_stats() cache_hits %d, want %d", v, st.CacheHits)
	}
}

// TestCacheCatalogVersion: rows that carry a version are served from the
// cache with no request to the store at all; a new version reads anew.
func TestCacheCatalogVersion(t *testing.T) {
	dir := t.TempDir()
	want, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 2, RowsPerChunk: 900, BatchesPerChunk: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveCounting(t, dir)
	cfg := Config{Process: testProcess(t), Rows: chunkRows(t, dir, srv.URL, "7"), CacheDir: t.TempDir()}
	scanAll(t, cfg, want)
	if srv.heads.Load() != 0 {
		t.Fatalf("%d HEADs: a catalog version needs no check", srv.heads.Load())
	}
	srv.reset(t)
	scanAll(t, cfg, want)
	if g, h := srv.gets.Load(), srv.heads.Load(); g != 0 || h != 0 {
		t.Fatalf("warm scan with catalog versions: %d GETs, %d HEADs; want none", g, h)
	}
	cfg.Rows = chunkRows(t, dir, srv.URL, "8")
	scanAll(t, cfg, want)
	if srv.gets.Load() == 0 {
		t.Fatal("a new catalog version was served from the old entries")
	}
}

// TestCacheCorruptEntry: bytes flipped in an entry on disk are detected by
// the checksum, the entry is dropped and the range fetched again.
func TestCacheCorruptEntry(t *testing.T) {
	dir := t.TempDir()
	want, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 2, RowsPerChunk: 900, BatchesPerChunk: 2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveCounting(t, dir)
	cacheDir := t.TempDir()
	p := testProcess(t)
	cfg := Config{Process: p, Rows: chunkRows(t, dir, srv.URL, "1"), CacheDir: cacheDir}
	scanAll(t, cfg, want)
	flipped := flipEntries(t, cacheDir)
	if flipped == 0 {
		t.Fatal("the cold scan left no entry")
	}
	srv.reset(t)
	scanAll(t, cfg, want)
	if srv.gets.Load() == 0 {
		t.Fatal("corrupt entries were served: no GET")
	}
	if cs := p.CacheStats(); cs[0].Corrupt < int64(flipped) {
		t.Fatalf("%d entries flipped, %d found corrupt", flipped, cs[0].Corrupt)
	}
}

// TestCacheLargeChunks: chunks too large for bind to read whole (it reads
// their metadata ranges; the scan reads them whole or projected, as the
// cost model decides) are served from the cache too.
func TestCacheLargeChunks(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 2, RowsPerChunk: 200000, BatchesPerChunk: 2, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	srv := serveCounting(t, dir)
	rows := sizedRows(t, dir, srv.URL, "1")
	cfg := Config{Process: testProcess(t), Rows: rows, CacheDir: t.TempDir()}
	sums := make([]int64, 2)
	for i := range sums {
		scan := startScan(t, cfg, []int{0})
		_, sum := drain(t, scan, 1, 0)
		scan.Close()
		sums[i] = sum["s0"]
		if i == 0 {
			srv.reset(t)
		}
	}
	if sums[0] != sums[1] || sums[0] == 0 {
		t.Fatalf("warm sum %d, cold %d", sums[1], sums[0])
	}
	if g := srv.gets.Load(); g != 0 {
		t.Fatalf("warm projected scan made %d GETs", g)
	}
	// Entries of chunks this large are read as mappings, as local files
	// are: a flipped byte in one is caught there too.
	flipEntries(t, cfg.CacheDir)
	scan := startScan(t, cfg, []int{0})
	_, sum := drain(t, scan, 1, 0)
	scan.Close()
	if sum["s0"] != sums[0] || srv.gets.Load() == 0 {
		t.Fatalf("after flipped bytes: sum %d (want %d), %d GETs", sum["s0"], sums[0], srv.gets.Load())
	}
}

// layoutCatalogs serves 3 chunks of 2 batches each and returns their
// catalog rows with lengths, by the version they carry: "1" (the
// catalog's) and "" (each object's checked).
func layoutCatalogs(t *testing.T) (*countingServer, map[string][]Row) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 3, RowsPerChunk: 400000, BatchesPerChunk: 2, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	srv := serveCounting(t, dir)
	return srv, map[string][]Row{"1": sizedRows(t, dir, srv.URL, "1"), "": sizedRows(t, dir, srv.URL, "")}
}

// TestCacheLayout: a scan whose cost model says otherwise than the one
// that filled the cache said (a new CLI over the same cache_dir, which has
// heard no answer of the store yet; a store that answers slower today)
// reads each chunk as the cache holds it, whole or in projected ranges,
// and makes no request. Before, it read the chunks the other way and
// fetched them all again (TestCacheLargeChunks failed 1 run in 10 so).
func TestCacheLayout(t *testing.T) {
	srv, catalogs := layoutCatalogs(t)
	for version, rows := range catalogs {
		for _, filled := range []int{1, -1} { // projected, whole
			cacheDir := t.TempDir()
			scan := startScan(t, Config{Process: testProcess(t), Rows: rows, CacheDir: cacheDir, projectModel: filled}, []int{0})
			_, sums := drain(t, scan, 1, 0)
			scan.Close()
			cold := sums["s0"]
			if st := scan.Stats(); filled > 0 && st.ProjectedChunks < int64(len(rows))-1 || filled < 0 && st.ProjectedChunks != 0 { // bind may read the first whole
				t.Fatalf("version %q, filling with projectModel %d: %d of %d chunks projected", version, filled, st.ProjectedChunks, len(rows))
			}
			srv.reset(t)
			scan = startScan(t, Config{Process: testProcess(t), Rows: rows, CacheDir: cacheDir, projectModel: -filled}, []int{0})
			_, sums = drain(t, scan, 1, 0)
			scan.Close()
			if st := scan.Stats(); sums["s0"] != cold || srv.gets.Load() != 0 {
				t.Fatalf("version %q, filled with projectModel %d, scanned with %d: sum %d (want %d), %d GETs (%d chunks projected, %d cache hits)",
					version, filled, -filled, sums["s0"], cold, srv.gets.Load(), st.ProjectedChunks, st.CacheHits)
			}
		}
	}
}

// TestCacheMixedLayout: a cache filled by scans whose cost model chose
// differently chunk by chunk (one cold scan whose model changed as the
// store answered: seen in cache.test under load) holds some chunks whole
// and others in projected ranges. A scan whose model says "whole" finds
// the first chunk after bind's held whole, and must still read the others
// as the cache holds them: no request at all.
func TestCacheMixedLayout(t *testing.T) {
	srv, catalogs := layoutCatalogs(t)
	for version, rows := range catalogs {
		cacheDir := t.TempDir()
		fill := func(rows []Row, model int) {
			scan := startScan(t, Config{Process: testProcess(t), Rows: rows, CacheDir: cacheDir, projectModel: model}, []int{0})
			drain(t, scan, 1, 0)
			scan.Close()
		}
		fill(rows[:2], -1)                                                          // chunks 0 and 1 whole
		fill([]Row{rows[0], rows[2]}, 1)                                            // chunk 2 projected (0 read whole at bind, held)
		full := startScan(t, Config{Process: testProcess(t), Rows: rows}, []int{0}) // no cache: the answer
		_, want := drain(t, full, 1, 0)
		full.Close()
		for _, model := range []int{-1, 1} {
			srv.reset(t)
			scan := startScan(t, Config{Process: testProcess(t), Rows: rows, CacheDir: cacheDir, projectModel: model}, []int{0})
			_, sums := drain(t, scan, 1, 0)
			scan.Close()
			if st := scan.Stats(); sums["s0"] != want["s0"] || srv.gets.Load() != 0 || st.ProjectedChunks != 1 {
				t.Fatalf("version %q, model %d over a cache of both layouts: sum %d (want %d), %d GETs, %d chunks projected (want 1), %d cache hits",
					version, model, sums["s0"], want["s0"], srv.gets.Load(), st.ProjectedChunks, st.CacheHits)
			}
		}
	}
}

// flipEntries flips bytes in the body of every entry under dir (headers
// left whole: only the checksum can tell) and returns how many.
func flipEntries(t *testing.T, dir string) int {
	t.Helper()
	flipped := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(path, "entries") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := cache.HeaderSize; i < len(b); i += 97 {
			b[i] ^= 0x5a
		}
		flipped++
		return os.WriteFile(path, b, 0o644)
	})
	return flipped
}

// versionedStore answers GETs with the versions it is given, in turn.
type versionedStore struct {
	store.Store
	versions []string
	n        atomic.Int64
}

func (v *versionedStore) GetRangeVersion(ctx context.Context, name string, off, length int64) (io.ReadCloser, string, error) {
	i := v.n.Add(1) - 1
	return io.NopCloser(strings.NewReader("x")), v.versions[int(i)%len(v.versions)], nil
}

// TestRecordingStore: ranges are stored under the version their answers
// gave, and not at all when the answers disagree (the object changed while
// it was read) or gave none.
func TestRecordingStore(t *testing.T) {
	for _, c := range []struct {
		versions []string
		want     string
	}{
		{[]string{"etag:a"}, "etag:a"},
		{[]string{"etag:a", "etag:b"}, ""},
		{[]string{""}, ""},
		{[]string{"etag:a", ""}, ""},
	} {
		vs := &versionedStore{versions: c.versions}
		rec := &recordingStore{rv: vs}
		for range 2 {
			body, err := rec.GetRange(context.Background(), "o", 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			body.Close()
		}
		if got := rec.result(); got != c.want {
			t.Errorf("answers of %q: version %q, want %q", c.versions, got, c.want)
		}
	}
}

// TestCacheFillsOffThePath: a scan reads and decodes every chunk while the
// cache's writers are held back (its fills wait, not its reads, and no
// fill holds the one IO slot), and its end waits for them: the next scan
// finds every chunk in the cache.
func TestCacheFillsOffThePath(t *testing.T) {
	dir := t.TempDir()
	want, err := datagen.Write(dir, datagen.Spec{Segments: 3, ChunksPerSegment: 3, RowsPerChunk: 900, BatchesPerChunk: 2, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveCounting(t, dir)
	p := testProcess(t)
	cfg := Config{Process: p, Rows: chunkRows(t, dir, srv.URL, "1"), CacheDir: t.TempDir(), MaxParallelIO: 1}
	chunks := int64(len(cfg.Rows))
	c, err := p.caches.open(cfg.CacheDir, 0) // the one the plan uses
	if err != nil {
		t.Fatal(err)
	}
	resume := c.PauseFills()
	defer resume()
	plan, err := Bind(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if plan.cache != c {
		t.Fatal("the plan opened another cache")
	}
	scan, err := plan.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, sum := drain(t, scan, 2, 0)
	checkSegments(t, want, rows, sum)
	if st := c.Stats(); st.Entries != 0 || st.Fills != 0 {
		t.Fatalf("entries written while the writers were held back: %+v", st)
	}
	resume()
	scan.Close()
	if st := c.Stats(); st.Entries != chunks || st.Dropped != 0 {
		t.Fatalf("after the scan's end: %d entries (want %d), %d fills dropped", st.Entries, chunks, st.Dropped)
	}
	srv.reset(t)
	if st := scanAll(t, cfg, want); st.CacheHits != chunks || srv.gets.Load() != 0 {
		t.Fatalf("next scan: %d hits of %d chunks, %d GETs", st.CacheHits, chunks, srv.gets.Load())
	}
}

// TestCacheChecksShareTheSlots: the version checks of a warm scan go
// through the IO scheduler with its GETs: requests to the store in flight,
// checks and GETs together, never pass max_parallel_io.
func TestCacheChecksShareTheSlots(t *testing.T) {
	dir := t.TempDir()
	want, err := datagen.Write(dir, datagen.Spec{Segments: 8, ChunksPerSegment: 4, RowsPerChunk: 300, BatchesPerChunk: 1, Seed: 13})
	if err != nil {
		t.Fatal(err)
	}
	var cur, peak, heads atomic.Int64
	files := origin.Tagged(dir)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if r.Method == http.MethodHead {
			heads.Add(1)
		}
		time.Sleep(3 * time.Millisecond) // a store's latency, so that requests overlap
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	rows := chunkRows(t, dir, srv.URL, "")
	p := testProcess(t)
	cfg := Config{Process: p, Rows: rows[:len(rows)/2], CacheDir: t.TempDir(), MaxParallelIO: 3}
	scanAll(t, cfg, nil) // half the objects cached
	peak.Store(0)
	// The objects never cached first: their GETs run as the checks of
	// the others do.
	cfg.Rows = append(rows[len(rows)/2:len(rows):len(rows)], rows[:len(rows)/2]...)
	scanAll(t, cfg, want)
	if heads.Load() != int64(len(rows)/2) {
		t.Fatalf("%d checks, want one per cached object (%d)", heads.Load(), len(rows)/2)
	}
	if peak.Load() > 3 {
		t.Fatalf("%d requests in flight at once, max_parallel_io 3", peak.Load())
	}
}

// TestCacheBindPrefetchesShareChecks: bind's prefetches, still running
// when the scan starts, and the scan's chunks note the versions they learn
// (and check) in one set under one lock (the race detector found two locks
// around one map).
func TestCacheBindPrefetchesShareChecks(t *testing.T) {
	dir := t.TempDir()
	want, err := datagen.Write(dir, datagen.Spec{Segments: 4, ChunksPerSegment: 4, RowsPerChunk: 200, BatchesPerChunk: 1, Seed: 17})
	if err != nil {
		t.Fatal(err)
	}
	files := origin.Tagged(dir)
	var heads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			heads.Add(1)
		}
		time.Sleep(20 * time.Millisecond) // a store's latency: the prefetches outlast bind

		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	rows := chunkRows(t, dir, srv.URL, "")
	for _, r := range rows {
		fi, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(r["url"].(string), srv.URL+"/")))
		if err != nil {
			t.Fatal(err)
		}
		r["length"] = fi.Size() // so that bind prefetches
	}
	cfg := Config{Process: testProcess(t), Rows: rows, CacheDir: t.TempDir(), MaxParallelIO: 4}
	scanAll(t, cfg, want)
	st := scanAll(t, cfg, want)
	if st.CacheHits != int64(len(rows)) || heads.Load() != int64(len(rows)) {
		t.Fatalf("warm scan: %d hits, %d checks; want %d of each", st.CacheHits, heads.Load(), len(rows))
	}
}

// TestCacheChecksBeginAtBind: with the default checks, bind begins the
// checks of a wave of objects (max_parallel_io less bind's own read's
// slot), its own among them, so that the scan's first chunks do not wait
// a round trip after bind's; the scan checks the rest, no object twice. A host that prunes after
// bind gets no check beyond bind's own: a pruned object costs nothing.
func TestCacheChecksBeginAtBind(t *testing.T) {
	dir := t.TempDir()
	want, err := datagen.Write(dir, datagen.Spec{Segments: 4, ChunksPerSegment: 4, RowsPerChunk: 200, BatchesPerChunk: 1, Seed: 19})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveCounting(t, dir)
	rows := chunkRows(t, dir, srv.URL, "")
	const slots = 4
	cfg := Config{Process: testProcess(t), Rows: rows, CacheDir: t.TempDir(), MaxParallelIO: slots}
	scanAll(t, cfg, want) // fills the cache
	srv.reset(t)

	plan, err := Bind(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for srv.heads.Load() < slots-1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // time for more, if bind sent more
	if h := srv.heads.Load(); h != slots-1 {
		t.Fatalf("after bind, before the scan: %d checks, want a wave of %d", h, slots-1)
	}
	scan, err := plan.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, sum := drain(t, scan, 2, 0)
	scan.Close()
	checkSegments(t, want, got, sum)
	if g, h := srv.gets.Load(), srv.heads.Load(); g != 0 || h != int64(len(rows)) {
		t.Fatalf("warm scan: %d GETs, %d checks; want 0 and one per object (%d)", g, h, len(rows))
	}

	srv.reset(t)
	cfg.PruneAfterBind = true
	if _, err := Bind(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if h := srv.heads.Load(); h != 1 {
		t.Fatalf("bind of a host that prunes after it: %d checks, want bind's own (1)", h)
	}
}

// TestCacheCheckPanic: a panic in the version checks bind begins (no
// scan yet to fail) ends the checks it left open: bind returns, and the
// chunks of those objects are fetched instead of waiting for a check that
// nobody will end; the answers are right.
func TestCacheCheckPanic(t *testing.T) {
	dir := t.TempDir()
	want, err := datagen.Write(dir, datagen.Spec{Segments: 4, ChunksPerSegment: 4, RowsPerChunk: 200, BatchesPerChunk: 1, Seed: 23})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveCounting(t, dir)
	cfg := Config{Process: testProcess(t), Rows: chunkRows(t, dir, srv.URL, ""), CacheDir: t.TempDir(), MaxParallelIO: 4}
	scanAll(t, cfg, want) // fills the cache
	srv.reset(t)
	cfg.DebugPanic = "check"
	done := make(chan Stats, 1)
	go func() { done <- scanAll(t, cfg, want) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("the scan did not end: it waits for a check that bind's panic left open")
	}
	if srv.gets.Load() == 0 {
		t.Fatal("no GET: bind's checks did not panic, and the test tests nothing")
	}
}

// TestCacheRecentWrite: over HTTP a version is made of a Last-Modified
// time in whole seconds (an ETag of the time and size, as nginx gives, or
// the time and size where there is no ETag), so that an object written
// again in the same second at the same size keeps its version. The bytes
// of an answer given in the second of the write are not cached: the
// object written again with the same time, the next scan reads the new
// bytes (before, it read the first ones from the cache, with no error).
// An object written long before its answer is cached as ever: its next
// scan makes one check and no GET.
func TestCacheRecentWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeTag bool // an ETag of the time and size
	}{{"no ETag", false}, {"ETag of the time and size", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.arrow")
			var answerAfter atomic.Int64 // the answer's Date, after the write
			var gets atomic.Int64
			files := http.FileServer(http.Dir(dir))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fi, err := os.Stat(path)
				if err != nil {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Date", fi.ModTime().Add(time.Duration(answerAfter.Load())).UTC().Format(http.TimeFormat))
				if tc.timeTag {
					w.Header().Set("ETag", fmt.Sprintf(`"%x-%x"`, fi.ModTime().Unix(), fi.Size()))
				}
				if r.Method == http.MethodGet {
					gets.Add(1)
				}
				files.ServeHTTP(w, r)
			}))
			defer srv.Close()
			written := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			write := func(base int64) int64 {
				if err := os.WriteFile(path, twoColumnFile(t, 1, 100, base), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(path, written, written); err != nil {
					t.Fatal(err)
				}
				return 100*base + 4950
			}
			cfg := Config{Process: testProcess(t), Rows: []Row{{"url": srv.URL + "/x.arrow"}}, CacheDir: t.TempDir()}
			scan := func(want int64) Stats {
				t.Helper()
				sum, st := scanSum(t, cfg)
				if sum != want {
					t.Fatalf("sum(x) %d, want %d", sum, want)
				}
				return st
			}

			answerAfter.Store(int64(300 * time.Millisecond)) // the same second
			scan(write(1))
			if st := scan(write(2)); st.CacheHits != 0 {
				t.Fatalf("%d cache hits for an object written again in the second of its last answer", st.CacheHits)
			}

			answerAfter.Store(int64(time.Hour))
			scan(write(3))
			gets.Store(0)
			if st := scan(100*3 + 4950); st.CacheHits != 1 || gets.Load() != 0 {
				t.Fatalf("an object written an hour before its answers: %d cache hits, %d GETs; want 1, 0", st.CacheHits, gets.Load())
			}
		})
	}
}

// TestCacheRedirectTarget: over HTTP a version is one resource's (its
// ETag, or its time and size), and a URL that redirects (a "latest"
// link) may lead to another file written in the same second at the same
// size: once the link leads to the other file, the scan reads it, not the
// first file's bytes from the cache.
func TestCacheRedirectTarget(t *testing.T) {
	dir := t.TempDir()
	written := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, f := range []struct {
		name string
		base int64
	}{{"a.arrow", 1}, {"b.arrow", 2}} {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, twoColumnFile(t, 1, 100, f.base), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, written, written); err != nil {
			t.Fatal(err)
		}
	}
	var target atomic.Value
	target.Store("/a.arrow")
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest.arrow" {
			http.Redirect(w, r, target.Load().(string), http.StatusFound)
			return
		}
		w.Header().Set("Date", written.Add(time.Hour).Format(http.TimeFormat)) // long after the write
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := Config{Process: testProcess(t), Rows: []Row{{"url": srv.URL + "/latest.arrow"}}, CacheDir: t.TempDir()}
	for i, want := range []struct {
		target string
		sum    int64
		hits   int64
	}{{"/a.arrow", 100 + 4950, 0}, {"/a.arrow", 100 + 4950, 1}, {"/b.arrow", 200 + 4950, 0}, {"/b.arrow", 200 + 4950, 1}} {
		target.Store(want.target)
		sum, st := scanSum(t, cfg)
		if sum != want.sum || st.CacheHits != want.hits {
			t.Fatalf("scan %d, the link to %s: sum(x) %d, %d cache hits; want %d, %d", i+1, want.target, sum, st.CacheHits, want.sum, want.hits)
		}
	}
}
