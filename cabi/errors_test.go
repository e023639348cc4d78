package cabi

import (
	"strings"
	"testing"

	"github.com/remote-segments/remote_segments/scanner"
)

// TestStoppedCopyOnePrefix: a stopped copy's error, wrapped in the chunk's
// error as the scan reports it, says "remote_segments:" once.
func TestStoppedCopyOnePrefix(t *testing.T) {
	chunk := &scanner.Chunk{URL: "file:///data/a.arrow"}
	for _, noMemory := range []bool{true, false} {
		err := &scanner.ChunkError{Chunk: chunk, Err: stoppedCopy("x", noMemory, 9, 1<<40)}
		if n := strings.Count(err.Error(), "remote_segments:"); n != 1 {
			t.Errorf("noMemory %v: %q has the prefix %d times", noMemory, err, n)
		}
	}
}
