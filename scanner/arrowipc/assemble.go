package arrowipc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Assembling a projected read: where each column's field nodes and buffers
// sit in a batch (the layout the plan in projected.go fetches by), and the
// arrays built from the fetched bytes, decompressed where the batch is.

// columnLayout is where one top-level field's arrays sit in a batch: its
// field nodes and buffers (runs of ipcBatch.Nodes and .Buffers).
type columnLayout struct {
	node0, nodes int
	buf0, bufs   int
	variadic0    int // first entry of ipcBatch.Variadic the field uses
	variadics    int
}

// ipcCursor walks a record batch's field nodes, buffers and variadic
// buffer counts in order, as arrow-go's arrayLoaderContext hands out
// buffers: layoutColumns and assembleColumn both advance it through
// arrayShape, the one place that knows how many buffers each type takes.
type ipcCursor struct {
	rb              *ipcBatch
	node, buf, vari int
}

// arrayShape advances c past one array of type dt (its field node and its
// own buffers, not its children's) and returns how many buffers it has
// and its children's types. Types whose layout this reader does not know
// (unions, run-end encoded, list views, dictionaries) are an error: the
// whole-chunk path reads them, or bind rejects them.
func (c *ipcCursor) arrayShape(dt arrow.DataType) (nbufs int, children []arrow.DataType, err error) {
	switch t := dt.(type) {
	case *arrow.NullType:
	case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType:
		nbufs = 3
	case *arrow.StringViewType, *arrow.BinaryViewType:
		if c.vari >= len(c.rb.Variadic) {
			return 0, nil, fmt.Errorf("view field without a variadic buffer count")
		}
		nbufs = 2 + int(c.rb.Variadic[c.vari])
		c.vari++
	case *arrow.ListType, *arrow.LargeListType, *arrow.MapType:
		nbufs, children = 2, []arrow.DataType{t.(arrow.ListLikeType).Elem()}
	case *arrow.FixedSizeListType:
		nbufs, children = 1, []arrow.DataType{t.Elem()}
	case *arrow.StructType:
		nbufs = 1
		for _, f := range t.Fields() {
			children = append(children, f.Type)
		}
	case *arrow.DictionaryType:
		return 0, nil, fmt.Errorf("dictionary-encoded field")
	default:
		if _, ok := dt.(arrow.FixedWidthDataType); !ok {
			return 0, nil, fmt.Errorf("type %s has no known IPC layout here", dt)
		}
		nbufs = 2
	}
	c.node++
	c.buf += nbufs
	return nbufs, children, nil
}

// layoutColumns walks the schema depth first, as the IPC format lays out
// nodes and buffers, and returns each top-level field's share.
func layoutColumns(schema *arrow.Schema, rb *ipcBatch) ([]columnLayout, error) {
	c := ipcCursor{rb: rb}
	out := make([]columnLayout, schema.NumFields())
	for i := range out {
		f := schema.Field(i)
		l := columnLayout{node0: c.node, buf0: c.buf, variadic0: c.vari}
		if err := c.skip(f.Type); err != nil {
			return nil, fmt.Errorf("%w: column %q: %v", ErrMalformed, f.Name, err)
		}
		l.nodes, l.bufs, l.variadics = c.node-l.node0, c.buf-l.buf0, c.vari-l.variadic0
		out[i] = l
	}
	if c.node != len(rb.Nodes) || c.buf > len(rb.Buffers) {
		return nil, fmt.Errorf("%w: IPC batch has %d field nodes and %d buffers, the schema needs %d and %d",
			ErrMalformed, len(rb.Nodes), len(rb.Buffers), c.node, c.buf)
	}
	return out, nil
}

// skip advances c past one array of type dt and its children.
func (c *ipcCursor) skip(dt arrow.DataType) error {
	_, children, err := c.arrayShape(dt)
	for _, ch := range children {
		if err == nil {
			err = c.skip(ch)
		}
	}
	return err
}

// columnRange is the span of the body holding all of one column's buffers.
func columnRange(rb *ipcBatch, c columnLayout) Range {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, b := range rb.Buffers[c.buf0 : c.buf0+c.bufs] {
		if b.Length == 0 {
			continue
		}
		lo, hi = min(lo, b.Offset), max(hi, b.Offset+b.Length)
	}
	if hi == 0 {
		return Range{}
	}
	return Range{lo, hi - lo}
}

// assembleColumn builds the array of one top-level field from its bytes:
// data holds body bytes [at, at+len(data)) covering the field's buffers.
// It walks the field with the same cursor as layoutColumns.
// swap, when not nil, brings a foreign-order file's buffers to native
// order (copies: data is never written).
func assembleColumn(f arrow.Field, rb *ipcBatch, l columnLayout, data []byte, at int64, mem memory.Allocator, swap *byteOrderSwap) (arr arrow.Array, err error) {
	defer func() {
		if r := recover(); r != nil {
			repanicFault(r)
			arr, err = nil, recoveredError(fmt.Sprintf("column %q", f.Name), r)
		}
	}()
	a := assembler{c: ipcCursor{rb: rb, node: l.node0, buf: l.buf0, vari: l.variadic0}, data: data, at: at, mem: mem}
	d, err := a.build(f.Type)
	if err != nil {
		return nil, fmt.Errorf("%w: column %q: %v", ErrMalformed, f.Name, err)
	}
	if swap != nil {
		nd, err := swap.data(d)
		d.Release()
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		d = nd
	}
	defer d.Release()
	// Check the buffers before arrow-go wraps them: MakeFromData slices them
	// by the claimed length and would panic half-way through.
	if err := validateData(d); err != nil {
		return nil, fmt.Errorf("%w: column %q: %v", ErrMalformed, f.Name, err)
	}
	return array.MakeFromData(d), nil
}

// assembler builds one column's arrays (assembleColumn): the cursor walks
// its field nodes and buffers, data holds body bytes [at, at+len(data)).
type assembler struct {
	c    ipcCursor
	data []byte
	at   int64
	mem  memory.Allocator
}

// take returns buffer i of the batch (nil: of no bytes), which the caller
// releases.
func (a *assembler) take(i int) (*memory.Buffer, error) {
	r := a.c.rb.Buffers[i]
	if r.Length == 0 {
		return nil, nil
	}
	lo := r.Offset - a.at
	if lo < 0 || lo+r.Length > int64(len(a.data)) {
		return nil, fmt.Errorf("buffer %d (%d+%d) outside the fetched range", i, r.Offset, r.Length)
	}
	return decompress(a.data[lo:lo+r.Length], a.c.rb.Codec, a.mem)
}

// build returns the array data of the next array, of type dt, and its
// children; the caller releases it. On failure, what it took is released.
func (a *assembler) build(dt arrow.DataType) (arrow.ArrayData, error) {
	n := a.c.rb.Nodes[a.c.node]
	first := a.c.buf
	nbufs, childTypes, err := a.c.arrayShape(dt)
	if err != nil {
		return nil, err
	}
	bs := make([]*memory.Buffer, nbufs)
	var children []arrow.ArrayData
	// Once NewData holds its own references, or on any failure (a panic
	// too), what was taken goes.
	defer func() {
		for _, b := range bs {
			if b != nil {
				b.Release()
			}
		}
		for _, ch := range children {
			ch.Release()
		}
	}()
	for i := range bs {
		if i == 0 && n.Nulls == 0 {
			// An array of no nulls has no validity bitmap, whatever
			// buffer the file gives it (as arrow-go reads it): one of
			// zeros beside a null count of 0 would make an array
			// whose null count and bitmap disagree.
			continue
		}
		if bs[i], err = a.take(first + i); err != nil {
			return nil, err
		}
	}
	if len(childTypes) > 0 {
		children = make([]arrow.ArrayData, 0, len(childTypes))
	}
	for _, ct := range childTypes {
		ch, err := a.build(ct)
		if err != nil {
			return nil, err
		}
		children = append(children, ch)
	}
	return array.NewData(dt, int(n.Length), bs, children, int(n.Nulls), 0), nil
}

// assembleBatch builds every column of record batch rb of schema from its
// whole body (assembleColumn); the caller releases the batch.
func assembleBatch(schema *arrow.Schema, rb *ipcBatch, body []byte, mem memory.Allocator, swap *byteOrderSwap) (arrow.RecordBatch, error) {
	if err := checkBatchBody(rb, body); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	layouts, err := layoutColumns(schema, rb)
	if err != nil {
		return nil, err
	}
	cols := make([]arrow.Array, 0, len(layouts))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i, l := range layouts {
		arr, err := assembleColumn(schema.Field(i), rb, l, body, 0, mem, swap)
		if err != nil {
			return nil, err
		}
		cols = append(cols, arr)
		if n := int64(arr.Len()); n != rb.Length {
			return nil, fmt.Errorf("%w: %d rows, its column %q %d", ErrMalformed, rb.Length, schema.Field(i).Name, n)
		}
	}
	return array.NewRecordBatch(schema, cols, rb.Length), nil
}

// Decompressors are costly to make (an LZ4 reader holds 4 MiB of block
// buffers), so they are pooled.
var (
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdReaders = sync.Pool{New: func() any {
		z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			panic("scanner: zstd decoder: " + err.Error())
		}
		return z
	}}
)

// decompress returns the buffer for raw body bytes: the bytes themselves, or
// for a compressed batch, an int64 uncompressed length (-1: stored as is)
// followed by an LZ4 frame or ZSTD data.
func decompress(raw []byte, codec int, mem memory.Allocator) (*memory.Buffer, error) {
	if codec < 0 {
		return memory.NewBufferBytes(raw), nil
	}
	if len(raw) < 8 {
		return nil, fmt.Errorf("compressed buffer of %d bytes", len(raw))
	}
	n := int64(binary.LittleEndian.Uint64(raw))
	if n == -1 {
		return memory.NewBufferBytes(raw[8:]), nil
	}
	if n < 0 || n > 1<<40 {
		return nil, fmt.Errorf("uncompressed length %d", n)
	}
	var r io.Reader
	switch codec {
	case 0:
		lr := lz4Readers.Get().(*lz4.Reader)
		lr.Reset(bytes.NewReader(raw[8:]))
		defer lz4Readers.Put(lr)
		r = lr
	default:
		z := zstdReaders.Get().(*zstd.Decoder)
		if err := z.Reset(bytes.NewReader(raw[8:])); err != nil {
			return nil, err
		}
		defer zstdReaders.Put(z)
		r = z
	}
	// Grow with what actually decompresses rather than trusting n up front:
	// a corrupt length must not allocate terabytes.
	out := memory.NewResizableBuffer(mem)
	have := 0
	for have < int(n) {
		out.Resize(min(int(n), max(2*have, 64<<10)))
		k, err := io.ReadFull(r, out.Bytes()[have:])
		have += k
		if err != nil {
			out.Release()
			return nil, fmt.Errorf("decompress: %d of %d bytes: %w", have, n, err)
		}
	}
	return out, nil
}
