package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// validateRecord checks that every buffer of every column of rec is as large
// as its length, offsets and indices say, so code that reads the buffers
// without bounds checks (the C copy kernels) stays inside them. A chunk that
// fails is corrupt: the error wraps ErrMalformed and names the column.
func validateRecord(rec arrow.RecordBatch) error {
	for i, col := range rec.Columns() {
		if int64(col.Len()) != rec.NumRows() {
			return fmt.Errorf("%w: column %q has %d rows, the batch %d", ErrMalformed, rec.ColumnName(i), col.Len(), rec.NumRows())
		}
		if err := validateData(col.Data()); err != nil {
			return fmt.Errorf("%w: column %q: %v", ErrMalformed, rec.ColumnName(i), err)
		}
	}
	return nil
}

// ErrUnsupported is wrapped by the error for a column of a type this
// package does not read (unions, run-end encoded, list views, extension
// types): the data may be fine, the reader does not know its layout.
var ErrUnsupported = errors.New("not supported")

// CheckSupported fails, naming the column and its type, when schema has a
// column of a type this package does not read, at any depth.
func CheckSupported(schema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		if bad := unsupportedIn(f.Type); bad != nil {
			if arrow.TypeEqual(bad, f.Type) {
				return fmt.Errorf("column %q: Arrow type %s is %w", f.Name, f.Type, ErrUnsupported)
			}
			return fmt.Errorf("column %q: Arrow type %s is %w (it holds %s)", f.Name, f.Type, ErrUnsupported, bad)
		}
	}
	return nil
}

// unsupportedIn returns the first type in dt (dt itself or a nested one)
// that validateData cannot check, or nil.
func unsupportedIn(dt arrow.DataType) arrow.DataType {
	switch t := dt.(type) {
	case *arrow.NullType, *arrow.BooleanType,
		*arrow.StringType, *arrow.BinaryType, *arrow.LargeStringType, *arrow.LargeBinaryType,
		*arrow.StringViewType, *arrow.BinaryViewType:
		return nil
	case *arrow.ListType, *arrow.LargeListType, *arrow.MapType, *arrow.FixedSizeListType:
		return unsupportedIn(t.(arrow.ListLikeType).Elem())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if bad := unsupportedIn(f.Type); bad != nil {
				return bad
			}
		}
		return nil
	case *arrow.DictionaryType:
		if !arrow.IsInteger(t.IndexType.ID()) {
			return dt
		}
		return unsupportedIn(t.ValueType)
	case arrow.ExtensionType:
		return dt
	case arrow.FixedWidthDataType:
		return nil
	}
	return dt
}

// bufBytes is b's bytes; none for an absent buffer (nil).
func bufBytes(b *memory.Buffer) []byte {
	if b == nil {
		return nil
	}
	return b.Bytes()
}

func bufLen(b *memory.Buffer) int64 {
	if b == nil {
		return 0
	}
	return int64(b.Len())
}

// need checks that buffer i of d holds at least n bytes.
func need(d arrow.ArrayData, i int, n int64, what string) error {
	bufs := d.Buffers()
	if n <= 0 {
		return nil
	}
	if i >= len(bufs) || bufLen(bufs[i]) < n {
		var have int64
		if i < len(bufs) {
			have = bufLen(bufs[i])
		}
		return fmt.Errorf("%s buffer has %d bytes, needs %d", what, have, n)
	}
	return nil
}

// offsetsChecked counts lastOffset's calls: a decode checks each offsets
// buffer once (reading them is most of a check's cost), which a test holds
// it to.
var offsetsChecked atomic.Int64

// lastOffset checks the n+1 offsets of d, starting at its offset, to be
// non-negative and non-decreasing, and returns the last one. It reads them
// in place: a string column of every batch passes here, and a copy of its
// offsets was most of the garbage a scan made.
func lastOffset(d arrow.ArrayData, width int) (int64, error) {
	offsetsChecked.Add(1)
	start, n := int64(d.Offset()), int64(d.Len())
	if n == 0 && (len(d.Buffers()) < 2 || bufLen(d.Buffers()[1]) == 0) {
		// Arrow requires offsets only of a non-empty array, and writers omit
		// them for an empty one: it ends at offset 0 and reads no data.
		return 0, nil
	}
	if err := need(d, 1, (start+n+1)*int64(width), "offsets"); err != nil {
		return 0, err
	}
	raw := d.Buffers()[1].Bytes()[start*int64(width) : (start+n+1)*int64(width)]
	if width == 8 {
		return nonDecreasing(arrow.Int64Traits.CastFromBytes(raw))
	}
	return nonDecreasing(arrow.Int32Traits.CastFromBytes(raw))
}

// nonDecreasing checks offs to be non-negative and non-decreasing and
// returns the last one. Every offset of every string column passes here
// (7 % of a 1 GiB scan's CPU with a compare and a branch each), so it ORs
// the offsets and their differences four at a time and looks at the sign
// once: while every offset is non-negative a difference cannot overflow,
// and it is negative exactly where an offset decreases. Only a bad column
// is walked again, for the position.
func nonDecreasing[T int32 | int64](offs []T) (int64, error) {
	var prev, neg T
	i := 0
	for ; i+4 <= len(offs); i += 4 {
		o := offs[i : i+4 : i+4]
		neg |= o[0] | o[1] | o[2] | o[3] | (o[0] - prev) | (o[1] - o[0]) | (o[2] - o[1]) | (o[3] - o[2])
		prev = o[3]
	}
	for ; i < len(offs); i++ {
		neg |= offs[i] | (offs[i] - prev)
		prev = offs[i]
	}
	if neg < 0 {
		prev = 0
		for i, v := range offs {
			if v < prev {
				return 0, fmt.Errorf("offset %d is negative or decreasing", i)
			}
			prev = v
		}
	}
	return int64(prev), nil
}

func validateData(d arrow.ArrayData) error {
	start, n := int64(d.Offset()), int64(d.Len())
	if start < 0 || n < 0 {
		return fmt.Errorf("offset %d length %d", start, n)
	}
	end := start + n
	if d.NullN() > 0 && d.DataType().ID() != arrow.NULL {
		if err := need(d, 0, (end+7)/8, "validity"); err != nil {
			return err
		}
	}
	children := d.Children()
	switch t := d.DataType().(type) {
	case *arrow.NullType:
		return nil
	case *arrow.BooleanType:
		return need(d, 1, (end+7)/8, "values")
	case *arrow.StringType, *arrow.BinaryType, *arrow.LargeStringType, *arrow.LargeBinaryType:
		w := 4
		if t.ID() == arrow.LARGE_STRING || t.ID() == arrow.LARGE_BINARY {
			w = 8
		}
		last, err := lastOffset(d, w)
		if err != nil {
			return err
		}
		return need(d, 2, last, "data")
	case *arrow.StringViewType, *arrow.BinaryViewType:
		if err := need(d, 1, end*16, "views"); err != nil {
			return err
		}
		if n == 0 {
			return nil // no views to follow; writers may omit the buffer
		}
		bufs := d.Buffers()
		views := bufBytes(bufs[1])
		for i := start; i < end; i++ {
			v := views[i*16:]
			l := int64(int32(binary.LittleEndian.Uint32(v)))
			if l < 0 {
				return fmt.Errorf("view %d has length %d", i, l)
			}
			if l <= 12 {
				continue
			}
			b := int64(int32(binary.LittleEndian.Uint32(v[8:])))
			o := int64(int32(binary.LittleEndian.Uint32(v[12:])))
			if b < 0 || b+2 >= int64(len(bufs)) || o < 0 || o+l > bufLen(bufs[b+2]) {
				return fmt.Errorf("view %d points outside its data buffers", i)
			}
		}
		return nil
	case *arrow.ListType, *arrow.LargeListType, *arrow.MapType:
		w := 4
		if t.ID() == arrow.LARGE_LIST {
			w = 8
		}
		last, err := lastOffset(d, w)
		if err != nil {
			return err
		}
		if len(children) != 1 || int64(children[0].Offset()+children[0].Len()) < last {
			return fmt.Errorf("list values end before the last offset %d", last)
		}
		return validateData(children[0])
	case *arrow.FixedSizeListType:
		size := int64(t.Len())
		if len(children) != 1 || size < 0 || int64(children[0].Offset()+children[0].Len()) < end*size {
			return fmt.Errorf("fixed-size list values shorter than %d x %d", end, size)
		}
		return validateData(children[0])
	case *arrow.StructType:
		if len(children) != len(t.Fields()) {
			return fmt.Errorf("struct has %d children, its type %d fields", len(children), len(t.Fields()))
		}
		for i, c := range children {
			if int64(c.Offset()+c.Len()) < end {
				return fmt.Errorf("struct field %q shorter than the struct", t.Field(i).Name)
			}
			if err := validateData(c); err != nil {
				return fmt.Errorf("struct field %q: %v", t.Field(i).Name, err)
			}
		}
		return nil
	case *arrow.DictionaryType:
		iw := int64(t.IndexType.(arrow.FixedWidthDataType).BitWidth() / 8)
		if err := need(d, 1, end*iw, "indices"); err != nil {
			return err
		}
		dict := d.Dictionary()
		if dict == nil {
			return fmt.Errorf("dictionary missing")
		}
		if err := validateData(dict); err != nil {
			return fmt.Errorf("dictionary: %v", err)
		}
		size := int64(dict.Len())
		raw := bufBytes(d.Buffers()[1]) // absent in a batch of no rows
		signed := arrow.IsSignedInteger(t.IndexType.ID())
		var bits []byte
		if d.NullN() > 0 {
			bits = bufBytes(d.Buffers()[0])
		}
		for i := start; i < end; i++ {
			if bits != nil && bits[i>>3]>>(i&7)&1 == 0 {
				continue // a NULL's index is never read
			}
			k := readIndex(raw[i*iw:], iw, signed)
			if k < 0 || k >= size {
				return fmt.Errorf("index %d of row %d outside the dictionary of %d values", k, i, size)
			}
		}
		return nil
	case arrow.FixedWidthDataType:
		return need(d, 1, end*int64(t.BitWidth()/8), "values")
	}
	return fmt.Errorf("Arrow type %s is %w", d.DataType(), ErrUnsupported)
}

func readIndex(p []byte, w int64, signed bool) int64 {
	switch w {
	case 1:
		if signed {
			return int64(int8(p[0]))
		}
		return int64(p[0])
	case 2:
		v := binary.LittleEndian.Uint16(p)
		if signed {
			return int64(int16(v))
		}
		return int64(v)
	case 4:
		v := binary.LittleEndian.Uint32(p)
		if signed {
			return int64(int32(v))
		}
		return int64(v)
	}
	v := binary.LittleEndian.Uint64(p)
	if !signed && v > 1<<62 {
		return -1
	}
	return int64(v)
}
