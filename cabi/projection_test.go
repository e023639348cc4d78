package cabi

import (
	"slices"
	"testing"
)

// The projection DuckDB gives init indexes the columns bind declared; an
// index outside them must be an error, not an out-of-range panic or a read
// past the slice (issue 11, item 5).
func TestNeededFieldsChecksColumnIndexes(t *testing.T) {
	cols := []column{{name: "segment_id", field: fieldSegmentID}, {name: "chunk_id", field: fieldChunkID}, {name: "x", field: 0}, {name: "y", field: 1}}
	got, err := neededFields(cols, []int{3, 0, 2, 3})
	if err != nil || !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("neededFields(3, 0, 2, 3) = %v, %v; want [0 1], nil", got, err)
	}
	if got, err := neededFields(cols, []int{1}); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("neededFields(chunk_id only) = %#v, %v; want an empty non-nil list", got, err)
	}
	for _, proj := range [][]int{{4}, {0, -1}, {1 << 40}} {
		if got, err := neededFields(cols, proj); err == nil {
			t.Errorf("neededFields(%v) = %v; want an error naming the column", proj, got)
		}
	}
}
