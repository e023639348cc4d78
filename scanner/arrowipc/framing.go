package arrowipc

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/endian"
)

// checkIPCFraming walks the framing of a whole IPC file or stream — messages,
// footer, schema — before arrow-go decodes it, and refuses what would make
// arrow-go allocate from an untrusted count (a vector longer than its
// buffer, a body longer than the data, an implausible uncompressed length)
// or read outside the data. arrow-go trusts those numbers; a corrupt chunk
// must be an error, not an out-of-memory crash of the host.
func checkIPCFraming(data []byte) (Framing, error) {
	var fr Framing
	var err error
	if bytes.HasPrefix(data, fileMagic) {
		err = checkIPCFile(data, &fr)
	} else {
		_, err = checkIPCStream(data, &fr)
	}
	if err != nil {
		return Framing{}, fmt.Errorf("%w: Arrow IPC framing: %v", ErrMalformed, err)
	}
	return fr, nil
}

// Framing is what the framing of an IPC file or stream says about how its
// bytes will be read.
type Framing struct {
	// Compressed: some batch's buffers are LZ4 or ZSTD frames, which
	// arrow-go's decoders may read on goroutines of their own.
	Compressed bool
	// Foreign: the schema says the buffers are in the other byte order
	// (see byteOrderSwap).
	Foreign bool
	// rows of each record batch, in the file's (footer) or stream's order.
	rows []int64
}

// Inspect checks the framing of the IPC file or stream in data (as Decode
// does first) and says how its bytes will be read. A malformed input is an
// error wrapping ErrMalformed.
func Inspect(data []byte) (Framing, error) { return checkIPCFraming(data) }

// Limits on what one chunk may claim.
const (
	maxFieldDepth      = 64
	maxFields          = 100_000 // fields and nested fields of one schema
	maxUncompressedBuf = 1 << 31 // bytes one decompressed buffer may claim
	maxUncompressedSum = 1 << 32 // bytes one batch may decompress to
)

// Message header types (Message.fbs).
const (
	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3
)

// messageAt reads the framing of the stream message at pos: the optional
// continuation token, the metadata length and the metadata flatbuffer.
// next is where the metadata ends (where the walk stopped, when end or
// err); end reports the stream's end: fewer than 4 bytes left, or a zero
// length (the end-of-stream marker).
func messageAt(data []byte, pos int64) (meta fb, next int64, end bool, err error) {
	left := func() int64 { return int64(len(data)) - pos }
	if left() < 4 {
		return nil, pos, true, nil // end without an end-of-stream marker: arrow-go accepts it
	}
	metaLen := int64(int32(binary.LittleEndian.Uint32(data[pos:])))
	pos += 4
	if uint32(metaLen) == 0xFFFFFFFF {
		if left() < 4 {
			return nil, pos, false, fmt.Errorf("truncated message length at %d", pos)
		}
		metaLen = int64(int32(binary.LittleEndian.Uint32(data[pos:])))
		pos += 4
	}
	if metaLen == 0 {
		return nil, pos, true, nil
	}
	if metaLen < 0 || metaLen > left() {
		return nil, pos, false, fmt.Errorf("message at %d: metadata length %d beyond the data", pos, metaLen)
	}
	return fb(data[pos : pos+metaLen]), pos + metaLen, false, nil
}

// checkIPCStream walks the messages of a stream and returns where it ended.
func checkIPCStream(data []byte, fr *Framing) (int64, error) {
	pos := int64(0)
	sawSchema := false
	for {
		meta, next, end, err := messageAt(data, pos)
		if err != nil {
			return next, err
		}
		if end {
			if !sawSchema {
				return next, fmt.Errorf("no schema message")
			}
			return next, nil
		}
		pos = next
		metaLen := int64(len(meta))
		kind, body, err := checkMessage(meta, int64(len(data))-pos, data[pos:], fr)
		if err != nil {
			return pos, fmt.Errorf("message at %d: %v", pos-metaLen, err)
		}
		if kind == headerSchema {
			sawSchema = true
		} else if !sawSchema {
			return pos, fmt.Errorf("message at %d comes before the schema", pos-metaLen)
		}
		pos += body
	}
}

// checkMessage checks one Message flatbuffer whose body (bodyRoom bytes are
// available, body holds them) follows it, and returns its header type and
// body length. Record batches (of dictionaries too) are read by the same
// parser as the projected reader's (parseRecordBatch).
func checkMessage(b fb, bodyRoom int64, body []byte, fr *Framing) (int, int64, error) {
	m, err := parseMessage(b)
	if err != nil {
		return 0, 0, err
	}
	if m.bodyLen > bodyRoom {
		return 0, 0, fmt.Errorf("body length %d beyond the %d bytes left", m.bodyLen, bodyRoom)
	}
	rb := m.header
	switch m.kind {
	case headerSchema:
		return m.kind, m.bodyLen, checkSchema(b, m.header, fr)
	case headerDictionaryBatch:
		p, ferr := b.field(m.header, slotDictionaryData)
		if ferr != nil || p < 0 {
			return 0, 0, fmt.Errorf("dictionary batch without data")
		}
		if rb, err = b.deref(p); err != nil {
			return 0, 0, err
		}
	case headerRecordBatch:
	default:
		return 0, 0, fmt.Errorf("unsupported message type %d", m.kind)
	}
	batch, err := parseRecordBatch(b, rb)
	if err != nil {
		return 0, 0, err
	}
	if batch.Codec >= 0 {
		fr.Compressed = true
	}
	if m.kind == headerRecordBatch {
		fr.rows = append(fr.rows, batch.Length)
	}
	return m.kind, m.bodyLen, checkBatchBody(batch, body[:m.bodyLen])
}

// checkSchema checks the vectors arrow-go sizes allocations by.
// It records the schema's byte order in fr.
func checkSchema(b fb, schema int64, fr *Framing) error {
	if p, err := b.field(schema, slotSchemaEndianness); err != nil {
		return err
	} else if p >= 0 {
		e, err := b.u8(p) // a short; 0 little, 1 big
		if err != nil {
			return err
		}
		fr.Foreign = (e != 0) != endian.IsBigEndian
	}
	if _, _, err := b.vector(schema, slotSchemaCustomMetadata, 4); err != nil {
		return err
	}
	if _, _, err := b.vector(schema, slotSchemaFeatures, 8); err != nil {
		return err
	}
	budget := maxFields
	return checkFields(b, schema, slotSchemaFields, 0, &budget)
}

// checkFields checks the fields vector at slot of table tab and, depth first,
// their children. A flatbuffer may point many children at one table, so a
// small buffer can describe an exponential tree: count every visit.
func checkFields(b fb, tab int64, slot, depth int, budget *int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("fields nested deeper than %d", maxFieldDepth)
	}
	start, n, err := b.vector(tab, slot, 4)
	if err != nil {
		return err
	}
	if *budget -= int(n); *budget < 0 {
		return fmt.Errorf("more than %d fields", maxFields)
	}
	for i := int64(0); i < n; i++ {
		f, err := b.deref(start + 4*i)
		if err != nil {
			return err
		}
		if _, _, err := b.vector(f, slotFieldName, 1); err != nil {
			return err
		}
		if _, _, err := b.vector(f, slotFieldCustomMetadata, 4); err != nil {
			return err
		}
		// The type's tag byte and the type table: arrow-go reads both
		// without a bounds check (found by FuzzIPCFraming).
		const typeUnion = 14
		tt, err := b.field(f, slotFieldTypeType)
		if err != nil {
			return err
		}
		if tt >= 0 {
			k, err := b.u8(tt)
			if err != nil {
				return err
			}
			tp, err := b.field(f, slotFieldType)
			if err != nil {
				return err
			}
			if tp >= 0 {
				ut, err := b.deref(tp)
				if err != nil {
					return err
				}
				if _, err := b.field(ut, 0); err != nil {
					return err
				}
				if k == typeUnion {
					if _, _, err := b.vector(ut, slotUnionTypeIDs, 4); err != nil {
						return err
					}
				}
			}
		}
		if err := checkFields(b, f, slotFieldChildren, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}

// checkBatchBody checks that a batch's buffers lie in its body and that
// compressed buffers claim plausible uncompressed lengths.
func checkBatchBody(rb *ipcBatch, body []byte) error {
	var sum int64
	for i, r := range rb.Buffers {
		if r.Offset > int64(len(body)) || r.Length > int64(len(body))-r.Offset {
			return fmt.Errorf("buffer %d (%d+%d) outside the body of %d bytes", i, r.Offset, r.Length, len(body))
		}
		if rb.Codec >= 0 && r.Length >= 8 {
			u := int64(binary.LittleEndian.Uint64(body[r.Offset:]))
			if u > maxUncompressedBuf || u < -1 {
				return fmt.Errorf("buffer %d claims %d uncompressed bytes", i, u)
			}
			sum += max(u, 0)
		}
	}
	if sum > maxUncompressedSum {
		return fmt.Errorf("batch claims %d uncompressed bytes", sum)
	}
	return nil
}

// checkIPCFile checks the footer, the schema and every block of a file.
func checkIPCFile(data []byte, fr *Framing) error {
	size := int64(len(data))
	if size < TrailerLen+8 {
		return fmt.Errorf("%d bytes is too small for an IPC file", size)
	}
	footerLen, err := parseTrailer(data[size-TrailerLen:], size)
	if err != nil {
		return err
	}
	b := fb(data[size-TrailerLen-footerLen : size-TrailerLen])
	root, err := b.root()
	if err != nil {
		return err
	}
	sp, err := b.field(root, slotFooterSchema)
	if err != nil || sp < 0 {
		return fmt.Errorf("footer without a schema")
	}
	schema, err := b.deref(sp)
	if err != nil {
		return err
	}
	if err := checkSchema(b, schema, fr); err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	for _, slot := range []int{slotFooterDictionaries, slotFooterRecordBatches} {
		start, n, err := b.vector(root, slot, blockSize)
		if err != nil {
			return err
		}
		for i := int64(0); i < n; i++ {
			off, _ := b.i64(start + blockSize*i)
			ml, _ := b.u32(start + blockSize*i + 8)
			bl, _ := b.i64(start + blockSize*i + 16)
			meta := int64(int32(ml))
			if off < 0 || meta <= 0 || bl < 0 || off > size || meta > size-off || bl > size-off-meta {
				return fmt.Errorf("block %d (%d+%d+%d) outside the file", i, off, meta, bl)
			}
			m := data[off : off+meta]
			if len(m) >= 4 && binary.LittleEndian.Uint32(m) == 0xFFFFFFFF {
				m = m[4:]
			}
			if len(m) < 4 {
				return fmt.Errorf("block %d: metadata too short", i)
			}
			l := int64(int32(binary.LittleEndian.Uint32(m)))
			if l <= 0 || l > int64(len(m))-4 {
				return fmt.Errorf("block %d: metadata length %d", i, l)
			}
			if _, _, err := checkMessage(fb(m[4:4+l]), bl, data[off+meta:off+meta+bl], fr); err != nil {
				return fmt.Errorf("block %d: %v", i, err)
			}
		}
	}
	return nil
}
