package scanner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/test/datagen"
)

// TestChunkGoroutinesReused: a scan of many small chunks runs them on a
// few goroutines, each taking the next chunk when it is done, not on a new
// goroutine each (whose stack the fetch and the decode grow again, chunk
// after chunk). The goroutines started are bounded by the chunks that can
// be in flight at once (the reservations ahead of the consumer, and the
// chunks handed out but not yet finished), far below the chunks.
func TestChunkGoroutinesReused(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 50, ChunksPerSegment: 8, RowsPerChunk: 20, BatchesPerChunk: 1, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 4} {
		scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), MaxParallelIO: 4}, nil)
		rows, _ := drain(t, scan, threads, 0)
		scan.Close()
		var n int64
		for _, r := range rows {
			n += r
		}
		st := scan.Stats()
		if st.Chunks != 400 || n == 0 {
			t.Fatalf("%d threads: %d chunks, %d rows scanned, want 400 chunks", threads, st.Chunks, n)
		}
		t.Logf("%d threads: %d goroutines for %d chunks", threads, scan.chunkGoroutines.Load(), st.Chunks)
		// Bound: the ahead slots (4), the chunks the consumers were handed
		// whose goroutines still unwind, and as many again for the moments
		// a goroutine is between two chunks.
		if g := scan.chunkGoroutines.Load(); g > 2*(4+int64(threads))+2 {
			t.Errorf("%d threads: %d goroutines started for %d chunks, want at most %d", threads, g, st.Chunks, 2*(4+threads)+2)
		}
	}
}

// TestNoChunkGoroutineWaitsForIO: a chunk read whole in one request is
// submitted by planChunks, and a chunk goroutine takes it only once its
// bytes are in (fetchEarly): while the store holds every GET, no goroutine
// of the scan waits in a fetch. Closing the scan then cancels the held
// GETs, hands their chunks on and ends the scan's goroutines, with every
// byte back in the budget.
func TestNoChunkGoroutineWaitsForIO(t *testing.T) {
	dir := t.TempDir()
	const chunks, parallel = 24, 4
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: chunks, RowsPerChunk: 50, BatchesPerChunk: 1, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	files := http.FileServer(http.Dir(dir))
	var mu sync.Mutex
	hold, held, answered := false, 0, 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := hold
		if h {
			held++
		}
		mu.Unlock()
		if h {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		files.ServeHTTP(w, r)
		mu.Lock()
		answered++
		mu.Unlock()
	}))
	defer srv.Close()
	defer close(release)
	var rows []Row
	for i := range chunks {
		name := fmt.Sprintf("chunks/segment=s0/chunk-%d.arrow", i)
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, Row{"url": srv.URL + "/" + name, "length": info.Size(), "segment_id": "s0"})
	}
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Rows: rows, MaxParallelIO: parallel, NoHedge: true})
	if err != nil {
		t.Fatal(err)
	}
	// Bind's GETs (the first chunk, and those it fetches beside it) are
	// answered; every later one is held.
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return answered >= parallel }, "bind's GETs answered")
	mu.Lock()
	hold = true
	mu.Unlock()
	scan, err := plan.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			b, err := scan.Next()
			if err != nil || b == nil {
				return
			}
			_, n := b.Take(1 << 20)
			b.Consumed(n)
			b.Close()
		}
	}()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return held >= parallel }, "the scan's GETs held")
	buf := make([]byte, 8<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if n := strings.Count(stacks, "scanner.(*Plan).fetchWhole"); n > 0 {
		t.Errorf("%d goroutines wait in a fetch while the store holds %d GETs; want none:\n%s", n, held, stacks)
	}
	scan.Close()
	<-consumed
	if st := scan.Stats().Budget; st.InUse != 0 {
		t.Errorf("after Close the budget holds %d bytes, want 0", st.InUse)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10 s", what)
		}
	}
}
