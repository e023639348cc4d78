package scanner

import (
	"errors"
	"testing"
)

// A chunk's bytes count once, at its first batch; a chunk of unknown length
// weighs the average of the known ones; the end of the scan delivers the
// rest (a chunk that decoded to no batch).
func TestProgressFraction(t *testing.T) {
	chunks := []Chunk{
		{Row: 0, Length: 100, Size: -1},
		{Row: 1, Length: -1, Size: 300, Offset: 100}, // 200 bytes from the listing
		{Row: 2, Length: -1, Size: -1},               // unknown: the average of the known, 116
		{Row: 3, Length: 50, Size: -1},               // decodes to no batch
	}
	p := newProgress(chunks)
	if p.total != 100+200+116+50 {
		t.Fatalf("total %d", p.total)
	}
	var queue []*Batch
	for _, i := range []int{0, 0, 2, 1} {
		queue = append(queue, &Batch{Chunk: &chunks[i]})
	}
	queue = append(queue, nil) // the end of the scan
	p.handedOut(nil, errors.New("an error delivers nothing"))
	want := []float64{100.0 / 466, 100.0 / 466, 216.0 / 466, 416.0 / 466, 1}
	for i, w := range want {
		p.handedOut(queue[i], nil)
		if got := p.fraction(); got != w {
			t.Errorf("after batch %d: fraction %v, want %v", i, got, w)
		}
	}
}
