package scanner

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
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
