package scanner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// TestProjectionSavesTime: small chunks behind a 30 ms store are read
// whole; large ones project; saving nothing never projects.
func TestProjectionSavesTime(t *testing.T) {
	remote := iosched.Model{Latency: 30 * time.Millisecond, Floor: 30 * time.Millisecond, Bandwidth: 100e6, Samples: 100}
	local := iosched.Model{Latency: 50 * time.Microsecond, Floor: 50 * time.Microsecond, Bandwidth: 2e9, Samples: 100}
	fast := iosched.Model{Latency: 5 * time.Microsecond, Floor: 5 * time.Microsecond, Bandwidth: 200e6, Samples: 100}
	for _, c := range []struct {
		name       string
		m          iosched.Model
		size, need int64
		want       bool
	}{
		{"120 KiB chunk, one narrow column, 30 ms", remote, 120 << 10, 40 << 10, false},
		{"2,000 × 4 KiB chunk, 30 ms", remote, 4 << 10, 1 << 10, false},
		{"64 MiB chunk, a quarter of it, 30 ms", remote, 64 << 20, 16 << 20, true},
		{"8 MiB chunk on local disk, a quarter", local, 8 << 20, 2 << 20, true},
		// A store that answers at once still costs each request its fixed
		// costs: a small file is read whole.
		{"6.5 KiB file on local disk, half", fast, 6500, 3000, false},
		{"4 MiB file on local disk, a quarter", fast, 4 << 20, 1 << 20, true},
		{"nothing saved", local, 8 << 20, 8 << 20, false},
		{"more than the object", local, 8 << 20, 9 << 20, false},
	} {
		if got := projectionSavesTime(c.m, c.size, c.need); got != c.want {
			t.Errorf("%s: projects %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReservationFollowsProjection: in a scan that projects, a chunk the
// cost model reads whole (too small to pay for the extra round trips) is
// reserved at its whole length, not at its fields' share: the budget grows
// past the reservations by no more than the pool's rounding. Before, the
// small chunks' commits grew the budget by several times their
// reservations, past its cap (versitygw under load, sum of one column:
// budget_peak 1.5-2.5x the cap).
func TestReservationFollowsProjection(t *testing.T) {
	dir := t.TempDir()
	// One large chunk, whose projection pays, then small ones, whose does
	// not: at 30 ms and 10 MB/s a projected read costs 60 ms more, the
	// bytes saved of a small chunk take 30 ms, a large one's 150 ms.
	if _, err := datagen.Write(filepath.Join(dir, "big"), datagen.Spec{Segments: 1, ChunksPerSegment: 1, RowsPerChunk: 60000, BatchesPerChunk: 4, Seed: 21}); err != nil {
		t.Fatal(err)
	}
	if _, err := datagen.Write(filepath.Join(dir, "small"), datagen.Spec{Segments: 1, ChunksPerSegment: 4, RowsPerChunk: 8000, BatchesPerChunk: 2, Seed: 22}); err != nil {
		t.Fatal(err)
	}
	f := newSlowFiles(t, dir, 30*time.Millisecond)
	f.setRate(10e6)
	var rows []Row
	add := func(name string) {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, Row{"url": f.srv.URL + "/" + name, "length": info.Size(), "segment_id": "s0"})
	}
	add("big/chunks/segment=s0/chunk-0.arrow")
	add("big/chunks/segment=s0/chunk-0.arrow") // read by the scan, not at bind
	for i := range 4 {
		add(fmt.Sprintf("small/chunks/segment=s0/chunk-%d.arrow", i))
	}
	// One IO worker: bind fetches nothing early.
	scan := startScan(t, Config{Process: testProcess(t), Rows: rows, MaxParallelIO: 1}, []int{0})
	drain(t, scan, 1, 0)
	scan.Close()
	st := scan.Stats()
	if !st.ProjectedIO || st.ProjectedChunks != 1 {
		t.Fatalf("projected IO %v, %d chunks projected; want the second large chunk alone (the setup is wrong)", st.ProjectedIO, st.ProjectedChunks)
	}
	if b := st.Budget; b.Grown*10 > b.Committed {
		t.Errorf("the budget grew %d bytes past its reservations, of %d committed (more than 10%%): %+v", b.Grown, b.Committed, b)
	}
}

// TestProjectionUnderQueueing: on a store whose answers slow down with the
// scan's own requests in flight (a server short of CPU), reading chunks
// whole to save round trips only queues 4 times the bytes: the extra round
// trips are priced at the store's round trip (Model.Floor), and every
// IPC file bind did not read is projected. Before, with the time to headers
// under the scan's load as the price, chunks were read whole (versitygw,
// one column of four: 17 of 35 chunks projected, 693 MB read against 312).
func TestProjectionUnderQueueing(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 12, RowsPerChunk: 150000, BatchesPerChunk: 4, Seed: 23}); err != nil {
		t.Fatal(err)
	}
	f := newSlowFiles(t, dir, 0)
	f.setQueue(10 * time.Millisecond)
	// A budget of a few projected chunks: each chunk is decided once the
	// ones before it have made the store queue.
	scan := startScan(t, Config{Process: testProcess(t), Rows: f.rows(t, 12), MaxParallelIO: 16, MemoryBudget: 3 << 20, startingCapFloor: 1}, []int{0})
	drain(t, scan, 2, 0)
	scan.Close()
	st := scan.Stats()
	m := scan.sched.Model()
	// datagen writes every other chunk as an IPC stream, which is read
	// whole: 6 files.
	if !st.ProjectedIO || st.ProjectedChunks != 6 {
		t.Errorf("%d of 6 IPC files projected (projected IO %v), want all; model %+v", st.ProjectedChunks, st.ProjectedIO, m)
	}
	if m.Latency <= 2*m.Floor {
		t.Errorf("model %+v: the store did not queue, the test shows nothing", m)
	}
}

// TestWholeChunkDecodesItsFields: a small local chunk is read whole (no
// projected IO), yet only the scan's fields are decoded: its batches hold
// those columns alone, equal to a scan of every field. Before, every
// column of every chunk was built and checked, most of a small chunk's
// decode for a query of one column.
func TestWholeChunkDecodesItsFields(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 4, RowsPerChunk: 300, BatchesPerChunk: 2, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	source := filepath.Join(dir, "chunks/**/*.arrow")
	files := 0 // batches of IPC files in the scan of one field
	byChunk := func(fields []int) map[string][]arrow.Array {
		scan := startScan(t, Config{Source: source, Process: testProcess(t), Ordered: true}, fields)
		defer scan.Close()
		out := map[string][]arrow.Array{}
		eachBatch(t, scan, func(b *Batch) {
			// datagen writes IPC files and streams; a stream is decoded whole.
			data, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0", b.Chunk.ChunkID+".arrow"))
			if err != nil {
				t.Fatal(err)
			}
			if fields != nil && bytes.HasPrefix(data, []byte("ARROW1")) {
				files++
				if int(b.Record.NumCols()) != len(fields) || b.Column(0) != nil {
					t.Errorf("chunk %s: a batch of %d columns, want %d (the scan's fields)", b.Chunk.ChunkID, b.Record.NumCols(), len(fields))
				}
			}
			// A copy: the column's buffers are the pool's, reused or
			// unmapped once the batch and the scan are closed.
			col, err := array.Concatenate([]arrow.Array{b.Column(2)}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			out[b.Chunk.ChunkID] = append(out[b.Chunk.ChunkID], col)
			b.Close()
		})
		if st := scan.Stats(); st.ProjectedChunks != 0 {
			t.Fatalf("%d chunks read by projected IO; the test wants small chunks read whole", st.ProjectedChunks)
		}
		return out
	}
	want, got := byChunk(nil), byChunk([]int{2})
	if files == 0 {
		t.Fatal("no chunk is an IPC file: the test needs some (datagen changed)")
	}
	if len(got) != 4 || len(want) != 4 {
		t.Fatalf("%d chunks, %d in the full scan, want 4", len(got), len(want))
	}
	for id, cols := range want {
		if len(got[id]) != len(cols) {
			t.Fatalf("chunk %s: %d batches, %d in the full scan", id, len(got[id]), len(cols))
		}
		for i := range cols {
			if !array.Equal(got[id][i], cols[i]) {
				t.Errorf("chunk %s batch %d: field 2 differs from the full scan's:\n%v\n%v", id, i, got[id][i], cols[i])
			}
			got[id][i].Release()
			cols[i].Release()
		}
	}
}
