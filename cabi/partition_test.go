package cabi

import (
	"testing"

	"github.com/remote-segments/remote_segments/scanner"
)

// Each thread's batch indexes increase, and every index covers one batch.
func TestPartitions(t *testing.T) {
	chunks := []scanner.Chunk{{Row: 0, SegmentID: "a", Length: 1}, {Row: 1, SegmentID: "b", Length: 1}}
	var d partitions
	t1, t2 := &threadState{}, &threadState{}
	if i, _ := d.of(t1); i != 0 {
		t.Fatalf("no batch yet: index %d", i)
	}
	t1.batch = &scanner.Batch{Chunk: &chunks[1]}
	t2.batch = &scanner.Batch{Chunk: &chunks[0]}
	i1, s1 := d.of(t1)
	i2, s2 := d.of(t2)
	if again, _ := d.of(t1); again != i1 {
		t.Errorf("same batch, new index %d (was %d)", again, i1)
	}
	t1.batch = &scanner.Batch{Chunk: &chunks[0]}
	i3, s3 := d.of(t1)
	if !(i1 < i3 && i1 != i2) || s1 != "b" || s2 != "a" || s3 != "a" {
		t.Errorf("indexes %d %d %d, segments %s %s %s", i1, i2, i3, s1, s2, s3)
	}
}
