package catalog

import (
	"iter"
	"math"
	"sort"
)

// List is a source's chunks in catalog order, held compactly: a scan of
// millions of chunks keeps them from bind to close. A chunk is a
// fixed-size reference (ref: indexes and text positions) and its numbers,
// column by column, a column that no row sets (a catalog without
// offsets, say) costing nothing; the bytes that are a chunk's own (the
// URL's object name, a chunk id the catalog gives) are in one text, and
// the rest of a URL (its "folder", shared by the chunks beside it) and the
// segment ids are held once. At makes a Chunk when the scan needs one.
//
// A List is read-only once made; its methods are safe for concurrent use.
type List struct {
	refs    []ref
	rows    []uint32 // catalog row of each chunk; nil: chunk i is row i
	offset  intColumn
	length  intColumn // a listing's object size, for a chunk with flagSized
	numRows intColumn
	decoded intColumn
	// extras holds what few catalogs give (a version, bounds), by chunk:
	// nil until a row gives one, then nil for a chunk without.
	extras []*extra
	// listed is where each chunk's Listed version is in text: nil until
	// a listing gives one, then the zero textRef for a chunk without.
	listed   []textRef
	text     []byte   // the chunks' URL tails and chunk ids
	prefixes []string // URLs up to and including the last '/' of their path
	segments []string // segment ids, each once
	first    Chunk    // the source's first row, whether Keep kept it or not
	dropped  int      // rows Keep or Select dropped
}

// extra is what a chunk of a List has when its catalog row gives a
// version or bounds.
type extra struct {
	version string
	bounds  Bounds // no columns: none
}

// setExtra gives chunk i (the last, or one past it) x; capacity is the
// chunks expected in all, for the first allocation.
func (l *List) setExtra(i int, x *extra, capacity int) {
	if l.extras == nil {
		if x == nil {
			return
		}
		l.extras = make([]*extra, i, max(i+1, capacity))
	}
	l.extras = append(l.extras[:i], x)
}

// setListed gives chunk i (the last, or one past it) the listed version
// at r; capacity is the chunks expected in all, for the first allocation.
func (l *List) setListed(i int, r textRef, capacity int) {
	if l.listed == nil {
		if r.n == 0 {
			return
		}
		l.listed = make([]textRef, i, max(i+1, capacity))
	}
	l.listed = append(l.listed[:i], r)
}

// ref is what a chunk of a List has of its own besides its numbers.
type ref struct {
	prefix         uint32 // index into prefixes, with the flags below
	segment        uint32 // index into segments
	tail, id       uint32 // text[tail:tail+tailLen] ends the URL; text[id:id+idLen] is the chunk id
	tailLen, idLen uint16
}

// intColumn is a List's column of one number: nil vals until a chunk has
// another value than def.
type intColumn struct {
	vals []int64
	def  int64
}

func (c *intColumn) at(i int) int64 {
	if c.vals == nil {
		return c.def
	}
	return c.vals[i]
}

// set gives chunk i (the last, or one past it) value v; capacity is the
// chunks expected in all, for the first allocation.
func (c *intColumn) set(i int, v int64, capacity int) {
	if c.vals == nil {
		if v == c.def {
			return
		}
		c.vals = make([]int64, i, max(i+1, capacity))
		for k := range c.vals {
			c.vals[k] = c.def
		}
	}
	c.vals = append(c.vals[:i], v)
}

// truncate keeps the values of the first n chunks.
func (c *intColumn) truncate(n int) {
	if len(c.vals) > n {
		c.vals = c.vals[:n]
	}
}

// pick is the column of the chunks at indexes.
func (c *intColumn) pick(indexes []int) intColumn {
	out := intColumn{def: c.def}
	if c.vals != nil {
		out.vals = make([]int64, len(indexes))
		for k, i := range indexes {
			out.vals[k] = c.vals[i]
		}
	}
	return out
}

// maxText is the most bytes of a URL's object name (with its query) or of
// a chunk id: a ref holds their lengths in 16 bits.
const maxText = math.MaxUint16

// Flags in ref.prefix.
const (
	// flagIDFromURL: the chunk id is the URL's object name (chunkIDOf),
	// not text[id:id+idLen].
	flagIDFromURL = 1 << 30
	// flagSized: the length column holds the object's size as a listing
	// gave it (the chunk is the whole object), not a range's length.
	flagSized  = 1 << 31
	prefixMask = 1<<30 - 1
)

// Len is the number of chunks.
func (l *List) Len() int { return len(l.refs) }

// At returns chunk i (0 ≤ i < Len()).
func (l *List) At(i int) Chunk {
	e := &l.refs[i]
	c := Chunk{URL: l.prefixes[e.prefix&prefixMask] + string(l.text[e.tail:e.tail+uint32(e.tailLen)]), SegmentID: l.segments[e.segment],
		Offset: l.offset.at(i), Length: l.length.at(i), Size: -1, NumRows: l.numRows.at(i), DecodedBytes: l.decoded.at(i), Row: l.Row(i)}
	if e.prefix&flagSized != 0 {
		c.Length, c.Size = -1, c.Length
	}
	if e.prefix&flagIDFromURL != 0 {
		c.ChunkID = chunkIDOf(c.URL)
	} else {
		c.ChunkID = string(l.text[e.id : e.id+uint32(e.idLen)])
	}
	if l.listed != nil {
		if r := l.listed[i]; r.n > 0 {
			c.Listed = string(l.text[r.at : r.at+uint32(r.n)])
		}
	}
	if l.extras != nil {
		if x := l.extras[i]; x != nil {
			c.Version = x.version
			if len(x.bounds.cols) > 0 {
				c.Bounds = &x.bounds // read only, as every chunk's is
			}
		}
	}
	return c
}

// WireLength is At(i).WireLength(), without making the chunk.
func (l *List) WireLength(i int) int64 {
	n := l.length.at(i)
	if l.refs[i].prefix&flagSized != 0 {
		return n - l.offset.at(i)
	}
	return n
}

// NumRows is At(i).NumRows, without making the chunk.
func (l *List) NumRows(i int) int64 { return l.numRows.at(i) }

// Row is At(i).Row, without making the chunk.
func (l *List) Row(i int) int {
	if l.rows == nil {
		return i
	}
	return int(l.rows[i])
}

// IndexOfRow is the index of the chunk of catalog row row, if the list
// holds it.
func (l *List) IndexOfRow(row int) (int, bool) {
	if l.rows == nil {
		return row, row >= 0 && row < len(l.refs)
	}
	i := sort.Search(len(l.rows), func(i int) bool { return int(l.rows[i]) >= row })
	return i, i < len(l.rows) && int(l.rows[i]) == row
}

// HasRow reports whether the list holds the chunk of catalog row row.
func (l *List) HasRow(row int) bool {
	_, ok := l.IndexOfRow(row)
	return ok
}

// All yields every chunk with its index, in order.
func (l *List) All() iter.Seq2[int, Chunk] {
	return func(yield func(int, Chunk) bool) {
		for i := range l.refs {
			if !yield(i, l.At(i)) {
				return
			}
		}
	}
}

// Slice returns every chunk as a slice: for callers that need them all at
// once anyway (a listing of the chunks, tests).
func (l *List) Slice() []Chunk {
	out := make([]Chunk, len(l.refs))
	for i := range out {
		out[i] = l.At(i)
	}
	return out
}

// First is the source's first row. It is the source's first chunk even
// when Keep dropped it, or Select: the scan's columns are that chunk's.
func (l *List) First() Chunk { return l.first }

// Dropped is how many rows of the source Keep or Select dropped.
func (l *List) Dropped() int { return l.dropped }

// Select returns the list of the chunks keep returns true for (sharing
// this list's bytes; this list is unchanged).
func (l *List) Select(keep func(c *Chunk) bool) *List {
	var picked []int
	for i := range l.refs {
		if c := l.At(i); keep(&c) {
			picked = append(picked, i)
		}
	}
	out := &List{text: l.text, prefixes: l.prefixes, segments: l.segments, first: l.first,
		dropped: l.dropped + len(l.refs) - len(picked)}
	out.refs = make([]ref, len(picked))
	out.rows = make([]uint32, len(picked))
	for k, i := range picked {
		out.refs[k], out.rows[k] = l.refs[i], uint32(l.Row(i))
	}
	out.offset, out.length = l.offset.pick(picked), l.length.pick(picked)
	out.numRows, out.decoded = l.numRows.pick(picked), l.decoded.pick(picked)
	if l.listed != nil {
		out.listed = make([]textRef, len(picked))
		for k, i := range picked {
			out.listed[k] = l.listed[i]
		}
	}
	if l.extras != nil {
		out.extras = make([]*extra, len(picked))
		for k, i := range picked {
			out.extras[k] = l.extras[i]
		}
	}
	return out
}
