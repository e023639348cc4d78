package cabi

import (
	"testing"

	"github.com/remote-segments/remote_segments/scanner"
)

// A chunk's bytes count once, at its first batch; a chunk of unknown length
// weighs the average of the known ones; the end of the scan delivers the
// rest (a chunk that decoded to no batch).
func TestDeliveryFraction(t *testing.T) {
	chunks := []scanner.Chunk{
		{Row: 0, Length: 100, Size: -1},
		{Row: 1, Length: -1, Size: 300, Offset: 100}, // 200 bytes from the listing
		{Row: 2, Length: -1, Size: -1},               // unknown: the average of the known, 116
		{Row: 3, Length: 50, Size: -1},               // decodes to no batch
	}
	d := newDelivery(chunks)
	if d.bytes.total != 100+200+116+50 {
		t.Fatalf("total %d", d.bytes.total)
	}
	var queue []*scanner.Batch
	for _, i := range []int{0, 0, 2, 1} {
		queue = append(queue, &scanner.Batch{Chunk: &chunks[i]})
	}
	next := d.track(func() (*scanner.Batch, error) {
		if len(queue) == 0 {
			return nil, nil
		}
		b := queue[0]
		queue = queue[1:]
		return b, nil
	})
	want := []float64{100.0 / 466, 100.0 / 466, 216.0 / 466, 416.0 / 466, 1}
	for i, w := range want {
		if _, err := next(); err != nil {
			t.Fatal(err)
		}
		if got := d.bytes.fraction(); got != w {
			t.Errorf("after batch %d: fraction %v, want %v", i, got, w)
		}
	}
}

// Each thread's batch indexes increase, and every index covers one batch.
func TestDeliveryPartition(t *testing.T) {
	chunks := []scanner.Chunk{{Row: 0, SegmentID: "a", Length: 1}, {Row: 1, SegmentID: "b", Length: 1}}
	d := newDelivery(chunks)
	t1, t2 := &threadState{}, &threadState{}
	if i, _ := d.partition(t1); i != 0 {
		t.Fatalf("no batch yet: index %d", i)
	}
	t1.batch = &scanner.Batch{Chunk: &chunks[1]}
	t2.batch = &scanner.Batch{Chunk: &chunks[0]}
	i1, s1 := d.partition(t1)
	i2, s2 := d.partition(t2)
	if again, _ := d.partition(t1); again != i1 {
		t.Errorf("same batch, new index %d (was %d)", again, i1)
	}
	t1.batch = &scanner.Batch{Chunk: &chunks[0]}
	i3, s3 := d.partition(t1)
	if !(i1 < i3 && i1 != i2) || s1 != "b" || s2 != "a" || s3 != "a" {
		t.Errorf("indexes %d %d %d, segments %s %s %s", i1, i2, i3, s1, s2, s3)
	}
}
