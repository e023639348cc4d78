package arrowipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Files written on a machine of the other byte order hold their numbers,
// offsets and indices in that order. arrow-go's readers swap them in place,
// in the bytes they were handed: in a read-only mapping of the file (a
// fault), in a pooled buffer another reader may hold, and in the first
// chunk's bytes that bind decodes and the scan decodes again (swapped
// twice: back to the file's order). So the input is never written: Decode
// hands arrow-go a private copy of a foreign-order chunk (and swaps the
// string views arrow-go leaves alone, in that copy), and the projected
// reader, which builds its arrays itself, makes native-order copies of the
// buffers that need one (byteOrderSwap).

// decodeAssembled decodes a whole IPC file, or a file or stream of the
// other byte order (foreign), the framing checked, with the projected
// reader's assembler: every column of every batch, referencing data,
// which is never written; of a foreign chunk, the buffers that need it
// swapped into copies (byteOrderSwap). arrow-go's own swap, in place,
// dereferences the absent buffer of a decimal or month-day-nano array of
// no rows (an empty list's child). The returned schema is marked native.
// ErrDictionaries: the chunk has dictionaries, which the assembler does
// not read.
func decodeAssembled(data []byte, mem memory.Allocator, foreign bool) (schema *arrow.Schema, batches []arrow.RecordBatch, err error) {
	var swap *byteOrderSwap
	if foreign {
		swap = newByteOrderSwap(mem)
		defer swap.release()
	}
	defer func() {
		if err != nil {
			ReleaseAll(batches)
			batches = nil
		}
	}()
	add := func(meta fb, header int64, body []byte) error {
		rb, err := parseRecordBatch(meta, header)
		if err != nil {
			return fmt.Errorf("%w: IPC record batch message: %v", ErrMalformed, err)
		}
		b, err := assembleBatch(schema, rb, body, mem, swap)
		if err != nil {
			return fmt.Errorf("record batch %d: %w", len(batches), err)
		}
		batches = append(batches, b)
		return nil
	}
	if bytes.HasPrefix(data, fileMagic) {
		footer, _, err := readIPCFooter(int64(len(data)), int64(len(data)), fetchFrom(data, new(int64)))
		if err != nil {
			return nil, nil, err
		}
		if footer.foreign != foreign {
			return nil, nil, fmt.Errorf("%w: IPC footer: its schema's byte order is not the framing's", ErrMalformed)
		}
		schema = footer.Schema
		for _, blk := range footer.Batches {
			meta, next, _, err := messageAt(data[:blk.Offset+blk.MetaLen], blk.Offset)
			if err != nil || meta == nil {
				return nil, nil, fmt.Errorf("%w: record batch at %d: no message", ErrMalformed, blk.Offset)
			}
			m, err := parseMessage(meta)
			if err != nil || m.kind != headerRecordBatch || m.bodyLen > blk.BodyLen {
				return nil, nil, fmt.Errorf("%w: record batch at %d: not a record batch message", ErrMalformed, blk.Offset)
			}
			if err := add(meta, m.header, data[next:next+m.bodyLen]); err != nil {
				return nil, nil, err
			}
		}
		return schema, batches, nil
	}
	for pos := int64(0); ; {
		meta, next, end, err := messageAt(data, pos)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: arrow IPC stream: %v", ErrMalformed, err)
		}
		if end {
			return schema, batches, nil
		}
		m, err := parseMessage(meta)
		if err != nil || m.bodyLen > int64(len(data))-next {
			return nil, nil, fmt.Errorf("%w: arrow IPC stream: message at %d", ErrMalformed, pos)
		}
		body := data[next : next+m.bodyLen]
		pos = next + m.bodyLen
		switch {
		case m.kind == headerDictionaryBatch:
			return nil, nil, ErrDictionaries
		case m.kind == headerSchema && schema == nil:
			if schema, err = streamSchema(data); err != nil {
				return nil, nil, err
			}
		case m.kind == headerRecordBatch && schema != nil:
			if err := add(meta, m.header, body); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, fmt.Errorf("%w: arrow IPC stream: unexpected message at %d (header type %d)", ErrMalformed, pos, m.kind)
		}
	}
}

// streamSchema is the schema of the stream in data, marked native:
// arrow-go reads its first message. ErrDictionaries: it has
// dictionary-encoded fields.
func streamSchema(data []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReaderFromMessageReader(&memMessages{data: data}, ipc.WithEnsureNativeEndian(false))
	if err != nil {
		return nil, fmt.Errorf("%w: not an Arrow IPC file or stream: %w", ErrMalformed, err)
	}
	defer r.Release()
	schema := r.Schema()
	if err := CheckSupported(schema); err != nil {
		return nil, err
	}
	for _, f := range schema.Fields() {
		if holdsDictionary(f.Type) {
			return nil, ErrDictionaries
		}
	}
	return schema.WithEndianness(endian.NativeEndian), nil
}

// holdsDictionary reports whether dt is or holds a dictionary-encoded type.
func holdsDictionary(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.DictionaryType:
		return true
	case arrow.NestedType:
		for _, f := range t.Fields() {
			if holdsDictionary(f.Type) {
				return true
			}
		}
	}
	return false
}

// ErrByteOrder is wrapped by the error for a column whose values cannot be
// brought to this machine's byte order.
var ErrByteOrder = errors.New("byte order")

// swapViewsInPlace swaps the string and binary views of batches, which
// arrow-go decoded from a private copy of a foreign-order chunk without
// swapping them (it swaps every other type it reads). A dictionary shared
// by many batches is swapped once.
func swapViewsInPlace(batches []arrow.RecordBatch) {
	seen := map[*byte]bool{}
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		switch d.DataType().ID() {
		case arrow.STRING_VIEW, arrow.BINARY_VIEW:
			if v := bufBytes(d.Buffers()[1]); len(v) > 0 && !seen[&v[0]] {
				seen[&v[0]] = true
				swapViews(v, v)
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
		if dict := dictionaryOf(d); dict != nil {
			walk(dict)
		}
	}
	for _, b := range batches {
		for _, c := range b.Columns() {
			walk(c.Data())
		}
	}
}

// dictionaryOf is d's dictionary, or nil (arrow-go's Dictionary returns a
// nil *array.Data in a non-nil interface).
func dictionaryOf(d arrow.ArrayData) arrow.ArrayData {
	if dd, ok := d.Dictionary().(*array.Data); ok && dd != nil {
		return dd
	}
	return nil
}

// foreignOrder reports whether schema's buffers are in the other byte order.
func foreignOrder(schema *arrow.Schema) bool {
	return schema != nil && schema.Endianness() != endian.NativeEndian
}

// byteOrderSwap makes native-order copies of a foreign-order file's arrays.
// A dictionary shared by many batches is swapped once (dicts).
type byteOrderSwap struct {
	mem   memory.Allocator
	dicts map[arrow.ArrayData]arrow.ArrayData // owned: Release with release
}

func newByteOrderSwap(mem memory.Allocator) *byteOrderSwap {
	return &byteOrderSwap{mem: mem, dicts: map[arrow.ArrayData]arrow.ArrayData{}}
}

// release drops the swap's own references to the dictionaries it made.
func (s *byteOrderSwap) release() {
	for _, d := range s.dicts {
		d.Release()
	}
	s.dicts = nil
}

// record returns rec in native order under schema (rec's, marked native);
// rec is left as it was, and the caller still owns it.
func (s *byteOrderSwap) record(rec arrow.RecordBatch, schema *arrow.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i, col := range rec.Columns() {
		d, err := s.data(col.Data())
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", rec.ColumnName(i), err)
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}

// data returns a copy of d (a new reference the caller releases) whose
// buffers are in native order: the order-dependent ones copied and
// swapped, the others shared.
func (s *byteOrderSwap) data(d arrow.ArrayData) (arrow.ArrayData, error) {
	bufs := append([]*memory.Buffer(nil), d.Buffers()...)
	var made []*memory.Buffer // released once the new data holds them
	defer func() {
		for _, b := range made {
			b.Release()
		}
	}()
	swap := func(i int, f func(dst, src []byte)) {
		if i >= len(bufs) || bufs[i] == nil || bufs[i].Len() == 0 {
			return
		}
		src := bufs[i].Bytes()
		out := memory.NewResizableBuffer(s.mem)
		out.Resize(len(src))
		copy(out.Bytes(), src)
		f(out.Bytes(), src)
		bufs[i] = out
		made = append(made, out)
	}
	reverse := func(w int) func(dst, src []byte) {
		return func(dst, src []byte) { reverseEach(dst, w) }
	}
	var err error
	switch t := d.DataType().(type) {
	case *arrow.NullType, *arrow.BooleanType, *arrow.Int8Type, *arrow.Uint8Type,
		*arrow.FixedSizeBinaryType, *arrow.FixedSizeListType, *arrow.StructType:
		// bytes and bits: nothing to swap but the children's
	case *arrow.StringType, *arrow.BinaryType, *arrow.ListType, *arrow.MapType:
		swap(1, reverse(4))
	case *arrow.LargeStringType, *arrow.LargeBinaryType, *arrow.LargeListType:
		swap(1, reverse(8))
	case *arrow.StringViewType, *arrow.BinaryViewType:
		swap(1, swapViews)
	case *arrow.DayTimeIntervalType:
		swap(1, reverse(4)) // two int32
	case *arrow.MonthDayNanoIntervalType:
		swap(1, func(dst, _ []byte) {
			for p := 0; p+16 <= len(dst); p += 16 {
				reverseEach(dst[p:p+8], 4) // months, days: int32
				reverseEach(dst[p+8:p+16], 8)
			}
		})
	case *arrow.DictionaryType:
		swap(1, reverse(t.IndexType.(arrow.FixedWidthDataType).BitWidth()/8))
	case arrow.FixedWidthDataType:
		// Integers, floats, decimals of every width, dates, times,
		// timestamps, durations, month intervals: one number each.
		swap(1, reverse(t.BitWidth()/8))
	default:
		return nil, fmt.Errorf("%w: the file is %s-endian, and swapping %s to this machine's order is not supported", ErrByteOrder, fileOrder(), d.DataType())
	}
	var children []arrow.ArrayData
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	for _, c := range d.Children() {
		nc, cerr := s.data(c)
		if cerr != nil {
			return nil, cerr
		}
		children = append(children, nc)
	}
	if dict := dictionaryOf(d); dict != nil {
		nd, ok := s.dicts[dict]
		if !ok {
			if nd, err = s.data(dict); err != nil {
				return nil, fmt.Errorf("dictionary: %w", err)
			}
			s.dicts[dict] = nd
		}
		return array.NewDataWithDictionary(d.DataType(), d.Len(), bufs, d.NullN(), d.Offset(), nd.(*array.Data)), nil
	}
	return array.NewData(d.DataType(), d.Len(), bufs, children, d.NullN(), d.Offset()), nil
}

// fileOrder names the byte order a foreign file has: the other one.
func fileOrder() string {
	if endian.IsBigEndian {
		return "little"
	}
	return "big"
}

// reverseEach reverses the bytes of each w-byte element of b in place; a
// tail shorter than w is left alone.
func reverseEach(b []byte, w int) {
	if w <= 1 {
		return
	}
	for p := 0; p+w <= len(b); p += w {
		e := b[p : p+w]
		for i, j := 0, w-1; i < j; i, j = i+1, j-1 {
			e[i], e[j] = e[j], e[i]
		}
	}
}

// swapViews swaps the views of a string or binary view array: each is an
// int32 length, then either up to 12 inline bytes (length <= 12), or a
// 4-byte prefix, an int32 buffer index and an int32 offset. The length is
// read from src, in the file's order, to tell the two apart.
func swapViews(dst, src []byte) {
	for p := 0; p+16 <= len(dst); p += 16 {
		n := int32(binary.BigEndian.Uint32(src[p:]))
		if endian.IsBigEndian {
			n = int32(binary.LittleEndian.Uint32(src[p:]))
		}
		reverseEach(dst[p:p+4], 4)
		if n > 12 {
			reverseEach(dst[p+8:p+16], 4)
		}
	}
}
