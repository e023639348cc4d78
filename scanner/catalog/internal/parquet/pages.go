package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The page loop: a column chunk's pages, dictionary and data (V1 and V2),
// their definition levels and the dispatch to an encoding.

// readChunk appends the n values of one column chunk to out.
func (r *pqReader) readChunk(m pqColumnMeta, leaf pqLeaf, conv converter, n int64, out []Value) ([]Value, error) {
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
	var dict []Value
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

func (r *pqReader) readDict(h pqPageHeader, body []byte, codec int32, leaf pqLeaf, conv converter) ([]Value, error) {
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
func (r *pqReader) readData(h pqPageHeader, body []byte, codec int32, leaf pqLeaf, conv converter, dict []Value, out []Value) ([]Value, error) {
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
	var vals []Value
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
			out = append(out, Value{})
		}
	}
	return out, nil
}

// vals is the reader's scratch slice for n decoded values of a page (n is
// bounded by the row group's rows): they are copied out before the next
// page is decoded.
func (r *pqReader) vals(n int) []Value {
	if cap(r.scratch) < n {
		r.scratch = make([]Value, 0, n)
	}
	return r.scratch[:0]
}
