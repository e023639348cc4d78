package catalog

import (
	"fmt"
	"iter"
	"math"
	"sort"
	"strings"
)

// List is a source's chunks in catalog order, held compactly: a scan of
// millions of chunks keeps them from bind to close, so a chunk is a
// fixed-size entry (its numbers and indexes) and the bytes that are its
// own (the URL's object name, a chunk id the catalog gives); the rest of a
// URL (its "folder", shared by the chunks beside it) and the segment ids
// are held once. At makes a Chunk of an entry when the scan needs one.
//
// A List is read-only once made; its methods are safe for concurrent use.
type List struct {
	entries  []entry
	text     []byte   // the entries' URL tails and chunk ids, one after the other
	prefixes []string // URLs up to and including the last '/' of their path
	segments []string // segment ids, each once
	first    Chunk    // the source's first row, whether Keep kept it or not
	dropped  int      // rows Keep refused
}

// entry is one chunk of a List.
type entry struct {
	offset, length, numRows, decoded int64
	row                              uint32
	prefix                           uint32 // index into prefixes, with the flags below
	segment                          uint32 // index into segments
	tail, id, end                    uint32 // text[tail:id] ends the URL; text[id:end] is the chunk id
}

// Flags in entry.prefix.
const (
	// flagIDFromURL: the chunk id is the URL's object name (chunkIDOf),
	// not text[id:end].
	flagIDFromURL = 1 << 30
	// flagSized: length is the object's size as a listing gave it (the
	// chunk is the whole object), not a byte range from a catalog.
	flagSized  = 1 << 31
	prefixMask = 1<<30 - 1
)

// Len is the number of chunks.
func (l *List) Len() int { return len(l.entries) }

// At returns chunk i (0 ≤ i < Len()).
func (l *List) At(i int) Chunk {
	e := &l.entries[i]
	c := Chunk{URL: l.prefixes[e.prefix&prefixMask] + string(l.text[e.tail:e.id]), SegmentID: l.segments[e.segment],
		Offset: e.offset, Length: e.length, Size: -1, NumRows: e.numRows, DecodedBytes: e.decoded, Row: int(e.row)}
	if e.prefix&flagSized != 0 {
		c.Length, c.Size = -1, e.length
	}
	if e.prefix&flagIDFromURL != 0 {
		c.ChunkID = chunkIDOf(c.URL)
	} else {
		c.ChunkID = string(l.text[e.id:e.end])
	}
	return c
}

// WireLength is At(i).WireLength(), without making the chunk.
func (l *List) WireLength(i int) int64 {
	e := &l.entries[i]
	if e.prefix&flagSized != 0 {
		return e.length - e.offset
	}
	return e.length
}

// NumRows is At(i).NumRows, without making the chunk.
func (l *List) NumRows(i int) int64 { return l.entries[i].numRows }

// Row is At(i).Row, without making the chunk.
func (l *List) Row(i int) int { return int(l.entries[i].row) }

// IndexOfRow is the index of the chunk of catalog row row, if the list
// holds it.
func (l *List) IndexOfRow(row int) (int, bool) {
	i := sort.Search(len(l.entries), func(i int) bool { return int(l.entries[i].row) >= row })
	return i, i < len(l.entries) && int(l.entries[i].row) == row
}

// HasRow reports whether the list holds the chunk of catalog row row.
func (l *List) HasRow(row int) bool {
	_, ok := l.IndexOfRow(row)
	return ok
}

// All yields every chunk with its index, in order.
func (l *List) All() iter.Seq2[int, Chunk] {
	return func(yield func(int, Chunk) bool) {
		for i := range l.entries {
			if !yield(i, l.At(i)) {
				return
			}
		}
	}
}

// Slice returns every chunk as a slice: for callers that need them all at
// once anyway (a listing of the chunks, tests).
func (l *List) Slice() []Chunk {
	out := make([]Chunk, len(l.entries))
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
	out := *l
	out.entries = nil
	for i := range l.entries {
		if c := l.At(i); keep(&c) {
			out.entries = append(out.entries, l.entries[i])
		}
	}
	out.entries = out.entries[:len(out.entries):len(out.entries)]
	out.dropped += len(l.entries) - len(out.entries)
	return &out
}

// listBuilder makes a List row by row, resolving each row's URL against
// the catalog's location and sharing what rows have in common: the
// resolved "folder" of a URL is looked up by the folder as the row wrote
// it, so a row costs one map lookup, not a URL parse.
type listBuilder struct {
	list    List
	base    string              // what relative URLs resolve against ("": they must be absolute)
	name    string              // the catalog, for errors
	keep    func(c *Chunk) bool // nil: keep every row
	maxRows int
	rows    int // rows added, kept or not

	folders   map[string]uint32 // a URL's folder as written (or "\x00" + resolved) → prefix index
	prefixSeg []int64           // prefix index → its derived segment index (-1: not yet)
	segIndex  map[string]uint32
	lastSeg   string // the last segment id interned, and its index: rows of a segment come together
	lastIndex uint32
	hasLast   bool
}

func newListBuilder(base, name string, keep func(*Chunk) bool, maxRows int) *listBuilder {
	return &listBuilder{base: base, name: name, keep: keep, maxRows: maxRows,
		folders: map[string]uint32{}, segIndex: map[string]uint32{}}
}

// grow makes room for n more rows, so that a large catalog is not copied
// as its list grows: each copy would hold the old and the new at once.
func (b *listBuilder) grow(n int) {
	if b.keep == nil && n > 0 {
		b.list.entries = growCap(b.list.entries, n)
	}
}

// growTextFor makes room for the text of rows more rows, at the bytes per
// row so far.
func (b *listBuilder) growTextFor(rows int) {
	if b.rows > 0 && rows > 0 {
		per := len(b.list.text)/b.rows + 1
		b.list.text = growCap(b.list.text, min(per*rows+per*rows/8, math.MaxUint32-len(b.list.text)))
	}
}

func growCap[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make([]T, len(s), len(s)+n)
	copy(out, s)
	return out
}

// add appends catalog row r. Its error names the row.
func (b *listBuilder) add(r Row) error {
	row := b.rows
	if row == b.maxRows {
		return tooManyRows(b.maxRows)
	}
	b.rows++
	if err := b.addRow(r, row); err != nil {
		return &Error{Catalog: b.name, Row: row, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
	}
	return nil
}

func (b *listBuilder) addRow(r Row, row int) error {
	u, ok := r[colURL]
	if !ok || u == nil {
		return fmt.Errorf("no %q", colURL)
	}
	ref, ok := u.(string)
	if !ok {
		return fmt.Errorf("%q is %T, not a string", colURL, u)
	}
	if strings.TrimSpace(ref) == "" {
		return fmt.Errorf("%q is empty", colURL)
	}
	l := &b.list
	textLen := len(l.text)
	prefix, tail, err := b.resolve(ref)
	if err != nil {
		return err
	}
	e := entry{row: uint32(row), prefix: prefix, length: -1, numRows: -1, decoded: -1}
	e.tail = uint32(len(l.text))
	l.text = append(l.text, tail...)
	e.id = uint32(len(l.text))
	if v, given := r[colSegmentID]; given && v != nil {
		s, err := textField(r, colSegmentID, "")
		if err != nil {
			return err
		}
		e.segment = b.segment(s)
	} else {
		e.segment = b.folderSegment(prefix, tail)
	}
	if v, given := r[colChunkID]; given && v != nil {
		s, err := textField(r, colChunkID, "")
		if err != nil {
			return err
		}
		l.text = append(l.text, s...)
	} else {
		e.prefix |= flagIDFromURL
	}
	e.end = uint32(len(l.text))
	for _, f := range []struct {
		name string
		dst  *int64
		def  int64
	}{{colOffset, &e.offset, 0}, {colLength, &e.length, -1}, {colNumRows, &e.numRows, -1}, {colDecodedBytes, &e.decoded, -1}} {
		if *f.dst, err = intField(r, f.name, f.def); err != nil {
			return err
		}
	}
	if e.length == 0 {
		return fmt.Errorf("%q is 0: a chunk has at least one byte", colLength)
	}
	if len(l.text) > math.MaxUint32 {
		return fmt.Errorf("%w: the catalog's URLs and chunk ids are more than %d bytes", ErrTooLarge, uint32(math.MaxUint32))
	}
	b.push(e, textLen)
	return nil
}

// push appends e unless Keep refuses it (then its text, from textLen, is
// dropped too); the first row is kept aside either way.
func (b *listBuilder) push(e entry, textLen int) {
	l := &b.list
	l.entries = append(l.entries, e)
	if b.keep == nil && e.row != 0 {
		return
	}
	c := l.At(len(l.entries) - 1)
	if e.row == 0 {
		l.first = c
	}
	if b.keep != nil && !b.keep(&c) {
		l.entries = l.entries[:len(l.entries)-1]
		l.text = l.text[:textLen]
		l.dropped++
	}
}

// addObject appends a listed object: the whole of it, size bytes.
func (b *listBuilder) addObject(u string, size int64) error {
	row := b.rows
	if row == b.maxRows {
		return tooManyChunks(b.name, row+1, b.maxRows)
	}
	b.rows++
	l := &b.list
	textLen := len(l.text)
	k := strings.LastIndexByte(cutQuery(u), '/') + 1
	prefix := b.prefix("\x00"+u[:k], func() (string, error) { return u[:k], nil })
	e := entry{row: uint32(row), prefix: prefix | flagIDFromURL | flagSized, length: size, numRows: -1, decoded: -1}
	e.tail = uint32(len(l.text))
	l.text = append(l.text, u[k:]...)
	e.id, e.end = uint32(len(l.text)), uint32(len(l.text))
	e.segment = b.folderSegment(prefix, u[k:])
	b.push(e, textLen)
	return nil
}

// finish returns the list, or the error of a source of no rows.
func (b *listBuilder) finish() (*List, error) {
	if b.rows == 0 {
		return nil, &Error{Catalog: b.name, Row: -1,
			Err: fmt.Errorf("%w: the catalog has no rows, so there is no chunk to take the scan's columns from", ErrNoChunks)}
	}
	l := b.list
	if cap(l.entries) > len(l.entries)+len(l.entries)/4 {
		l.entries = append([]entry(nil), l.entries...) // a shard's share of the rows: give the rest back
	}
	if cap(l.text) > len(l.text)+len(l.text)/4 {
		l.text = append([]byte(nil), l.text...)
	}
	b.folders, b.segIndex, b.prefixSeg = nil, nil, nil
	return &l, nil
}

// resolve splits ref, resolved against the catalog's location, into the
// index of its prefix (up to its last '/') and the rest. A ref whose
// object name is plain (see plainName) resolves through its folder, once
// per folder; any other resolves whole.
func (b *listBuilder) resolve(ref string) (uint32, string, error) {
	k := strings.LastIndexByte(ref, '/') + 1
	dir, name := ref[:k], ref[k:]
	scheme := strings.Index(ref, "://")
	if plainName(name) && !strings.ContainsAny(dir, "?#") && (scheme < 0 || k > scheme+3) {
		var err error
		p := b.prefix(dir, func() (string, error) {
			if dir == "" {
				dir = "./"
			}
			var r string
			if r, err = resolveURL(b.base, dir); err != nil {
				return "", err
			}
			if !strings.HasSuffix(r, "/") {
				r += "/" // filepath.Join drops it
			}
			return r, nil
		})
		if err == nil {
			return p, name, nil
		}
	}
	full, err := resolveURL(b.base, ref)
	if err != nil {
		return 0, "", err
	}
	k = strings.LastIndexByte(cutQuery(full), '/') + 1
	return b.prefix("\x00"+full[:k], func() (string, error) { return full[:k], nil }), full[k:], nil
}

// prefix is the index of the prefix that key names, made by resolve the
// first time (an error of resolve leaves no entry).
func (b *listBuilder) prefix(key string, resolve func() (string, error)) uint32 {
	if p, ok := b.folders[key]; ok {
		return p
	}
	r, err := resolve()
	if err != nil {
		return 0
	}
	p := uint32(len(b.list.prefixes))
	b.list.prefixes = append(b.list.prefixes, r)
	b.prefixSeg = append(b.prefixSeg, -1)
	b.folders[strings.Clone(key)] = p
	return p
}

// folderSegment is the segment of a URL of prefix p and the given tail
// (segmentOf): it depends on the URL's folder alone, so it is found once
// per prefix.
func (b *listBuilder) folderSegment(p uint32, tail string) uint32 {
	p &= prefixMask
	if s := b.prefixSeg[p]; s >= 0 {
		return uint32(s)
	}
	s := b.segment(segmentOf(b.list.prefixes[p] + tail))
	b.prefixSeg[p] = int64(s)
	return s
}

// segment interns segment id s.
func (b *listBuilder) segment(s string) uint32 {
	if b.hasLast && s == b.lastSeg {
		return b.lastIndex
	}
	i, ok := b.segIndex[s]
	if !ok {
		i = uint32(len(b.list.segments))
		b.list.segments = append(b.list.segments, s)
		b.segIndex[s] = i
	}
	b.lastSeg, b.lastIndex, b.hasLast = s, i, true
	return i
}

// plainName reports whether an object name resolves as itself after its
// folder, whatever the folder: a name of letters, digits and "-_.~=+,@",
// not "." or "..". A name with anything else (an escape, a query, a
// colon that could start a scheme) is resolved with the whole URL.
func plainName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-_.~=+,@", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// cutQuery is u without its query string.
func cutQuery(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}
