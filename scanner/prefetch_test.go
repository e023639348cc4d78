package scanner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/scanner/arrowipc"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// slowFiles serves dir over HTTP with a delay before every answer, counting
// the GETs of each path, the GETs started and the most in flight at once;
// fail, if set, answers 500 to the first GET of that path; rate, if set
// (with setRate), is the bytes per second each answer's body is sent at;
// queue, if set (with setQueue), is added to the delay for every other GET
// in flight when one starts (a server whose own CPU is the bottleneck).
type slowFiles struct {
	dir                string
	fail               string
	mu                 sync.Mutex
	rate               float64
	queue              time.Duration
	gets               map[string]int
	ranges             map[string][]string // each GET's Range header, by path
	started, now, most int
	srv                *httptest.Server
}

func newSlowFiles(t *testing.T, dir string, delay time.Duration) *slowFiles {
	f := &slowFiles{dir: dir, gets: map[string]int{}, ranges: map[string][]string{}}
	files := http.FileServer(http.Dir(dir))
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.gets[r.URL.Path]++
		f.ranges[r.URL.Path] = append(f.ranges[r.URL.Path], r.Header.Get("Range"))
		first := f.gets[r.URL.Path] == 1
		f.started++
		f.now++
		f.most = max(f.most, f.now)
		wait := delay + time.Duration(f.now-1)*f.queue
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.now--
			f.mu.Unlock()
		}()
		time.Sleep(wait)
		if first && f.fail != "" && r.URL.Path == f.fail {
			http.Error(w, "injected", http.StatusInternalServerError)
			return
		}
		f.mu.Lock()
		rate := f.rate
		f.mu.Unlock()
		if rate > 0 {
			w = throttled{w, rate}
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *slowFiles) setQueue(perGET time.Duration) {
	f.mu.Lock()
	f.queue = perGET
	f.mu.Unlock()
}

func (f *slowFiles) setRate(bytesPerSecond float64) {
	f.mu.Lock()
	f.rate = bytesPerSecond
	f.mu.Unlock()
}

// throttled sends a body at rate bytes per second. (It hides the
// ResponseWriter's ReadFrom, so that the file server writes through Write.)
type throttled struct {
	http.ResponseWriter
	rate float64
}

func (w throttled) Write(p []byte) (int, error) {
	time.Sleep(time.Duration(float64(len(p)) / w.rate * float64(time.Second)))
	return w.ResponseWriter.Write(p)
}

// rows is a catalog of every chunk of segment s0 with its length.
func (f *slowFiles) rows(t *testing.T, n int) []Row {
	var rows []Row
	for i := range n {
		name := fmt.Sprintf("chunks/segment=s0/chunk-%d.arrow", i)
		info, err := os.Stat(filepath.Join(f.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, Row{"url": f.srv.URL + "/" + name, "length": info.Size(), "segment_id": "s0"})
	}
	return rows
}

// TestBindFetchesEarly: bind requests the chunks after the first beside
// it, at most max_parallel_io of them in all, and the scan uses those bytes
// instead of fetching them again: every chunk is requested once, the
// store never sees more than max_parallel_io GETs at once, and the answer
// is right. Without prefetches bind returns having sent 1 GET.
func TestBindFetchesEarly(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 40, RowsPerChunk: 500, BatchesPerChunk: 2, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	f := newSlowFiles(t, dir, 30*time.Millisecond)
	const parallel = 8
	// No hedges: a hedged GET is a second request of the same chunk.
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Rows: f.rows(t, 40), MaxParallelIO: parallel, NoHedge: true})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	atBind := f.started
	f.mu.Unlock()
	if atBind != parallel {
		t.Errorf("bind sent %d GETs, want %d: the first chunk and the next %d", atBind, parallel, parallel-1)
	}
	scan, err := plan.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := drain(t, scan, 2, 0)
	scan.Close()
	if got["s0"] != stats[0].Rows {
		t.Errorf("rows %d, want %d", got["s0"], stats[0].Rows)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for path, n := range f.gets {
		if n != 1 {
			t.Errorf("%s requested %d times, want once", path, n)
		}
	}
	if len(f.gets) != 40 || f.most > parallel {
		t.Errorf("%d objects requested, most in flight %d; want 40 and at most %d", len(f.gets), f.most, parallel)
	}
	st := scan.Stats()
	if st.Requests != 39 || st.RoundTrips != 39 {
		t.Errorf("scan stats: %d requests, %d round trips; want 39 each (the chunks after bind's)", st.Requests, st.RoundTrips)
	}
	// Bind's buffers became the scan's pooled ones: no chunk bind fetched
	// was copied into a buffer of the pool.
	if st.Pool.Adopted != parallel-1 {
		t.Errorf("the scan adopted %d of bind's %d prefetched buffers (pool %+v)", st.Pool.Adopted, parallel-1, st.Pool)
	}
}

// TestPrefetchFailsOver: an prefetch that failed is fetched again by
// the scan; chunks Select dropped are not delivered from bind's fetches.
func TestPrefetchFailsOver(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 10, RowsPerChunk: 300, BatchesPerChunk: 1, Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	f := newSlowFiles(t, dir, 30*time.Millisecond)
	f.fail = "/chunks/segment=s0/chunk-3.arrow"
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Rows: f.rows(t, 10), MaxParallelIO: 16, Retries: NeverRetry})
	if err != nil {
		t.Fatal(err)
	}
	plan.Select(func(c *Chunk) bool { return c.Row != 5 })
	scan, err := plan.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := drain(t, scan, 1, 0)
	scan.Close()
	data, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0/chunk-5.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	_, batches, err := arrowipc.Decode(data, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	keptRows := stats[0].Rows
	for _, b := range batches {
		keptRows -= b.NumRows()
	}
	arrowipc.ReleaseAll(batches)
	if got["s0"] != keptRows {
		t.Errorf("rows %d, want %d (chunk 5 dropped)", got["s0"], keptRows)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.gets[f.fail]; n != 2 {
		t.Errorf("%s requested %d times, want 2 (bind's failed, the scan's)", f.fail, n)
	}
	var other []string
	for p, n := range f.gets {
		if n != 1 && p != f.fail {
			other = append(other, fmt.Sprintf("%s×%d", p, n))
		}
	}
	if len(other) > 0 {
		t.Errorf("requested more than once: %s", strings.Join(other, ", "))
	}
}

// TestKeepIsNeverRequested: the chunks Config.Keep drops (a host's shard)
// are not requested, not even by bind's prefetches; only the first,
// whose schema is the source's, is read at bind.
func TestKeepIsNeverRequested(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 12, RowsPerChunk: 200, BatchesPerChunk: 1, Seed: 13}); err != nil {
		t.Fatal(err)
	}
	f := newSlowFiles(t, dir, 30*time.Millisecond)
	odd := func(c *Chunk) bool { return c.Row%2 == 1 }
	scan := startScan(t, Config{Process: testProcess(t), Rows: f.rows(t, 12), MaxParallelIO: 16, Keep: odd}, nil)
	drain(t, scan, 1, 0)
	scan.Close()
	if st := scan.Stats(); st.Chunks != 6 || st.Pruned != 6 {
		t.Errorf("%d chunks scanned, %d pruned; want 6 and 6", st.Chunks, st.Pruned)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < 12; i += 2 {
		path := fmt.Sprintf("/chunks/segment=s0/chunk-%d.arrow", i)
		if want := map[bool]int{true: 1, false: 0}[i == 0]; f.gets[path] != want {
			t.Errorf("%s requested %d times, want %d", path, f.gets[path], want)
		}
	}
}

// TestPrefetchPanicIsRefetched: a panic in one of bind's prefetches (on a
// goroutine of its own, before any scan exists to fail) does not end the
// process: the prefetch counts as failed, the scan fetches those chunks
// itself and answers right. Without the prefetch's recover this test
// binary dies.
func TestPrefetchPanicIsRefetched(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 12, RowsPerChunk: 500, BatchesPerChunk: 1, Seed: 13})
	if err != nil {
		t.Fatal(err)
	}
	f := newSlowFiles(t, dir, 5*time.Millisecond)
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Rows: f.rows(t, 12), MaxParallelIO: 4, NoHedge: true, DebugPanic: "prefetch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.prefetched) == 0 {
		t.Fatal("bind started no prefetch: the test needs some")
	}
	scan, err := plan.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, sumX := drain(t, scan, 2, 0)
	scan.Close()
	if rows["s0"] != stats[0].Rows || sumX["s0"] != stats[0].SumX {
		t.Errorf("rows %d sum_x %d, want %d %d", rows["s0"], sumX["s0"], stats[0].Rows, stats[0].SumX)
	}
}
