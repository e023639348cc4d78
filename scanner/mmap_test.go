package scanner

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/remote-segments/remote_segments/iosched/store/storetest"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// With MapLocal, local chunks above mapMin are read from mappings, whole
// files and streams alike, with the right answers; every mapping is gone
// once the scan is closed. Without it (the default), and over HTTP, the
// same chunks are read into buffers. (The first chunk may be the copy bind
// read.)
func TestLocalChunksMapped(t *testing.T) {
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 2, RowsPerChunk: 200000, BatchesPerChunk: 1, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	var rows []Row
	for _, c := range []string{"segment=s0/chunk-0", "segment=s0/chunk-1", "segment=s1/chunk-0", "segment=s1/chunk-1"} {
		seg, _, _ := strings.Cut(strings.TrimPrefix(c, "segment="), "/")
		rows = append(rows, Row{"url": filepath.Join(dir, "chunks", c+".arrow"), "segment_id": seg})
	}
	for _, mode := range []struct{ local, mapLocal bool }{{true, true}, {true, false}, {false, true}} {
		local := mode.local
		cfg := Config{Process: testProcess(t), Rows: rows, MapLocal: mode.mapLocal}
		if !local {
			cfg.Rows = nil
			for _, r := range rows {
				u := srv.URL + strings.TrimPrefix(r["url"].(string), dir)
				cfg.Rows = append(cfg.Rows, Row{"url": u, "segment_id": r["segment_id"]})
			}
		}
		scan := startScan(t, cfg, nil)
		var mapped, batches int
		var peak int
		got, sumX := map[string]int64{}, map[string]int64{}
		for {
			b, err := scan.Next()
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				break
			}
			if b.Chunk.Row > 0 { // bind may have read the first whole
				batches++
				if b.Mapped() {
					mapped++
				}
			}
			peak = max(peak, storetest.Mappings(t, 0, dir))
			x := b.Column(0).(*array.Int64)
			for {
				start, n := b.Take(4096)
				if n == 0 {
					break
				}
				for i := start; i < start+n; i++ {
					if x.IsValid(int(i)) {
						sumX[b.Chunk.SegmentID] += x.Value(int(i))
					}
				}
				b.Consumed(n)
				got[b.Chunk.SegmentID] += n
			}
			b.Close()
		}
		scan.Close()
		checkSegments(t, stats, got, sumX)
		switch {
		case batches == 0:
			t.Errorf("%+v: no batch after the first chunk", mode)
		case local && mode.mapLocal && (mapped != batches || peak == 0):
			t.Errorf("local, mapped: %d of %d batches mapped, at most %d mappings at once; want all, and some", mapped, batches, peak)
		case local && !mode.mapLocal && (mapped != 0 || peak != 0):
			t.Errorf("local, read: %d of %d batches mapped, at most %d mappings at once; want none", mapped, batches, peak)
		case !local && mapped != 0:
			t.Errorf("http: %d of %d batches mapped, want none", mapped, batches)
		}
		if n := storetest.Mappings(t, 0, dir); n != 0 {
			t.Errorf("%+v: %d mappings left after the scan", mode, n)
		}
	}
}

// Only columns whose values never steer a read elsewhere are mapped.
func TestMappable(t *testing.T) {
	if !mappable(datagen.Schema) {
		t.Errorf("the generator's schema (ints, double, bool, string) is not mappable")
	}
	for _, typ := range []arrow.DataType{
		arrow.ListOf(arrow.PrimitiveTypes.Int64),
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		arrow.BinaryTypes.StringView,
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}),
	} {
		schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "y", Type: typ}}, nil)
		if mappable(schema) {
			t.Errorf("a schema with %s is mappable", typ)
		}
	}
}
