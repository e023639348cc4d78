// Package parquet is the catalog's Parquet reader: a file's bytes in, rows
// of its flat columns out (Read). It owns the Thrift compact protocol
// (thrift.go), the footer and page headers (metadata.go), schema flattening
// (schema.go), the mapping of Parquet types to catalog values (convert.go),
// the page loop (pages.go), the codecs (codec.go) and the encodings
// (encoding.go). It imports no Parquet or Thrift library (the extension
// must not link one) and nothing of this module.
//
// It reads flat columns of the physical types BOOLEAN, INT32, INT64,
// INT96, FLOAT, DOUBLE, BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY, REQUIRED or
// OPTIONAL; data pages V1 and V2; encodings PLAIN, PLAIN_DICTIONARY,
// RLE_DICTIONARY, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY,
// DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT; codecs UNCOMPRESSED, SNAPPY,
// GZIP, ZSTD and LZ4_RAW. Nested and repeated columns are skipped unless
// the caller wants them (then an error).
//
// Every length is checked against the input; the rows a file may declare
// and the bytes its pages may decompress to are bounded by its size
// (maxRowsPerByte, maxInflation), so a small malformed file cannot make the
// reader allocate much, and absolutely (maxRows, maxInflated), so neither
// can a large one.
package parquet

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

const (
	maxRowsPerByte = 64        // rows per byte of file, beyond minRows
	minRows        = 1 << 12   // rows any file may have
	maxInflation   = 256       // decompressed bytes per byte of file, beyond minInflated
	minInflated    = 1 << 20   // bytes any file may decompress to
	maxInflated    = 2 << 30   // bytes no file may decompress to beyond, whatever its size
	maxSchemaDepth = 64        // group nesting in the schema
	parquetMagic   = "PAR1"    // at both ends of the file
	footerTail     = 8         // footer length (4 bytes) + magic
	maxDictWidth   = 32        // bit width of dictionary indices
	typeNone       = int32(-1) // an absent optional enum field
)

// Physical types.
const (
	ptBoolean = 0
	ptInt32   = 1
	ptInt64   = 2
	ptInt96   = 3
	ptFloat   = 4
	ptDouble  = 5
	ptBytes   = 6
	ptFixed   = 7
)

func physicalName(t int32) string {
	switch t {
	case ptBoolean:
		return "BOOLEAN"
	case ptInt32:
		return "INT32"
	case ptInt64:
		return "INT64"
	case ptInt96:
		return "INT96"
	case ptFloat:
		return "FLOAT"
	case ptDouble:
		return "DOUBLE"
	case ptBytes:
		return "BYTE_ARRAY"
	case ptFixed:
		return "FIXED_LEN_BYTE_ARRAY"
	}
	return fmt.Sprintf("physical type %d", t)
}

// Encodings.
const (
	encPlain          = 0
	encPlainDict      = 2
	encRLE            = 3
	encBitPacked      = 4
	encDeltaBinary    = 5
	encDeltaLength    = 6
	encDeltaByteArray = 7
	encRLEDict        = 8
	encByteStream     = 9
)

func encodingName(e int32) string {
	names := map[int32]string{0: "PLAIN", 1: "GROUP_VAR_INT", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED",
		5: "DELTA_BINARY_PACKED", 6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("encoding %d", e)
}

// Compression codecs.
const (
	codecNone   = 0
	codecSnappy = 1
	codecGzip   = 2
	codecZstd   = 6
	codecLZ4Raw = 7
)

func codecName(c int32) string {
	names := map[int32]string{0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 3: "LZO", 4: "BROTLI", 5: "LZ4", 6: "ZSTD", 7: "LZ4_RAW"}
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("codec %d", c)
}

// Page types.
const (
	pageData   = 0
	pageDict   = 2
	pageDataV2 = 3
)

// Repetition.
const (
	repRequired = 0
	repOptional = 1
	repRepeated = 2
)

type pqSchemaElem struct {
	typ, typeLength, repetition, numChildren, converted int32
	name                                                string
	logical                                             int16 // LogicalType union field id, 0 if absent
	intWidth                                            int8  // for the INTEGER logical type
	intSigned                                           bool
}

type pqColumnMeta struct {
	typ, codec                                  int32
	path                                        []string
	totalCompressed, dataOffset, dictOffset     int64
	hasMeta, hasFilePath, encrypted, hasDictOff bool
}

type pqRowGroup struct {
	columns []pqColumnMeta
	numRows int64
}

type pqFile struct {
	schema    []pqSchemaElem
	rowGroups []pqRowGroup
	encrypted bool
}

// readFooter parses the FileMetaData at the end of data.
func readFooter(data []byte) (*pqFile, error) {
	if len(data) >= 4 && string(data[len(data)-4:]) == "PARE" {
		return nil, errors.New("the file is encrypted")
	}
	if len(data) < 4+footerTail || string(data[:4]) != parquetMagic {
		return nil, errors.New("not a Parquet file (no PAR1 at its start)")
	}
	if string(data[len(data)-4:]) != parquetMagic {
		return nil, errors.New("not a Parquet file (no PAR1 at its end)")
	}
	n := binary.LittleEndian.Uint32(data[len(data)-footerTail:])
	if uint64(n) > uint64(len(data)-4-footerTail) {
		return nil, fmt.Errorf("footer of %d bytes in a file of %d", n, len(data))
	}
	t := &thrift{b: data[len(data)-footerTail-int(n) : len(data)-footerTail]}
	f := &pqFile{}
	t.fields(func(id int16, typ byte) {
		switch id {
		case 2:
			t.fieldStructs(typ, "schema", func(int) { f.schema = append(f.schema, readSchemaElem(t)) })
		case 4:
			t.fieldStructs(typ, "row_groups", func(int) { f.rowGroups = append(f.rowGroups, readRowGroup(t)) })
		case 8:
			f.encrypted = true
			t.skip(typ)
		default:
			t.skip(typ)
		}
	})
	if t.err != nil {
		return nil, fmt.Errorf("footer: %v", t.err)
	}
	if f.encrypted {
		return nil, errors.New("the file is encrypted")
	}
	return f, nil
}

func readSchemaElem(t *thrift) pqSchemaElem {
	e := pqSchemaElem{typ: typeNone, repetition: typeNone, converted: typeNone}
	t.fields(func(id int16, typ byte) {
		switch id {
		case 1:
			e.typ = t.fieldI32(typ, "type")
		case 2:
			e.typeLength = t.fieldI32(typ, "type_length")
		case 3:
			e.repetition = t.fieldI32(typ, "repetition_type")
		case 4:
			e.name = string(t.fieldBinary(typ, "name"))
		case 5:
			e.numChildren = t.fieldI32(typ, "num_children")
		case 6:
			e.converted = t.fieldI32(typ, "converted_type")
		case 10:
			if typ != tStruct {
				t.fail("logicalType has type %d", typ)
				return
			}
			t.fields(func(lid int16, ltyp byte) {
				if e.logical == 0 {
					e.logical = lid
				}
				if lid != 10 || ltyp != tStruct {
					t.skip(ltyp)
					return
				}
				t.fields(func(iid int16, ityp byte) {
					switch iid {
					case 1:
						e.intWidth = int8(t.fieldI32(ityp, "bitWidth"))
					case 2:
						e.intSigned = t.fieldBool(ityp, "isSigned")
					default:
						t.skip(ityp)
					}
				})
			})
		default:
			t.skip(typ)
		}
	})
	return e
}

func readRowGroup(t *thrift) pqRowGroup {
	var g pqRowGroup
	t.fields(func(id int16, typ byte) {
		switch id {
		case 1:
			t.fieldStructs(typ, "columns", func(int) { g.columns = append(g.columns, readColumnChunk(t)) })
		case 3:
			g.numRows = t.fieldI64(typ, "num_rows")
		default:
			t.skip(typ)
		}
	})
	return g
}

func readColumnChunk(t *thrift) pqColumnMeta {
	var c pqColumnMeta
	t.fields(func(id int16, typ byte) {
		switch id {
		case 1:
			c.hasFilePath = true
			t.skip(typ)
		case 3:
			if typ != tStruct {
				t.fail("meta_data has type %d", typ)
				return
			}
			c.hasMeta = true
			t.fields(func(mid int16, mtyp byte) {
				switch mid {
				case 1:
					c.typ = t.fieldI32(mtyp, "type")
				case 3:
					c.path = t.fieldStrings(mtyp, "path_in_schema")
				case 4:
					c.codec = t.fieldI32(mtyp, "codec")
				case 7:
					c.totalCompressed = t.fieldI64(mtyp, "total_compressed_size")
				case 9:
					c.dataOffset = t.fieldI64(mtyp, "data_page_offset")
				case 11:
					c.dictOffset = t.fieldI64(mtyp, "dictionary_page_offset")
					c.hasDictOff = true
				default:
					t.skip(mtyp)
				}
			})
		case 8, 9:
			c.encrypted = true
			t.skip(typ)
		default:
			t.skip(typ)
		}
	})
	return c
}

type pqPageHeader struct {
	typ, uncompressed, compressed            int32
	numValues, numNulls, encoding, defEnc    int32
	defLen, repLen                           int32
	hasData, hasDict, hasV2, v2NotCompressed bool
}

func readPageHeader(t *thrift) pqPageHeader {
	var h pqPageHeader
	t.fields(func(id int16, typ byte) {
		switch id {
		case 1:
			h.typ = t.fieldI32(typ, "type")
		case 2:
			h.uncompressed = t.fieldI32(typ, "uncompressed_page_size")
		case 3:
			h.compressed = t.fieldI32(typ, "compressed_page_size")
		case 5, 7, 8:
			if typ != tStruct {
				t.fail("page header field %d has type %d", id, typ)
				return
			}
			h.hasData, h.hasDict, h.hasV2 = h.hasData || id == 5, h.hasDict || id == 7, h.hasV2 || id == 8
			t.fields(func(sid int16, styp byte) {
				switch {
				case sid == 1:
					h.numValues = t.fieldI32(styp, "num_values")
				case sid == 2 && id != 8:
					h.encoding = t.fieldI32(styp, "encoding")
				case sid == 3 && id == 5:
					h.defEnc = t.fieldI32(styp, "definition_level_encoding")
				case sid == 2 && id == 8:
					h.numNulls = t.fieldI32(styp, "num_nulls")
				case sid == 4 && id == 8:
					h.encoding = t.fieldI32(styp, "encoding")
				case sid == 5 && id == 8:
					h.defLen = t.fieldI32(styp, "definition_levels_byte_length")
				case sid == 6 && id == 8:
					h.repLen = t.fieldI32(styp, "repetition_levels_byte_length")
				case sid == 7 && id == 8:
					h.v2NotCompressed = !t.fieldBool(styp, "is_compressed")
				default:
					t.skip(styp)
				}
			})
		default:
			t.skip(typ)
		}
	})
	return h
}

// pqLeaf is a leaf column of the schema.
type pqLeaf struct {
	elem     pqSchemaElem
	top      string // name of the top-level field it belongs to
	nested   bool   // inside a group, or repeated
	optional bool
}

// leaves flattens the schema tree into its leaf columns, in column order.
func leaves(schema []pqSchemaElem) ([]pqLeaf, error) {
	if len(schema) == 0 {
		return nil, errors.New("empty schema")
	}
	var out []pqLeaf
	var walk func(i, depth int, top string, nested bool) (int, error)
	walk = func(i, depth int, top string, nested bool) (int, error) {
		if i >= len(schema) {
			return 0, errors.New("schema: fewer elements than its groups' num_children")
		}
		if depth > maxSchemaDepth {
			return 0, fmt.Errorf("schema nested deeper than %d", maxSchemaDepth)
		}
		e := schema[i]
		if depth == 1 {
			top = e.name
		}
		if depth > 0 && e.repetition == repRepeated {
			nested = true
		}
		if e.numChildren < 0 || int64(e.numChildren) > int64(len(schema)-i-1) {
			return 0, fmt.Errorf("schema element %q: %d children", e.name, e.numChildren)
		}
		if e.numChildren == 0 && depth > 0 {
			if e.typ < ptBoolean || e.typ > ptFixed {
				return 0, fmt.Errorf("column %q: physical type %d", e.name, e.typ)
			}
			out = append(out, pqLeaf{elem: e, top: top, nested: nested || depth > 1, optional: e.repetition == repOptional})
			return i + 1, nil
		}
		next := i + 1
		for k := int32(0); k < e.numChildren; k++ {
			var err error
			if next, err = walk(next, depth+1, top, nested); err != nil {
				return 0, err
			}
		}
		return next, nil
	}
	end, err := walk(0, 0, "", false)
	if err != nil {
		return nil, err
	}
	if end != len(schema) {
		return nil, fmt.Errorf("schema: %d elements, its root has %d", len(schema), end)
	}
	return out, nil
}

// unsupported is the value of a column whose type a catalog does not use
// (BOOLEAN, dates, times, timestamps, decimals, ...): what type it is.
type unsupported string

func (u unsupported) String() string { return "unsupported Parquet type " + string(u) }

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

func (c converter) int(v int64) any {
	switch c.kind {
	case kindSigned:
		switch c.width {
		case 8:
			return int64(int8(v))
		case 16:
			return int64(int16(v))
		case 32:
			return int64(int32(v))
		}
		return v
	case kindUnsigned:
		switch c.width {
		case 8:
			return int64(uint8(v))
		case 16:
			return int64(uint16(v))
		case 32:
			return int64(uint32(v))
		}
		return uint64(v)
	case kindNull:
		return nil
	}
	return unsupported(c.what)
}

func (c converter) float(v float64) any {
	if c.kind == kindFloat {
		return v
	}
	return c.other()
}

func (c converter) bytes(b []byte) any {
	switch c.kind {
	case kindString:
		return string(b)
	case kindUUID:
		var s [36]byte
		hex.Encode(s[0:8], b[0:4])
		hex.Encode(s[9:13], b[4:6])
		hex.Encode(s[14:18], b[6:8])
		hex.Encode(s[19:23], b[8:10])
		hex.Encode(s[24:], b[10:16])
		s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
		return string(s[:])
	}
	return c.other()
}

func (c converter) other() any {
	if c.kind == kindNull {
		return nil
	}
	return unsupported(c.what)
}

// pqReader reads one file's columns.
type pqReader struct {
	data    []byte
	inflate int64 // decompressed bytes still allowed
	zstd    *zstd.Decoder
	levels  []uint32
}

// ErrTooManyRows is wrapped by Read's error for a file of more than
// maxRows rows.
var ErrTooManyRows = errors.New("too many rows")

// Read decodes the flat columns want accepts into rows: column name to
// value (string, int64, uint64, float64; a NULL is no entry). A nested or
// repeated column that want accepts is an error naming it; one it does not
// is skipped. A wanted column of a type a catalog does not use is an error
// when strict; otherwise (tests) its values are unsupported. A file of more
// than maxRows rows fails with ErrTooManyRows before any value is decoded.
// Every error begins "Parquet: ".
func Read(data []byte, want func(column string) bool, strict bool, maxRows int) (rows []map[string]any, err error) {
	defer func() {
		// Last resort: the decoders check every length, so this is a bug.
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("Parquet: internal error: %v", r)
		}
	}()
	rows, err = readRows(data, want, strict, maxRows)
	if err != nil {
		return nil, fmt.Errorf("Parquet: %w", err)
	}
	return rows, nil
}

func readRows(data []byte, want func(string) bool, strict bool, maxRows int) ([]map[string]any, error) {
	f, err := readFooter(data)
	if err != nil {
		return nil, err
	}
	cols, err := leaves(f.schema)
	if err != nil {
		return nil, err
	}
	var total int64
	fits := minRows + maxRowsPerByte*int64(len(data))
	for g, rg := range f.rowGroups {
		if len(rg.columns) != len(cols) {
			return nil, fmt.Errorf("row group %d has %d columns, the schema %d", g, len(rg.columns), len(cols))
		}
		if rg.numRows < 0 || rg.numRows > fits-total {
			return nil, fmt.Errorf("row group %d: %d rows: more than %d in all in a file of %d bytes", g, rg.numRows, fits, len(data))
		}
		total += rg.numRows
	}
	if total > int64(maxRows) {
		return nil, fmt.Errorf("%w: %d rows, more than %d", ErrTooManyRows, total, maxRows)
	}
	r := &pqReader{data: data, inflate: min(minInflated+maxInflation*int64(len(data)), maxInflated)}
	defer func() {
		if r.zstd != nil {
			r.zstd.Close()
		}
	}()
	type column struct {
		name   string
		values []any
	}
	var decoded []column
	for c, leaf := range cols {
		if !want(leaf.top) {
			continue
		}
		if leaf.nested {
			return nil, fmt.Errorf("column %q is nested or repeated (a list, map or struct): catalog columns must be flat", leaf.top)
		}
		conv := converterOf(leaf.elem)
		if conv.kind == kindUnsupported && strict {
			return nil, fmt.Errorf("column %q is %s: a catalog column is a string, an integer or a float", leaf.top, conv.what)
		}
		values := make([]any, 0, total)
		for g, rg := range f.rowGroups {
			if rg.numRows == 0 {
				// An empty row group holds no values, and its column
				// chunks may hold no data page: arrow-go writes an empty
				// table as one such group, with data_page_offset 0.
				continue
			}
			var err error
			values, err = r.readChunk(rg.columns[c], leaf, conv, rg.numRows, values)
			if err != nil {
				return nil, fmt.Errorf("column %q, row group %d: %w", leaf.top, g, err)
			}
		}
		decoded = append(decoded, column{leaf.top, values})
	}
	rows := make([]map[string]any, total)
	for i := range rows {
		rows[i] = make(map[string]any, len(decoded))
	}
	for _, col := range decoded {
		for i, v := range col.values {
			if v != nil {
				rows[i][col.name] = v
			}
		}
	}
	return rows, nil
}

// readChunk appends the n values of one column chunk to out.
func (r *pqReader) readChunk(m pqColumnMeta, leaf pqLeaf, conv converter, n int64, out []any) ([]any, error) {
	switch {
	case !m.hasMeta:
		return nil, errors.New("no column metadata")
	case m.hasFilePath:
		return nil, errors.New("the column chunk is in another file")
	case m.encrypted:
		return nil, errors.New("the column is encrypted")
	case m.typ != leaf.elem.typ:
		return nil, fmt.Errorf("column chunk of type %d, the schema says %d", m.typ, leaf.elem.typ)
	}
	start := m.dataOffset
	if m.hasDictOff && m.dictOffset > 0 && m.dictOffset < start {
		start = m.dictOffset
	}
	size := int64(len(r.data))
	if start < 4 || m.totalCompressed <= 0 || start >= size || m.totalCompressed > size-start {
		return nil, fmt.Errorf("column chunk at byte %d of %d bytes, outside the file of %d", start, m.totalCompressed, size)
	}
	chunk := r.data[start : start+m.totalCompressed]
	var dict []any
	want := int64(len(out)) + n
	pos := 0
	for int64(len(out)) < want {
		if pos >= len(chunk) {
			return nil, fmt.Errorf("%d values of %d", int64(len(out))-want+n, n)
		}
		t := &thrift{b: chunk[pos:]}
		h := readPageHeader(t)
		if t.err != nil {
			return nil, fmt.Errorf("page header at byte %d: %v", start+int64(pos), t.err)
		}
		pageAt := start + int64(pos)
		pos += t.pos
		if h.compressed < 0 || int64(h.compressed) > int64(len(chunk)-pos) || h.uncompressed < 0 {
			return nil, fmt.Errorf("page at byte %d: %d bytes, %d left in the column chunk", pageAt, h.compressed, len(chunk)-pos)
		}
		body := chunk[pos : pos+int(h.compressed)]
		pos += int(h.compressed)
		var err error
		switch h.typ {
		case pageDict:
			if !h.hasDict {
				return nil, fmt.Errorf("dictionary page at byte %d without its header", pageAt)
			}
			if dict != nil {
				return nil, fmt.Errorf("a second dictionary page at byte %d", pageAt)
			}
			dict, err = r.readDict(h, body, m.codec, leaf, conv)
		case pageData, pageDataV2:
			if (h.typ == pageData && !h.hasData) || (h.typ == pageDataV2 && !h.hasV2) {
				return nil, fmt.Errorf("data page at byte %d without its header", pageAt)
			}
			if h.numValues < 0 || int64(h.numValues) > want-int64(len(out)) {
				return nil, fmt.Errorf("data page at byte %d: %d values, %d left in the row group", pageAt, h.numValues, want-int64(len(out)))
			}
			out, err = r.readData(h, body, m.codec, leaf, conv, dict, out)
		default:
			continue // index pages and unknown kinds hold no values
		}
		if err != nil {
			return nil, fmt.Errorf("page at byte %d: %w", pageAt, err)
		}
	}
	return out, nil
}

// decompress returns the n bytes src decompresses to under codec.
func (r *pqReader) decompress(codec int32, src []byte, n int32) ([]byte, error) {
	if codec == codecNone || (n == 0 && len(src) == 0) {
		if int(n) != len(src) {
			return nil, fmt.Errorf("uncompressed page of %d bytes says %d", len(src), n)
		}
		return src, nil
	}
	if int64(n) > r.inflate {
		return nil, fmt.Errorf("page decompresses to %d bytes: more than the %d left for a file of %d bytes", n, r.inflate, len(r.data))
	}
	r.inflate -= int64(n)
	var out []byte
	var err error
	switch codec {
	case codecSnappy:
		var dn int
		if dn, err = s2.DecodedLen(src); err == nil {
			if dn != int(n) {
				return nil, fmt.Errorf("SNAPPY page decompresses to %d bytes, its header says %d", dn, n)
			}
			out, err = s2.Decode(make([]byte, n), src)
		}
	case codecGzip:
		var z *gzip.Reader
		if z, err = gzip.NewReader(bytes.NewReader(src)); err == nil {
			out = make([]byte, n)
			if _, err = io.ReadFull(z, out); err == nil {
				var one [1]byte
				if k, _ := z.Read(one[:]); k > 0 {
					err = fmt.Errorf("more than %d bytes", n)
				}
			}
		}
	case codecZstd:
		if r.zstd == nil {
			if r.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(uint64(r.inflate)+uint64(n)+1)); err != nil {
				return nil, err
			}
		}
		out, err = r.zstd.DecodeAll(src, make([]byte, 0, n))
	case codecLZ4Raw:
		out = make([]byte, n)
		var k int
		if k, err = lz4.UncompressBlock(src, out); err == nil && k != int(n) {
			err = fmt.Errorf("%d bytes", k)
		}
	default:
		return nil, fmt.Errorf("compression codec %s is not supported (UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW are)", codecName(codec))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", codecName(codec), err)
	}
	if len(out) != int(n) {
		return nil, fmt.Errorf("%s page decompresses to %d bytes, its header says %d", codecName(codec), len(out), n)
	}
	return out, nil
}

func (r *pqReader) readDict(h pqPageHeader, body []byte, codec int32, leaf pqLeaf, conv converter) ([]any, error) {
	if h.encoding != encPlain && h.encoding != encPlainDict {
		return nil, fmt.Errorf("dictionary page encoding %s is not supported (PLAIN is)", encodingName(h.encoding))
	}
	page, err := r.decompress(codec, body, h.uncompressed)
	if err != nil {
		return nil, err
	}
	if h.numValues < 0 || (leaf.elem.typ != ptBoolean && int64(h.numValues) > int64(len(page))+minRows) {
		return nil, fmt.Errorf("dictionary of %d values in %d bytes", h.numValues, len(page))
	}
	return decodePlain(page, int(h.numValues), leaf.elem, conv, nil)
}

// readData decodes one data page (V1 or V2) and appends its values.
func (r *pqReader) readData(h pqPageHeader, body []byte, codec int32, leaf pqLeaf, conv converter, dict []any, out []any) ([]any, error) {
	n := int(h.numValues)
	var page, defs []byte
	if h.typ == pageDataV2 {
		if h.repLen != 0 {
			return nil, fmt.Errorf("repetition levels (%d bytes) in a flat column", h.repLen)
		}
		if h.defLen < 0 || int(h.defLen) > len(body) || h.defLen > h.uncompressed {
			return nil, fmt.Errorf("definition levels of %d bytes in a page of %d", h.defLen, len(body))
		}
		defs = body[:h.defLen]
		values := body[h.defLen:]
		if h.v2NotCompressed {
			codec = codecNone
		}
		var err error
		if page, err = r.decompress(codec, values, h.uncompressed-h.defLen); err != nil {
			return nil, err
		}
	} else {
		var err error
		if page, err = r.decompress(codec, body, h.uncompressed); err != nil {
			return nil, err
		}
		if leaf.optional {
			if h.defEnc != encRLE {
				return nil, fmt.Errorf("definition level encoding %s is not supported (RLE is)", encodingName(h.defEnc))
			}
			if len(page) < 4 {
				return nil, errors.New("no definition levels")
			}
			k := binary.LittleEndian.Uint32(page)
			if uint64(k) > uint64(len(page)-4) {
				return nil, fmt.Errorf("definition levels of %d bytes in a page of %d", k, len(page))
			}
			defs, page = page[4:4+k], page[4+k:]
		}
	}
	present := n
	if leaf.optional {
		if cap(r.levels) < n {
			r.levels = make([]uint32, n)
		}
		r.levels = r.levels[:n]
		if err := decodeHybrid(defs, 1, r.levels); err != nil {
			return nil, fmt.Errorf("definition levels: %v", err)
		}
		present = 0
		for _, l := range r.levels {
			present += int(l)
		}
	}
	var vals []any
	var err error
	switch h.encoding {
	case encPlain:
		vals, err = decodePlain(page, present, leaf.elem, conv, r.vals(present))
	case encPlainDict, encRLEDict:
		if dict == nil {
			return nil, fmt.Errorf("%s page without a dictionary page", encodingName(h.encoding))
		}
		vals, err = r.decodeDictIndices(page, present, dict)
	case encDeltaBinary:
		vals, err = decodeDeltaInts(page, present, leaf.elem, conv, r.vals(present))
	case encDeltaLength, encDeltaByteArray:
		if leaf.elem.typ != ptBytes {
			return nil, fmt.Errorf("%s for a %s column", encodingName(h.encoding), physicalName(leaf.elem.typ))
		}
		vals, err = r.decodeDeltaBytes(page, present, h.encoding == encDeltaByteArray, conv, r.vals(present))
	case encByteStream:
		vals, err = decodeByteStreamSplit(page, present, leaf.elem, conv, r.vals(present))
	default:
		return nil, fmt.Errorf("encoding %s is not supported (PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT are)", encodingName(h.encoding))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", encodingName(h.encoding), err)
	}
	if !leaf.optional {
		return append(out, vals...), nil
	}
	k := 0
	for _, l := range r.levels {
		if l == 1 {
			out = append(out, vals[k])
			k++
		} else {
			out = append(out, nil)
		}
	}
	return out, nil
}

// vals is a scratch slice for n decoded values (n is bounded by the
// row group's rows).
func (r *pqReader) vals(n int) []any { return make([]any, 0, n) }

// decodePlain decodes n PLAIN values of e's physical type.
func decodePlain(b []byte, n int, e pqSchemaElem, conv converter, out []any) ([]any, error) {
	width := 0
	switch e.typ {
	case ptBoolean:
		if int64(n) > 8*int64(len(b)) {
			return nil, fmt.Errorf("%d booleans in %d bytes", n, len(b))
		}
		for i := 0; i < n; i++ {
			out = append(out, conv.other()) // catalogs do not use booleans
		}
		return out, nil
	case ptInt32, ptFloat:
		width = 4
	case ptInt64, ptDouble:
		width = 8
	case ptInt96:
		width = 12
	case ptFixed:
		if e.typeLength <= 0 {
			return nil, fmt.Errorf("FIXED_LEN_BYTE_ARRAY of length %d", e.typeLength)
		}
		width = int(e.typeLength)
	case ptBytes:
		pos := 0
		for i := 0; i < n; i++ {
			if len(b)-pos < 4 {
				return nil, fmt.Errorf("value %d of %d: the page ends", i, n)
			}
			k := binary.LittleEndian.Uint32(b[pos:])
			pos += 4
			if uint64(k) > uint64(len(b)-pos) {
				return nil, fmt.Errorf("value %d of %d bytes, %d left", i, k, len(b)-pos)
			}
			out = append(out, conv.bytes(b[pos:pos+int(k)]))
			pos += int(k)
		}
		return out, nil
	}
	if int64(n)*int64(width) > int64(len(b)) {
		return nil, fmt.Errorf("%d values of %d bytes in %d bytes", n, width, len(b))
	}
	for i := 0; i < n; i++ {
		v := b[i*width : (i+1)*width]
		out = append(out, plainValue(v, e, conv))
	}
	return out, nil
}

// plainValue converts one fixed-width little-endian value.
func plainValue(v []byte, e pqSchemaElem, conv converter) any {
	switch e.typ {
	case ptInt32:
		return conv.int(int64(int32(binary.LittleEndian.Uint32(v))))
	case ptInt64:
		return conv.int(int64(binary.LittleEndian.Uint64(v)))
	case ptFloat:
		return conv.float(float64(math.Float32frombits(binary.LittleEndian.Uint32(v))))
	case ptDouble:
		return conv.float(math.Float64frombits(binary.LittleEndian.Uint64(v)))
	case ptFixed:
		return conv.bytes(v)
	}
	return conv.other()
}

// decodeDictIndices decodes n RLE/bit-packed dictionary indices (after a
// bit-width byte) into dictionary values.
func (r *pqReader) decodeDictIndices(b []byte, n int, dict []any) ([]any, error) {
	if n == 0 {
		return nil, nil
	}
	if len(b) < 1 {
		return nil, errors.New("no bit width")
	}
	width := int(b[0])
	if width > maxDictWidth {
		return nil, fmt.Errorf("index bit width %d", width)
	}
	idx := make([]uint32, n)
	if err := decodeHybrid(b[1:], width, idx); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for i, k := range idx {
		if int64(k) >= int64(len(dict)) {
			return nil, fmt.Errorf("index %d into a dictionary of %d", k, len(dict))
		}
		out[i] = dict[k]
	}
	return out, nil
}

// decodeHybrid fills out from the RLE/bit-packed hybrid encoding of values
// of width bits.
func decodeHybrid(b []byte, width int, out []uint32) error {
	if width > 32 {
		return fmt.Errorf("bit width %d", width)
	}
	pos, i := 0, 0
	for i < len(out) {
		h, k := binary.Uvarint(b[pos:])
		if k <= 0 {
			return fmt.Errorf("run header at byte %d: %d of %d values", pos, i, len(out))
		}
		pos += k
		if h&1 == 1 { // bit-packed: h>>1 groups of 8
			count := (h >> 1) * 8
			if count == 0 {
				return fmt.Errorf("empty bit-packed run at byte %d", pos)
			}
			take := uint64(len(out) - i)
			if count < take {
				take = count
			}
			need := (take*uint64(width) + 7) / 8
			if need > uint64(len(b)-pos) {
				return fmt.Errorf("bit-packed run of %d values at byte %d: %d bytes left", count, pos, len(b)-pos)
			}
			for j := 0; j < int(take); j++ {
				out[i+j] = uint32(getBits(b[pos:], j*width, width))
			}
			i += int(take)
			full := count * uint64(width) / 8
			if full > uint64(len(b)-pos) {
				full = uint64(len(b) - pos)
			}
			pos += int(full)
			continue
		}
		count := h >> 1
		if count == 0 {
			return fmt.Errorf("empty RLE run at byte %d", pos)
		}
		vb := (width + 7) / 8
		if vb > len(b)-pos {
			return fmt.Errorf("RLE run at byte %d: the value is cut", pos)
		}
		var v uint32
		for j := 0; j < vb; j++ {
			v |= uint32(b[pos+j]) << (8 * j)
		}
		pos += vb
		if width < 32 && v>>width != 0 {
			return fmt.Errorf("RLE value %d wider than %d bits", v, width)
		}
		if count > uint64(len(out)-i) {
			count = uint64(len(out) - i)
		}
		for j := 0; j < int(count); j++ {
			out[i+j] = v
		}
		i += int(count)
	}
	return nil
}

// getBits reads width (<= 64) bits at bit offset pos of b, LSB first.
func getBits(b []byte, pos, width int) uint64 {
	var v uint64
	for got := 0; got < width; {
		off := pos & 7
		take := min(8-off, width-got)
		v |= uint64(b[pos>>3]>>off&(1<<take-1)) << got
		got += take
		pos += take
	}
	return v
}

// deltaInts decodes a DELTA_BINARY_PACKED run: its values and the bytes it
// took. max bounds the value count it may declare.
func deltaInts(b []byte, max int) ([]int64, int, error) {
	pos := 0
	next := func(what string) (uint64, error) {
		v, k := binary.Uvarint(b[pos:])
		if k <= 0 {
			return 0, fmt.Errorf("bad %s at byte %d", what, pos)
		}
		pos += k
		return v, nil
	}
	blockSize, err := next("block size")
	if err != nil {
		return nil, 0, err
	}
	minis, err := next("miniblock count")
	if err != nil {
		return nil, 0, err
	}
	total, err := next("value count")
	if err != nil {
		return nil, 0, err
	}
	zz, err := next("first value")
	if err != nil {
		return nil, 0, err
	}
	if blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<20 || minis == 0 || blockSize%minis != 0 || (blockSize/minis)%8 != 0 {
		return nil, 0, fmt.Errorf("block of %d values in %d miniblocks", blockSize, minis)
	}
	if total > uint64(max) {
		return nil, 0, fmt.Errorf("%d values where at most %d fit", total, max)
	}
	out := make([]int64, 0, total)
	if total == 0 {
		return out, pos, nil
	}
	v := int64(zz>>1) ^ -int64(zz&1)
	out = append(out, v)
	per := int(blockSize / minis)
	for uint64(len(out)) < total {
		md, err := next("min delta")
		if err != nil {
			return nil, 0, err
		}
		minDelta := int64(md>>1) ^ -int64(md&1)
		if uint64(len(b)-pos) < minis {
			return nil, 0, errors.New("miniblock bit widths cut")
		}
		widths := b[pos : pos+int(minis)]
		pos += int(minis)
		for _, w := range widths {
			if uint64(len(out)) >= total {
				break
			}
			if w > 64 {
				return nil, 0, fmt.Errorf("miniblock bit width %d", w)
			}
			take := min(per, int(total)-len(out))
			need := (take*int(w) + 7) / 8
			if need > len(b)-pos {
				return nil, 0, fmt.Errorf("miniblock of %d bytes, %d left", need, len(b)-pos)
			}
			for j := 0; j < take; j++ {
				v += minDelta + int64(getBits(b[pos:], j*int(w), int(w)))
				out = append(out, v)
			}
			pos += min(per*int(w)/8, len(b)-pos)
		}
	}
	return out, pos, nil
}

func decodeDeltaInts(b []byte, n int, e pqSchemaElem, conv converter, out []any) ([]any, error) {
	if e.typ != ptInt32 && e.typ != ptInt64 {
		return nil, fmt.Errorf("for a %s column", physicalName(e.typ))
	}
	vs, _, err := deltaInts(b, n)
	if err != nil {
		return nil, err
	}
	if len(vs) < n {
		return nil, fmt.Errorf("%d values of %d", len(vs), n)
	}
	for _, v := range vs[:n] {
		if e.typ == ptInt32 {
			v = int64(int32(v))
		}
		out = append(out, conv.int(v))
	}
	return out, nil
}

// decodeDeltaBytes decodes DELTA_LENGTH_BYTE_ARRAY, or with prefixes
// DELTA_BYTE_ARRAY (prefix lengths, then suffixes as
// DELTA_LENGTH_BYTE_ARRAY). Rebuilt values count against r.inflate.
func (r *pqReader) decodeDeltaBytes(b []byte, n int, prefixed bool, conv converter, out []any) ([]any, error) {
	var prefixes []int64
	if prefixed {
		var k int
		var err error
		if prefixes, k, err = deltaInts(b, n); err != nil {
			return nil, fmt.Errorf("prefix lengths: %v", err)
		}
		b = b[k:]
	}
	lengths, k, err := deltaInts(b, n)
	if err != nil {
		return nil, fmt.Errorf("lengths: %v", err)
	}
	if len(lengths) < n || (prefixed && len(prefixes) < n) {
		return nil, fmt.Errorf("%d values of %d", len(lengths), n)
	}
	b = b[k:]
	var prev []byte
	for i := 0; i < n; i++ {
		l := lengths[i]
		if l < 0 || l > int64(len(b)) {
			return nil, fmt.Errorf("value %d of %d bytes, %d left", i, l, len(b))
		}
		suffix := b[:l]
		b = b[l:]
		if !prefixed {
			out = append(out, conv.bytes(suffix))
			continue
		}
		p := prefixes[i]
		if p < 0 || p > int64(len(prev)) {
			return nil, fmt.Errorf("value %d: prefix of %d bytes of a previous value of %d", i, p, len(prev))
		}
		if p+l > r.inflate {
			return nil, fmt.Errorf("values larger than the %d bytes left for a file of %d bytes", r.inflate, len(r.data))
		}
		r.inflate -= p + l
		v := make([]byte, 0, p+l)
		v = append(append(v, prev[:p]...), suffix...)
		out = append(out, conv.bytes(v))
		prev = v
	}
	return out, nil
}

// decodeByteStreamSplit decodes n values whose bytes are split in streams.
func decodeByteStreamSplit(b []byte, n int, e pqSchemaElem, conv converter, out []any) ([]any, error) {
	var width int
	switch e.typ {
	case ptInt32, ptFloat:
		width = 4
	case ptInt64, ptDouble:
		width = 8
	case ptFixed:
		if e.typeLength <= 0 {
			return nil, fmt.Errorf("FIXED_LEN_BYTE_ARRAY of length %d", e.typeLength)
		}
		width = int(e.typeLength)
	default:
		return nil, fmt.Errorf("for a %s column", physicalName(e.typ))
	}
	if len(b)%width != 0 || len(b)/width < n {
		return nil, fmt.Errorf("%d bytes for %d values of %d bytes", len(b), n, width)
	}
	stride := len(b) / width
	v := make([]byte, width)
	for i := 0; i < n; i++ {
		for k := range width {
			v[k] = b[k*stride+i]
		}
		out = append(out, plainValue(v, e, conv))
	}
	return out, nil
}
