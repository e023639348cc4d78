package datagen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is an IPC buffer compression.
type Codec int

const (
	CodecNone Codec = iota
	CodecLZ4
	CodecZSTD
)

func (c Codec) String() string { return [...]string{"none", "lz4", "zstd"}[c] }

// IPCFormat is how EncodeIPC writes record batches: an IPC file or a
// stream, the buffers' compression and byte order.
type IPCFormat struct {
	File      bool
	Codec     Codec
	BigEndian bool
}

// Name is the format as a file name, such as "be-zstd.arrows" (a stream)
// or "le-none.arrow" (a file).
func (f IPCFormat) Name() string {
	order, ext := "le", "arrows"
	if f.BigEndian {
		order = "be"
	}
	if f.File {
		ext = "arrow"
	}
	return fmt.Sprintf("%s-%s.%s", order, f.Codec, ext)
}

// IPCFormats are all twelve formats: {le, be} x {none, lz4, zstd} x {file, stream}.
func IPCFormats() []IPCFormat {
	var out []IPCFormat
	for _, be := range []bool{false, true} {
		for _, c := range []Codec{CodecNone, CodecLZ4, CodecZSTD} {
			for _, file := range []bool{true, false} {
				out = append(out, IPCFormat{File: file, Codec: c, BigEndian: be})
			}
		}
	}
	return out
}

// WriteIPC writes recs (all of schema) to path in format.
func WriteIPC(path string, schema *arrow.Schema, recs []arrow.RecordBatch, format IPCFormat) error {
	data, err := EncodeIPC(schema, recs, format)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// EncodeIPC returns the IPC bytes of recs (all of schema) in format.
//
// arrow-go writes only its own byte order, and reads the offsets of the
// arrays it writes, so a big-endian file is written as a little-endian
// one whose schema says big-endian, then rewritten: every buffer of every
// message decompressed, its numbers swapped, compressed again, the body
// laid out anew and the metadata's buffer, body and block positions
// patched in place (they are fixed-size fields of the flatbuffers).
func EncodeIPC(schema *arrow.Schema, recs []arrow.RecordBatch, format IPCFormat) ([]byte, error) {
	if format.BigEndian {
		be := arrow.NewSchemaWithEndian(schema.Fields(), nil, endian.BigEndian)
		marked := make([]arrow.RecordBatch, len(recs))
		for i, r := range recs {
			marked[i] = array.NewRecordBatch(be, r.Columns(), r.NumRows())
			defer marked[i].Release()
		}
		schema, recs = be, marked
	}
	opts := []ipc.Option{ipc.WithSchema(schema)}
	switch format.Codec {
	case CodecLZ4:
		opts = append(opts, ipc.WithLZ4())
	case CodecZSTD:
		opts = append(opts, ipc.WithZstd())
	}
	var buf bytes.Buffer
	type writer interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	var w writer
	if format.File {
		fw, err := ipc.NewFileWriter(&buf, opts...)
		if err != nil {
			return nil, err
		}
		w = fw
	} else {
		w = ipc.NewWriter(&buf, opts...)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if !format.BigEndian {
		return buf.Bytes(), nil
	}
	return toBigEndian(buf.Bytes(), schema, format)
}

// fbView reads a flatbuffer (little-endian, whatever the data's order).
type fbView []byte

func (b fbView) u32(p int) int        { return int(binary.LittleEndian.Uint32(b[p:])) }
func (b fbView) i64(p int) int64      { return int64(binary.LittleEndian.Uint64(b[p:])) }
func (b fbView) deref(p int) int      { return p + b.u32(p) }
func (b fbView) put64(p int, v int64) { binary.LittleEndian.PutUint64(b[p:], uint64(v)) }

// field is the position of field slot of the table at tab, -1 if absent.
func (b fbView) field(tab, slot int) int {
	vt := tab - int(int32(b.u32(tab)))
	if 4+2*slot >= int(binary.LittleEndian.Uint16(b[vt:])) {
		return -1
	}
	off := int(binary.LittleEndian.Uint16(b[vt+4+2*slot:]))
	if off == 0 {
		return -1
	}
	return tab + off
}

// vector is the start and length of vector field slot of tab (0, 0 if absent).
func (b fbView) vector(tab, slot int) (int, int) {
	p := b.field(tab, slot)
	if p < 0 {
		return 0, 0
	}
	v := b.deref(p)
	return v + 4, b.u32(v)
}

// byteSwap turns one decompressed buffer from little- to big-endian.
type byteSwap func(b []byte)

func reverseEvery(w int) byteSwap {
	return func(b []byte) {
		for p := 0; p+w <= len(b); p += w {
			e := b[p : p+w]
			for i, j := 0, w-1; i < j; i, j = i+1, j-1 {
				e[i], e[j] = e[j], e[i]
			}
		}
	}
}

// swapViewsToBE swaps string/binary views: the length, and for a long
// string its buffer index and offset.
func swapViewsToBE(b []byte) {
	for p := 0; p+16 <= len(b); p += 16 {
		n := int32(binary.LittleEndian.Uint32(b[p:]))
		reverseEvery(4)(b[p : p+4])
		if n > 12 {
			reverseEvery(4)(b[p+8 : p+16])
		}
	}
}

// layoutSwaps appends, in IPC buffer order, the swap of each buffer of an
// array of type dt and its children; views take variadic data buffers
// from counts (advanced).
func layoutSwaps(dt arrow.DataType, out []byteSwap, counts *[]int64) ([]byteSwap, error) {
	switch t := dt.(type) {
	case *arrow.NullType:
		return out, nil
	case *arrow.BooleanType, *arrow.FixedSizeBinaryType, *arrow.Int8Type, *arrow.Uint8Type:
		return append(out, nil, nil), nil
	case *arrow.StringType, *arrow.BinaryType:
		return append(out, nil, reverseEvery(4), nil), nil
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		return append(out, nil, reverseEvery(8), nil), nil
	case *arrow.StringViewType, *arrow.BinaryViewType:
		if len(*counts) == 0 {
			return nil, fmt.Errorf("datagen: view without a variadic buffer count")
		}
		n := (*counts)[0]
		*counts = (*counts)[1:]
		out = append(out, nil, swapViewsToBE)
		for range n {
			out = append(out, nil)
		}
		return out, nil
	case *arrow.ListType, *arrow.MapType:
		return layoutSwaps(t.(arrow.ListLikeType).Elem(), append(out, nil, reverseEvery(4)), counts)
	case *arrow.LargeListType:
		return layoutSwaps(t.Elem(), append(out, nil, reverseEvery(8)), counts)
	case *arrow.FixedSizeListType:
		return layoutSwaps(t.Elem(), append(out, nil), counts)
	case *arrow.StructType:
		out = append(out, nil)
		for _, f := range t.Fields() {
			var err error
			if out, err = layoutSwaps(f.Type, out, counts); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *arrow.DictionaryType:
		return append(out, nil, reverseEvery(t.IndexType.(arrow.FixedWidthDataType).BitWidth()/8)), nil
	case *arrow.DayTimeIntervalType:
		return append(out, nil, reverseEvery(4)), nil
	case *arrow.MonthDayNanoIntervalType:
		return append(out, nil, func(b []byte) {
			for p := 0; p+16 <= len(b); p += 16 {
				reverseEvery(4)(b[p : p+8])
				reverseEvery(8)(b[p+8 : p+16])
			}
		}), nil
	case arrow.FixedWidthDataType:
		return append(out, nil, reverseEvery(t.BitWidth()/8)), nil
	}
	return nil, fmt.Errorf("datagen: no big-endian layout for %s", dt)
}

// dictionaryTypes are the value types of schema's dictionaries by id, as
// arrow-go numbers them: depth first, in field order.
func dictionaryTypes(schema *arrow.Schema) []arrow.DataType {
	var out []arrow.DataType
	var walk func(dt arrow.DataType)
	walk = func(dt arrow.DataType) {
		switch t := dt.(type) {
		case *arrow.DictionaryType:
			out = append(out, t.ValueType)
			walk(t.ValueType)
		case arrow.NestedType:
			for _, f := range t.Fields() {
				walk(f.Type)
			}
		}
	}
	for _, f := range schema.Fields() {
		walk(f.Type)
	}
	return out
}

// toBigEndian rewrites the little-endian IPC data (whose schema already
// says big-endian) with big-endian buffers.
func toBigEndian(data []byte, schema *arrow.Schema, format IPCFormat) ([]byte, error) {
	var out []byte
	pos, end := 0, len(data)
	var footer []byte
	if format.File {
		footerLen := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
		end = len(data) - 10 - footerLen
		footer = append([]byte(nil), data[end:len(data)-10]...)
		out = append(out, data[:8]...) // magic and padding
		pos = 8
	}
	dicts := dictionaryTypes(schema)
	moved := map[int64][2]int64{} // old message offset: new offset, new body length
	for pos < end {
		if pos+8 > end {
			out = append(out, data[pos:end]...)
			break
		}
		start := pos
		metaLen := int(binary.LittleEndian.Uint32(data[pos+4:]))
		if metaLen == 0 { // end of stream
			out = append(out, data[pos:pos+8]...)
			pos += 8
			continue
		}
		meta := fbView(append([]byte(nil), data[pos+8:pos+8+metaLen]...))
		pos += 8 + metaLen
		msg := meta.deref(0)
		bodyLen := int64(0)
		blp := meta.field(msg, 3)
		if blp >= 0 {
			bodyLen = meta.i64(blp)
		}
		body := data[pos : pos+int(bodyLen)]
		pos += int(bodyLen)
		kind := meta[meta.field(msg, 1)]
		header := meta.deref(meta.field(msg, 2))
		var rb int
		var types []arrow.DataType
		switch kind {
		case 2: // dictionary batch
			id := int64(0)
			if p := meta.field(header, 0); p >= 0 {
				id = meta.i64(p)
			}
			if id < 0 || id >= int64(len(dicts)) {
				return nil, fmt.Errorf("datagen: dictionary id %d", id)
			}
			rb = meta.deref(meta.field(header, 1))
			types = []arrow.DataType{dicts[id]}
		case 3: // record batch
			rb = header
			for _, f := range schema.Fields() {
				types = append(types, f.Type)
			}
		default: // the schema: no body
			out = append(out, data[start:pos]...)
			continue
		}
		var counts []int64
		if vs, vn := meta.vector(rb, 4); vn > 0 {
			for i := range vn {
				counts = append(counts, meta.i64(vs+8*i))
			}
		}
		var swaps []byteSwap
		for _, t := range types {
			var err error
			if swaps, err = layoutSwaps(t, swaps, &counts); err != nil {
				return nil, err
			}
		}
		bs, bn := meta.vector(rb, 2)
		if bn != len(swaps) {
			return nil, fmt.Errorf("datagen: %d buffers, the schema lays out %d", bn, len(swaps))
		}
		compressed := meta.field(rb, 3) >= 0
		var newBody []byte
		for i := range bn {
			off, l := meta.i64(bs+16*i), meta.i64(bs+16*i+8)
			raw := body[off : off+l]
			enc, err := swapBuffer(raw, swaps[i], compressed, format.Codec)
			if err != nil {
				return nil, err
			}
			meta.put64(bs+16*i, int64(len(newBody)))
			meta.put64(bs+16*i+8, int64(len(enc)))
			newBody = append(newBody, enc...)
			for len(newBody)%8 != 0 {
				newBody = append(newBody, 0)
			}
		}
		if int64(len(newBody)) != bodyLen {
			if blp < 0 {
				return nil, fmt.Errorf("datagen: a message without a body length grew a body")
			}
			meta.put64(blp, int64(len(newBody)))
		}
		moved[int64(start)] = [2]int64{int64(len(out)), int64(len(newBody))}
		out = append(out, data[start:start+8]...)
		out = append(out, meta...)
		out = append(out, newBody...)
	}
	if !format.File {
		return out, nil
	}
	// The footer's blocks: offset, metadata length (+pad), body length.
	f := fbView(footer)
	root := f.deref(0)
	for _, slot := range []int{2, 3} {
		vs, vn := f.vector(root, slot)
		for i := range vn {
			p := vs + 24*i
			m, ok := moved[f.i64(p)]
			if !ok {
				return nil, fmt.Errorf("datagen: footer block at %d is no message", f.i64(p))
			}
			f.put64(p, m[0])
			f.put64(p+16, m[1])
		}
	}
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "ARROW1"...), nil
}

// swapBuffer returns one body buffer with its numbers swapped: an empty
// buffer as it is, a compressed one decompressed, swapped and compressed
// again (an uncompressed one of a compressed batch, length -1, stays so).
func swapBuffer(raw []byte, swap byteSwap, compressed bool, codec Codec) ([]byte, error) {
	if len(raw) == 0 || swap == nil {
		return append([]byte(nil), raw...), nil
	}
	if !compressed {
		b := append([]byte(nil), raw...)
		swap(b)
		return b, nil
	}
	n := int64(binary.LittleEndian.Uint64(raw))
	if n == -1 {
		b := append([]byte(nil), raw...)
		swap(b[8:])
		return b, nil
	}
	plain := make([]byte, n)
	var r io.Reader
	switch codec {
	case CodecLZ4:
		r = lz4.NewReader(bytes.NewReader(raw[8:]))
	case CodecZSTD:
		z, err := zstd.NewReader(bytes.NewReader(raw[8:]), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer z.Close()
		r = z
	default:
		return nil, fmt.Errorf("datagen: a compressed batch without a codec")
	}
	if _, err := io.ReadFull(r, plain); err != nil {
		return nil, err
	}
	swap(plain)
	var out bytes.Buffer
	out.Write(raw[:8])
	switch codec {
	case CodecLZ4:
		w := lz4.NewWriter(&out)
		if err := w.Apply(lz4.ChecksumOption(false), lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			return nil, err
		}
		if _, err := w.Write(plain); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	default:
		z, err := zstd.NewWriter(nil)
		if err != nil {
			return nil, err
		}
		out.Write(z.EncodeAll(plain, nil))
		z.Close()
	}
	return out.Bytes(), nil
}

// ReleaseAll releases every batch of recs.
func ReleaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
