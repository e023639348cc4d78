package scanner

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkCatalogFirstRow binds a scan of the catalog file named by
// RS_BENCH_CATALOG and takes its first batch.
func BenchmarkCatalogFirstRow(b *testing.B) {
	cat := os.Getenv("RS_BENCH_CATALOG")
	if cat == "" {
		b.Skip("RS_BENCH_CATALOG not set")
	}
	proc := testProcess(b)
	for b.Loop() {
		plan, err := Bind(context.Background(), Config{Source: cat, Process: proc})
		if err != nil {
			b.Fatal(err)
		}
		scan, err := plan.Start(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		bt, err := scan.Next()
		if err != nil || bt == nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/float64(plan.Chunks.Len()), "live-B/chunk")
		b.ReportMetric(float64(ms.HeapSys)/float64(plan.Chunks.Len()), "sys-B/chunk")
		bt.Close()
		scan.Close()
	}
}

func BenchmarkCatalogBind(b *testing.B) {
	cat := os.Getenv("RS_BENCH_CATALOG")
	if cat == "" {
		b.Skip("RS_BENCH_CATALOG not set")
	}
	proc := testProcess(b)
	for b.Loop() {
		plan, err := Bind(context.Background(), Config{Source: cat, Process: proc})
		if err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapSys)/float64(plan.Chunks.Len()), "sys-B/chunk")
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/float64(plan.Chunks.Len()), "live-B/chunk")
	}
}

// BenchmarkTinyChunks scans every chunk of the glob RS_BENCH_GLOB, and
// reports the allocations and the bytes allocated a chunk (bind included).
func BenchmarkTinyChunks(b *testing.B) {
	glob := os.Getenv("RS_BENCH_GLOB")
	if glob == "" {
		b.Skip("RS_BENCH_GLOB not set")
	}
	proc := testProcess(b)
	var ms runtime.MemStats
	for b.Loop() {
		runtime.ReadMemStats(&ms)
		mallocs, bytes := ms.Mallocs, ms.TotalAlloc
		plan, err := Bind(context.Background(), Config{Source: glob, Process: proc})
		if err != nil {
			b.Fatal(err)
		}
		var fields []int // RS_BENCH_COLUMNS: the columns to scan, by name (comma-separated; all if unset)
		for _, name := range strings.FieldsFunc(os.Getenv("RS_BENCH_COLUMNS"), func(r rune) bool { return r == ',' }) {
			f := plan.Schema.FieldIndices(name)
			if len(f) == 0 {
				b.Fatalf("RS_BENCH_COLUMNS: no column %q in %s", name, plan.Schema)
			}
			fields = append(fields, f[0])
		}
		scan, err := plan.Start(context.Background(), fields)
		if err != nil {
			b.Fatal(err)
		}
		eachBatch(b, scan, func(bt *Batch) {
			for {
				if _, n := bt.Take(2048); n == 0 {
					break
				}
			}
			bt.Close()
		})
		st := scan.Stats()
		scan.Close()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(st.Chunks), "allocs/chunk")
		b.ReportMetric(float64(ms.TotalAlloc-bytes)/float64(st.Chunks), "B/chunk")
		b.ReportMetric(float64(st.Requests)/float64(st.Chunks), "requests/chunk")
		b.ReportMetric(float64(st.Chunks)/b.Elapsed().Seconds(), "chunks/s")
	}
}
