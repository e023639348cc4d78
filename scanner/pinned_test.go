package scanner

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/remote-segments/remote_segments/iosched"
)

// twoColumnFile is an IPC file of batches batches of n rows of int64
// columns x and y, x the row's number plus base: files of other bases have
// the same layout, byte for byte, and other values.
func twoColumnFile(t *testing.T, batches, n int, base int64) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for k := range batches {
		for i := range n {
			b.Field(0).(*array.Int64Builder).Append(base + int64(k*n+i))
			b.Field(1).(*array.Int64Builder).Append(-1)
		}
		rec := b.NewRecordBatch()
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestChunkOfOneVersion: a projected read of an IPC file takes the tail,
// then each batch's metadata and column in GETs of their own; the object
// overwritten (the same layout, other values) after any of them, the scan
// gives the rows of one version or fails saying the object changed, never
// batches of two versions.
func TestChunkOfOneVersion(t *testing.T) {
	const batches, n = 4, 5000
	before, after := twoColumnFile(t, batches, n, 0), twoColumnFile(t, batches, n, 1_000_000)
	if len(before) != len(after) {
		t.Fatalf("the versions' sizes differ (%d, %d): the test needs one layout", len(before), len(after))
	}
	var sumBefore, sumAfter int64
	for i := range int64(batches * n) {
		sumBefore += i
		sumAfter += 1_000_000 + i
	}
	changed := 0
	for flipAfter := 1; flipAfter <= 14; flipAfter++ {
		var mu sync.Mutex
		gets := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			gets++
			data, etag := before, `"a"`
			if gets > flipAfter {
				data, etag = after, `"b"`
			}
			mu.Unlock()
			w.Header().Set("ETag", etag)
			http.ServeContent(w, r, "f.arrow", time.Time{}, bytes.NewReader(data))
		}))
		cfg := Config{Process: testProcess(t), Rows: []Row{{"url": srv.URL + "/f.arrow", "length": int64(len(before))}},
			MaxParallelIO: 1, CoalesceGap: AdjacentOnly, PruneAfterBind: true, projectModel: 1}
		scan := startScan(t, cfg, []int{0})
		var sum int64
		var err error
		for {
			var b *Batch
			if b, err = scan.Next(); err != nil || b == nil {
				break
			}
			x := b.Column(0).(*array.Int64)
			for i := range x.Len() {
				sum += x.Value(i)
			}
			b.Close()
		}
		projected := scan.Stats().ProjectedChunks
		scan.Close()
		srv.Close()
		switch {
		case errors.Is(err, iosched.ErrChanged):
			changed++
		case err != nil:
			t.Fatalf("flip after GET %d: %v", flipAfter, err)
		case projected != 1:
			t.Fatalf("flip after GET %d: %d chunks projected, want the one (the setup is wrong)", flipAfter, projected)
		case sum != sumBefore && sum != sumAfter:
			t.Fatalf("flip after GET %d: sum(x) %d is neither version's (%d, %d): batches of two versions", flipAfter, sum, sumBefore, sumAfter)
		}
		t.Logf("flip after GET %d of %d: sum %d, err %v", flipAfter, gets, sum, err)
	}
	if changed == 0 {
		t.Fatal("no flip fell between two GETs of the chunk: the test shows nothing")
	}
}
