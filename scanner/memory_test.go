package scanner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// writeCompressed writes chunks ZSTD IPC files that decode to about ten
// times their size, and returns their folder.
func writeCompressed(t *testing.T, chunks int) string {
	t.Helper()
	dir := t.TempDir()
	if _, _, err := datagen.WriteCompressed(dir, datagen.Compressed{Chunks: chunks, Rows: 60_000}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// arrayBytes is the bytes of a batch's buffers.
func arrayBytes(r arrow.RecordBatch) int64 {
	var n int64
	for _, c := range r.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

// TestCompressedChunksStayInBudget: chunks that decode to ten times their
// wire size, under a budget of a few of them, and under a process limit
// smaller than the budget: neither level's peak exceeds its cap (each
// chunk is far below it), the answer is complete, a batch holds its
// decoded bytes until it closes, and at the end the budget's books and
// Arrow's allocator agree on zero.
func TestCompressedChunksStayInBudget(t *testing.T) {
	dir := writeCompressed(t, 12)
	for _, tc := range []struct {
		name          string
		budget, limit int64
	}{
		{"memory_budget", 8 << 20, 0},
		{"process limit", 64 << 20, 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := NewProcess(tc.limit)
			defer proc.Close()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			scan := startScan(t, Config{Process: proc, Source: filepath.Join(dir, "*.arrow"), Allocator: mem,
				MemoryBudget: tc.budget, Ordered: true}, nil)
			var rows int64
			for {
				b, err := scan.Next()
				if err != nil {
					t.Fatal(err)
				}
				if b == nil {
					break
				}
				for {
					_, n := b.Take(2048)
					if n == 0 {
						break
					}
					b.Consumed(n)
					rows += n
				}
				// Every row is consumed, but the arrays are still allocated:
				// the lease must still cover them.
				if held, live := b.cl.lease.Held(), arrayBytes(b.Record); held < live {
					t.Errorf("chunk %s: lease holds %d of a batch whose arrays hold %d until Close", b.Chunk.URL, held, live)
				}
				b.Close()
			}
			scan.Close()
			if rows != 12*60_000 {
				t.Errorf("%d rows, want %d", rows, 12*60_000)
			}
			st := scan.Stats().Budget
			t.Logf("scan: %s grow_waits=%d", st, st.GrowWaits)
			if st.Peak > st.Cap {
				t.Errorf("scan's budget peaked at %d, above its cap %d", st.Peak, st.Cap)
			}
			if proc.Memory != nil {
				pst := proc.Memory.Stats()
				t.Logf("process: %s", pst)
				if pst.Peak > pst.Cap || pst.InUse != 0 {
					t.Errorf("process limit: peak %d, cap %d, in use %d after the scan", pst.Peak, pst.Cap, pst.InUse)
				}
			}
			if st.InUse != 0 || scan.budget.PoolStats().Taken != 0 {
				t.Errorf("after Close: budget %s, pool %+v", st, scan.budget.PoolStats())
			}
			mem.AssertSize(t, 0)
		})
	}
}

// TestChunkPanicRefunds: a panic in a chunk's pipeline fails the scan and
// gives the chunk's bytes back to the process limit, which outlives the
// scan.
func TestChunkPanicRefunds(t *testing.T) {
	dir := writeCompressed(t, 3)
	proc := NewProcess(64 << 20)
	defer proc.Close()
	scan := startScan(t, Config{Process: proc, Source: filepath.Join(dir, "*.arrow"), DebugPanic: "chunk"}, nil)
	_, err := scan.Next()
	if err == nil || !strings.Contains(err.Error(), "debug_panic at chunk") {
		t.Fatalf("Next = %v, want the chunk's panic", err)
	}
	scan.Close()
	if st := proc.Memory.Stats(); st.InUse != 0 {
		t.Fatalf("the process limit holds %d bytes after the scan ended: %s", st.InUse, st)
	}
}

// TestCloseWhileDecodeWaits: Close of a scan whose chunks wait for room to
// decode (the consumer holds a batch and takes nothing) ends them: their
// Extend returns, their bytes go back, no goroutine stays (goleak).
func TestCloseWhileDecodeWaits(t *testing.T) {
	dir := writeCompressed(t, 8)
	proc := NewProcess(64 << 20)
	defer proc.Close()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	scan := startScan(t, Config{Process: proc, Source: filepath.Join(dir, "*.arrow"), Allocator: mem, MemoryBudget: 7 << 20}, nil)
	b, err := scan.Next()
	if err != nil || b == nil {
		t.Fatalf("Next = %v, %v", b, err)
	}
	deadline := time.Now().Add(waitTimeout)
	for scan.budget.Stats().Growing == 0 && scan.budget.Stats().Queued == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nothing waits for the budget: %s", scan.budget)
		}
		time.Sleep(time.Millisecond)
	}
	scan.Close()
	if err := scan.ready.error(); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("closing the scan failed it: %v", err)
	}
	b.Close()
	if st := proc.Memory.Stats(); st.InUse != 0 {
		t.Errorf("the process limit holds %d bytes after the scan ended: %s", st.InUse, st)
	}
	mem.AssertSize(t, 0)
}

// TestProjectedReadsStayInBudget: a projected read fetches more than its
// estimate (the footer, metadata, the margins of predicted ranges); the
// lease covers those bytes before they are fetched, so the budget's peak
// stays within its cap instead of growing at Commit, but for what the
// oldest chunk's Extend may add past it (it never waits: see
// budget.Lease.Extend), at most a quarter of the cap here. Before, the
// commits of chunks that fetched more than their reservation took the peak
// to a third above the cap.
func TestProjectedReadsStayInBudget(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 12, RowsPerChunk: 60000, BatchesPerChunk: 2, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), MemoryBudget: 6 << 20}, []int{0, 2})
	drain(t, scan, 2, 0)
	scan.Close()
	st := scan.Stats()
	t.Logf("%s projected %d of %d chunks", st.Budget, st.ProjectedChunks, st.Chunks)
	if st.ProjectedChunks == 0 {
		t.Fatal("no chunk was read column by column: the test shows nothing")
	}
	if st.Budget.Peak > st.Budget.Cap+st.Budget.Cap/4 {
		t.Errorf("budget peaked at %d, above its cap %d and the head of line's growth", st.Budget.Peak, st.Budget.Cap)
	}
}
