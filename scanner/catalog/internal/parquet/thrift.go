package parquet

import (
	"encoding/binary"
	"fmt"
)

// The Thrift compact protocol, as Parquet uses it for its footer and page
// headers: just enough to read the structures metadata.go needs and to skip
// every other field. Every length is checked against the bytes left, so a
// malformed input is an error, never a large allocation.

// Compact protocol type ids.
const (
	tStop    = 0
	tTrue    = 1
	tFalse   = 2
	tByte    = 3
	tI16     = 4
	tI32     = 5
	tI64     = 6
	tDouble  = 7
	tBinary  = 8
	tList    = 9
	tSet     = 10
	tMap     = 11
	tStruct  = 12
	tUUID    = 13
	maxDepth = 32 // nesting of structs and containers, against stack exhaustion
)

// thrift reads compact-protocol values from b. The first error sticks: after
// it every read returns zero values, and err says what went wrong.
type thrift struct {
	b     []byte
	pos   int
	depth int
	err   error
}

func (t *thrift) fail(format string, args ...any) {
	if t.err == nil {
		t.err = fmt.Errorf("thrift at byte %d: "+format, append([]any{t.pos}, args...)...)
	}
}

func (t *thrift) byte1() byte {
	if t.err != nil {
		return 0
	}
	if t.pos >= len(t.b) {
		t.fail("unexpected end")
		return 0
	}
	c := t.b[t.pos]
	t.pos++
	return c
}

func (t *thrift) uvarint() uint64 {
	if t.err != nil {
		return 0
	}
	v, n := binary.Uvarint(t.b[t.pos:])
	if n <= 0 {
		t.fail("bad varint")
		return 0
	}
	t.pos += n
	return v
}

func (t *thrift) varint() int64 {
	u := t.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// i32 reads a zigzag varint that must fit 32 bits.
func (t *thrift) i32() int32 {
	v := t.varint()
	if v != int64(int32(v)) {
		t.fail("i32 %d out of range", v)
		return 0
	}
	return int32(v)
}

// binary reads a length-prefixed byte string (a slice of the input).
func (t *thrift) binary() []byte {
	n := t.uvarint()
	if t.err != nil {
		return nil
	}
	if n > uint64(len(t.b)-t.pos) {
		t.fail("binary of %d bytes, %d left", n, len(t.b)-t.pos)
		return nil
	}
	s := t.b[t.pos : t.pos+int(n)]
	t.pos += int(n)
	return s
}

// listHeader reads a list or set header: element type and count. The count
// is bounded by the bytes left (every element takes at least one byte).
func (t *thrift) listHeader() (elem byte, n int) {
	h := t.byte1()
	elem, size := h&0x0f, uint64(h>>4)
	if size == 15 {
		size = t.uvarint()
	}
	if t.err != nil {
		return 0, 0
	}
	if size > uint64(len(t.b)-t.pos) {
		t.fail("list of %d elements, %d bytes left", size, len(t.b)-t.pos)
		return 0, 0
	}
	return elem, int(size)
}

// fields calls f for each field of a struct until its stop byte; f reads or
// skips the field's value. A field id absent from f's switch must be skipped.
func (t *thrift) fields(f func(id int16, typ byte)) {
	if t.depth++; t.depth > maxDepth {
		t.fail("nested deeper than %d", maxDepth)
		return
	}
	defer func() { t.depth-- }()
	var last int16
	for t.err == nil {
		h := t.byte1()
		if t.err != nil || h == tStop {
			return
		}
		typ := h & 0x0f
		id := last + int16(h>>4)
		if h>>4 == 0 {
			id = int16(t.i32())
		}
		last = id
		f(id, typ)
	}
}

// skip skips a value of type typ.
func (t *thrift) skip(typ byte) {
	if t.err != nil {
		return
	}
	switch typ {
	case tTrue, tFalse:
		// the value is in the field header
	case tByte:
		t.byte1()
	case tI16, tI32, tI64:
		t.uvarint()
	case tDouble:
		t.bytes(8)
	case tUUID:
		t.bytes(16)
	case tBinary:
		t.binary()
	case tList, tSet:
		elem, n := t.listHeader()
		t.nested(func() {
			for i := 0; i < n && t.err == nil; i++ {
				t.skipElem(elem)
			}
		})
	case tMap:
		n := t.uvarint()
		if n == 0 || t.err != nil {
			return
		}
		if n > uint64(len(t.b)-t.pos) {
			t.fail("map of %d entries, %d bytes left", n, len(t.b)-t.pos)
			return
		}
		kv := t.byte1()
		t.nested(func() {
			for i := uint64(0); i < n && t.err == nil; i++ {
				t.skipElem(kv >> 4)
				t.skipElem(kv & 0x0f)
			}
		})
	case tStruct:
		t.fields(func(_ int16, typ byte) { t.skip(typ) })
	default:
		t.fail("unknown type %d", typ)
	}
}

// skipElem skips a container element: there booleans take a byte.
func (t *thrift) skipElem(typ byte) {
	if typ == tTrue || typ == tFalse {
		t.byte1()
		return
	}
	t.skip(typ)
}

func (t *thrift) nested(f func()) {
	if t.depth++; t.depth > maxDepth {
		t.fail("nested deeper than %d", maxDepth)
		return
	}
	f()
	t.depth--
}

func (t *thrift) bytes(n int) []byte {
	if t.err != nil {
		return nil
	}
	if n > len(t.b)-t.pos {
		t.fail("%d bytes wanted, %d left", n, len(t.b)-t.pos)
		return nil
	}
	s := t.b[t.pos : t.pos+n]
	t.pos += n
	return s
}

// Typed field readers: each checks the field's wire type.

func (t *thrift) fieldI32(typ byte, name string) int32 {
	if typ != tI32 && typ != tI16 && typ != tByte {
		t.fail("%s has type %d, want an integer", name, typ)
		return 0
	}
	if typ == tByte {
		return int32(int8(t.byte1()))
	}
	return t.i32()
}

func (t *thrift) fieldI64(typ byte, name string) int64 {
	if typ != tI64 && typ != tI32 && typ != tI16 {
		t.fail("%s has type %d, want an integer", name, typ)
		return 0
	}
	return t.varint()
}

func (t *thrift) fieldBool(typ byte, name string) bool {
	if typ != tTrue && typ != tFalse {
		t.fail("%s has type %d, want a bool", name, typ)
	}
	return typ == tTrue
}

func (t *thrift) fieldBinary(typ byte, name string) []byte {
	if typ != tBinary {
		t.fail("%s has type %d, want binary", name, typ)
		return nil
	}
	return t.binary()
}

// fieldStructs reads a list of structs, calling f for each element.
func (t *thrift) fieldStructs(typ byte, name string, f func(i int)) {
	if typ != tList && typ != tSet {
		t.fail("%s has type %d, want a list", name, typ)
		return
	}
	elem, n := t.listHeader()
	if t.err == nil && n > 0 && elem != tStruct {
		t.fail("%s is a list of type %d, want structs", name, elem)
		return
	}
	for i := 0; i < n && t.err == nil; i++ {
		f(i)
	}
}

// fieldStrings reads a list of binaries.
func (t *thrift) fieldStrings(typ byte, name string) []string {
	if typ != tList && typ != tSet {
		t.fail("%s has type %d, want a list", name, typ)
		return nil
	}
	elem, n := t.listHeader()
	if t.err == nil && n > 0 && elem != tBinary {
		t.fail("%s is a list of type %d, want strings", name, elem)
		return nil
	}
	var out []string
	for i := 0; i < n && t.err == nil; i++ {
		out = append(out, string(t.binary()))
	}
	return out
}
