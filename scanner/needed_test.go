package scanner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/test/datagen"
)

// Nothing read that the query does not need: a query of no chunk column
// over a catalog that gives num_rows, bind's schema read, and chunks
// pruned after bind.

// neededSpec is a dataset of 3 segments of 4 chunks, each chunk larger
// than the schema read's guesses (so that a schema read is a range of it),
// alternately IPC files and streams.
var neededSpec = datagen.Spec{Segments: 3, ChunksPerSegment: 4, RowsPerChunk: 4000, BatchesPerChunk: 2, Seed: 27}

// neededCatalog serves neededSpec's chunks through f, as catalog rows
// with their length and, if numRows, their num_rows.
func neededCatalog(t *testing.T, f *slowFiles, numRows bool) []Row {
	t.Helper()
	var rows []Row
	for s := range neededSpec.Segments {
		for k := range neededSpec.ChunksPerSegment {
			name := fmt.Sprintf("chunks/segment=s%d/chunk-%d.arrow", s, k)
			info, err := os.Stat(filepath.Join(f.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if info.Size() <= 64<<10 {
				t.Fatalf("%s is %d bytes: too small to tell a schema read from a whole one", name, info.Size())
			}
			r := Row{"url": f.srv.URL + "/" + name, "length": info.Size(), "segment_id": fmt.Sprintf("s%d", s)}
			if numRows {
				r["num_rows"] = int64(neededSpec.RowsPerChunk + 517*k)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func writeNeeded(t *testing.T) (string, []datagen.SegmentStats) {
	t.Helper()
	dir := t.TempDir()
	stats, err := datagen.Write(dir, neededSpec)
	if err != nil {
		t.Fatal(err)
	}
	return dir, stats
}

// served returns the GETs f answered so far: in all, and of each path.
func (f *slowFiles) served() (int, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gets := make(map[string]int, len(f.gets))
	for p, n := range f.gets {
		gets[p] = n
	}
	return f.started, gets
}

// rangeLen is the bytes a Range header "bytes=a-b" asks for (-1: none).
func rangeLen(h string) int64 {
	a, b, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return -1
	}
	return hi - lo + 1
}

// checkSchemaRead fails unless bind's GETs (gets by path, atBind in all)
// were of the first chunk only, and together asked for no more than its
// tail: its footer and its batches' metadata.
func checkSchemaRead(t *testing.T, f *slowFiles, atBind int, gets map[string]int) {
	t.Helper()
	const first = "/chunks/segment=s0/chunk-0.arrow"
	if len(gets) != 1 || gets[first] != atBind || atBind > 1+neededSpec.BatchesPerChunk {
		t.Errorf("bind sent %d GETs (%v), want at most %d, of the first chunk only", atBind, gets, 1+neededSpec.BatchesPerChunk)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var asked int64
	for _, r := range f.ranges[first] {
		n := rangeLen(r)
		if n < 0 {
			t.Errorf("bind asked for %q of the first chunk: the whole of it", r)
		}
		asked += n
	}
	if asked > 64<<10+4<<10 {
		t.Errorf("bind asked for %d bytes of the first chunk (%v): more than its schema", asked, f.ranges[first])
	}
}

// TestCountReadsNoChunk: a scan of no field (count(*), segment_id alone)
// over a catalog that gives every chunk's num_rows requests no chunk: the
// catalog's counts are its rows. Bind reads the first chunk's schema only,
// and fetches nothing ahead. The same plan scanned for a column reads
// every chunk.
func TestCountReadsNoChunk(t *testing.T) {
	dir, stats := writeNeeded(t)
	f := newSlowFiles(t, dir, time.Millisecond)
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Rows: neededCatalog(t, f, true), MaxParallelIO: 8})
	if err != nil {
		t.Fatal(err)
	}
	atBind, gets := f.served()
	checkSchemaRead(t, f, atBind, gets)
	for _, threads := range []int{1, 3} {
		scan, err := plan.Start(context.Background(), []int{})
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := drain(t, scan, threads, 0)
		scan.Close()
		for _, s := range stats {
			if rows[s.Segment] != s.Rows {
				t.Errorf("%d threads: segment %s: %d rows, want %d", threads, s.Segment, rows[s.Segment], s.Rows)
			}
		}
		st := scan.Stats()
		if st.GETs != 0 || st.Requests != 0 || st.WireBytes != 0 || st.Chunks != 12 || st.Progress != 1 {
			t.Errorf("%d threads: %d GETs, %d requests, %d wire bytes, %d chunks, progress %v; want 0, 0, 0, 12, 1",
				threads, st.GETs, st.Requests, st.WireBytes, st.Chunks, st.Progress)
		}
		if st.SchemaRequests != int64(atBind) || st.SchemaBytes <= 0 || st.SchemaBytes > 68<<10 {
			t.Errorf("%d threads: bind's schema reads %d requests, %d bytes; want the store's %d, at most 68 KiB", threads, st.SchemaRequests, st.SchemaBytes, atBind)
		}
		if state, err := scan.state(); state != "done" || err != nil {
			t.Errorf("%d threads: state %s (%v), want done", threads, state, err)
		}
	}
	if n, _ := f.served(); n != atBind {
		t.Errorf("the store answered %d GETs after bind, want none", n-atBind)
	}
	scan, err := plan.Start(context.Background(), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	rows, sumX := drain(t, scan, 2, 0)
	scan.Close()
	checkSegments(t, stats, rows, sumX)
	if _, gets := f.served(); len(gets) != 12 {
		t.Errorf("a scan of x requested %d of the 12 chunks", len(gets))
	}
}

// TestCountNeedsEveryNumRows: with one chunk's num_rows unknown, a scan of
// no field reads the chunks, and counts right.
func TestCountNeedsEveryNumRows(t *testing.T) {
	dir, stats := writeNeeded(t)
	f := newSlowFiles(t, dir, 0)
	rows := neededCatalog(t, f, true)
	delete(rows[5], "num_rows")
	scan := startScan(t, Config{Process: testProcess(t), Rows: rows, MaxParallelIO: 8}, []int{})
	got, _ := drain(t, scan, 2, 0)
	scan.Close()
	for _, s := range stats {
		if got[s.Segment] != s.Rows {
			t.Errorf("segment %s: %d rows, want %d", s.Segment, got[s.Segment], s.Rows)
		}
	}
	if st := scan.Stats(); st.GETs == 0 {
		t.Errorf("the scan requested nothing: it cannot know chunk 5's rows")
	}
}

// TestPrunedAfterBindIsNeverRequested: a plan bound for a host that prunes
// after bind (PruneAfterBind) fetches nothing ahead at bind, only the first
// chunk's schema; the chunks Select then drops (the first chunk's segment
// among them) are never requested, and every kept chunk once.
func TestPrunedAfterBindIsNeverRequested(t *testing.T) {
	dir, stats := writeNeeded(t)
	f := newSlowFiles(t, dir, 5*time.Millisecond)
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Rows: neededCatalog(t, f, false), MaxParallelIO: 8, PruneAfterBind: true})
	if err != nil {
		t.Fatal(err)
	}
	atBind, gets := f.served()
	checkSchemaRead(t, f, atBind, gets)
	if dropped := plan.Select(func(c *Chunk) bool { return c.SegmentID != "s0" }); dropped != 4 {
		t.Fatalf("Select dropped %d, want 4", dropped)
	}
	scan, err := plan.Start(context.Background(), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	rows, sumX := drain(t, scan, 2, 0)
	scan.Close()
	checkSegments(t, stats[1:], rows, sumX)
	if rows["s0"] != 0 {
		t.Errorf("%d rows of the pruned segment", rows["s0"])
	}
	_, gets = f.served()
	for k := range neededSpec.ChunksPerSegment {
		p := fmt.Sprintf("/chunks/segment=s0/chunk-%d.arrow", k)
		if want := map[bool]int{true: atBind, false: 0}[k == 0]; gets[p] != want {
			t.Errorf("%s (pruned) requested %d times, want %d", p, gets[p], want)
		}
	}
	for s := 1; s < neededSpec.Segments; s++ {
		for k := range neededSpec.ChunksPerSegment {
			if p := fmt.Sprintf("/chunks/segment=s%d/chunk-%d.arrow", s, k); gets[p] != 1 {
				t.Errorf("%s requested %d times, want once", p, gets[p])
			}
		}
	}
	if st := scan.Stats(); st.Pruned != 4 || st.Chunks != 8 {
		t.Errorf("%d chunks pruned, %d scanned; want 4 and 8", st.Pruned, st.Chunks)
	}
}

// TestConsumerStopsEarly: a consumer that takes one batch and stops (a
// LIMIT) leaves at most max_parallel_io chunks read beyond the one it
// reached, though the budget would hold every chunk: the planner waits
// for a consumer to reach a chunk before it reserves one more.
func TestConsumerStopsEarly(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 40, RowsPerChunk: 300, BatchesPerChunk: 2, Seed: 14}); err != nil {
		t.Fatal(err)
	}
	f := newSlowFiles(t, dir, time.Millisecond)
	const parallel = 4
	scan := startScan(t, Config{Process: testProcess(t), Rows: f.rows(t, 40), MaxParallelIO: parallel, MemoryBudget: 1 << 30}, []int{0})
	defer scan.Close()
	fillLookahead(t, scan)
	if n, gets := f.served(); len(gets) != parallel+1 || n != parallel+1 || scan.chunks.Load() != parallel+1 {
		t.Errorf("%d chunks decoded, %d requested in %d GETs; want %d each: the one reached and max_parallel_io more",
			scan.chunks.Load(), len(gets), n, parallel+1)
	}
}

// fillLookahead takes scan's first batch (closed at the test's end) and
// waits until every lookahead slot is held by a chunk no consumer reached,
// all of them decoded: then nothing more can be reserved or requested
// until Next hands one out.
func fillLookahead(t *testing.T, scan *Scan) {
	t.Helper()
	b, err := scan.Next()
	if err != nil || b == nil {
		t.Fatalf("first batch: %v, %v", b, err)
	}
	t.Cleanup(b.Close)
	deadline := time.Now().Add(waitTimeout)
	for scan.chunks.Load() < int64(cap(scan.ahead))+1 || len(scan.ahead) < cap(scan.ahead) {
		if time.Now().After(deadline) {
			t.Fatalf("%d chunks decoded, %d of %d lookahead slots held: the planner never filled its lookahead", scan.chunks.Load(), len(scan.ahead), cap(scan.ahead))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLocalLookahead: a scan of local files that sets no max_parallel_io
// reads 32 chunks ahead of its consumer (the README's default), and no
// more: a consumer of small local chunks that waited whenever 8 were
// taken spent more on its waits than on the chunks (iosched's
// DefaultLocalParallelism). A consumer that stops after its first batch
// leaves exactly that many chunks read beyond the one it reached.
func TestLocalLookahead(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 60, RowsPerChunk: 150, BatchesPerChunk: 1, Seed: 28}); err != nil {
		t.Fatal(err)
	}
	const lookahead = 32
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), MemoryBudget: 1 << 30}, []int{0})
	defer scan.Close()
	fillLookahead(t, scan)
	if n := scan.chunks.Load(); n != lookahead+1 || cap(scan.ahead) != lookahead {
		t.Errorf("%d chunks decoded with %d lookahead slots; want %d: the one reached and %d more", n, cap(scan.ahead), lookahead+1, lookahead)
	}
}
