package arrowipc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// ipcSeeds returns small real IPC files: plain, and LZ4 with every type
// that has no dictionary.
func ipcSeeds(f *testing.F) [][]byte {
	dir := f.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 1, RowsPerChunk: 20, BatchesPerChunk: 2, Seed: 3}); err != nil {
		f.Fatal(err)
	}
	if err := datagen.WriteTypes(dir); err != nil {
		f.Fatal(err)
	}
	noDict := filepath.Join(dir, "nodict.arrow")
	writeWithoutDictionaries(f, filepath.Join(dir, "types/part-0.arrow"), noDict, 12)
	var out [][]byte
	for _, p := range []string{"chunks/segment=s0/chunk-0.arrow", "nodict.arrow"} {
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// FuzzReadIPCColumns feeds arbitrary bytes to the projected IPC file reader:
// it must return batches that pass validation or an error, never panic, and
// free what it allocated.
func FuzzReadIPCColumns(f *testing.F) {
	for _, s := range ipcSeeds(f) {
		f.Add(s, uint8(0))
		f.Add(s, uint8(3))
		f.Add(s[:len(s)-20], uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, col uint8) {
		defer watchdog("FuzzReadIPCColumns")()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var served int64
		fetch := func(rs []Range) ([][]byte, error) {
			for _, r := range rs {
				if r.Offset < 0 || r.Length < 0 || r.Offset+r.Length > int64(len(data)) {
					t.Fatalf("fetch of %d+%d outside %d bytes", r.Offset, r.Length, len(data))
				}
			}
			return fetchFrom(data, &served)(rs)
		}
		// Without a plan, and with one learned from the bytes themselves
		// (the learner must take garbage too).
		for _, plan := range []ReadPlan{{}, LearnReadPlan(data)} {
			schema, batches, _, _, err := ReadColumns(int64(len(data)), plan, []int{int(col) % 8}, fetch, mem)
			if err == nil {
				if int(col)%8 >= len(schema.Fields()) {
					t.Fatalf("column %d of %d fields read without error", col%8, len(schema.Fields()))
				}
				for i, b := range batches {
					if err := validateRecord(b); err != nil {
						t.Fatalf("batch %d fails validation: %v", i, err)
					}
					if !b.Schema().Field(0).Equal(schema.Field(int(col) % 8)) {
						t.Fatalf("batch %d holds field %s, want %s", i, b.Schema().Field(0), schema.Field(int(col)%8))
					}
				}
				ReleaseAll(batches)
			}
			mem.AssertSize(t, 0)
		}
	})
}

// FuzzParseBatchMessage checks the record batch metadata parser alone.
func FuzzParseBatchMessage(f *testing.F) {
	for _, s := range ipcSeeds(f) {
		// The first message after the 8-byte file magic is the schema; the
		// parser must refuse it, and accept the batches that follow.
		f.Add(s[8:])
		f.Add(s[8:200])
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		defer watchdog("FuzzParseBatchMessage")()
		rb, err := parseBatchMessage(meta)
		if err != nil {
			return
		}
		for _, b := range rb.Buffers {
			if b.Offset < 0 || b.Length < 0 {
				t.Fatalf("accepted buffer %+v", b)
			}
		}
	})
}
