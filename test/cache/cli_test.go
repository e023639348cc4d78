// Package cache tests the local cache of remote chunks (cache_dir) with the
// real DuckDB CLI: processes sharing one directory, and a process killed
// while it fills.
package cache

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/origin"
	"github.com/remote-segments/remote_segments/test/sqllogictest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("CACHE_TEST_FLIP"); dir != "" {
		// Run by a CLI's .shell (TestFlipCaughtInOneProcess).
		if n, err := flipEntries(dir); err != nil || n == 0 {
			fmt.Fprintf(os.Stderr, "flipping the entries of %s: %d packs, %v\n", dir, n, err)
			os.Exit(1)
		}
		return
	}
	goleak.VerifyTestMain(m)
}

// flipEntries flips bytes past the header (cache.HeaderSize) of every
// pack in the cache directory dir, the headers left whole, and returns how
// many packs it changed.
func flipEntries(dir string) (int, error) {
	flipped := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(p, string(filepath.Separator)+"entries"+string(filepath.Separator)) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i := 64; i < len(b); i += 101 {
			b[i] ^= 0x3c
		}
		flipped++
		return os.WriteFile(p, b, 0o644)
	})
	return flipped, err
}

// tools returns the CLI and the extension, failing the test when they are
// not built.
func tools(t *testing.T) (string, string) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	duckdb, ext := filepath.Join(root, ".tools/bin/duckdb"), filepath.Join(root, "build/release/remote_segments.duckdb_extension")
	for _, p := range []string{duckdb, ext} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make tools release`", err)
		}
	}
	return duckdb, ext
}

// taggedOrigin serves a dataset over HTTP with an ETag of each file's content, as
// S3 does, counting the GETs; delay, if set, runs before each GET's body
// (a test's hook to hold a fill in progress).
type taggedOrigin struct {
	*httptest.Server
	gets  atomic.Int64
	delay atomic.Pointer[func()] // set while the server runs: atomic
}

func serve(t *testing.T, dir string) *taggedOrigin {
	o := &taggedOrigin{}
	files := origin.Tagged(dir)
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			o.gets.Add(1)
			if delay := o.delay.Load(); delay != nil {
				(*delay)()
			}
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(o.Close)
	return o
}

// dataset writes a dataset by spec and returns its directory and answers.
func dataset(t *testing.T, spec datagen.Spec) (string, []datagen.SegmentStats) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	return dir, stats
}

// urlList is the SQL LIST of the dataset's chunk URLs at base.
func urlList(t *testing.T, dir, base string) string {
	var urls []string
	filepath.WalkDir(filepath.Join(dir, "chunks"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".arrow") {
			rel, _ := filepath.Rel(dir, p)
			urls = append(urls, "'"+base+"/"+filepath.ToSlash(rel)+"'")
		}
		return err
	})
	if len(urls) == 0 {
		t.Fatal("no chunk written")
	}
	return "[" + strings.Join(urls, ", ") + "]"
}

// query is the per-segment answer a scan of list through cacheDir prints.
func query(ext, list, cacheDir string) string {
	return fmt.Sprintf("LOAD '%s'; SELECT segment_id, count(*), sum(x) FROM remote_segments(%s, cache_dir := '%s', max_parallel_io := 8) GROUP BY ALL ORDER BY 1;",
		ext, list, cacheDir)
}

// want is what query prints for the dataset of stats.
func want(stats []datagen.SegmentStats) string {
	var b strings.Builder
	for _, s := range stats {
		fmt.Fprintf(&b, "%s|%d|%d\n", s.Segment, s.Rows, s.SumX)
	}
	return b.String()
}

// cli returns a command running sql in a fresh DuckDB CLI.
func cli(duckdb, sql string) *exec.Cmd {
	h := sqllogictest.CLIHost(duckdb)
	cmd := exec.Command(h.Path, append(append([]string{}, h.Args...), "-c", sql)...)
	cmd.Env = append(os.Environ(), h.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// TestConcurrentCLIsShareOneDirectory: two CLIs scan the same chunks into
// one cache directory at once; both answer right, and a third, warm, reads
// every chunk from what they left.
func TestConcurrentCLIsShareOneDirectory(t *testing.T) {
	duckdb, ext := tools(t)
	dir, stats := dataset(t, datagen.Spec{Segments: 4, ChunksPerSegment: 24, RowsPerChunk: 3000, BatchesPerChunk: 2, Seed: 11})
	o := serve(t, dir)
	list, cacheDir := urlList(t, dir, o.URL), t.TempDir()
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i := range outs {
		wg.Go(func() {
			b, err := cli(duckdb, query(ext, list, cacheDir)).CombinedOutput()
			outs[i], errs[i] = string(b), err
		})
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil || outs[i] != want(stats) {
			t.Fatalf("CLI %d: %v\n%s\nwant\n%s", i, errs[i], outs[i], want(stats))
		}
	}
	o.gets.Store(0)
	b, err := cli(duckdb, query(ext, list, cacheDir)).CombinedOutput()
	if err != nil || string(b) != want(stats) {
		t.Fatalf("warm CLI: %v\n%s", err, b)
	}
	if g := o.gets.Load(); g != 0 {
		t.Fatalf("the warm CLI made %d GETs: the two CLIs' fills are not all usable", g)
	}
}

// TestKilledDuringFill: a CLI killed (SIGKILL) while it fills the cache
// leaves nothing a later scan trusts: the next CLI answers right.
func TestKilledDuringFill(t *testing.T) {
	duckdb, ext := tools(t)
	dir, stats := dataset(t, datagen.Spec{Segments: 2, ChunksPerSegment: 16, RowsPerChunk: 60000, BatchesPerChunk: 2, Seed: 12})
	o := serve(t, dir)
	list, cacheDir := urlList(t, dir, o.URL), t.TempDir()
	// The origin holds every GET after the 8th until the kill: the CLI is
	// then in the middle of its scan, with fills done and fills to come.
	release := make(chan struct{})
	reached := make(chan struct{})
	var once sync.Once
	hold := func() {
		if o.gets.Load() > 8 {
			once.Do(func() { close(reached) })
			<-release
		}
	}
	o.delay.Store(&hold)
	cmd := cli(duckdb, query(ext, list, cacheDir))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(time.Minute):
		close(release)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		t.Fatal("the CLI never got to its 9th GET")
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	close(release) // from now on the hook lets every GET through
	entries := 0
	filepath.WalkDir(cacheDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, string(filepath.Separator)+"entries"+string(filepath.Separator)) {
			entries++
		}
		return err
	})
	if entries == 0 {
		t.Fatal("the killed CLI left no entry: the test proves nothing about a later scan trusting them")
	}
	b, err := cli(duckdb, query(ext, list, cacheDir)).CombinedOutput()
	if err != nil || string(b) != want(stats) {
		t.Fatalf("after the kill: %v\n%s\nwant\n%s", err, b, want(stats))
	}
}

// TestCorruptEntryRefetched: bytes flipped in the cache's entries on disk
// (the headers left whole) are caught by their checksums: the next CLI
// answers right and fetches those chunks again.
func TestCorruptEntryRefetched(t *testing.T) {
	duckdb, ext := tools(t)
	dir, stats := dataset(t, datagen.Spec{Segments: 2, ChunksPerSegment: 4, RowsPerChunk: 5000, BatchesPerChunk: 2, Seed: 13})
	o := serve(t, dir)
	list, cacheDir := urlList(t, dir, o.URL), t.TempDir()
	if b, err := cli(duckdb, query(ext, list, cacheDir)).CombinedOutput(); err != nil || string(b) != want(stats) {
		t.Fatalf("cold CLI: %v\n%s", err, b)
	}
	if flipped, err := flipEntries(cacheDir); err != nil || flipped == 0 {
		t.Fatalf("the cold CLI left no entry to flip (%d), or %v", flipped, err)
	}
	o.gets.Store(0)
	if b, err := cli(duckdb, query(ext, list, cacheDir)).CombinedOutput(); err != nil || string(b) != want(stats) {
		t.Fatalf("CLI after the flips: %v\n%s\nwant\n%s", err, b, want(stats))
	}
	if o.gets.Load() == 0 {
		t.Fatal("no GET after every entry was corrupted: the corrupt bytes were served")
	}
}

// TestFlipCaughtInOneProcess: a process does not sum again the large
// entries it checked while their packs are unchanged (iosched/cache,
// checked.go). In one CLI: two warm scans (the first checks every entry,
// the second need not), then bytes flipped in every pack by another
// process (the CLI's .shell), then a scan: it catches them, fetches the
// chunks again and answers right.
func TestFlipCaughtInOneProcess(t *testing.T) {
	duckdb, ext := tools(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Chunks of ~2.4 MiB, read whole (every column): entries larger than
	// the 1 MiB the cache's own store reads, checked by Check.
	dir, _ := dataset(t, datagen.Spec{Segments: 2, ChunksPerSegment: 2, RowsPerChunk: 60000, BatchesPerChunk: 2, Seed: 17})
	o := serve(t, dir)
	list, cacheDir := urlList(t, dir, o.URL), t.TempDir()
	scan := func(cached bool) string {
		opt := ""
		if cached {
			opt = fmt.Sprintf("cache_dir := '%s', ", cacheDir)
		}
		return fmt.Sprintf("SELECT segment_id, count(*), sum(x), sum(i), sum(d), count(b), sum(length(s)) FROM remote_segments(%s, %smax_parallel_io := 8) GROUP BY ALL ORDER BY 1;\n", list, opt)
	}
	truth, err := cli(duckdb, fmt.Sprintf("LOAD '%s'; %s", ext, scan(false))).CombinedOutput()
	if err != nil || len(truth) == 0 {
		t.Fatalf("scan without a cache: %v\n%s", err, truth)
	}
	if b, err := cli(duckdb, fmt.Sprintf("LOAD '%s'; %s", ext, scan(true))).CombinedOutput(); err != nil || string(b) != string(truth) {
		t.Fatalf("cold CLI: %v\n%s\nwant\n%s", err, b, truth)
	}
	large := 0
	filepath.WalkDir(filepath.Join(cacheDir, "remote_segments_cache_v1", "entries"), func(p string, d os.DirEntry, err error) error {
		if info, ierr := d.Info(); err == nil && ierr == nil && !d.IsDir() && info.Size() > 1<<20 {
			large++
		}
		return err
	})
	if large == 0 {
		t.Fatal("no pack larger than 1 MiB: the entries are not read in place, and the test tests nothing")
	}
	gets := o.gets.Load()
	// .shell runs the test binary, which flips the entries (TestMain).
	script := fmt.Sprintf("LOAD '%s';\n.shell sleep 0.3\n%s%s.shell env CACHE_TEST_FLIP=%s %s\n%sSELECT corrupt > 0 FROM remote_segments_cache();\n",
		ext, scan(true), scan(true), cacheDir, self, scan(true))
	cmd := cli(duckdb, "")
	cmd.Args = cmd.Args[:len(cmd.Args)-2] // no -c: the script on stdin, dot commands and all
	cmd.Stdin = strings.NewReader(script)
	b, err := cmd.CombinedOutput()
	wantOut := strings.Repeat(string(truth), 3) + "true\n"
	if err != nil || string(b) != wantOut {
		t.Fatalf("warm, warm, flipped, scan in one CLI: %v\n%s\nwant\n%s", err, b, wantOut)
	}
	if o.gets.Load() == gets {
		t.Fatal("no GET after the flip: the flipped bytes were served")
	}
}
