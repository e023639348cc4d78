package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The report gathers the W2-W4 files: goal lines first, sections after, root
// links made relative to the report, and a missing file named as missing.
func TestReadSections(t *testing.T) {
	dir := t.TempDir()
	io := filepath.Join(dir, "io.md")
	data := "- **W2** goal line\n" + sectionsMarker + "## W2\n\n![p](@/test/bench/x.svg)\n"
	if err := os.WriteFile(io, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "sweep.md")
	s := readSections(io+","+missing, "build/bench-quick/BENCHMARKS.md")
	if s.goals != "- **W2** goal line\n" {
		t.Errorf("goals = %q", s.goals)
	}
	if !strings.Contains(s.body, "## W2\n\n![p](../../test/bench/x.svg)") {
		t.Errorf("link not made relative to the report:\n%s", s.body)
	}
	if !strings.Contains(s.body, "missing: `"+missing+"`") {
		t.Errorf("missing file not named:\n%s", s.body)
	}
	if strings.Index(s.body, "## W2") > strings.Index(s.body, "missing") {
		t.Error("sections out of order")
	}
}
