package scanner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/scanner/arrowipc"
	"github.com/remote-segments/remote_segments/test/datagen"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds every wait for another goroutine in these tests.
const waitTimeout = 10 * time.Second

// testProcess is a Process of the test's own, closed when it ends.
func testProcess(t testing.TB) *Process {
	p := NewProcess(0)
	t.Cleanup(func() { p.Close() })
	return p
}

// startScan binds cfg and starts a scan of fields (nil: all).
func startScan(t *testing.T, cfg Config, fields []int) *Scan {
	t.Helper()
	plan, err := Bind(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	scan, err := plan.Start(context.Background(), fields)
	if err != nil {
		t.Fatal(err)
	}
	return scan
}

// datasetSpec is writeDataset's dataset.
var datasetSpec = datagen.Spec{Segments: 3, ChunksPerSegment: 2, RowsPerChunk: 700, BatchesPerChunk: 2, Seed: 7}

func writeDataset(t *testing.T) (string, []datagen.SegmentStats) {
	t.Helper()
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datasetSpec)
	if err != nil {
		t.Fatal(err)
	}
	return dir, stats
}

func TestResolveSource(t *testing.T) {
	dir, _ := writeDataset(t)
	chunks := filepath.Join(dir, "chunks")
	tests := []struct {
		name    string
		source  string
		want    int    // chunks
		wantErr string // substring
	}{
		{"double star", chunks + "/**/*.arrow", 6, ""},
		{"one level", chunks + "/*/chunk-1.arrow", 3, ""},
		{"segment glob", chunks + "/segment=s[01]/*.arrow", 4, ""},
		{"directory prefix", chunks, 6, ""},
		{"file url", "file://" + chunks, 6, ""},
		{"one file", chunks + "/segment=s2/chunk-0.arrow", 1, ""},
		{"empty glob", dir + "/none/*.arrow", 0, "nothing matches"},
		{"missing file", dir + "/missing.arrow", 0, "missing.arrow: not found"},
		{"empty source", "", 0, "source is empty"},
		{"unsupported scheme", "gopher://h/x", 0, `not supported: scheme "gopher"`},
		{"bad pattern", chunks + "/[/*.arrow", 0, "syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(context.Background(), Config{Process: testProcess(t), Source: tt.source})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("got %d chunks, want %d: %+v", len(got), tt.want, got)
			}
			for i, c := range got {
				if c.Row != i || c.Length != -1 || c.NumRows != -1 || c.Size <= 0 || !strings.HasPrefix(c.URL, "file:///") {
					t.Errorf("chunk %d = %+v", i, c)
				}
			}
		})
	}
}

func TestChunkErrorHidesQuery(t *testing.T) {
	err := &ChunkError{Chunk: &Chunk{URL: "https://h/a.arrow?X-Amz-Signature=secret", Row: 3}, Err: ErrBadChunk}
	if got := err.Error(); strings.Contains(got, "secret") || !strings.Contains(got, "https://h/a.arrow?REDACTED (catalog row 3)") {
		t.Errorf("error = %q", got)
	}
}

// TestScanConcurrent reads the dataset from several goroutines at once, as
// DuckDB's threads do, and checks the totals against the generator's.
func TestScanConcurrent(t *testing.T) {
	dir, stats := writeDataset(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), Allocator: mem}, nil)
	rows, sumX := drain(t, scan, 4, 0)
	scan.Close()
	st := scan.Stats()
	for _, s := range stats {
		if rows[s.Segment] != s.Rows || sumX[s.Segment] != s.SumX {
			t.Errorf("segment %s: rows %d sum_x %d, want %d %d", s.Segment, rows[s.Segment], sumX[s.Segment], s.Rows, s.SumX)
		}
	}
	if st.Chunks != 6 || st.WireBytes <= 0 || st.Budget.InUse != 0 || st.Budget.Peak <= 0 {
		t.Errorf("stats = %+v", st)
	}
}

// TestScanCloseEarly stops after one batch, as a LIMIT does: everything
// decoded must be freed and the scan reported as cancelled.
func TestScanCloseEarly(t *testing.T) {
	dir, _ := writeDataset(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), Allocator: mem}, nil)
	b, err := scan.Next()
	if err != nil || b == nil {
		t.Fatalf("Next = %v, %v", b, err)
	}
	b.Close()
	scan.Close()
	scan.Close() // idempotent
	if _, err := scan.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after Close = %v, want context.Canceled", err)
	}
	if in := scan.Stats().Budget.InUse; in != 0 {
		t.Errorf("budget holds %d bytes after Close", in)
	}
	var found bool
	for _, s := range scan.plan.cfg.Process.Scans() {
		if s.ID == scan.ID() {
			found = true
			if s.State != "cancelled" {
				t.Errorf("state = %q, want cancelled", s.State)
			}
		}
	}
	if !found {
		t.Error("scan missing from Scans()")
	}
}

// writeExtraChunk adds chunks/segment=s9/zz.arrow to the dataset in dir: one
// batch of schema, filled by fill, as an IPC file or stream.
func writeExtraChunk(t *testing.T, dir string, schema *arrow.Schema, fileFormat bool, fill func(*array.RecordBuilder)) {
	t.Helper()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	fill(bld)
	rec := bld.NewRecordBatch()
	bld.Release()
	defer rec.Release()
	path := filepath.Join(dir, "chunks/segment=s9/zz.arrow")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := datagen.WriteChunk(path, []arrow.RecordBatch{rec}, fileFormat); err != nil {
		t.Fatal(err)
	}
}

func TestSchemaMismatch(t *testing.T) {
	dir, _ := writeDataset(t)
	// A chunk with another schema, sorted after the others.
	other := arrow.NewSchema([]arrow.Field{{Name: "y", Type: arrow.PrimitiveTypes.Int32}}, nil)
	writeExtraChunk(t, dir, other, true, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int32Builder).Append(1)
	})
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks")}, nil)
	defer scan.Close()
	for {
		b, err := scan.Next()
		if err != nil {
			if !errors.Is(err, ErrBadChunk) || !strings.Contains(err.Error(), "zz.arrow") || !strings.Contains(err.Error(), "differs") {
				t.Fatalf("err = %v", err)
			}
			return
		}
		if b == nil {
			t.Fatal("scan ended without the schema error")
		}
		b.Close()
	}
}

// eachBatch hands every batch of scan to fn, which closes it, until the
// end; an error of the scan fails tb.
func eachBatch(tb testing.TB, scan *Scan, fn func(*Batch)) {
	tb.Helper()
	for {
		b, err := scan.Next()
		if err != nil {
			tb.Fatal(err)
		}
		if b == nil {
			return
		}
		fn(b)
	}
}

// drain reads a whole scan on threads goroutines, consuming each batch in
// vector-sized slices, and returns rows and sum(x) per segment.
func drain(t *testing.T, scan *Scan, threads int, slow time.Duration) (map[string]int64, map[string]int64) {
	t.Helper()
	var mu sync.Mutex
	rows, sumX := map[string]int64{}, map[string]int64{}
	var wg sync.WaitGroup
	for range threads {
		wg.Go(func() {
			for {
				b, err := scan.Next()
				if err != nil {
					t.Error(err)
					return
				}
				if b == nil {
					return
				}
				x, _ := b.Column(0).(*array.Int64)
				for {
					start, n := b.Take(2048)
					if n == 0 {
						break
					}
					var s int64
					if x != nil {
						for i := start; i < start+n; i++ {
							if x.IsValid(int(i)) {
								s += x.Value(int(i))
							}
						}
					}
					time.Sleep(slow)
					b.Consumed(n)
					mu.Lock()
					rows[b.Chunk.SegmentID] += n
					sumX[b.Chunk.SegmentID] += s
					mu.Unlock()
				}
				b.Close()
			}
		})
	}
	wg.Wait()
	return rows, sumX
}

// scanErr reads scan to its end, closing each batch, and returns the
// error that ended it (nil at the end).
func scanErr(scan *Scan) error {
	for {
		b, err := scan.Next()
		if err != nil || b == nil {
			return err
		}
		b.Close()
	}
}

// scanSum scans cfg whole on two threads and returns sum(x) over all its
// rows, and the scan's stats.
func scanSum(t *testing.T, cfg Config) (int64, Stats) {
	t.Helper()
	scan := startScan(t, cfg, nil)
	_, sums := drain(t, scan, 2, 0)
	scan.Close()
	var sum int64
	for _, s := range sums {
		sum += s
	}
	return sum, scan.Stats()
}

// checkSegments compares drain's rows and sum(x) per segment with what the
// data generator wrote.
func checkSegments(t *testing.T, stats []datagen.SegmentStats, rows, sumX map[string]int64) {
	t.Helper()
	for _, s := range stats {
		if rows[s.Segment] != s.Rows || sumX[s.Segment] != s.SumX {
			t.Errorf("segment %s: rows %d sum %d, want %d %d", s.Segment, rows[s.Segment], sumX[s.Segment], s.Rows, s.SumX)
		}
	}
}

// TestScanBudget runs a scan whose budget holds only a few chunks, with a
// slow consumer: the budget's peak stays at its cap, and every byte comes
// back.
func TestScanBudget(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 4, ChunksPerSegment: 6, RowsPerChunk: 4000, BatchesPerChunk: 2, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), Allocator: mem, MemoryBudget: 400 << 10}, nil)
	rows, sumX := drain(t, scan, 3, time.Millisecond)
	scan.Close()
	checkSegments(t, stats, rows, sumX)
	b := scan.Stats().Budget
	if b.InUse != 0 {
		t.Errorf("budget in use %d after the scan", b.InUse)
	}
	if b.Peak > b.Cap && b.OversizeAdmits == 0 && b.Overcommits == 0 {
		t.Errorf("peak %d above cap %d without an oversize admit or overcommit", b.Peak, b.Cap)
	}
	if b.Waits == 0 {
		t.Errorf("a budget of %d for 24 chunks never made the pipeline wait: %s", b.Cap, b)
	}
}

// TestScanOrdered checks catalog order with ordered delivery.
func TestScanOrdered(t *testing.T) {
	dir, _ := writeDataset(t)
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), Ordered: true, MemoryBudget: 1 << 20}, nil)
	defer scan.Close()
	if scan.MaxThreads() != 1 {
		t.Errorf("ordered scan allows %d threads", scan.MaxThreads())
	}
	last := -1
	for {
		b, err := scan.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		if b.Chunk.Row < last {
			t.Fatalf("chunk %d after chunk %d", b.Chunk.Row, last)
		}
		last = b.Chunk.Row
		b.Close()
	}
	if last != scan.plan.Chunks.Len()-1 {
		t.Errorf("last chunk %d of %d", last, scan.plan.Chunks.Len())
	}
}

// scanFullAndProjected scans the first chunk of the data spec makes twice
// over (two catalog rows of the one IPC file), once whole and once only
// fields, checks that both give the same rows and sum of x, and returns the
// projected scan (closed) and both scans' stats.
func scanFullAndProjected(t *testing.T, spec datagen.Spec, fields []int) (*Scan, Stats, Stats) {
	t.Helper()
	dir := t.TempDir()
	if _, err := datagen.Write(dir, spec); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow")
	info, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() <= bindWholeMax {
		t.Fatalf("the chunk is %d bytes: the test needs one bind does not read whole", info.Size())
	}
	rows2 := []Row{{"url": src, "length": info.Size()}, {"url": src, "length": info.Size()}}
	full := startScan(t, Config{Process: testProcess(t), Rows: rows2}, nil)
	fullRows, fullSum := drain(t, full, 1, 0)
	full.Close()

	proj := startScan(t, Config{Process: testProcess(t), Rows: rows2}, fields)
	rows, sum := drain(t, proj, 1, 0)
	proj.Close()
	if rows["s0"] != fullRows["s0"] || sum["s0"] != fullSum["s0"] || rows["s0"] == 0 {
		t.Errorf("projected: rows %v sum %v, full: rows %v sum %v", rows, sum, fullRows, fullSum)
	}
	return proj, proj.Stats(), full.Stats()
}

// TestScanProjected reads one column of IPC files: only its bytes travel,
// the first chunk's too, since bind read only the metadata of a chunk that
// large (bindWholeMax). Chunks of a few MiB on local disk: the bytes saved
// outweigh a file read's latency by far, whatever the machine.
func TestScanProjected(t *testing.T) {
	_, ps, fs := scanFullAndProjected(t, datagen.Spec{Segments: 2, ChunksPerSegment: 2, RowsPerChunk: 200000, BatchesPerChunk: 2, Seed: 4}, []int{0})
	// Both chunks column by column: a third of the bytes or less.
	if !ps.ProjectedIO || ps.ProjectedChunks != 2 || ps.WireBytes*3 > fs.WireBytes || ps.ProjectionSaved*3 < fs.WireBytes*2 {
		t.Errorf("projected scan read %d bytes (projected=%v, %d chunks projected, %d bytes saved), the full one %d",
			ps.WireBytes, ps.ProjectedIO, ps.ProjectedChunks, ps.ProjectionSaved, fs.WireBytes)
	}
}

// TestScanProjectsMostColumns reads x, i and d of IPC files on local disk,
// more than half of their bytes: the cost model, not a share of the body,
// decides, and on local disk the strings and booleans left behind (8 MB a
// chunk) outweigh two more round trips.
func TestScanProjectsMostColumns(t *testing.T) {
	fields := []int{0, 1, 2}
	proj, ps, fs := scanFullAndProjected(t, datagen.Spec{Segments: 1, ChunksPerSegment: 1, RowsPerChunk: 600000, BatchesPerChunk: 3, Seed: 6}, fields)
	if share := float64(proj.plan.fieldBytes(fields)) / float64(proj.plan.bodyLen); share <= 0.5 || share >= 0.9 {
		t.Fatalf("x, i and d are %.2f of the body: the test needs more than half and a tenth left out", share)
	}
	if !ps.ProjectedIO || ps.ProjectedChunks != 2 || ps.WireBytes >= fs.WireBytes {
		t.Errorf("projected scan read %d bytes (projected=%v, %d chunks projected, %d bytes saved), the full one %d",
			ps.WireBytes, ps.ProjectedIO, ps.ProjectedChunks, ps.ProjectionSaved, fs.WireBytes)
	}
}

// TestBindReadsMetadataOfLargeFiles: of a first chunk above bindWholeMax,
// bind reads only the metadata when it is an IPC file and only the first
// message when it is a stream (nothing held for the scan); a small one
// whole.
// Every scan still gives the chunk's rows.
func TestBindReadsMetadataOfLargeFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 2, RowsPerChunk: 200000, BatchesPerChunk: 3, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	small, _ := writeDataset(t)
	for _, tc := range []struct {
		name, path string
		held       bool // bind keeps the chunk's bytes for the scan
	}{
		{"large file", filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow"), false},
		{"large stream", filepath.Join(dir, "chunks/segment=s0/chunk-1.arrow"), false},
		{"small file", filepath.Join(small, "chunks/segment=s0/chunk-0.arrow"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := os.Stat(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if large := info.Size() > bindWholeMax; large == (tc.name == "small file") {
				t.Fatalf("%s is %d bytes", tc.path, info.Size())
			}
			cfg := Config{Process: testProcess(t), Rows: []Row{{"url": tc.path, "length": info.Size()}}}
			plan, err := Bind(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if held := plan.first != nil; held != tc.held || plan.firstLen != info.Size() {
				t.Fatalf("bind held the bytes: %v (want %v), first length %d of %d", held, tc.held, plan.firstLen, info.Size())
			}
			if tc.name == "large file" && (plan.colBytes == nil || plan.bodyLen <= 0 || plan.readPlan.Tail <= 0) {
				t.Errorf("bind learned no layout from the metadata: %v %d %+v", plan.colBytes, plan.bodyLen, plan.readPlan)
			}
			scan, err := plan.Start(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := drain(t, scan, 2, 0)
			scan.Close()
			data, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			_, batches, err := arrowipc.Decode(data, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			for _, b := range batches {
				want += b.NumRows()
			}
			arrowipc.ReleaseAll(batches)
			if rows["s0"] != want || want == 0 {
				t.Errorf("rows %v, want %d", rows, want)
			}
		})
	}
}

// TestScanCorruptChunk fails the scan naming the chunk, and refunds.
func TestScanCorruptChunk(t *testing.T) {
	dir, _ := writeDataset(t)
	bad := filepath.Join(dir, "chunks/segment=s1/chunk-1.arrow")
	data, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks")}, nil)
	got := scanErr(scan)
	scan.Close()
	if !errors.Is(got, ErrBadChunk) || !strings.Contains(got.Error(), "segment=s1/chunk-1.arrow") {
		t.Fatalf("err = %v", got)
	}
	if in := scan.Stats().Budget.InUse; in != 0 {
		t.Errorf("budget holds %d after a failed scan", in)
	}
}

// TestUnionByName reads chunks whose columns differ.
func TestUnionByName(t *testing.T) {
	dir, _ := writeDataset(t)
	other := arrow.NewSchema([]arrow.Field{{Name: "y", Type: arrow.PrimitiveTypes.Int32}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	writeExtraChunk(t, dir, other, false, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int32Builder).AppendValues([]int32{7, 8}, nil)
		b.Field(1).(*array.Int64Builder).AppendValues([]int64{100, 200}, nil)
	})
	if _, err := Bind(context.Background(), Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks")}); err != nil {
		t.Fatal(err) // binds: the mismatch shows when the chunk is read
	}
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), UnionByName: true}, nil)
	if schema := scan.plan.Schema; len(schema.Fields()) != 6 || schema.Field(5).Name != "y" {
		t.Fatalf("union schema %s", schema)
	}
	rows, sum := drain(t, scan, 2, 0)
	scan.Close()
	if rows["s9"] != 2 || sum["s9"] != 300 {
		t.Errorf("segment s9: rows %d sum %d", rows["s9"], sum["s9"])
	}
}

// TestPlanStartedTwice: a plan's second scan reserves what its chunks
// weigh, as the first did; it used to reserve 1 byte per chunk of unknown
// length, because the first chunk's bytes (the estimate) had been used up.
func TestPlanStartedTwice(t *testing.T) {
	dir, _ := writeDataset(t)
	var rows []Row
	for s := range 3 {
		for k := range 2 {
			rows = append(rows, Row{"url": filepath.Join(dir, "chunks", "segment=s"+string(rune('0'+s)), "chunk-"+string(rune('0'+k))+".arrow")})
		}
	}
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Rows: rows, MemoryBudget: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var reserved [2]int64
	for i := range reserved {
		scan, err := plan.Start(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, scan, 1, 0)
		scan.Close()
		reserved[i] = scan.Stats().Budget.Reserved
	}
	if reserved[1] < reserved[0]/2 {
		t.Fatalf("the second scan reserved %d bytes, the first %d", reserved[1], reserved[0])
	}
}

// TestConformReleases: a chunk whose column has another type than the plan's
// fails without leaking the columns already built for it.
func TestConformReleases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	plan := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, // missing: NULLs are built
		{Name: "b", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	chunk := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.BinaryTypes.String}}, nil)
	bld := array.NewRecordBuilder(mem, chunk)
	bld.Field(0).(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
	rec := bld.NewRecordBatch()
	bld.Release()
	if _, err := conform(chunk, []arrow.RecordBatch{rec}, plan, mem); err == nil || !errors.Is(err, ErrBadChunk) {
		t.Fatalf("err = %v, want a bad chunk", err)
	}
}

// TestFinishedScanPinsNothing: the registry keeps finished scans, so a
// closed scan must hold no chunk bytes: neither the first chunk's (fetched at
// bind, unused when the scan ended before reaching it) nor pooled buffers.
func TestFinishedScanPinsNothing(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 3, RowsPerChunk: 4000, BatchesPerChunk: 2, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), MemoryBudget: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the scan ends before it reads any chunk
	scan, err := plan.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	scan.Close()
	plan.firstMu.Lock()
	pinned := len(plan.first)
	plan.firstMu.Unlock()
	if pinned != 0 {
		t.Fatalf("a closed scan's plan pins the first chunk's %d bytes", pinned)
	}
	scan2, err := plan.Start(context.Background(), nil) // fetches the first chunk again
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := drain(t, scan2, 2, 0)
	scan2.Close()
	var n int64
	for _, r := range rows {
		n += r
	}
	if st := scan2.Stats(); n != st.Rows || st.Chunks != 6 {
		t.Fatalf("second scan: %d rows of %d, %d chunks", n, st.Rows, st.Chunks)
	}
	if ps := scan2.budget.PoolStats(); ps.Free != 0 || ps.Taken != 0 || ps.Fresh == 0 {
		t.Fatalf("pool after the scan: %+v; want buffers used and none kept", ps)
	}
}

// TestSmallChunksNeverWait: a scan whose data fits its budget never waits,
// and the budget's peak stays within twice the data, whether it reads all
// columns or projects one (a projected small file used to reserve its bytes
// plus a 64 KiB footer guess, ×1.5).
func TestSmallChunksNeverWait(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 100, ChunksPerSegment: 2, RowsPerChunk: 40, BatchesPerChunk: 1, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	var data int64
	filepath.Walk(filepath.Join(dir, "chunks"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			data += info.Size()
		}
		return nil
	})
	for _, fields := range [][]int{nil, {0}} {
		scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), MemoryBudget: 4 * data}, fields)
		drain(t, scan, 1, 0)
		scan.Close()
		b := scan.Stats().Budget
		if b.Waits != 0 || b.Peak > 2*data || b.InUse != 0 {
			t.Errorf("fields %v, %d bytes of data, budget %d: %d waits, peak %d, in use %d after", fields, data, 4*data, b.Waits, b.Peak, b.InUse)
		}
	}
}

// liveAllocator counts the bytes it holds.
type liveAllocator struct {
	memory.Allocator
	live atomic.Int64
}

func (a *liveAllocator) Allocate(n int) []byte {
	a.live.Add(int64(n))
	return a.Allocator.Allocate(n)
}

func (a *liveAllocator) Reallocate(n int, b []byte) []byte {
	a.live.Add(int64(n - len(b)))
	return a.Allocator.Reallocate(n, b)
}

func (a *liveAllocator) Free(b []byte) {
	a.live.Add(-int64(len(b)))
	a.Allocator.Free(b)
}

// TestBudgetTellsTheTruth: with a slow consumer (the pipeline full), the
// budget's peak is within 10 % of the peak of the bytes the scan really
// holds: its pooled buffers (fetched chunks, large decoded buffers) and
// what its allocator holds. Both are sampled together, continuously, while
// the scan runs. Chunks alternate between the IPC file and stream formats
// (both decoded zero-copy, their buffers in the fetched bytes).
func TestBudgetTellsTheTruth(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 4, ChunksPerSegment: 8, RowsPerChunk: 20000, BatchesPerChunk: 4, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	mem := &liveAllocator{Allocator: memory.NewGoAllocator()}
	// max_parallel_io 32: the chunks a scan reads ahead of its consumer
	// (as many) then hold more than the budget, which fills.
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), Allocator: mem, MemoryBudget: 8 << 20, MaxParallelIO: 32}, nil)
	defer scan.Close()
	var heldPeak, budgetPeak int64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			held := mem.live.Load() + scan.budget.PoolStats().Taken
			heldPeak = max(heldPeak, held)
			budgetPeak = max(budgetPeak, scan.budget.Stats().InUse)
			select {
			case <-done:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	rows, _ := drain(t, scan, 1, 20*time.Microsecond)
	close(done)
	<-sampled
	var n int64
	for _, r := range rows {
		n += r
	}
	st := scan.Stats()
	if n != st.Rows || st.Budget.Waits == 0 {
		t.Fatalf("%d rows of %d; budget %s: the budget must fill for the test to measure anything", n, st.Rows, st.Budget)
	}
	t.Logf("budget peak %d (sampled %d), bytes held at most %d", st.Budget.Peak, budgetPeak, heldPeak)
	if d := float64(budgetPeak - heldPeak); d > 0.1*float64(heldPeak) || d < -0.1*float64(heldPeak) {
		t.Fatalf("budget peak %d (sampled %d), bytes held at most %d: off by more than 10 %%", st.Budget.Peak, budgetPeak, heldPeak)
	}
}

// TestProcessLimit: four scans at once under one process memory limit
// smaller than their budgets together: every answer is right, and the
// process never holds more than its limit (beyond growing commits).
func TestProcessLimit(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 4, ChunksPerSegment: 6, RowsPerChunk: 4000, BatchesPerChunk: 2, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	proc := NewProcess(1 << 20)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			scan := startScan(t, Config{Source: filepath.Join(dir, "chunks"), MemoryBudget: 512 << 10, Process: proc}, nil)
			rows, sumX := drain(t, scan, 2, 100*time.Microsecond)
			scan.Close()
			checkSegments(t, stats, rows, sumX)
		})
	}
	wg.Wait()
	st := proc.Memory.Stats()
	if st.InUse != 0 {
		t.Errorf("the process holds %d bytes after every scan ended", st.InUse)
	}
	if st.Peak > st.Cap && st.Overcommits == 0 && st.OversizeAdmits == 0 {
		t.Errorf("process peak %d above its limit %d", st.Peak, st.Cap)
	}
	if st.Reserved == 0 {
		t.Error("the scans never drew from the process limit")
	}
}

func TestDefaultMemoryLimit(t *testing.T) {
	t.Setenv(MemoryLimitEnv, "512MiB")
	if n, err := DefaultMemoryLimit(); err != nil || n != 512<<20 {
		t.Errorf("512MiB: %d, %v", n, err)
	}
	if p, err := ProcessFromEnv(); err != nil || p.Memory.Stats().Cap != 512<<20 {
		t.Errorf("ProcessFromEnv: %v, %v", p, err)
	}
	t.Setenv(MemoryLimitEnv, "lots")
	if _, err := DefaultMemoryLimit(); err == nil || !strings.Contains(err.Error(), MemoryLimitEnv) {
		t.Errorf("a bad value: err = %v, want one naming %s", err, MemoryLimitEnv)
	}
	if _, err := ProcessFromEnv(); err == nil {
		t.Error("ProcessFromEnv accepted a bad value")
	}
	t.Setenv(MemoryLimitEnv, "")
	if n, err := DefaultMemoryLimit(); err != nil || n <= 0 || n != physicalMemory()/4 && physicalMemory() > 0 {
		t.Errorf("unset: %d, %v; physical memory %d", n, err, physicalMemory())
	}
}

// TestBudgetStartingCap: a budget above what keeps IO and decoding busy is a
// ceiling the scan does not fill: its cap is the starting cap, and the stats keep
// the ceiling; one below the starting cap is the cap.
func TestBudgetStartingCap(t *testing.T) {
	if k := startingCap(1<<20, 64, 8<<20, 0); k != budget.DefaultMin {
		t.Errorf("small chunks: starting cap %d, want the minimum %d", k, budget.DefaultMin)
	}
	if k := startingCap(100<<20, 8, 8<<20, 0); k != 200<<20 {
		t.Errorf("100 MiB chunks: starting cap %d, want %d (one consumed, one fetched)", k, 200<<20)
	}
	if k := startingCap(16<<20, 64, 8<<20, 0); k != startingCapRequests*8<<20 {
		t.Errorf("16 MiB chunks, 64 parallel GETs: starting cap %d, want %d", k, startingCapRequests*8<<20)
	}
	dir, _ := writeDataset(t)
	for _, tc := range []struct{ budget, cap int64 }{{1 << 30, budget.DefaultMin}, {1 << 20, 1 << 20}} {
		scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), MemoryBudget: tc.budget}, nil)
		drain(t, scan, 1, 0)
		scan.Close()
		if st := scan.Stats(); st.Budget.Cap != tc.cap || st.BudgetLimit != tc.budget {
			t.Errorf("memory_budget %d: cap %d, limit %d; want %d, %d", tc.budget, st.Budget.Cap, st.BudgetLimit, tc.cap, tc.budget)
		}
	}
}

// TestDefaultBudgetHoldsTwoChunks: the default budget is never below two
// of the largest chunks, or a scan of a few big ones would read them one
// at a time. (The second row claims 40 MiB: the scan is closed before it
// matters that the file is smaller.)
func TestDefaultBudgetHoldsTwoChunks(t *testing.T) {
	dir, _ := writeDataset(t)
	src := filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow")
	info, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	rows := []Row{{"url": src, "length": info.Size()}, {"url": src, "length": int64(40 << 20)}}
	plan, err := Bind(context.Background(), Config{Process: testProcess(t), Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	scan, err := plan.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	scan.Close()
	if st := scan.Stats(); st.BudgetLimit != 80<<20 {
		t.Errorf("default budget %d, want two 40 MiB chunks (%d)", st.BudgetLimit, 80<<20)
	}
}

// TestBudgetCapGrows: the cap grows from the starting cap only while the budget
// keeps the consumers waiting. Behind a store with 20 ms per request, fast
// consumers starve while chunks wait for memory and the IO slots are
// free: the cap grows, never past the ceiling (and stays grown only if
// that paid). A slow consumer on local
// files never starves: the cap stays at the starting cap, two chunks (no latency
// for requests in flight to hide).
func TestBudgetCapGrows(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 48, RowsPerChunk: 2000, BatchesPerChunk: 2, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	rows := newSlowFiles(t, dir, 20*time.Millisecond).rows(t, 48)
	var largest int64
	for _, r := range rows {
		largest = max(largest, r["length"].(int64))
	}
	const ceiling = 1 << 30
	// 64 KiB requests: the starting cap's IO term (16 of them) is below two chunks,
	// whose 32 parts leave IO slots free.
	fast := startScan(t, Config{Process: testProcess(t), Rows: rows, MemoryBudget: ceiling, MaxParallelIO: 64, RequestSize: 64 << 10, startingCapFloor: 1}, nil)
	got, _ := drain(t, fast, 2, 0)
	fast.Close()
	st := fast.Stats()
	if got["s0"] != stats[0].Rows {
		t.Errorf("rows %d, want %d", got["s0"], stats[0].Rows)
	}
	t.Logf("starved consumers: cap %d after %d raises (starting cap %d)", st.Budget.Cap, st.CapRaises, 2*largest)
	// A raise stays only if it made the scan faster (capProbe), which on
	// a loaded machine it may not have: the cap is somewhere from the starting cap
	// to the ceiling.
	if st.CapRaises == 0 || st.Budget.Cap < 2*largest || st.Budget.Cap > ceiling {
		t.Errorf("starved consumers: cap %d after %d raises (starting cap %d, ceiling %d)", st.Budget.Cap, st.CapRaises, 2*largest, int64(ceiling))
	}

	local, _ := writeDataset(t)
	slow := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(local, "chunks"), MemoryBudget: ceiling, startingCapFloor: 1}, nil)
	drain(t, slow, 1, 2*time.Millisecond)
	slow.Close()
	// Local files answer in microseconds: no requests in flight to count,
	// the starting cap is two chunks.
	if st := slow.Stats(); st.CapRaises != 0 || st.Budget.Cap != startingCap(largestChunk(t, slow), 0, 0, 1) {
		t.Errorf("slow consumer: cap %d after %d raises", st.Budget.Cap, st.CapRaises)
	}
}

// TestCapGrowthIgnoresQueueing: a store that answers a lone GET at once and
// each GET later the more of them are in flight (versitygw on the scan's
// own 2 cores: 2-5 ms at bind, 47 ms under the scan) has no round trips
// for a bigger budget to hide: the cap never grows, though consumers starve
// and the answers' time to headers is far above minLatencyToHide. Before the
// probe looked at iosched.Model.Floor, the same scan raised its cap.
func TestCapGrowthIgnoresQueueing(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 48, RowsPerChunk: 2000, BatchesPerChunk: 2, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	// The store answers a lone GET at once, but on busy cores (make test
	// runs packages side by side, under -race) the scan may see even those
	// answers take minLatencyToHide or more: then the store looks remote to
	// the probe, rightly, and the scan shows nothing of this rule. Such a
	// scan is run again, at most twice.
	var floors []time.Duration
	for range 3 {
		f := newSlowFiles(t, dir, 0)
		f.setQueue(2 * time.Millisecond)
		// As TestBudgetCapGrows: the starting cap is two chunks, and IO slots are free.
		scan := startScan(t, Config{Process: testProcess(t), Rows: f.rows(t, 48), MemoryBudget: 1 << 30, MaxParallelIO: 64, RequestSize: 64 << 10, startingCapFloor: 1}, nil)
		got, _ := drain(t, scan, 2, 0)
		scan.Close()
		if got["s0"] != stats[0].Rows {
			t.Errorf("rows %d, want %d", got["s0"], stats[0].Rows)
		}
		m := scan.sched.Model()
		if m.Floor >= minLatencyToHide {
			floors = append(floors, m.Floor)
			continue
		}
		if st := scan.Stats(); st.CapRaises != 0 || st.Budget.Cap != startingCap(largestChunk(t, scan), 0, 0, 1) {
			t.Errorf("cap %d after %d raises, want the starting cap %d and none (model %+v)", st.Budget.Cap, st.CapRaises, startingCap(largestChunk(t, scan), 0, 0, 1), m)
		}
		if m.Latency < minLatencyToHide {
			t.Errorf("time to headers %v under the scan: the store did not queue, the test shows nothing", m.Latency)
		}
		return
	}
	t.Skipf("the shortest time to headers was %v in each of 3 scans (at least minLatencyToHide, %v): the cores were too busy for a lone answer to look local", floors, minLatencyToHide)
}

// largestChunk is the largest chunk length of scan's plan.
func largestChunk(t *testing.T, scan *Scan) int64 {
	t.Helper()
	var n int64
	for i := range scan.plan.Chunks.Len() {
		n = max(n, scan.wireLengthEstimate(scan.plan.Chunks.WireLength(i), scan.projected))
	}
	return n
}

// TestProcessLimitNoDeadlock: two scans under one process limit, the
// consumer reading the second to its end before it touches the first (a
// join's build side before its probe side), while the first's ready chunks
// fill the limit: the second still runs (it holds nothing, so it passes).
func TestProcessLimitNoDeadlock(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 6, RowsPerChunk: 4000, BatchesPerChunk: 2, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	proc := NewProcess(1 << 20)
	cfg := Config{Source: filepath.Join(dir, "chunks"), MemoryBudget: 1 << 20, Process: proc}
	probe := startScan(t, cfg, nil)
	defer probe.Close()
	deadline := time.Now().Add(waitTimeout)
	for proc.Memory.Stats().InUse < 1<<20-256<<10 { // the probe side's chunks fill the limit
		if time.Now().After(deadline) {
			t.Fatalf("the first scan never filled the limit: %s", proc.Memory)
		}
		time.Sleep(time.Millisecond)
	}
	plan, err := Bind(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	build, err := plan.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, sumX := drain(t, build, 1, 0) // fails with the context's error if it deadlocks
	build.Close()
	checkSegments(t, stats, rows, sumX)
	rows, sumX = drain(t, probe, 1, 0)
	checkSegments(t, stats, rows, sumX)
	if proc.Memory.Stats().Bypasses == 0 {
		t.Error("the second scan never passed the full limit")
	}
}

// TestParallelismEndsWithScan: a scan's max_parallel_io is its own and
// ends with it. While a scan asking for 512 runs, the domain has the
// workers for it and a scan that asks for nothing keeps the domain's
// parallelism; once it is closed, the domain is back at its own.
func TestParallelismEndsWithScan(t *testing.T) {
	dir, _ := writeDataset(t)
	proc := testProcess(t)
	src := filepath.Join(dir, "chunks")
	big := startScan(t, Config{Process: proc, Source: src, MaxParallelIO: 512}, nil)
	other := startScan(t, Config{Process: proc, Source: src}, nil)
	if w := big.sched.Stats().Workers; w != 512 {
		t.Errorf("workers %d while the scan asking for 512 runs", w)
	}
	if p := other.Stats().Parallelism; p != iosched.DefaultLocalParallelism {
		t.Errorf("a scan that set nothing beside one that set 512: max_parallel_io %d, want %d", p, iosched.DefaultLocalParallelism)
	}
	if p := big.Stats().Parallelism; p != 512 {
		t.Errorf("the scan that set 512: max_parallel_io %d", p)
	}
	other.Close()
	big.Close()

	after := startScan(t, Config{Process: proc, Source: src}, nil)
	defer after.Close()
	st := after.sched.Stats()
	if st.Parallelism != iosched.DefaultLocalParallelism || st.Workers != iosched.DefaultLocalParallelism {
		t.Errorf("after the scan that set 512 ended: parallelism %d, workers %d; want %d",
			st.Parallelism, st.Workers, iosched.DefaultLocalParallelism)
	}
	if p := after.Stats().Parallelism; p != iosched.DefaultLocalParallelism {
		t.Errorf("the next scan's max_parallel_io is %d, want %d", p, iosched.DefaultLocalParallelism)
	}
}

// TestScanTraceHearsIO: a scan's trace holds its IO events, which reach it
// through the tracer of the process's domains (a query does not bring its
// own to the scheduler it shares). At max_parallel_io 1 bind fetches the
// first chunk alone, so the scan itself reads the other five.
func TestScanTraceHearsIO(t *testing.T) {
	dir, _ := writeDataset(t)
	path := filepath.Join(t.TempDir(), "trace.json")
	scan := startScan(t, Config{Process: testProcess(t), Source: filepath.Join(dir, "chunks"), Trace: path, MaxParallelIO: 1}, nil)
	drain(t, scan, 2, 0)
	scan.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"cat":"io"`) {
		t.Fatalf("the trace has no IO event: %.300s", data)
	}
}
