package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The value encodings: PLAIN, dictionary indices (the RLE/bit-packed
// hybrid), DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY
// and BYTE_STREAM_SPLIT.

// decodePlain decodes n PLAIN values of e's physical type.
func decodePlain(b []byte, n int, e pqSchemaElem, conv converter, out []Value) ([]Value, error) {
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
func plainValue(v []byte, e pqSchemaElem, conv converter) Value {
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
func (r *pqReader) decodeDictIndices(b []byte, n int, dict []Value) ([]Value, error) {
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
	out := r.vals(n)[:n]
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

func decodeDeltaInts(b []byte, n int, e pqSchemaElem, conv converter, out []Value) ([]Value, error) {
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
func (r *pqReader) decodeDeltaBytes(b []byte, n int, prefixed bool, conv converter, out []Value) ([]Value, error) {
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
func decodeByteStreamSplit(b []byte, n int, e pqSchemaElem, conv converter, out []Value) ([]Value, error) {
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
	for i := 0; i < n; i++ {
		v := make([]byte, width) // a value may keep its bytes (converter.bytes)
		for k := range width {
			v[k] = b[k*stride+i]
		}
		out = append(out, plainValue(v, e, conv))
	}
	return out, nil
}
