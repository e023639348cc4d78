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
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// writeIPCFiles writes n IPC files of one int64 column x (rows values
// each, pseudo-random: compressed, they stay large) under dir, compressed
// with ZSTD if zstd, and returns their paths and the sum of x.
func writeIPCFiles(t *testing.T, dir string, n, rows int, zstd bool) ([]string, int64) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var paths []string
	var sum int64
	v := uint64(1)
	for k := range n {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for range rows {
			v = v*6364136223846793005 + 1442695040888963407
			x := int64(v >> 40)
			sum += x
			b.Append(x)
		}
		col := b.NewArray()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(rows))
		p := filepath.Join(dir, fmt.Sprintf("chunk-%d.arrow", k))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		opts := []ipc.Option{ipc.WithSchema(schema)}
		if zstd {
			opts = append(opts, ipc.WithZstd())
		}
		w, err := ipc.NewFileWriter(f, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		rec.Release()
		col.Release()
		b.Release()
		paths = append(paths, p)
	}
	return paths, sum
}

// TestPlainFirstChunkIsNotProbed: when bind read the first chunk's batch
// metadata and saw no compression, the scan does not wait for the first
// chunk to be fetched and decoded before it requests the others: here the
// store holds the first chunk's body back until the second chunk is asked
// for. A compressed first chunk is still probed: the second is asked for
// only once the first is decoded (the store lets the first go after a
// while, and no request for the second came before).
func TestPlainFirstChunkIsNotProbed(t *testing.T) {
	for _, tc := range []struct {
		zstd, dropFirst bool
	}{{false, false}, {true, false}, {false, true}} {
		zstd := tc.zstd
		// dropFirst: Select drops the chunk bind read, so what bind saw of
		// it says nothing of the chunk the scan starts with: that one is
		// probed (chunk 1 held until chunk 2 is asked for, which it is not).
		probed := zstd || tc.dropFirst
		t.Run(fmt.Sprintf("zstd=%v,dropFirst=%v", zstd, tc.dropFirst), func(t *testing.T) {
			dir := t.TempDir()
			const n, rows = 4, 20000
			paths, want := writeIPCFiles(t, dir, n, rows, zstd)
			var armed atomic.Bool
			second := make(chan struct{})
			var secondOnce sync.Once
			var mu sync.Mutex
			var events []string
			files := http.FileServer(http.Dir(dir))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				first, next := "/chunk-0.arrow", "/chunk-1.arrow"
				if tc.dropFirst {
					first, next = "/chunk-1.arrow", "/chunk-2.arrow"
				}
				if armed.Load() {
					switch r.URL.Path {
					case next:
						secondOnce.Do(func() { close(second) })
					case first:
						select {
						case <-second:
							mu.Lock()
							events = append(events, "first held until the second was asked for")
							mu.Unlock()
						case <-time.After(time.Second):
							mu.Lock()
							events = append(events, "first let go without a request for the second")
							mu.Unlock()
						}
					}
				}
				files.ServeHTTP(w, r)
			}))
			defer srv.Close()
			var catalog []Row
			for k, p := range paths {
				info, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				// num_rows on every row: bind reads the first chunk's
				// metadata, not the whole chunk.
				catalog = append(catalog, Row{"url": fmt.Sprintf("%s/chunk-%d.arrow", srv.URL, k), "length": info.Size(), "num_rows": int64(rows)})
			}
			cfg := Config{Process: testProcess(t), Rows: catalog, MaxParallelIO: 4, MemoryBudget: 64 << 20, NoHedge: true}
			plan, err := Bind(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if plan.firstPlain == zstd {
				t.Fatalf("bind says the first chunk is plain: %v; it is compressed: %v", plan.firstPlain, zstd)
			}
			if tc.dropFirst {
				plan.Select(func(c *Chunk) bool { return c.Row != 0 })
				want -= firstSum(t, paths[0])
			}
			armed.Store(true)
			scan, err := plan.Start(context.Background(), []int{0})
			if err != nil {
				t.Fatal(err)
			}
			defer scan.Close()
			bySegment, sums := drain(t, scan, 1, 0)
			var got, sum int64
			for seg, n := range bySegment {
				got, sum = got+n, sum+sums[seg]
			}
			wantRows := int64(n * rows)
			if tc.dropFirst {
				wantRows -= rows
			}
			if got != wantRows || sum != want {
				t.Errorf("%d rows, sum %d; want %d and %d", got, sum, wantRows, want)
			}
			mu.Lock()
			defer mu.Unlock()
			wantEvent := "first held until the second was asked for"
			if probed {
				wantEvent = "first let go without a request for the second"
			}
			if len(events) == 0 || events[0] != wantEvent {
				t.Errorf("the first chunk's GETs after bind: %s; want the first to be %q", strings.Join(events, "; "), wantEvent)
			}
		})
	}
}

// firstSum is the sum of column x of the IPC file at path.
func firstSum(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var sum int64
	for i := range r.NumRecords() {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		x := rec.Column(0).(*array.Int64)
		for j := range x.Len() {
			sum += x.Value(j)
		}
	}
	return sum
}
