package scanner

import (
	"errors"
	"testing"

	"github.com/remote-segments/remote_segments/scanner/catalog"
)

// A chunk's bytes count once, at its first batch; a chunk of unknown length
// weighs the average of the known ones; the end of the scan delivers the
// rest (a chunk that decoded to no batch).
func TestProgressFraction(t *testing.T) {
	list, err := catalog.FromRows([]Row{
		{"url": "/c/0", "length": int64(100)},
		{"url": "/c/1", "length": int64(200), "offset": int64(100)},
		{"url": "/c/2"},                      // unknown: the average of the known, 116
		{"url": "/c/3", "length": int64(50)}, // decodes to no batch
	}, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	chunks := list.Slice()
	p := newProgress(list)
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
