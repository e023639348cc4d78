package arrowipc

import (
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
