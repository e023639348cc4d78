package scanner

// Reading only some columns of an Arrow IPC file.
//
// An IPC file ends with a footer (a flatbuffer listing the schema and the
// position of every record batch), its length as an int32, and the magic
// "ARROW1". Each record batch is an encapsulated message: a flatbuffer
// (RecordBatch: row count, one FieldNode per array, one Buffer per buffer, in
// depth-first field order) followed by the body those buffers point into.
// Knowing the schema, the buffers of one column are a known run of that list,
// so a scan that needs few columns fetches the footer, the batches' metadata,
// and only those columns' byte ranges.
//
// The flatbuffer reading here is our own and bounds-checked everywhere: a
// malformed file is an error wrapping ErrBadChunk, never a panic. The schema
// itself is decoded by arrow-go from the same footer bytes.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ipcTrailerLen is the int32 footer length plus the 6-byte magic at the end
// of an IPC file.
const ipcTrailerLen = 10

// fb is a bounds-checked view of a flatbuffer.
type fb []byte

var errFlatbuffer = errors.New("malformed flatbuffer")

func (b fb) u32(pos int64) (uint32, error) {
	if pos < 0 || pos+4 > int64(len(b)) {
		return 0, errFlatbuffer
	}
	return binary.LittleEndian.Uint32(b[pos:]), nil
}

func (b fb) i64(pos int64) (int64, error) {
	if pos < 0 || pos+8 > int64(len(b)) {
		return 0, errFlatbuffer
	}
	return int64(binary.LittleEndian.Uint64(b[pos:])), nil
}

func (b fb) u8(pos int64) (byte, error) {
	if pos < 0 || pos >= int64(len(b)) {
		return 0, errFlatbuffer
	}
	return b[pos], nil
}

// root returns the position of the root table.
func (b fb) root() (int64, error) {
	off, err := b.u32(0)
	return int64(off), err
}

// field returns the position of field slot of the table at tab, or -1 when
// the field is absent.
func (b fb) field(tab int64, slot int) (int64, error) {
	soff, err := b.u32(tab)
	if err != nil {
		return 0, err
	}
	vt := tab - int64(int32(soff))
	if vt < 0 || vt+4 > int64(len(b)) {
		return 0, errFlatbuffer
	}
	vtLen := int64(binary.LittleEndian.Uint16(b[vt:]))
	entry := 4 + 2*int64(slot)
	if entry >= vtLen { // the rule of the flatbuffers runtime, which arrow-go uses
		return -1, nil
	}
	if vt+entry+2 > int64(len(b)) {
		return 0, errFlatbuffer
	}
	off := int64(binary.LittleEndian.Uint16(b[vt+entry:]))
	if off == 0 {
		return -1, nil
	}
	return tab + off, nil
}

// deref follows the uoffset stored at pos.
func (b fb) deref(pos int64) (int64, error) {
	off, err := b.u32(pos)
	if err != nil {
		return 0, err
	}
	return pos + int64(off), nil
}

// vector returns the start and length of the vector field slot of the table
// at tab, checking that n elements of size each fit.
func (b fb) vector(tab int64, slot int, size int64) (start, n int64, err error) {
	pos, err := b.field(tab, slot)
	if err != nil || pos < 0 {
		return 0, 0, err
	}
	v, err := b.deref(pos)
	if err != nil {
		return 0, 0, err
	}
	l, err := b.u32(v)
	if err != nil {
		return 0, 0, err
	}
	n = int64(l)
	if v+4+n*size > int64(len(b)) {
		return 0, 0, errFlatbuffer
	}
	return v + 4, n, nil
}

// ipcBlock locates one message of an IPC file.
type ipcBlock struct {
	Offset  int64 // of the message (its metadata prefix)
	MetaLen int64 // metadata length, prefix and padding included
	BodyLen int64
}

// ipcFooter is the part of an IPC file's footer a projected read needs.
type ipcFooter struct {
	Schema  *arrow.Schema
	Batches []ipcBlock
}

// parseTrailer returns the footer length from the last ipcTrailerLen bytes
// of an IPC file of fileSize bytes.
func parseTrailer(trailer []byte, fileSize int64) (int64, error) {
	if len(trailer) != ipcTrailerLen || !bytes.Equal(trailer[4:], ipcFileMagic) {
		return 0, errNotIPCFile
	}
	n := int64(int32(binary.LittleEndian.Uint32(trailer)))
	if n <= 0 || n+ipcTrailerLen+8 > fileSize {
		return 0, fmt.Errorf("%w: IPC footer length %d does not fit a file of %d bytes", ErrBadChunk, n, fileSize)
	}
	return n, nil
}

// parseFooter reads the footer flatbuffer. Dictionary-encoded files are
// refused (errDictionaries): their dictionaries live in other messages.
func parseFooter(footer []byte) (*ipcFooter, error) {
	b := fb(footer)
	bad := func(err error) (*ipcFooter, error) {
		return nil, fmt.Errorf("%w: IPC footer: %v", ErrBadChunk, err)
	}
	root, err := b.root()
	if err != nil {
		return bad(err)
	}
	_, nd, err := b.vector(root, slotFooterDictionaries, blockSize)
	if err != nil {
		return bad(err)
	}
	if nd > 0 {
		return nil, errDictionaries
	}
	start, n, err := b.vector(root, slotFooterRecordBatches, blockSize)
	if err != nil {
		return bad(err)
	}
	f := &ipcFooter{Batches: make([]ipcBlock, n)}
	for i := range f.Batches {
		p := start + int64(i)*blockSize
		off, _ := b.i64(p)
		meta, _ := b.u32(p + 8)
		body, _ := b.i64(p + 16)
		if off < 0 || body < 0 || int32(meta) <= 0 {
			return bad(fmt.Errorf("record batch %d: bad block offset=%d meta=%d body=%d", i, off, int32(meta), body))
		}
		f.Batches[i] = ipcBlock{Offset: off, MetaLen: int64(meta), BodyLen: body}
	}
	sp, err := b.field(root, slotFooterSchema)
	if err != nil || sp < 0 {
		return bad(fmt.Errorf("no schema"))
	}
	schema, err := b.deref(sp)
	if err != nil {
		return bad(err)
	}
	if err := checkSchema(b, schema); err != nil {
		return bad(err)
	}
	f.Schema, err = footerSchema(footer)
	if err != nil {
		return bad(err)
	}
	return f, nil
}

// Conditions that send a chunk to the whole-chunk path.
var (
	errDictionaries = errors.New("IPC file has dictionaries")
	errNotIPCFile   = fmt.Errorf("%w: no Arrow IPC file magic at the end", ErrBadChunk) // a stream, or garbage
)

// footerSchema lets arrow-go decode the schema from the footer alone: it
// reads an IPC file through tailReader, which holds only the footer and the
// trailer.
func footerSchema(footer []byte) (s *arrow.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("schema: %v", r)
		}
	}()
	tail := make([]byte, 0, len(footer)+ipcTrailerLen)
	tail = append(tail, footer...)
	tail = binary.LittleEndian.AppendUint32(tail, uint32(len(footer)))
	tail = append(tail, ipcFileMagic...)
	// Pretend the footer sits at the end of a file with room before it for
	// the leading magic, which arrow-go does not read.
	r := &tailReader{tail: tail, size: int64(len(tail)) + 8}
	fr, err := ipc.NewFileReader(r)
	if err != nil {
		return nil, err
	}
	defer fr.Close()
	return fr.Schema(), nil
}

// tailReader serves the last len(tail) bytes of a file of size bytes.
type tailReader struct {
	tail []byte
	size int64
	pos  int64
}

func (t *tailReader) ReadAt(p []byte, off int64) (int, error) {
	start := off - (t.size - int64(len(t.tail)))
	if start < 0 || start+int64(len(p)) > int64(len(t.tail)) {
		return 0, fmt.Errorf("read of %d bytes at %d outside the footer", len(p), off)
	}
	return copy(p, t.tail[start:]), nil
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.ReadAt(p, t.pos)
	t.pos += int64(n)
	return n, err
}

func (t *tailReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		t.pos = off
	case io.SeekCurrent:
		t.pos += off
	case io.SeekEnd:
		t.pos = t.size + off
	}
	return t.pos, nil
}

// ipcRange is a byte range of an IPC file's body.
type ipcRange struct{ Offset, Length int64 }

type fieldNode struct{ Length, Nulls int64 }

// ipcBatch is a parsed RecordBatch message.
type ipcBatch struct {
	Length   int64
	Nodes    []fieldNode
	Buffers  []ipcRange // relative to the body
	Codec    int        // -1 none, 0 LZ4 frame, 1 ZSTD
	Variadic []int64    // buffer counts of the view arrays, in field order
}

// Field slots of the Arrow IPC flatbuffer tables (format/Message.fbs,
// File.fbs, Schema.fbs) that these readers use.
const (
	slotMessageHeaderType = 1
	slotMessageHeader     = 2
	slotMessageBodyLength = 3

	slotFooterSchema        = 1
	slotFooterDictionaries  = 2
	slotFooterRecordBatches = 3

	slotSchemaFields         = 1
	slotSchemaCustomMetadata = 2
	slotSchemaFeatures       = 3

	slotFieldName           = 0
	slotFieldTypeType       = 2
	slotFieldType           = 3
	slotFieldChildren       = 5
	slotFieldCustomMetadata = 6

	slotUnionTypeIDs = 1

	slotBatchLength      = 0
	slotBatchNodes       = 1
	slotBatchBuffers     = 2
	slotBatchCompression = 3
	slotBatchVariadic    = 4

	slotCompressionCodec = 0
	slotDictionaryData   = 1

	blockSize     = 24 // a Block struct of the footer: offset, metaDataLength (+pad), bodyLength
	fieldNodeSize = 16 // a FieldNode struct: length, null_count
	bufferSize    = 16 // a Buffer struct: offset, length
)

// ipcMessage is a parsed Message table: its header's type and position,
// and the length of the body that follows it.
type ipcMessage struct {
	kind    int   // headerSchema, headerDictionaryBatch, headerRecordBatch
	header  int64 // position of the header table
	bodyLen int64
}

// parseMessage reads the Message table at the root of b.
func parseMessage(b fb) (ipcMessage, error) {
	msg, err := b.root()
	if err != nil {
		return ipcMessage{}, err
	}
	var m ipcMessage
	if p, err := b.field(msg, slotMessageBodyLength); err != nil {
		return ipcMessage{}, err
	} else if p >= 0 {
		if m.bodyLen, err = b.i64(p); err != nil {
			return ipcMessage{}, err
		}
	}
	if m.bodyLen < 0 {
		return ipcMessage{}, fmt.Errorf("body length %d", m.bodyLen)
	}
	tp, err := b.field(msg, slotMessageHeaderType)
	if err != nil || tp < 0 {
		return ipcMessage{}, fmt.Errorf("no header type")
	}
	kind, err := b.u8(tp)
	if err != nil {
		return ipcMessage{}, err
	}
	m.kind = int(kind)
	hp, err := b.field(msg, slotMessageHeader)
	if err != nil || hp < 0 {
		return ipcMessage{}, fmt.Errorf("no header")
	}
	if m.header, err = b.deref(hp); err != nil {
		return ipcMessage{}, err
	}
	return m, nil
}

// parseBatchMessage parses the metadata of one record batch message: the
// optional continuation marker, the int32 length, the Message flatbuffer.
func parseBatchMessage(meta []byte) (*ipcBatch, error) {
	bad := func(err error) (*ipcBatch, error) {
		return nil, fmt.Errorf("%w: IPC record batch message: %v", ErrBadChunk, err)
	}
	if len(meta) >= 4 && binary.LittleEndian.Uint32(meta) == 0xFFFFFFFF {
		meta = meta[4:]
	}
	if len(meta) < 4 {
		return bad(errFlatbuffer)
	}
	n := int64(int32(binary.LittleEndian.Uint32(meta)))
	if n <= 0 || n > int64(len(meta)-4) {
		return bad(fmt.Errorf("metadata length %d of %d bytes", n, len(meta)-4))
	}
	b := fb(meta[4 : 4+n])
	m, err := parseMessage(b)
	if err != nil {
		return bad(err)
	}
	if m.kind != headerRecordBatch {
		return bad(fmt.Errorf("message is not a record batch (header type %d)", m.kind))
	}
	rb, err := parseRecordBatch(b, m.header)
	if err != nil {
		return bad(err)
	}
	return rb, nil
}

// parseRecordBatch reads the RecordBatch table at rb: its row count,
// field nodes, buffers (offsets relative to the body), compression codec
// and the view arrays' variadic buffer counts, each checked for sense.
func parseRecordBatch(b fb, rb int64) (*ipcBatch, error) {
	out := &ipcBatch{Codec: -1}
	if lp, err := b.field(rb, slotBatchLength); err != nil {
		return nil, err
	} else if lp >= 0 {
		if out.Length, err = b.i64(lp); err != nil || out.Length < 0 {
			return nil, fmt.Errorf("length %d: %v", out.Length, err)
		}
	}
	start, cnt, err := b.vector(rb, slotBatchNodes, fieldNodeSize)
	if err != nil {
		return nil, err
	}
	out.Nodes = make([]fieldNode, 0, cnt)
	for i := int64(0); i < cnt; i++ {
		l, _ := b.i64(start + fieldNodeSize*i)
		nulls, _ := b.i64(start + fieldNodeSize*i + 8)
		if l < 0 || nulls < 0 || nulls > l {
			return nil, fmt.Errorf("field node %d: length %d nulls %d", i, l, nulls)
		}
		out.Nodes = append(out.Nodes, fieldNode{l, nulls})
	}
	start, cnt, err = b.vector(rb, slotBatchBuffers, bufferSize)
	if err != nil {
		return nil, err
	}
	out.Buffers = make([]ipcRange, 0, cnt)
	for i := int64(0); i < cnt; i++ {
		off, _ := b.i64(start + bufferSize*i)
		l, _ := b.i64(start + bufferSize*i + 8)
		if off < 0 || l < 0 || off > math.MaxInt64-l {
			return nil, fmt.Errorf("buffer %d: offset %d length %d", i, off, l)
		}
		out.Buffers = append(out.Buffers, ipcRange{off, l})
	}
	if cp, err := b.field(rb, slotBatchCompression); err != nil {
		return nil, err
	} else if cp >= 0 {
		ct, err := b.deref(cp)
		if err != nil {
			return nil, err
		}
		out.Codec = 0 // LZ4_FRAME is the default value of the codec field
		if codec, err := b.field(ct, slotCompressionCodec); err != nil {
			return nil, err
		} else if codec >= 0 {
			c, err := b.u8(codec)
			if err != nil || c > 1 {
				return nil, fmt.Errorf("unknown compression codec %d", c)
			}
			out.Codec = int(c)
		}
	}
	start, cnt, err = b.vector(rb, slotBatchVariadic, 8)
	if err != nil {
		return nil, err
	}
	for i := int64(0); i < cnt; i++ {
		v, _ := b.i64(start + 8*i)
		if v < 0 || v > int64(len(out.Buffers)) {
			return nil, fmt.Errorf("variadic buffer count %d", v)
		}
		out.Variadic = append(out.Variadic, v)
	}
	return out, nil
}

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
	c := &ipcCursor{rb: rb}
	var walk func(dt arrow.DataType) error
	walk = func(dt arrow.DataType) error {
		_, children, err := c.arrayShape(dt)
		for _, ch := range children {
			if err == nil {
				err = walk(ch)
			}
		}
		return err
	}
	out := make([]columnLayout, len(schema.Fields()))
	for i, f := range schema.Fields() {
		l := columnLayout{node0: c.node, buf0: c.buf, variadic0: c.vari}
		if err := walk(f.Type); err != nil {
			return nil, fmt.Errorf("%w: column %q: %v", ErrBadChunk, f.Name, err)
		}
		l.nodes, l.bufs, l.variadics = c.node-l.node0, c.buf-l.buf0, c.vari-l.variadic0
		out[i] = l
	}
	if c.node != len(rb.Nodes) || c.buf > len(rb.Buffers) {
		return nil, fmt.Errorf("%w: IPC batch has %d field nodes and %d buffers, the schema needs %d and %d",
			ErrBadChunk, len(rb.Nodes), len(rb.Buffers), c.node, c.buf)
	}
	return out, nil
}

// columnRange is the span of the body holding all of one column's buffers.
func columnRange(rb *ipcBatch, c columnLayout) ipcRange {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, b := range rb.Buffers[c.buf0 : c.buf0+c.bufs] {
		if b.Length == 0 {
			continue
		}
		lo, hi = min(lo, b.Offset), max(hi, b.Offset+b.Length)
	}
	if hi == 0 {
		return ipcRange{}
	}
	return ipcRange{lo, hi - lo}
}

// assembleColumn builds the array of one top-level field from its bytes:
// data holds body bytes [at, at+len(data)) covering the field's buffers.
// It walks the field with the same cursor as layoutColumns.
func assembleColumn(f arrow.Field, rb *ipcBatch, l columnLayout, data []byte, at int64, mem memory.Allocator) (arr arrow.Array, err error) {
	defer func() {
		if r := recover(); r != nil {
			arr, err = nil, fmt.Errorf("%w: column %q: %v", ErrBadChunk, f.Name, r)
		}
	}()
	c := &ipcCursor{rb: rb, node: l.node0, buf: l.buf0, vari: l.variadic0}
	var bufs []*memory.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	take := func(i int) (*memory.Buffer, error) {
		r := rb.Buffers[i]
		if r.Length == 0 {
			return nil, nil
		}
		lo := r.Offset - at
		if lo < 0 || lo+r.Length > int64(len(data)) {
			return nil, fmt.Errorf("buffer %d (%d+%d) outside the fetched range", i, r.Offset, r.Length)
		}
		b, err := decompress(data[lo:lo+r.Length], rb.Codec, mem)
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	var build func(dt arrow.DataType) (arrow.ArrayData, error)
	build = func(dt arrow.DataType) (arrow.ArrayData, error) {
		n := rb.Nodes[c.node]
		first := c.buf
		nbufs, childTypes, err := c.arrayShape(dt)
		if err != nil {
			return nil, err
		}
		bs := make([]*memory.Buffer, nbufs)
		for i := range bs {
			if bs[i], err = take(first + i); err != nil {
				return nil, err
			}
		}
		var children []arrow.ArrayData
		release := func() {
			for _, ch := range children {
				ch.Release()
			}
		}
		for _, ct := range childTypes {
			ch, err := build(ct)
			if err != nil {
				release()
				return nil, err
			}
			children = append(children, ch)
		}
		d := array.NewData(dt, int(n.Length), bs, children, int(n.Nulls), 0)
		release() // d holds its own references
		return d, nil
	}
	d, err := build(f.Type)
	if err != nil {
		return nil, fmt.Errorf("%w: column %q: %v", ErrBadChunk, f.Name, err)
	}
	defer d.Release()
	// Check the buffers before arrow-go wraps them: MakeFromData slices them
	// by the claimed length and would panic half-way through.
	if err := validateData(d); err != nil {
		return nil, fmt.Errorf("%w: column %q: %v", ErrBadChunk, f.Name, err)
	}
	return array.MakeFromData(d), nil
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

// fetchFunc reads byte ranges of one object, all at once.
type fetchFunc func(ranges []ipcRange) ([][]byte, error)

// fetchFrom serves ranges of data held in memory, counting the bytes handed out.
func fetchFrom(data []byte, served *int64) fetchFunc {
	return func(rs []ipcRange) ([][]byte, error) {
		out := make([][]byte, len(rs))
		for i, r := range rs {
			if r.Offset < 0 || r.Length < 0 || r.Offset > int64(len(data)) || r.Length > int64(len(data))-r.Offset {
				return nil, fmt.Errorf("%w: range %d+%d outside %d bytes", ErrBadChunk, r.Offset, r.Length, len(data))
			}
			out[i] = data[r.Offset : r.Offset+r.Length]
			*served += r.Length
		}
		return out, nil
	}
}

// tailGuess is how much of a file's end the first request reads: the footer
// of a file with a few hundred batches fits, so one request usually does.
const tailGuess = 64 << 10

// ipcFileLayout is an IPC file's footer and the parsed metadata of every
// record batch, with each batch's column layouts.
type ipcFileLayout struct {
	footerLen int64 // bytes of the footer flatbuffer
	footer    *ipcFooter
	batches   []*ipcBatch
	layouts   [][]columnLayout
}

// readIPCLayout reads the footer and the metadata of every batch of the IPC
// file of size bytes through fetch (two rounds), and returns the layout and
// the bytes fetched. errDictionaries means the file needs the whole-chunk
// path.
func readIPCLayout(size int64, fetch fetchFunc) (*ipcFileLayout, int64, error) {
	var wire int64
	get := countingFetch(fetch, &wire)
	footer, footerLen, err := readIPCFooter(size, tailGuess, get)
	if err != nil {
		return nil, wire, err
	}
	metas, err := get(metaRanges(footer))
	if err != nil {
		return nil, wire, err
	}
	l, err := parseLayout(footer, footerLen, metas)
	return l, wire, err
}

// countingFetch is fetch adding the bytes it returns to *wire.
func countingFetch(fetch fetchFunc, wire *int64) fetchFunc {
	return func(rs []ipcRange) ([][]byte, error) {
		out, err := fetch(rs)
		for _, b := range out {
			*wire += int64(len(b))
		}
		return out, err
	}
}

// readIPCFooter reads the footer of the IPC file of size bytes: its last
// tail bytes first, and the rest of a longer footer after. It checks that
// every batch lies in the file and returns the footer's length too.
func readIPCFooter(size, tail int64, get fetchFunc) (*ipcFooter, int64, error) {
	if size < ipcTrailerLen+8 {
		return nil, 0, fmt.Errorf("%w: %d bytes is too small for an Arrow IPC file", ErrBadChunk, size)
	}
	tailLen := min(size, max(tail, ipcTrailerLen+8))
	got, err := get([]ipcRange{{size - tailLen, tailLen}})
	if err != nil {
		return nil, 0, err
	}
	footerLen, err := parseTrailer(got[0][len(got[0])-ipcTrailerLen:], size)
	if err != nil {
		return nil, 0, err
	}
	var footerBytes []byte
	if footerLen+ipcTrailerLen <= tailLen {
		end := int64(len(got[0])) - ipcTrailerLen
		footerBytes = got[0][end-footerLen : end]
	} else {
		more, err := get([]ipcRange{{size - ipcTrailerLen - footerLen, footerLen}})
		if err != nil {
			return nil, 0, err
		}
		footerBytes = more[0]
	}
	footer, err := parseFooter(footerBytes)
	if err != nil {
		return nil, 0, err
	}
	for i, b := range footer.Batches {
		if b.Offset > size || b.MetaLen > size-b.Offset || b.BodyLen > size-b.Offset-b.MetaLen {
			return nil, 0, fmt.Errorf("%w: record batch %d at %d+%d+%d is beyond the file's %d bytes", ErrBadChunk, i, b.Offset, b.MetaLen, b.BodyLen, size)
		}
	}
	return footer, footerLen, nil
}

// metaRanges are the metadata ranges of the footer's batches.
func metaRanges(footer *ipcFooter) []ipcRange {
	out := make([]ipcRange, len(footer.Batches))
	for i, b := range footer.Batches {
		out[i] = ipcRange{b.Offset, b.MetaLen}
	}
	return out
}

// parseLayout parses the batches' metadata and lays out their columns.
func parseLayout(footer *ipcFooter, footerLen int64, metas [][]byte) (*ipcFileLayout, error) {
	l := &ipcFileLayout{footerLen: footerLen, footer: footer, batches: make([]*ipcBatch, len(metas)), layouts: make([][]columnLayout, len(metas))}
	for i, m := range metas {
		var err error
		if l.batches[i], err = parseBatchMessage(m); err != nil {
			return nil, fmt.Errorf("record batch %d: %w", i, err)
		}
		if l.layouts[i], err = layoutColumns(footer.Schema, l.batches[i]); err != nil {
			return nil, fmt.Errorf("record batch %d: %w", i, err)
		}
	}
	return l, nil
}

// colSpan is where one column's buffers sit in a record batch's body, as
// shares of the body's length: [lo, hi).
type colSpan struct{ lo, hi float64 }

// ipcReadPlan is what a projected read knows before it starts, learned
// from a chunk read earlier (the first one): how much of the file's end to
// read first, and where each column (by schema field) sits in a body.
// A zero plan knows nothing: the tail is tailGuess, and the columns'
// ranges wait for the batches' metadata.
type ipcReadPlan struct {
	tail  int64
	spans []colSpan
}

// learnReadPlan measures the IPC file in data; a zero plan for anything
// that is not an IPC file without dictionaries.
func learnReadPlan(data []byte) ipcReadPlan {
	if int64(len(data)) < ipcTrailerLen+8 || !bytes.HasPrefix(data, ipcFileMagic) {
		return ipcReadPlan{}
	}
	var served int64
	l, _, err := readIPCLayout(int64(len(data)), fetchFrom(data, &served))
	if err != nil {
		return ipcReadPlan{}
	}
	spans := make([]colSpan, len(l.footer.Schema.Fields()))
	for c := range spans {
		spans[c] = colSpan{lo: 1, hi: 0}
	}
	for i, rb := range l.batches {
		body := float64(l.footer.Batches[i].BodyLen)
		if body <= 0 {
			continue
		}
		for c, cl := range l.layouts[i] {
			r := columnRange(rb, cl)
			if r.Length == 0 {
				continue
			}
			spans[c].lo = min(spans[c].lo, float64(r.Offset)/body)
			spans[c].hi = max(spans[c].hi, float64(r.Offset+r.Length)/body)
		}
	}
	return ipcReadPlan{tail: l.footerLen + l.footerLen/4 + 1<<10 + ipcTrailerLen, spans: spans}
}

// predict returns the byte range (in the file) a batch whose body starts
// at body and is bodyLen long probably holds column c's buffers in, with a
// margin; false when the plan does not know.
func (p ipcReadPlan) predict(c int, body, bodyLen int64) (ipcRange, bool) {
	if c >= len(p.spans) || p.spans[c].hi <= p.spans[c].lo {
		return ipcRange{}, false
	}
	margin := bodyLen/64 + 512
	lo := max(0, int64(p.spans[c].lo*float64(bodyLen))-margin)
	hi := min(bodyLen, int64(p.spans[c].hi*float64(bodyLen))+margin)
	if hi <= lo {
		return ipcRange{}, false
	}
	return ipcRange{body + lo, hi - lo}, true
}

// readIPCColumns reads columns cols (schema field indexes, in output order)
// of the IPC file of size bytes through fetch, in three rounds: the footer,
// the metadata of every batch, then only those columns' buffers. It returns
// the file's full schema, batches holding just cols, and the bytes fetched.
// errDictionaries means the file needs the whole-chunk path.
func readIPCColumns(size int64, cols []int, fetch fetchFunc, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch, int64, error) {
	schema, batches, wire, _, err := readIPCColumnsPlan(size, ipcReadPlan{}, cols, fetch, mem)
	return schema, batches, wire, err
}

// readIPCColumnsPlan is readIPCColumns with what plan knows: its tail read
// fetches the footer at once, and the batches' metadata go out in one round
// with the byte ranges plan predicts for the columns (the scheduler merges
// neighbours into one GET). When the metadata show a column's buffers
// inside its predicted range, the file took two rounds; what a prediction
// missed is fetched in a third. It also returns the footer's length (0 on
// failure).
func readIPCColumnsPlan(size int64, plan ipcReadPlan, cols []int, fetch fetchFunc, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch, int64, int64, error) {
	var wire int64
	get := countingFetch(fetch, &wire)
	tail := plan.tail
	if tail <= 0 {
		tail = tailGuess
	}
	footer, footerLen, err := readIPCFooter(size, tail, get)
	if err != nil {
		return nil, nil, wire, 0, err
	}
	for _, c := range cols {
		if c < 0 || c >= len(footer.Schema.Fields()) {
			return nil, nil, wire, 0, fmt.Errorf("%w: the file has %d columns, not column %d: schema %s", ErrBadChunk, len(footer.Schema.Fields()), c, footer.Schema)
		}
	}
	// One round: every batch's metadata and the predicted column ranges.
	nb := len(footer.Batches)
	round := metaRanges(footer)
	guess := make([]int, nb*len(cols)) // index in round of batch i's column j, -1: none
	for i, b := range footer.Batches {
		for j, c := range cols {
			guess[i*len(cols)+j] = -1
			if r, ok := plan.predict(c, b.Offset+b.MetaLen, b.BodyLen); ok {
				guess[i*len(cols)+j] = len(round)
				round = append(round, r)
			}
		}
	}
	got, err := get(round)
	if err != nil {
		return nil, nil, wire, 0, err
	}
	l, err := parseLayout(footer, footerLen, got[:nb])
	if err != nil {
		return nil, nil, wire, 0, err
	}
	// Each column's exact range, sliced from its prediction or fetched now.
	exact := make([]ipcRange, nb*len(cols)) // body-relative
	data := make([][]byte, nb*len(cols))
	var missing []ipcRange
	var missingAt []int
	for i := range l.batches {
		body := footer.Batches[i].Offset + footer.Batches[i].MetaLen
		for j, c := range cols {
			k := i*len(cols) + j
			r := columnRange(l.batches[i], l.layouts[i][c])
			if r.Offset+r.Length > footer.Batches[i].BodyLen {
				return nil, nil, wire, 0, fmt.Errorf("%w: record batch %d: column %d's buffers end past the body", ErrBadChunk, i, c)
			}
			exact[k] = r
			if r.Length == 0 {
				continue // no bytes: nothing to fetch
			}
			abs := ipcRange{body + r.Offset, r.Length}
			if g := guess[k]; g >= 0 && abs.Offset >= round[g].Offset && abs.Offset+abs.Length <= round[g].Offset+round[g].Length {
				at := abs.Offset - round[g].Offset
				data[k] = got[g][at : at+abs.Length]
				continue
			}
			missing = append(missing, abs)
			missingAt = append(missingAt, k)
		}
	}
	if len(missing) > 0 {
		more, err := get(missing)
		if err != nil {
			return nil, nil, wire, 0, err
		}
		for n, k := range missingAt {
			data[k] = more[n]
		}
	}
	fields := make([]arrow.Field, len(cols))
	for j, c := range cols {
		fields[j] = footer.Schema.Field(c)
	}
	projected := arrow.NewSchema(fields, nil)
	var out []arrow.RecordBatch
	release := func() {
		for _, r := range out {
			r.Release()
		}
	}
	for i, rb := range l.batches {
		arrs := make([]arrow.Array, len(cols))
		for j, c := range cols {
			k := i*len(cols) + j
			arr, err := assembleColumn(footer.Schema.Field(c), rb, l.layouts[i][c], data[k], exact[k].Offset, mem)
			if err != nil {
				for _, a := range arrs[:j] {
					a.Release()
				}
				release()
				return nil, nil, wire, 0, fmt.Errorf("record batch %d: %w", i, err)
			}
			arrs[j] = arr
			if n := int64(arr.Len()); n != rb.Length {
				for _, a := range arrs[:j+1] {
					a.Release()
				}
				release()
				return nil, nil, wire, 0, fmt.Errorf("%w: record batch %d has %d rows, its column %q %d", ErrBadChunk, i, rb.Length, fields[j].Name, n)
			}
		}
		out = append(out, array.NewRecordBatch(projected, arrs, rb.Length))
		for _, a := range arrs {
			a.Release()
		}
	}
	return footer.Schema, out, wire, footerLen, nil // every column passed validateData in assembleColumn
}
