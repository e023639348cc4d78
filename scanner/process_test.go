package scanner

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"weak"
)

// TestProcessOwnsItsScans: a scan is listed by the Process it ran in (and
// by one derived from it with WithMemoryLimit, which shares the registry),
// never by another Process; a Config without a Process is refused.
func TestProcessOwnsItsScans(t *testing.T) {
	dir, _ := writeDataset(t)
	src := filepath.Join(dir, "chunks")
	a, b := testProcess(t), testProcess(t)
	limited := a.WithMemoryLimit(64 << 20)
	if limited.Memory == nil || a.Memory != nil {
		t.Fatalf("WithMemoryLimit: limited.Memory %v, a.Memory %v", limited.Memory, a.Memory)
	}
	s1 := startScan(t, Config{Process: a, Source: src}, nil)
	drain(t, s1, 1, 0)
	s1.Close()
	s2 := startScan(t, Config{Process: limited, Source: src}, nil)
	drain(t, s2, 1, 0)
	s2.Close()
	ids := func(p *Process) (out []uint64) {
		for _, s := range p.Scans() {
			out = append(out, s.ID)
		}
		return out
	}
	if got := ids(a); len(got) != 2 || got[0] != s1.ID() || got[1] != s2.ID() || s1.ID() == s2.ID() {
		t.Errorf("a lists scans %v, want [%d %d]", got, s1.ID(), s2.ID())
	}
	if got := ids(limited); len(got) != 2 {
		t.Errorf("the derived Process lists %v, want both scans", got)
	}
	if got := ids(b); len(got) != 0 {
		t.Errorf("another Process lists %v, want none", got)
	}
	if got := (*Process)(nil).Scans(); got != nil {
		t.Errorf("a nil Process lists %v", got)
	}
	if _, err := Bind(context.Background(), Config{Source: src}); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Bind without a Process: %v, want ErrNoProcess", err)
	}
}

// TestFinishedScansPinNoPlan: the registry remembers a finished scan's row
// (its stats stay listed) but not its plan: once the caller drops the plan
// and the scan, the chunk list is collected (a process that ran scans of a
// million chunks must not hold their lists), while the row still reads
// the scan's counters and its budget's live figures.
func TestFinishedScansPinNoPlan(t *testing.T) {
	dir, _ := writeDataset(t)
	p := testProcess(t)
	plan, err := Bind(context.Background(), Config{Process: p, Source: filepath.Join(dir, "chunks")})
	if err != nil {
		t.Fatal(err)
	}
	chunks := weak.Make(plan.Chunks)
	scan, err := plan.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := drain(t, scan, 1, 0)
	var want int64
	for _, n := range rows {
		want += n
	}
	id := scan.ID()
	scan.Close()
	plan, scan = nil, nil
	for range 5 {
		runtime.GC()
	}
	if chunks.Value() != nil {
		t.Error("the finished scan's chunk list is still reachable after the plan and the scan were dropped")
	}
	infos := p.Scans()
	if len(infos) != 1 || infos[0].ID != id || infos[0].State != "done" || infos[0].Rows != want || infos[0].Chunks == 0 {
		t.Errorf("the registry lists %+v; want scan %d, done, %d rows", infos, id, want)
	}
}
