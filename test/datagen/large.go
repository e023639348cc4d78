package datagen

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// LargeChunks, LargeRows: the large dataset is LargeChunks IPC files of
// LargeRows rows each (about 7 MB), in two record batches.
const (
	LargeChunks = 3
	LargeRows   = 200_000
)

// WriteLarge writes dir/large/chunk-K.arrow: IPC files large enough that
// reading one column of them pays for the extra round trips a projected
// read takes, on any store.
func WriteLarge(dir string) error {
	ld := filepath.Join(dir, "large")
	if err := os.MkdirAll(ld, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(11, 0x1a26e))
	for k := range LargeChunks {
		var st SegmentStats
		recs := makeBatches(rng, LargeRows, 2, &st)
		err := WriteChunk(filepath.Join(ld, fmt.Sprintf("chunk-%d.arrow", k)), recs, true)
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}
