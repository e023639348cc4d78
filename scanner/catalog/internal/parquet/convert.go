package parquet

import (
	"encoding/hex"
	"fmt"
	"unsafe"
)

// Type conversion: a leaf's physical and logical type to the catalog value
// its decoded values become.

// unsupported is the value of a column whose type a catalog does not use
// (BOOLEAN, dates, times, timestamps, decimals, ...): what type it is.
type unsupported string

func (u unsupported) String() string { return "unsupported Parquet type " + string(u) }

// Kind is what a Value holds.
type Kind uint8

const (
	KindNull        Kind = iota // NULL (the zero Value)
	KindInt                     // Int
	KindUint                    // uint64(Int): an unsigned 64-bit value
	KindFloat                   // Float
	KindString                  // Str
	KindUnsupported             // a type a catalog does not use; Str names it
)

// Value is one decoded value. It is a struct, not an interface, so that
// decoding a column allocates nothing per value: a string is a view of the
// file's bytes or of a decompressed page (never written once decoded),
// valid as long as the caller keeps it.
type Value struct {
	Kind  Kind
	Int   int64
	Float float64
	Str   string
}

// Any is v as string, int64, uint64, float64, nil, or an unsupported
// value whose String names its type.
func (v Value) Any() any {
	switch v.Kind {
	case KindInt:
		return v.Int
	case KindUint:
		return uint64(v.Int)
	case KindFloat:
		return v.Float
	case KindString:
		return v.Str
	case KindUnsupported:
		return unsupported(v.Str)
	}
	return nil
}

// A converter turns decoded physical values into catalog values: string,
// int64, uint64, float64, nil, or unsupported.
type converter struct {
	kind  int    // one of the kinds below
	width int    // integer bit width to truncate to (8, 16, 32, 64)
	what  string // for kindUnsupported
}

const (
	kindSigned = iota
	kindUnsigned
	kindFloat
	kindString
	kindUUID
	kindNull
	kindUnsupported
)

// Converted types (the legacy annotations).
const (
	ctUTF8   = 0
	ctEnum   = 4
	ctUint8  = 11
	ctUint64 = 14
	ctInt8   = 15
	ctInt64  = 18
	ctJSON   = 19
	ctBSON   = 20
)

// Logical type union ids.
const (
	ltString  = 1
	ltEnum    = 4
	ltInteger = 10
	ltUnknown = 11
	ltJSON    = 12
	ltBSON    = 13
	ltUUID    = 14
)

func logicalName(id int16) string {
	names := [...]string{1: "STRING", 2: "MAP", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE", 7: "TIME",
		8: "TIMESTAMP", 10: "INTEGER", 11: "UNKNOWN", 12: "JSON", 13: "BSON", 14: "UUID", 15: "FLOAT16", 16: "VARIANT",
		17: "GEOMETRY", 18: "GEOGRAPHY"}
	if id > 0 && int(id) < len(names) && names[id] != "" {
		return names[id]
	}
	return fmt.Sprintf("logical type %d", id)
}

func convertedName(c int32) string {
	names := [...]string{0: "UTF8", 1: "MAP", 2: "MAP_KEY_VALUE", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE",
		7: "TIME_MILLIS", 8: "TIME_MICROS", 9: "TIMESTAMP_MILLIS", 10: "TIMESTAMP_MICROS", 11: "UINT_8", 12: "UINT_16",
		13: "UINT_32", 14: "UINT_64", 15: "INT_8", 16: "INT_16", 17: "INT_32", 18: "INT_64", 19: "JSON", 20: "BSON", 21: "INTERVAL"}
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("converted type %d", c)
}

// converterOf maps a leaf's physical and logical type as pqarrow and the
// catalog's arrowValue did: strings, integers of every width (unsigned
// 64-bit stays uint64) and floats; FIXED_LEN_BYTE_ARRAY is a string, a UUID
// its text; everything else is unsupported.
func converterOf(e pqSchemaElem) converter {
	what := physicalName(e.typ)
	if e.logical != 0 {
		what = logicalName(e.logical) + " (" + what + ")"
		switch {
		case e.logical == ltUnknown:
			return converter{kind: kindNull}
		case e.logical == ltInteger && (e.typ == ptInt32 || e.typ == ptInt64):
			w := int(e.intWidth)
			if w != 8 && w != 16 && w != 32 && w != 64 {
				return converter{kind: kindUnsupported, what: fmt.Sprintf("INTEGER(%d) (%s)", w, physicalName(e.typ))}
			}
			if e.intSigned {
				return converter{kind: kindSigned, width: w}
			}
			return converter{kind: kindUnsigned, width: w}
		case (e.logical == ltString || e.logical == ltEnum || e.logical == ltJSON || e.logical == ltBSON) && e.typ == ptBytes:
			return converter{kind: kindString}
		case e.logical == ltUUID && e.typ == ptFixed && e.typeLength == 16:
			return converter{kind: kindUUID}
		}
		return converter{kind: kindUnsupported, what: what}
	}
	if e.converted != typeNone {
		switch c := e.converted; {
		case (c == ctUTF8 || c == ctEnum || c == ctJSON || c == ctBSON) && e.typ == ptBytes:
			return converter{kind: kindString}
		case c >= ctUint8 && c <= ctUint64 && (e.typ == ptInt32 || e.typ == ptInt64):
			return converter{kind: kindUnsigned, width: 8 << (c - ctUint8)}
		case c >= ctInt8 && c <= ctInt64 && (e.typ == ptInt32 || e.typ == ptInt64):
			return converter{kind: kindSigned, width: 8 << (c - ctInt8)}
		}
		return converter{kind: kindUnsupported, what: convertedName(e.converted) + " (" + what + ")"}
	}
	switch e.typ {
	case ptInt32:
		return converter{kind: kindSigned, width: 32}
	case ptInt64:
		return converter{kind: kindSigned, width: 64}
	case ptFloat, ptDouble:
		return converter{kind: kindFloat}
	case ptBytes, ptFixed:
		return converter{kind: kindString}
	}
	return converter{kind: kindUnsupported, what: what}
}

func (c converter) int(v int64) Value {
	switch c.kind {
	case kindSigned:
		switch c.width {
		case 8:
			v = int64(int8(v))
		case 16:
			v = int64(int16(v))
		case 32:
			v = int64(int32(v))
		}
		return Value{Kind: KindInt, Int: v}
	case kindUnsigned:
		switch c.width {
		case 8:
			return Value{Kind: KindInt, Int: int64(uint8(v))}
		case 16:
			return Value{Kind: KindInt, Int: int64(uint16(v))}
		case 32:
			return Value{Kind: KindInt, Int: int64(uint32(v))}
		}
		return Value{Kind: KindUint, Int: v}
	case kindNull:
		return Value{}
	}
	return Value{Kind: KindUnsupported, Str: c.what}
}

func (c converter) float(v float64) Value {
	if c.kind == kindFloat {
		return Value{Kind: KindFloat, Float: v}
	}
	return c.other()
}

func (c converter) bytes(b []byte) Value {
	switch c.kind {
	case kindString:
		if len(b) == 0 {
			return Value{Kind: KindString}
		}
		return Value{Kind: KindString, Str: unsafe.String(&b[0], len(b))}
	case kindUUID:
		var s [36]byte
		hex.Encode(s[0:8], b[0:4])
		hex.Encode(s[9:13], b[4:6])
		hex.Encode(s[14:18], b[6:8])
		hex.Encode(s[19:23], b[8:10])
		hex.Encode(s[24:], b[10:16])
		s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
		return Value{Kind: KindString, Str: string(s[:])}
	}
	return c.other()
}

func (c converter) other() Value {
	if c.kind == kindNull {
		return Value{}
	}
	return Value{Kind: KindUnsupported, Str: c.what}
}
