package faults

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store/storetest"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// Local chunks are read from mappings of their files (scanner/mmap.go),
// which another process may change while DuckDB copies from them. These
// tests change the files as soon as the IO workers have mapped two of them
// (those and any other mapped by then), while DuckDB works slowly on each
// row (a hash of a long string) and has barely begun copying: the query
// fails with an error naming a chunk, the CLI lives on, and no mapping is
// left behind.

// TestTruncatedDuringScan: pages lost to a truncation raise SIGBUS when
// read; decode and the copy turn it into the chunk's error.
func TestTruncatedDuringScan(t *testing.T) {
	changedDuringScan(t, "truncated", func(f string) error { return os.Truncate(f, 0) })
}

// TestOverwrittenDuringScan: bytes written over a mapped chunk reach the
// copy; the string copy checks every offset it follows.
func TestOverwrittenDuringScan(t *testing.T) {
	changedDuringScan(t, "offset does not fit", func(f string) error {
		w, err := os.OpenFile(f, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer w.Close()
		info, err := w.Stat()
		if err != nil {
			return err
		}
		_, err = w.WriteAt(bytes.Repeat([]byte{0xff}, int(info.Size())), 0) // every offset -1
		return err
	})
}

// changedDuringScan runs a scan of local chunks, applies change to the
// mapped ones, and wants an error naming a chunk. Some round (of 5) must
// fail with want in its error, so that the path the test is about ran.
func changedDuringScan(t *testing.T, want string, change func(file string) error) {
	root := repoRoot(t)
	duckdb, ext := filepath.Join(root, ".tools/bin/duckdb"), filepath.Join(root, "build/release/remote_segments.duckdb_extension")
	for _, p := range []string{duckdb, ext} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make tools release`", err)
		}
	}
	c := startCLI(t, duckdb, ext)
	defer c.close()
	if r := c.exec("SET threads = 2", time.Minute); r.err != "" {
		t.Fatal(r.err)
	}
	// Every column, so that each chunk is read whole, in one mapping: a
	// chunk in the process's mappings has no read left that could fail
	// first.
	const query = "SELECT count(*), max(md5(repeat(concat(s, x, i, d, b), 100))) FROM remote_segments('%s/chunks/**/*.arrow', memory_budget := '1GiB')"
	mapsFile := fmt.Sprintf("/proc/%d/maps", c.cmd.Process.Pid)
	var seen []string
	for round := 1; round <= 5; round++ {
		dir := t.TempDir()
		if _, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 4, RowsPerChunk: 150000, BatchesPerChunk: 1, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "chunks/*/*.arrow"))
		start := time.Now()
		done := make(chan struct{})
		changed := make(chan time.Duration, 1)
		go func() {
			defer close(changed)
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
				}
				maps, err := os.ReadFile(mapsFile)
				var mapped []string
				for _, f := range files {
					if err == nil && strings.Contains(string(maps), f) {
						mapped = append(mapped, f)
					}
				}
				if len(mapped) < 2 {
					continue
				}
				for _, f := range mapped { // the others would fail their read instead
					if err := change(f); err != nil {
						t.Error(err)
					}
				}
				changed <- time.Since(start)
				return
			}
		}()
		r := c.exec(fmt.Sprintf(query, dir), 2*time.Minute)
		took := time.Since(start)
		close(done)
		at, ok := <-changed
		if got := c.value("SELECT 6 * 7"); got != "42" {
			t.Fatalf("after the change, the CLI answers %q to 6 * 7 (stderr: %s)", got, c.stderrTail())
		}
		if n := storetest.Mappings(t, c.cmd.Process.Pid, dir); n != 0 {
			t.Errorf("%d mappings of the chunks left after the query", n)
		}
		switch {
		case !ok:
			t.Fatalf("round %d: the query ended in %v (%q) and no two chunks were ever mapped at once", round, took, r.err)
		case r.err == "":
			// DuckDB copied everything before the change: the machine
			// was faster than the hashes assume.
			t.Logf("round %d: changed at %v, the query ended at %v without an error", round, at, took)
			continue
		case !strings.Contains(r.err, ".arrow (catalog row "):
			t.Errorf("round %d: the error does not name the chunk: %s", round, r.err)
		}
		t.Logf("round %d: changed at %v, the query failed at %v: %s", round, at, took, firstLine(r.err))
		if strings.Contains(r.err, want) {
			return
		}
		seen = append(seen, firstLine(r.err))
	}
	t.Fatalf("no round failed with %q: %q", want, seen)
}
