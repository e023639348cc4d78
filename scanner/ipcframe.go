package scanner

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// checkIPCFraming walks the framing of a whole IPC file or stream — messages,
// footer, schema — before arrow-go decodes it, and refuses what would make
// arrow-go allocate from an untrusted count (a vector longer than its
// buffer, a body longer than the data, an implausible uncompressed length)
// or read outside the data. arrow-go trusts those numbers; a corrupt chunk
// must be an error, not an out-of-memory crash of the host.
func checkIPCFraming(data []byte) error {
	var err error
	if bytes.HasPrefix(data, ipcFileMagic) {
		err = checkIPCFile(data)
	} else {
		_, err = checkIPCStream(data)
	}
	if err != nil {
		return fmt.Errorf("%w: Arrow IPC framing: %v", ErrBadChunk, err)
	}
	return nil
}

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

// checkIPCStream walks the messages of a stream and returns where it ended.
func checkIPCStream(data []byte) (int64, error) {
	pos := int64(0)
	sawSchema := false
	for {
		if int64(len(data))-pos < 4 {
			if !sawSchema {
				return pos, fmt.Errorf("no schema message")
			}
			return pos, nil // end without an end-of-stream marker: arrow-go accepts it
		}
		metaLen := int64(int32(binary.LittleEndian.Uint32(data[pos:])))
		pos += 4
		if uint32(metaLen) == 0xFFFFFFFF {
			if int64(len(data))-pos < 4 {
				return pos, fmt.Errorf("truncated message length at %d", pos)
			}
			metaLen = int64(int32(binary.LittleEndian.Uint32(data[pos:])))
			pos += 4
		}
		if metaLen == 0 {
			if !sawSchema {
				return pos, fmt.Errorf("no schema message")
			}
			return pos, nil
		}
		if metaLen < 0 || metaLen > int64(len(data))-pos {
			return pos, fmt.Errorf("message at %d: metadata length %d beyond the data", pos, metaLen)
		}
		meta := fb(data[pos : pos+metaLen])
		pos += metaLen
		kind, body, err := checkMessage(meta, int64(len(data))-pos, data[pos:])
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
// body length.
func checkMessage(b fb, bodyRoom int64, body []byte) (int, int64, error) {
	msg, err := b.root()
	if err != nil {
		return 0, 0, err
	}
	var bodyLen int64
	if p, err := b.field(msg, 3); err != nil {
		return 0, 0, err
	} else if p >= 0 {
		if bodyLen, err = b.i64(p); err != nil {
			return 0, 0, err
		}
	}
	if bodyLen < 0 || bodyLen > bodyRoom {
		return 0, 0, fmt.Errorf("body length %d beyond the %d bytes left", bodyLen, bodyRoom)
	}
	tp, err := b.field(msg, 1)
	if err != nil || tp < 0 {
		return 0, 0, fmt.Errorf("no header type")
	}
	kind, err := b.u8(tp)
	if err != nil {
		return 0, 0, err
	}
	hp, err := b.field(msg, 2)
	if err != nil || hp < 0 {
		return 0, 0, fmt.Errorf("no header")
	}
	h, err := b.deref(hp)
	if err != nil {
		return 0, 0, err
	}
	switch kind {
	case headerSchema:
		err = checkSchema(b, h)
	case headerRecordBatch:
		err = checkRecordBatch(b, h, body[:bodyLen])
	case headerDictionaryBatch:
		p, ferr := b.field(h, 1)
		if ferr != nil || p < 0 {
			return 0, 0, fmt.Errorf("dictionary batch without data")
		}
		rb, derr := b.deref(p)
		if derr != nil {
			return 0, 0, derr
		}
		err = checkRecordBatch(b, rb, body[:bodyLen])
	default:
		err = fmt.Errorf("unsupported message type %d", kind)
	}
	return int(kind), bodyLen, err
}

// checkSchema checks the vectors arrow-go sizes allocations by.
func checkSchema(b fb, schema int64) error {
	if _, _, err := b.vector(schema, 2, 4); err != nil { // custom_metadata
		return err
	}
	if _, _, err := b.vector(schema, 3, 8); err != nil { // features
		return err
	}
	budget := maxFields
	return checkFields(b, schema, 1, 0, &budget)
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
		if _, _, err := b.vector(f, 0, 1); err != nil { // name
			return err
		}
		if _, _, err := b.vector(f, 6, 4); err != nil { // custom_metadata
			return err
		}
		const typeUnion = 14
		if tt, err := b.field(f, 2); err == nil && tt >= 0 {
			if k, _ := b.u8(tt); k == typeUnion {
				if tp, err := b.field(f, 3); err == nil && tp >= 0 {
					ut, err := b.deref(tp)
					if err != nil {
						return err
					}
					if _, _, err := b.vector(ut, 1, 4); err != nil { // typeIds
						return err
					}
				}
			}
		}
		if err := checkFields(b, f, 5, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}

// checkRecordBatch checks that a batch's buffers lie in its body and that
// compressed buffers claim plausible uncompressed lengths.
func checkRecordBatch(b fb, rb int64, body []byte) error {
	if _, _, err := b.vector(rb, 1, 16); err != nil {
		return err
	}
	start, n, err := b.vector(rb, 2, 16)
	if err != nil {
		return err
	}
	if _, _, err := b.vector(rb, 4, 8); err != nil {
		return err
	}
	cp, err := b.field(rb, 3)
	if err != nil {
		return err
	}
	compressed := cp >= 0
	var sum int64
	for i := int64(0); i < n; i++ {
		off, _ := b.i64(start + 16*i)
		l, _ := b.i64(start + 16*i + 8)
		if off < 0 || l < 0 || off > int64(len(body)) || l > int64(len(body))-off {
			return fmt.Errorf("buffer %d (%d+%d) outside the body of %d bytes", i, off, l, len(body))
		}
		if compressed && l >= 8 {
			u := int64(binary.LittleEndian.Uint64(body[off:]))
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
func checkIPCFile(data []byte) error {
	size := int64(len(data))
	if size < ipcTrailerLen+8 {
		return fmt.Errorf("%d bytes is too small for an IPC file", size)
	}
	footerLen, err := parseTrailer(data[size-ipcTrailerLen:], size)
	if err != nil {
		return err
	}
	b := fb(data[size-ipcTrailerLen-footerLen : size-ipcTrailerLen])
	root, err := b.root()
	if err != nil {
		return err
	}
	sp, err := b.field(root, 1)
	if err != nil || sp < 0 {
		return fmt.Errorf("footer without a schema")
	}
	schema, err := b.deref(sp)
	if err != nil {
		return err
	}
	if err := checkSchema(b, schema); err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	for _, slot := range []int{2, 3} { // dictionaries, record batches
		start, n, err := b.vector(root, slot, 24)
		if err != nil {
			return err
		}
		for i := int64(0); i < n; i++ {
			off, _ := b.i64(start + 24*i)
			ml, _ := b.u32(start + 24*i + 8)
			bl, _ := b.i64(start + 24*i + 16)
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
			if _, _, err := checkMessage(fb(m[4:4+l]), bl, data[off+meta:off+meta+bl]); err != nil {
				return fmt.Errorf("block %d: %v", i, err)
			}
		}
	}
	return nil
}
