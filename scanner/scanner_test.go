package scanner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/test/datagen"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeDataset(t *testing.T) (string, []datagen.SegmentStats) {
	t.Helper()
	dir := t.TempDir()
	spec := datagen.Spec{Segments: 3, ChunksPerSegment: 2, RowsPerChunk: 700, BatchesPerChunk: 2, Seed: 7}
	stats, err := datagen.Write(dir, spec)
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
		{"missing file", dir + "/missing.arrow", 0, "missing.arrow: no such file or directory"},
		{"empty source", "", 0, "source is empty"},
		{"unsupported scheme", "gopher://h/x", 0, `unsupported scheme "gopher"`},
		{"bad pattern", chunks + "/[/*.arrow", 0, "syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveSource(tt.source)
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
				if c.Row != i || c.Length != -1 || c.NumRows != -1 {
					t.Errorf("chunk %d = %+v", i, c)
				}
			}
		})
	}
}

func TestSegmentAndChunkID(t *testing.T) {
	tests := []struct{ path, segment, chunk string }{
		{"/d/segment=s1/chunk-2.arrow", "s1", "chunk-2"},
		{"/d/segment=a/x/y/part.ipc", "a", "part"},
		{"/data/seg7/part-0001.arrow", "seg7", "part-0001"},
		{"rel/p.arrows", "rel", "p"},
	}
	for _, tt := range tests {
		if got := segmentOf(tt.path); got != tt.segment {
			t.Errorf("segmentOf(%q) = %q, want %q", tt.path, got, tt.segment)
		}
		if got := chunkIDOf(tt.path); got != tt.chunk {
			t.Errorf("chunkIDOf(%q) = %q, want %q", tt.path, got, tt.chunk)
		}
	}
}

func TestDecodeBadInput(t *testing.T) {
	dir, _ := writeDataset(t)
	good, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{
		"empty":           nil,
		"garbage":         []byte("this is not arrow at all, not even close"),
		"truncated file":  good[:len(good)/2],
		"magic only":      []byte("ARROW1\x00\x00"),
		"truncated start": good[8 : len(good)/3],
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			_, batches, err := decodeIPC(data, mem)
			if !errors.Is(err, ErrBadChunk) {
				t.Fatalf("err = %v, want ErrBadChunk", err)
			}
			if batches != nil {
				t.Fatalf("got batches with an error")
			}
		})
	}
}

// TestScanConcurrent reads the dataset from several goroutines at once, as
// DuckDB's threads do, and checks the totals against the generator's.
func TestScanConcurrent(t *testing.T) {
	dir, stats := writeDataset(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	plan, err := Bind(context.Background(), Config{Source: filepath.Join(dir, "chunks"), Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	scan := plan.Start(context.Background())
	var mu sync.Mutex
	rows := map[string]int64{}
	sumX := map[string]int64{}
	var wg sync.WaitGroup
	for range 4 {
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
				for {
					start, n := b.Take(1000)
					if n == 0 {
						break
					}
					x := b.Record.Column(0).(*array.Int64)
					var s int64
					for i := start; i < start+n; i++ {
						if x.IsValid(int(i)) {
							s += x.Value(int(i))
						}
					}
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
	st := scan.Close()
	for _, s := range stats {
		if rows[s.Segment] != s.Rows || sumX[s.Segment] != s.SumX {
			t.Errorf("segment %s: rows %d sum_x %d, want %d %d", s.Segment, rows[s.Segment], sumX[s.Segment], s.Rows, s.SumX)
		}
	}
	if st.Chunks != 6 || st.WireBytes <= 0 {
		t.Errorf("stats = %+v", st)
	}
}

// TestScanCloseEarly stops after one batch, as a LIMIT does: everything
// decoded must be freed and the scan reported as cancelled.
func TestScanCloseEarly(t *testing.T) {
	dir, _ := writeDataset(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	plan, err := Bind(context.Background(), Config{Source: filepath.Join(dir, "chunks"), Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	scan := plan.Start(context.Background())
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
	var found bool
	for _, s := range Scans() {
		if s.ID == scan.id {
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

func TestSchemaMismatch(t *testing.T) {
	dir, _ := writeDataset(t)
	// A chunk with another schema, sorted after the others.
	other := arrow.NewSchema([]arrow.Field{{Name: "y", Type: arrow.PrimitiveTypes.Int32}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, other)
	bld.Field(0).(*array.Int32Builder).Append(1)
	rec := bld.NewRecordBatch()
	bld.Release()
	defer rec.Release()
	path := filepath.Join(dir, "chunks/segment=s9/zz.arrow")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := datagen.WriteChunk(path, []arrow.RecordBatch{rec}, true); err != nil {
		t.Fatal(err)
	}
	plan, err := Bind(context.Background(), Config{Source: filepath.Join(dir, "chunks")})
	if err != nil {
		t.Fatal(err)
	}
	scan := plan.Start(context.Background())
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
