package scanner

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// TestMappedBuffersGiveBack: the buffers of 2 MiB or more a scan's pool
// maps outside the Go heap (budget.Mapped) are all unmapped once the scan
// and its batches are closed, however it ends: read to the end, closed
// early with a batch still held (closed after the scan), or canceled (a
// chunk whose read may still write abandons them instead). No collector
// would ever free them.
func TestMappedBuffersGiveBack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("buffers are mapped on Linux only, not on %s", runtime.GOOS)
	}
	dir := t.TempDir()
	stats, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 4, RowsPerChunk: 150_000, BatchesPerChunk: 2, Seed: 21})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "**", "*.arrow")
	for _, tc := range []struct {
		name string
		read func(t *testing.T, s *Scan, cancel context.CancelFunc)
	}{
		{"to the end", func(t *testing.T, s *Scan, _ context.CancelFunc) {
			rows, sum := drain(t, s, 2, 0)
			if rows["s0"] != stats[0].Rows || sum["s0"] != stats[0].SumX {
				t.Errorf("rows %d sum_x %d, want %d %d", rows["s0"], sum["s0"], stats[0].Rows, stats[0].SumX)
			}
			s.Close()
		}},
		{"closed with a batch held", func(t *testing.T, s *Scan, _ context.CancelFunc) {
			b, err := s.Next()
			if err != nil || b == nil {
				t.Fatalf("Next = %v, %v", b, err)
			}
			s.Close()
			b.Close()
		}},
		{"canceled", func(t *testing.T, s *Scan, cancel context.CancelFunc) {
			b, err := s.Next()
			if err != nil || b == nil {
				t.Fatalf("Next = %v, %v", b, err)
			}
			b.Close()
			cancel()
			for {
				b, err := s.Next()
				if err != nil || b == nil {
					break
				}
				b.Close()
			}
			s.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := budget.Mapped()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			plan, err := Bind(ctx, Config{Process: testProcess(t), Source: src})
			if err != nil {
				t.Fatal(err)
			}
			s, err := plan.Start(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.read(t, s, cancel)
			after := budget.Mapped()
			if after.Maps == before.Maps {
				t.Fatalf("no buffer was mapped (%+v): the test needs chunks of 2 MiB or more", after)
			}
			// A chunk whose read a close or cancel stops may still be
			// written: it abandons its buffers (their pages given back,
			// never reused) instead of giving them back to the pool.
			if after.Live != before.Live || tc.name == "to the end" && after.Abandoned != before.Abandoned {
				t.Errorf("after the scan: %+v, want every mapping of it unmapped (before %+v)", after, before)
			}
		})
	}
}
