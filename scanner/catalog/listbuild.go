package catalog

import (
	"fmt"
	"hash/maphash"
	"math"
	"strings"

	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet"
)

// entry is one chunk as the builder makes it, before push stores it.
type entry struct {
	ref
	row                              int
	offset, length, numRows, decoded int64
	extra                            *extra
	listed                           textRef // the listed version's text (n 0: none)
}

// listBuilder makes a List row by row, resolving each row's URL against
// the catalog's location and sharing what rows have in common: the
// resolved "folder" of a URL is looked up by the folder as the row wrote
// it, so a row costs one map lookup, not a URL parse.
type listBuilder struct {
	list     List
	base     string              // what relative URLs resolve against ("": they must be absolute)
	name     string              // the catalog, for errors
	keep     func(c *Chunk) bool // nil: keep every row
	maxRows  int
	rows     int // rows added, kept or not
	capacity int // the chunks expected in all (grow), 0 if unknown

	folders   map[string]uint32 // a URL's folder as written (or "\x00" + resolved) → prefix index
	prefixSeg []int64           // prefix index → its derived segment index (-1: not yet)
	segIndex  map[string]uint32
	lastSeg   string // the last segment id interned, and its index: rows of a segment come together
	lastIndex uint32
	hasLast   bool
	// The URLs stored lately, by prefix and tail: rows often name an
	// object a row shortly before named (ranges of one object, a few
	// objects taken in turn). At most maxRecentTails, then forgotten.
	recent    map[tailKey]textRef
	seed      maphash.Seed
	lastAdded tailKey // the last URL added to recent
}

// tailKey names a URL as the builder stores it: its prefix and the hash
// of the rest (checked against the text on a hit).
type tailKey struct {
	prefix uint32
	hash   uint64
}

// maxRecentTails bounds the URLs the builder remembers to share their
// bytes: a catalog of distinct URLs only ever misses.
const maxRecentTails = 1024

func newListBuilder(base, name string, keep func(*Chunk) bool, maxRows int) *listBuilder {
	b := &listBuilder{base: base, name: name, keep: keep, maxRows: maxRows,
		folders: map[string]uint32{}, segIndex: map[string]uint32{}}
	b.list.offset.def, b.list.length.def, b.list.numRows.def, b.list.decoded.def = 0, -1, -1, -1
	return b
}

// grow makes room for n more rows, so that a large catalog is not copied
// as its list grows: each copy would hold the old and the new at once.
func (b *listBuilder) grow(n int) {
	if b.keep == nil && n > 0 {
		b.list.refs = growCap(b.list.refs, n)
		b.capacity = len(b.list.refs) + n
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
	var c cells
	for i, name := range columnNames {
		c.c[i] = cellOf(r[name])
	}
	for name, v := range r {
		if col, side := boundOf(name); side >= 0 && v != nil {
			c.bounds = append(c.bounds, boundCell{col: col, side: side, v: v})
		}
	}
	return b.addCells(&c)
}

// addCells appends the catalog row of cells r. Its error names the row.
func (b *listBuilder) addCells(r *cells) error {
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

func (b *listBuilder) addRow(cs *cells, row int) error {
	r := &cs.c
	u := r[iURL]
	if u.null() {
		return fmt.Errorf("no %q", colURL)
	}
	if u.v.Kind != parquet.KindString {
		return fmt.Errorf("%q is %T, not a string", colURL, u.any())
	}
	raw := u.v.Str
	if strings.TrimSpace(raw) == "" {
		return fmt.Errorf("%q is empty", colURL)
	}
	l := &b.list
	textLen := len(l.text)
	prefix, tail, err := b.resolve(raw)
	if err != nil {
		return err
	}
	e := entry{row: row, ref: ref{prefix: prefix}, length: -1, numRows: -1, decoded: -1}
	prefix, tail = b.split(prefix, func() string { return l.prefixes[prefix] + tail }, tail)
	e.prefix = prefix
	e.tail, e.tailLen = b.urlTail(prefix, tail)
	if c := r[iSegmentID]; !c.null() {
		s, err := textField(&c, colSegmentID, "")
		if err != nil {
			return err
		}
		e.segment = b.segment(s)
	} else {
		e.segment = b.folderSegment(prefix, tail)
	}
	if c := r[iChunkID]; !c.null() {
		s, err := textField(&c, colChunkID, "")
		if err != nil {
			return err
		}
		switch {
		case tail != "" && !strings.ContainsRune(cutQuery(tail), '/') && s == chunkIDIn(l.prefixes[prefix], tail):
			e.prefix |= flagIDFromURL // the catalog repeats the object's name
		case len(s) > maxText:
			return fmt.Errorf("%q is %d bytes, more than %d", colChunkID, len(s), maxText)
		default:
			e.id, e.idLen = uint32(len(l.text)), uint16(len(s))
			l.text = append(l.text, s...)
		}
	} else {
		e.prefix |= flagIDFromURL
	}
	if e.offset, err = intField(&r[iOffset], colOffset, 0); err != nil {
		return err
	}
	if e.length, err = intField(&r[iLength], colLength, -1); err != nil {
		return err
	}
	if e.numRows, err = intField(&r[iNumRows], colNumRows, -1); err != nil {
		return err
	}
	if e.decoded, err = intField(&r[iDecodedBytes], colDecodedBytes, -1); err != nil {
		return err
	}
	if e.length == 0 {
		return fmt.Errorf("%q is 0: a chunk has at least one byte", colLength)
	}
	if e.length > 0 && e.offset > math.MaxInt64-e.length {
		return fmt.Errorf("%q %d and %q %d end past the largest object (2^63-1 bytes)", colOffset, e.offset, colLength, e.length)
	}
	version, err := textField(&r[iVersion], colVersion, "")
	if err != nil {
		return err
	}
	if version != "" || len(cs.bounds) > 0 {
		e.extra = &extra{version: strings.Clone(version)}
		if len(cs.bounds) > 0 {
			e.extra.bounds.cols = make([]columnBounds, 0, (len(cs.bounds)+1)/2)
		}
		for _, bc := range cs.bounds {
			e.extra.bounds.set(bc.col, bc.side, bc.v)
		}
	}
	if len(l.text) > math.MaxUint32 {
		return fmt.Errorf("%w: the catalog's URLs and chunk ids are more than %d bytes", ErrTooLarge, uint32(math.MaxUint32))
	}
	b.push(e, textLen)
	return nil
}

// push stores e unless Keep refuses it (then its text, from textLen, is
// dropped too); the first row is kept aside either way.
func (b *listBuilder) push(e entry, textLen int) {
	l := &b.list
	i := len(l.refs)
	l.refs = append(l.refs, e.ref)
	if l.rows != nil {
		l.rows = append(l.rows, uint32(e.row))
	}
	l.offset.set(i, e.offset, b.capacity)
	l.length.set(i, e.length, b.capacity)
	l.numRows.set(i, e.numRows, b.capacity)
	l.decoded.set(i, e.decoded, b.capacity)
	l.setExtra(i, e.extra, b.capacity)
	l.setListed(i, e.listed, b.capacity)
	if b.keep == nil && e.row != 0 {
		return
	}
	c := l.At(i)
	if e.row == 0 {
		l.first = c
	}
	if b.keep == nil || b.keep(&c) {
		return
	}
	l.refs = l.refs[:i]
	for _, col := range []*intColumn{&l.offset, &l.length, &l.numRows, &l.decoded} {
		col.truncate(i)
	}
	if len(l.extras) > i {
		l.extras = l.extras[:i]
	}
	if len(l.listed) > i {
		l.listed = l.listed[:i]
	}
	l.text = l.text[:textLen]
	if r, ok := b.recent[b.lastAdded]; ok && r.at >= uint32(textLen) {
		delete(b.recent, b.lastAdded) // this row's URL: its text is gone
	}
	l.dropped++
	if l.rows == nil {
		// From now on chunk i is not row i: number the rows.
		l.rows = make([]uint32, i, max(i, b.capacity/8))
		for k := range l.rows {
			l.rows[k] = uint32(k)
		}
	} else {
		l.rows = l.rows[:i]
	}
}

// maxListedVersion bounds the bytes of a listed version kept (an ETag
// has a few dozen): a longer one is dropped, and the object checked as
// if the listing gave none.
const maxListedVersion = 256

// addObject appends a listed object: the whole of it, size bytes, of the
// version the listing gave ("" none).
func (b *listBuilder) addObject(u string, size int64, version string) error {
	row := b.rows
	if row == b.maxRows {
		return tooManyChunks(b.name, row+1, b.maxRows)
	}
	b.rows++
	l := &b.list
	textLen := len(l.text)
	k := strings.LastIndexByte(cutQuery(u), '/') + 1
	prefix := b.prefix("\x00"+u[:k], func() (string, error) { return u[:k], nil })
	e := entry{row: row, length: size, numRows: -1, decoded: -1}
	prefix, tail := b.split(prefix, func() string { return u }, u[k:])
	e.prefix = prefix | flagIDFromURL | flagSized
	e.tail, e.tailLen = b.urlTail(prefix, tail)
	e.segment = b.folderSegment(prefix, tail)
	if version != "" && len(version) <= maxListedVersion {
		e.listed = textRef{uint32(len(l.text)), uint16(len(version))}
		l.text = append(l.text, version...)
	}
	if len(l.text) > math.MaxUint32 {
		return fmt.Errorf("%w: the listing's names and versions are more than %d bytes", ErrTooLarge, uint32(math.MaxUint32))
	}
	b.push(e, textLen)
	return nil
}

// urlTail stores tail, the end of a URL of prefix p, and returns where:
// where a recent row's is if it is the same URL (chunks that are ranges of
// one object, or of a few objects in turn), else appended to the text.
func (b *listBuilder) urlTail(p uint32, tail string) (uint32, uint16) {
	if b.recent == nil {
		b.recent = make(map[tailKey]textRef, maxRecentTails)
		b.seed = maphash.MakeSeed()
	}
	if len(b.recent) == maxRecentTails {
		clear(b.recent) // keeps its room: no allocation
	}
	key := tailKey{p & prefixMask, maphash.String(b.seed, tail)}
	if r, ok := b.recent[key]; ok && int(r.n) == len(tail) && string(b.list.text[r.at:r.at+uint32(r.n)]) == tail {
		return r.at, r.n
	}
	at := uint32(len(b.list.text))
	b.list.text = append(b.list.text, tail...)
	b.recent[key], b.lastAdded = textRef{at, uint16(len(tail))}, key
	return at, uint16(len(tail))
}

// split is the prefix and tail of url u, whose tail is tail: the whole URL
// is its prefix when the tail is too long for an entry.
func (b *listBuilder) split(p uint32, u func() string, tail string) (uint32, string) {
	if len(tail) <= maxText {
		return p, tail
	}
	full := u()
	return b.prefix("\x00"+full, func() (string, error) { return full, nil }), ""
}

// textRef is where a string is in a List's text.
type textRef struct {
	at uint32
	n  uint16
}

// finish returns the list, or the error of a source of no rows.
func (b *listBuilder) finish() (*List, error) {
	if b.rows == 0 {
		return nil, &Error{Catalog: b.name, Row: -1,
			Err: fmt.Errorf("%w: the catalog has no rows, so there is no chunk to take the scan's columns from", ErrNoChunks)}
	}
	l := b.list
	if cap(l.refs) > len(l.refs)+len(l.refs)/4 {
		l.refs = append([]ref(nil), l.refs...) // a shard's share of the rows: give the rest back
	}
	if cap(l.text) > len(l.text)+len(l.text)/4 {
		l.text = append([]byte(nil), l.text...)
	}
	b.folders, b.segIndex, b.prefixSeg, b.recent = nil, nil, nil, nil
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
	b.list.prefixes = append(b.list.prefixes, strings.Clone(r)) // r may be a view of the catalog's bytes
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
		s = strings.Clone(s) // s may be a view of the catalog's bytes
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

// cutQuery is u without its query string and fragment, which only an
// http(s) URL has: in a plain path, an s3:// key and a file:// URL (whose
// store reads all that follows as the path) '?' and '#' are characters
// of the name. objectPath takes a URL's ids by the same rule.
func cutQuery(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	if s := strings.ToLower(u[:i]); s != "http" && s != "https" {
		return u
	}
	if k := strings.IndexAny(u, "?#"); k >= 0 {
		return u[:k]
	}
	return u
}
