package arrowipc

// The metadata reader: a bounds-checked flatbuffer view and the parsers of
// an IPC file's trailer, footer and record batch messages. Every later
// reader (framing checks, the projected reader) uses their results instead
// of parsing the bytes again.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// TrailerLen is the int32 footer length plus the 6-byte magic at the end
// of an IPC file.
const TrailerLen = 10

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
	Schema  *arrow.Schema // marked native: the readers swap (byteOrderSwap)
	Batches []ipcBlock
	// foreign: the file's buffers are in the other byte order.
	foreign bool
}

// parseTrailer returns the footer length from the last TrailerLen bytes
// of an IPC file of fileSize bytes.
func parseTrailer(trailer []byte, fileSize int64) (int64, error) {
	if len(trailer) != TrailerLen || !bytes.Equal(trailer[4:], fileMagic) {
		return 0, ErrNotFile
	}
	n := int64(int32(binary.LittleEndian.Uint32(trailer)))
	if n <= 0 || n+TrailerLen+8 > fileSize {
		return 0, fmt.Errorf("%w: IPC footer length %d does not fit a file of %d bytes", ErrMalformed, n, fileSize)
	}
	return n, nil
}

// parseFooter reads the footer flatbuffer. Dictionary-encoded files are
// refused (ErrDictionaries): their dictionaries live in other messages.
func parseFooter(footer []byte) (*ipcFooter, error) {
	b := fb(footer)
	bad := func(err error) (*ipcFooter, error) {
		return nil, fmt.Errorf("%w: IPC footer: %v", ErrMalformed, err)
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
		return nil, ErrDictionaries
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
	if err := checkSchema(b, schema, new(Framing)); err != nil {
		return bad(err)
	}
	if s, foreign, ok := footerSchemas.get(footer); ok {
		f.Schema, f.foreign = s, foreign
		return f, nil
	}
	f.Schema, err = footerSchema(footer)
	if err != nil {
		return bad(err)
	}
	if err := CheckSupported(f.Schema); err != nil {
		return nil, err
	}
	f.foreign = foreignOrder(f.Schema)
	f.Schema = f.Schema.WithEndianness(endian.NativeEndian)
	footerSchemas.put(footer, f.Schema, f.foreign)
	return f, nil
}

// footerSchemas holds the schemas decoded from the last few footers, by
// the footers' bytes: the chunks of a dataset, written alike, mostly have
// footers equal to the byte, and decoding the schema again (arrow-go
// builds it anew) is much of the work of a small chunk. Only a footer
// equal to the byte to one decoded gets its schema; any other difference,
// in the schema or the batches' blocks, decodes anew. The batches are
// still checked against their own bytes (the framing, validateRecord).
var footerSchemas schemaMemo

// schemaMemo remembers up to memoEntries schemas of footers of up to
// memoFooterMax bytes, replacing the oldest.
type schemaMemo struct {
	mu      sync.Mutex
	entries [memoEntries]memoEntry
	next    int
}

const (
	memoEntries   = 8
	memoFooterMax = 16 << 10
)

type memoEntry struct {
	footer  []byte // a copy: the caller's bytes may be a mapping or a pooled buffer
	schema  *arrow.Schema
	foreign bool
}

func (m *schemaMemo) get(footer []byte) (*arrow.Schema, bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if e.schema != nil && bytes.Equal(e.footer, footer) {
			return e.schema, e.foreign, true
		}
	}
	return nil, false, false
}

func (m *schemaMemo) put(footer []byte, schema *arrow.Schema, foreign bool) {
	if len(footer) > memoFooterMax {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[m.next] = memoEntry{footer: bytes.Clone(footer), schema: schema, foreign: foreign}
	m.next = (m.next + 1) % memoEntries
}

// Conditions that send a chunk to the whole-chunk path.
var (
	ErrDictionaries = errors.New("IPC file has dictionaries")
	ErrNotFile      = fmt.Errorf("%w: no Arrow IPC file magic at the end", ErrMalformed) // a stream, or garbage
)

// footerSchema lets arrow-go decode the schema from the footer alone: it
// reads an IPC file through tailReader, which holds only the footer and the
// trailer.
func footerSchema(footer []byte) (s *arrow.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			repanicFault(r)
			s, err = nil, errors.New("schema: arrow-go cannot read it") // not the runtime's words

		}
	}()
	tail := make([]byte, 0, len(footer)+TrailerLen)
	tail = append(tail, footer...)
	tail = binary.LittleEndian.AppendUint32(tail, uint32(len(footer)))
	tail = append(tail, fileMagic...)
	// Pretend the footer sits at the end of a file with room before it for
	// the leading magic, which arrow-go does not read.
	r := &tailReader{tail: tail, size: int64(len(tail)) + 8}
	fr, err := ipc.NewFileReader(r, ipc.WithEnsureNativeEndian(false)) // the byte order as the file has it
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

// Range is a byte range of an IPC file's body.
type Range struct{ Offset, Length int64 }

type fieldNode struct{ Length, Nulls int64 }

// ipcBatch is a parsed RecordBatch message.
type ipcBatch struct {
	Length   int64
	Nodes    []fieldNode
	Buffers  []Range // relative to the body
	Codec    int     // -1 none, 0 LZ4 frame, 1 ZSTD
	Variadic []int64 // buffer counts of the view arrays, in field order
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

	slotSchemaEndianness     = 0
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
		return nil, fmt.Errorf("%w: IPC record batch message: %v", ErrMalformed, err)
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
	out.Buffers = make([]Range, 0, cnt)
	for i := int64(0); i < cnt; i++ {
		off, _ := b.i64(start + bufferSize*i)
		l, _ := b.i64(start + bufferSize*i + 8)
		if off < 0 || l < 0 || off > math.MaxInt64-l {
			return nil, fmt.Errorf("buffer %d: offset %d length %d", i, off, l)
		}
		out.Buffers = append(out.Buffers, Range{off, l})
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
