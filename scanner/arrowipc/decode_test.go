package arrowipc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/test/datagen"
)

func TestDecodeBadInput(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 1, RowsPerChunk: 700, BatchesPerChunk: 2, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{
		"empty":           nil,
		"garbage":         []byte("this is not arrow at all, not even close"),
		"truncated file":  good[:len(good)/2],
		"magic only":      []byte("ARROW1\x00\x00"),
		"truncated start": good[8 : len(good)/3],
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			_, batches, err := Decode(data, mem)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if batches != nil {
				t.Fatalf("got batches with an error")
			}
		})
	}
}
