package arrowipc

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Zero-length arrays whose offsets buffer is absent are valid Arrow (the
// format requires offsets only for a non-empty array) and writers produce
// them; validation must accept them (issue 11, item 5).
func TestValidateZeroLengthWithoutOffsets(t *testing.T) {
	values := array.NewData(arrow.PrimitiveTypes.Int32, 0, []*memory.Buffer{nil, nil}, nil, 0, 0)
	defer values.Release()
	for _, d := range []arrow.ArrayData{
		array.NewData(arrow.BinaryTypes.String, 0, []*memory.Buffer{nil, nil, nil}, nil, 0, 0),
		array.NewData(arrow.BinaryTypes.LargeBinary, 0, []*memory.Buffer{nil, nil, nil}, nil, 0, 0),
		array.NewData(arrow.BinaryTypes.String, 0, []*memory.Buffer{nil, memory.NewBufferBytes(nil), memory.NewBufferBytes(nil)}, nil, 0, 0),
		array.NewData(arrow.ListOf(arrow.PrimitiveTypes.Int32), 0, []*memory.Buffer{nil, nil}, []arrow.ArrayData{values}, 0, 0),
	} {
		if err := validateData(d); err != nil {
			t.Errorf("%s of length 0 without offsets: %v", d.DataType(), err)
		}
		d.Release()
	}
	// A non-empty array still needs its offsets.
	d := array.NewData(arrow.BinaryTypes.String, 1, []*memory.Buffer{nil, nil, nil}, nil, 0, 0)
	defer d.Release()
	if err := validateData(d); err == nil {
		t.Errorf("a string array of one row without offsets passed validation")
	}
}

// TestStringOffsetsChecked: string offsets that are negative, decreasing or
// past the data fail validation (the copy into DuckDB trusts them).
func TestStringOffsetsChecked(t *testing.T) {
	data := memory.NewBufferBytes([]byte("abcdefgh"))
	offs := func(v ...int32) *memory.Buffer {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
		}
		return memory.NewBufferBytes(b)
	}
	for _, tc := range []struct {
		name string
		off  *memory.Buffer
		ok   bool
	}{
		{"good", offs(0, 2, 2, 8), true},
		{"decreasing", offs(0, 5, 3, 8), false},
		{"negative", offs(-1, 2, 3, 8), false},
		{"past the data", offs(0, 2, 3, 9), false},
	} {
		d := array.NewData(arrow.BinaryTypes.String, 3, []*memory.Buffer{nil, tc.off, data}, nil, 0, 0)
		err := validateData(d)
		d.Release()
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

// TestNonDecreasing: the offsets checked four at a time find what one at a
// time finds, wherever in a block the bad offset sits, and overflowing
// differences do not hide a negative or decreasing offset.
func TestNonDecreasing(t *testing.T) {
	check := func(name string, offs []int64) {
		t.Helper()
		want := -1 // the first bad position, by the definition
		var prev int64
		for i, v := range offs {
			if v < prev {
				want = i
				break
			}
			prev = v
		}
		last, err := nonDecreasing(offs)
		offs32 := make([]int32, len(offs))
		fits := true
		for i, v := range offs {
			offs32[i] = int32(v)
			fits = fits && int64(int32(v)) == v
		}
		if want < 0 {
			if err != nil || (len(offs) > 0 && last != offs[len(offs)-1]) {
				t.Errorf("%s: %d, %v; want the last offset and no error", name, last, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("offset %d ", want)) {
			t.Errorf("%s: %v; want offset %d named", name, err, want)
		}
		if fits {
			last32, err32 := nonDecreasing(offs32)
			if (err32 == nil) != (err == nil) || (err == nil && last32 != last) {
				t.Errorf("%s as int32: %d, %v; as int64: %d, %v", name, last32, err32, last, err)
			}
		}
	}
	check("none", nil)
	for n := 1; n <= 11; n++ {
		good := make([]int64, n)
		for i := range good {
			good[i] = int64(3 * i)
		}
		check(fmt.Sprintf("%d good", n), good)
		for at := range n {
			bad := slices.Clone(good)
			bad[at] = -1
			check(fmt.Sprintf("%d, negative at %d", n, at), bad)
			if at > 0 {
				bad = slices.Clone(good)
				bad[at] = good[at-1] - 1
				check(fmt.Sprintf("%d, decreasing at %d", n, at), bad)
			}
		}
	}
	check("overflowing difference", []int64{0, math.MaxInt64, math.MinInt64, 5})
	check("int32 edge", []int64{0, math.MaxInt32, math.MaxInt32, 0})
}
