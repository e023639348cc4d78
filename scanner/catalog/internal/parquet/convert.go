package parquet

import (
	"encoding/hex"
	"fmt"
	"math"
	"time"
	"unsafe"
)

// Type conversion: a leaf's physical and logical type to the catalog value
// its decoded values become.

// unsupported is the value of a column whose type a catalog does not use
// (BOOLEAN, times, decimals, ...): what type it is.
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
	KindDate                    // Int: days since 1970-01-01
	KindTimestamp               // Int: Unit since 1970-01-01 00:00, UTC or not (a wall-clock time)
)

// TimeUnit is the unit of a KindTimestamp value.
type TimeUnit uint8

const (
	Millis TimeUnit = iota + 1
	Micros
	Nanos
)

// Value is one decoded value. It is a struct, not an interface, so that
// decoding a column allocates nothing per value: a string is a view of the
// file's bytes or of a decompressed page (never written once decoded),
// valid as long as the caller keeps it.
type Value struct {
	Kind  Kind
	Unit  TimeUnit // of a KindTimestamp
	UTC   bool     // of a KindTimestamp: an instant (isAdjustedToUTC), not a wall-clock time
	Int   int64
	Float float64
	Str   string
}

// Any is v as string, int64, uint64, float64, nil, or an unsupported
// value whose String names its type; a date or a timestamp is its Text
// (or, out of Text's range, unsupported, naming the value).
func (v Value) Any() any {
	switch v.Kind {
	case KindDate, KindTimestamp:
		s, err := v.Text()
		if err != nil {
			return unsupported(err.Error())
		}
		return s
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

// Dates and timestamps are carried as text, the form every catalog format
// (CSV, JSON, a LIST of STRUCT cast by DuckDB) already gives them in and
// the scanner's bounds read: a number would not say its unit, and a chunk
// column in nanoseconds would read a catalog's microseconds wrong.

// The infinities DuckDB writes for a DATE and a TIMESTAMP: the largest
// magnitudes of their physical types.
const (
	dateInfinity      = math.MaxInt32
	timestampInfinity = math.MaxInt64
)

// Text is a KindDate or KindTimestamp value as DuckDB writes it: a date
// YYYY-MM-DD; a timestamp YYYY-MM-DD HH:MM:SS with as many fractional
// digits as it has (up to nine), and +00 if it is an instant (UTC);
// DuckDB's infinities as "infinity" and "-infinity". A value outside the
// years 1 to 9999 is an error (no text of that form holds it). Text
// allocates the string; decoding does not call it.
func (v Value) Text() (string, error) {
	var t time.Time
	switch v.Kind {
	case KindDate:
		switch {
		case v.Int >= dateInfinity:
			return "infinity", nil
		case v.Int <= -dateInfinity:
			return "-infinity", nil
		}
		t = time.Unix(v.Int*86400, 0).UTC()
	case KindTimestamp:
		switch {
		case v.Int == timestampInfinity:
			return "infinity", nil
		case v.Int <= -timestampInfinity:
			return "-infinity", nil
		}
		switch v.Unit {
		case Millis:
			t = time.UnixMilli(v.Int).UTC()
		case Micros:
			t = time.UnixMicro(v.Int).UTC()
		default:
			t = time.Unix(0, v.Int).UTC()
		}
	default:
		panic("parquet: Text of a value that is neither a date nor a timestamp")
	}
	if y := t.Year(); y < 1 || y > 9999 {
		what := "DATE of day"
		if v.Kind == KindTimestamp {
			what = "TIMESTAMP of " + [...]string{Millis: "millisecond", Micros: "microsecond", Nanos: "nanosecond"}[v.Unit]
		}
		return "", fmt.Errorf("%s %d: in the year %d, outside 1 to 9999", what, v.Int, y)
	}
	var buf [40]byte
	if v.Kind == KindDate {
		return string(t.AppendFormat(buf[:0], time.DateOnly)), nil
	}
	b := t.AppendFormat(buf[:0], "2006-01-02 15:04:05.999999999")
	if v.UTC {
		b = append(b, "+00"...)
	}
	return string(b), nil
}

// A converter turns decoded physical values into catalog values: string,
// int64, uint64, float64, nil, or unsupported.
type converter struct {
	kind  int    // one of the kinds below
	width int    // integer bit width to truncate to (8, 16, 32, 64)
	what  string // for kindUnsupported
	unit  TimeUnit
	utc   bool
}

const (
	kindSigned = iota
	kindUnsigned
	kindFloat
	kindString
	kindUUID
	kindNull
	kindUnsupported
	kindDate
	kindTimestamp
)

// Converted types (the legacy annotations).
const (
	ctUTF8   = 0
	ctEnum   = 4
	ctDate   = 6
	ctMillis = 9  // TIMESTAMP_MILLIS
	ctMicros = 10 // TIMESTAMP_MICROS
	ctUint8  = 11
	ctUint64 = 14
	ctInt8   = 15
	ctInt64  = 18
	ctJSON   = 19
	ctBSON   = 20
)

// Logical type union ids.
const (
	ltString    = 1
	ltEnum      = 4
	ltDate      = 6
	ltTimestamp = 8
	ltInteger   = 10
	ltUnknown   = 11
	ltJSON      = 12
	ltBSON      = 13
	ltUUID      = 14
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
// its text. A DATE (INT32) and a TIMESTAMP (INT64; logical, or the legacy
// TIMESTAMP_MILLIS / TIMESTAMP_MICROS, which the format defines as
// adjusted to UTC) are KindDate and KindTimestamp values. Everything else
// (INT96 timestamps, TIME, DECIMAL, ...) is unsupported.
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
		case e.logical == ltDate && e.typ == ptInt32:
			return converter{kind: kindDate}
		case e.logical == ltTimestamp && e.typ == ptInt64 && e.timeUnit != 0:
			return converter{kind: kindTimestamp, unit: e.timeUnit, utc: e.timeUTC}
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
		case c == ctDate && e.typ == ptInt32:
			return converter{kind: kindDate}
		case (c == ctMillis || c == ctMicros) && e.typ == ptInt64:
			return converter{kind: kindTimestamp, unit: Millis + TimeUnit(c-ctMillis), utc: true}
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
	case kindDate:
		return Value{Kind: KindDate, Int: int64(int32(v))}
	case kindTimestamp:
		return Value{Kind: KindTimestamp, Unit: c.unit, UTC: c.utc, Int: v}
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
