package scanner

import (
	"path/filepath"
	"testing"

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
