package scanner

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
