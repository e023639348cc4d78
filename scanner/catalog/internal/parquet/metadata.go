package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The format's enums and the metadata read through thrift.go: the footer
// (FileMetaData: schema, row groups, column chunks) and the page headers.

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
	timeUnit                                            TimeUnit // for the TIMESTAMP logical type; 0 if none
	timeUTC                                             bool     // for the TIMESTAMP logical type: isAdjustedToUTC
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
				switch {
				case lid == ltInteger && ltyp == tStruct:
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
				case lid == ltTimestamp && ltyp == tStruct:
					readTimestampType(t, &e)
				default:
					t.skip(ltyp)
				}
			})
		default:
			t.skip(typ)
		}
	})
	return e
}

// readTimestampType reads a TimestampType struct: isAdjustedToUTC (1) and
// the unit (2), a union of empty structs MILLIS (1), MICROS (2), NANOS (3).
// An absent or unknown unit leaves timeUnit 0: the column is unsupported.
func readTimestampType(t *thrift, e *pqSchemaElem) {
	t.fields(func(id int16, typ byte) {
		switch {
		case id == 1:
			e.timeUTC = t.fieldBool(typ, "isAdjustedToUTC")
		case id == 2 && typ == tStruct:
			t.fields(func(uid int16, utyp byte) {
				if uid >= 1 && uid <= 3 && e.timeUnit == 0 {
					e.timeUnit = [...]TimeUnit{1: Millis, 2: Micros, 3: Nanos}[uid]
				}
				t.skip(utyp)
			})
		default:
			t.skip(typ)
		}
	})
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
