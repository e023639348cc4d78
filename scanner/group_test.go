package scanner

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupFailureNamesItsChunk: where round trips are short, planChunks
// submits several chunks' requests in one batch (fetchGroup), and the
// first failure cancels the batch's other requests. The scan's error must
// name the chunk whose request failed, not one of those cancelled by it
// (which would read "chunk …-5.arrow: context canceled" for another
// file's 404).
func TestGroupFailureNamesItsChunk(t *testing.T) {
	dir := t.TempDir()
	paths, _ := writeIPCFiles(t, dir, 24, 20, false)
	const victim = 6
	var hold atomic.Bool
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() {
			if strings.HasSuffix(r.URL.Path, "/"+filepath.Base(paths[victim])) {
				time.Sleep(20 * time.Millisecond) // its batch's other requests are running
				http.NotFound(w, r)
				return
			}
			select { // until the failure cancels them
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var rows []Row
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, Row{"url": srv.URL + "/" + filepath.Base(p), "length": info.Size()})
	}
	// PruneAfterBind: bind reads no chunk ahead, so every chunk but the
	// first goes in a group.
	plan, err := Bind(t.Context(), Config{Process: testProcess(t), Rows: rows, MaxParallelIO: 16, NoHedge: true, Retries: NeverRetry, PruneAfterBind: true, groupMax: 4})
	if err != nil {
		t.Fatal(err)
	}
	hold.Store(true)
	scan, err := plan.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer scan.Close()
	got := scanErr(scan)
	var ce *ChunkError
	if !errors.As(got, &ce) || ce.Chunk.Row != victim || errors.Is(got, context.Canceled) {
		t.Fatalf("scan error %v; want chunk row %d's not found", got, victim)
	}
	if !strings.Contains(got.Error(), "not found") {
		t.Errorf("scan error %v does not give the server's answer", got)
	}
}

// TestGroupsUnderSmallBudget: a scan of many small local files, grouped,
// under a budget of three chunks (so reservations often wait, and a group
// must go out before planChunks waits for one: its chunks hold the budget
// a consumer would give back), reads every row once, makes one request a
// chunk and gives every byte back; so does a scan closed early (a LIMIT).
func TestGroupsUnderSmallBudget(t *testing.T) {
	dir := t.TempDir()
	paths, want := writeIPCFiles(t, dir, 300, 20, false)
	info, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 3} {
		cfg := Config{Process: testProcess(t), Source: filepath.Join(dir, "*.arrow"), MaxParallelIO: 16, MemoryBudget: 3 * info.Size(), groupMax: 4}
		scan := startScan(t, cfg, nil)
		var sums map[string]int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, sums = drain(t, scan, threads, 0)
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%d threads: the scan wedged: a group held back while planChunks waited?", threads)
		}
		scan.Close()
		var sum int64
		for _, s := range sums {
			sum += s
		}
		st := scan.Stats()
		// One request a chunk; bind read the first.
		if sum != want || st.Chunks != 300 || st.Requests != 299 {
			t.Errorf("%d threads: sum %d, %d chunks, %d requests; want %d, 300, 299", threads, sum, st.Chunks, st.Requests, want)
		}
		if st.Budget.InUse != 0 {
			t.Errorf("%d threads: %d bytes still held after Close", threads, st.Budget.InUse)
		}
	}

	cfg := Config{Process: testProcess(t), Source: filepath.Join(dir, "*.arrow"), MaxParallelIO: 16, groupMax: 4}
	scan := startScan(t, cfg, nil)
	for range 3 {
		b, err := scan.Next()
		if err != nil || b == nil {
			t.Fatalf("Next: %v, %v", b, err)
		}
		b.Close()
	}
	scan.Close()
	if st := scan.Stats(); st.Budget.InUse != 0 {
		t.Errorf("closed early: %d bytes still held", st.Budget.InUse)
	}
}

// TestGroupLimitByStore: requests go in groups to a store whose round
// trip is short (local files), one by one to one whose round trip is long
// (here 20 ms) or not measured yet: a catalog may name both, and a group
// of remote requests would wait for its slowest.
func TestGroupLimitByStore(t *testing.T) {
	dir := t.TempDir()
	paths, _ := writeIPCFiles(t, dir, 4, 20, false)
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	slow := srv.URL + "/" + filepath.Base(paths[1])
	rows := []Row{{"url": paths[0]}, {"url": slow}}
	scan := startScan(t, Config{Process: testProcess(t), Rows: rows, MaxParallelIO: 16}, nil)
	defer scan.Close()
	limit := func(u string) int {
		h, err := openObject(u, &scan.plan.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release()
		return scan.groupLimit(h.Scheduler)
	}
	if n := limit(paths[2]); n != 4 {
		t.Errorf("local files (bind read one): %d chunks a group, want a quarter of the lookahead of 16", n)
	}
	if n := limit(srv.URL + "/" + filepath.Base(paths[3])); n != 1 {
		t.Errorf("a server not measured yet: %d chunks a group, want 1", n)
	}
	if err := scanErr(scan); err != nil { // measures the server
		t.Fatal(err)
	}
	if n := limit(slow); n != 1 {
		t.Errorf("a server 20 ms away: %d chunks a group, want 1", n)
	}
}
