package catalog

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet"
)

// ErrMalformed is wrapped by every error about a catalog's content.
var ErrMalformed = errors.New("bad catalog")

// Error names the catalog and the row an error is about (Row -1: the
// catalog as a whole).
type Error struct {
	Catalog string
	Row     int
	Err     error
}

func (e *Error) Error() string {
	if e.Row < 0 {
		return fmt.Sprintf("remote_segments: catalog %s: %v", e.Catalog, e.Err)
	}
	return fmt.Sprintf("remote_segments: catalog %s row %d: %v", e.Catalog, e.Row, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// The catalog's columns. url is required, the others optional.
const (
	colURL          = "url"
	colSegmentID    = "segment_id"
	colChunkID      = "chunk_id"
	colOffset       = "offset"
	colLength       = "length"
	colNumRows      = "num_rows"
	colDecodedBytes = "decoded_bytes"
	colVersion      = "version"
)

// The catalog's columns by position in a row of cells.
const (
	iURL = iota
	iSegmentID
	iChunkID
	iOffset
	iLength
	iNumRows
	iDecodedBytes
	iVersion
	numColumns
)

// columnNames is the name of each column position.
var columnNames = [numColumns]string{colURL, colSegmentID, colChunkID, colOffset, colLength, colNumRows, colDecodedBytes, colVersion}

// columnIndex is the position of catalog column name, or -1.
func columnIndex(name string) int {
	for i, n := range columnNames {
		if n == name {
			return i
		}
	}
	return -1
}

// twiceNamed returns a catalog column (a name isCatalogColumn knows)
// that names gives more than once, or "": of two values for one column a
// reader would keep one and drop the other without a word, and nothing
// tells which one the catalog's writer meant (DuckDB refuses a struct
// that names a field twice; its CSV reader renames the second url_1,
// which here would read the first and ignore the second).
func twiceNamed(names []string) string {
	for i, n := range names {
		if isCatalogColumn(n) && slices.Contains(names[i+1:], n) {
			return n
		}
	}
	return ""
}

// cells is one catalog row: a cell per column position, and the row's
// min_<col> / max_<col> fields (nil: none).
type cells struct {
	c      [numColumns]cell
	bounds []boundCell
}

// boundCell is one min_<col> or max_<col> field of a row.
type boundCell struct {
	col  string
	side int // 0 the minimum, 1 the maximum
	v    any // string, int64, uint64 or float64
}

// Format is the encoding of a catalog file.
type Format int

const (
	Parquet Format = iota + 1
	CSV
	JSON
)

// formatOf tells a catalog by its name, or returns 0 for a name that
// is not a catalog (a chunk, glob or prefix).
func formatOf(name string) Format {
	switch strings.ToLower(path.Ext(strings.TrimRight(name, "/"))) {
	case ".parquet":
		return Parquet
	case ".csv":
		return CSV
	case ".json", ".jsonl", ".ndjson":
		return JSON
	}
	return 0
}

// Row is one catalog row before it becomes a Chunk: field name to value
// (string, integer or float types, or nil).
type Row map[string]any

// Parse decodes a catalog file and resolves its rows against base
// (the catalog's own URL or path). A catalog of more than DefaultMaxChunks
// rows fails with ErrTooLarge. Every error is a *Error.
func Parse(data []byte, format Format, base string) ([]Chunk, error) {
	l, err := parse(data, format, base, DefaultMaxChunks, nil)
	if err != nil {
		return nil, err
	}
	return l.Slice(), nil
}

// parse is Parse into a List, with a bound on the rows, checked as they
// are read, and keep (nil: every row) applied to each row as it is read.
//
// No rows is an error wrapping ErrNoChunks, not an empty scan: the scan's
// columns are those of its first chunk, so a catalog with no row (an
// empty file, a CSV header alone, [], a Parquet file of no rows) leaves
// them unknown, and a query naming a column could not even be bound.
func parse(data []byte, format Format, base string, maxRows int, keep func(*Chunk) bool) (*List, error) {
	b := newListBuilder(base, base, keep, maxRows)
	var err error
	switch format {
	case Parquet:
		err = parquetRows(data, b)
	case CSV:
		err = csvRows(data, b.add)
	case JSON:
		err = jsonRows(data, b.add)
	default:
		err = fmt.Errorf("unknown catalog format %d", format)
	}
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.Catalog = base
			return nil, ce
		}
		return nil, &Error{Catalog: base, Row: -1, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
	}
	return b.finish()
}

// FromRows makes the list of catalog rows; relative URLs resolve against
// base ("" means they must be absolute). name names the catalog in errors,
// which are *Error naming the row.
func FromRows(rows []Row, base, name string) (*List, error) {
	return fromRows(rows, base, name, nil, DefaultMaxChunks)
}

// boundOf splits a catalog field min_<col> or max_<col> into col and the
// side it bounds (0 the minimum, 1 the maximum); side -1 for any other.
func boundOf(name string) (col string, side int) {
	if col, ok := strings.CutPrefix(name, MinPrefix); ok && col != "" {
		return col, 0
	}
	if col, ok := strings.CutPrefix(name, MaxPrefix); ok && col != "" {
		return col, 1
	}
	return "", -1
}

// fromRows is FromRows with Source's Keep and a bound on the rows.
func fromRows(rows []Row, base, name string, keep func(*Chunk) bool, maxRows int) (*List, error) {
	b := newListBuilder(base, name, keep, maxRows)
	b.grow(len(rows))
	for _, r := range rows {
		if err := b.add(r); err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				ce.Catalog = name
			}
			return nil, err
		}
	}
	return b.finish()
}

// cell is one catalog value: a decoded Parquet value, or a value of a
// row map (raw holds one of a type a catalog does not use, for its error).
type cell struct {
	v   parquet.Value
	raw any
}

// cellOf is the cell of a row map's value.
func cellOf(v any) cell {
	switch v := v.(type) {
	case nil:
		return cell{}
	case string:
		return cell{v: parquet.Value{Kind: parquet.KindString, Str: v}}
	case int64:
		return cell{v: parquet.Value{Kind: parquet.KindInt, Int: v}}
	case uint64:
		return cell{v: parquet.Value{Kind: parquet.KindUint, Int: int64(v)}}
	case float64:
		return cell{v: parquet.Value{Kind: parquet.KindFloat, Float: v}}
	}
	return cell{v: parquet.Value{Kind: parquet.KindUnsupported}, raw: v}
}

func (c *cell) null() bool { return c.v.Kind == parquet.KindNull }

// any is the cell's value as its errors show it.
func (c *cell) any() any {
	if c.raw != nil {
		return c.raw
	}
	return c.v.Any()
}

// textField is c as text (an integer in decimal, a Parquet date or
// timestamp as DuckDB writes it), or def if it is NULL. The text may be a
// view of the catalog's bytes: the caller copies what it keeps.
func textField(c *cell, name, def string) (string, error) {
	switch v := c.v; v.Kind {
	case parquet.KindNull:
		return def, nil
	case parquet.KindString:
		return v.Str, nil
	case parquet.KindDate, parquet.KindTimestamp:
		s, err := v.Text()
		if err != nil {
			return "", fmt.Errorf("%q is a %v", name, err)
		}
		return s, nil
	case parquet.KindInt:
		return strconv.FormatInt(v.Int, 10), nil
	case parquet.KindUint:
		return strconv.FormatUint(uint64(v.Int), 10), nil
	case parquet.KindFloat:
		if v.Float == math.Trunc(v.Float) && math.Abs(v.Float) < 1<<53 {
			return strconv.FormatInt(int64(v.Float), 10), nil
		}
	}
	return "", fmt.Errorf("%q is %v (%T), not a string or an integer", name, c.any(), c.any())
}

// intField is c as a non-negative integer, or def if it is NULL.
func intField(c *cell, name string, def int64) (int64, error) {
	if c.v.Kind == parquet.KindNull {
		return def, nil
	}
	var n int64
	switch v := c.v; v.Kind {
	case parquet.KindNull:
		return def, nil
	case parquet.KindInt:
		n = v.Int
	case parquet.KindUint:
		if uint64(v.Int) > math.MaxInt64 {
			return 0, fmt.Errorf("%q is %d, too large", name, uint64(v.Int))
		}
		n = v.Int
	case parquet.KindFloat:
		if v.Float != math.Trunc(v.Float) || math.Abs(v.Float) >= 1<<53 {
			return 0, fmt.Errorf("%q is %v, not an integer", name, v.Float)
		}
		n = int64(v.Float)
	case parquet.KindString:
		var err error
		if n, err = strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64); err != nil {
			return 0, fmt.Errorf("%q is %q, not an integer", name, v.Str)
		}
	case parquet.KindDate, parquet.KindTimestamp:
		return 0, fmt.Errorf("%q is %s %v, not an integer", name, map[parquet.Kind]string{parquet.KindDate: "DATE", parquet.KindTimestamp: "TIMESTAMP"}[v.Kind], c.any())
	default:
		return 0, fmt.Errorf("%q is %T, not an integer", name, c.any())
	}
	if n < 0 {
		return 0, fmt.Errorf("%q is %d, negative", name, n)
	}
	return n, nil
}

// resolveURL resolves ref (absolute URL, absolute path or relative) against
// base, the catalog's location.
func resolveURL(base, ref string) (string, error) {
	if strings.Contains(ref, "://") {
		if _, err := url.Parse(ref); err != nil {
			return "", fmt.Errorf("url %q: %v", ref, err)
		}
		return ref, nil
	}
	if base == "" {
		if filepath.IsAbs(ref) {
			return ref, nil
		}
		return "", fmt.Errorf("url %q is relative and there is no catalog file to resolve it against", ref)
	}
	if i := strings.Index(base, "://"); i >= 0 && strings.EqualFold(base[:i], "s3") {
		return resolveRaw(base, ref), nil
	}
	if strings.Contains(base, "://") {
		b, err := url.Parse(base)
		if err != nil {
			return "", fmt.Errorf("catalog url %q: %v", base, err)
		}
		r, err := url.Parse(ref)
		if err != nil {
			return "", fmt.Errorf("url %q: %v", ref, err)
		}
		return b.ResolveReference(r).String(), nil
	}
	if filepath.IsAbs(ref) {
		return ref, nil
	}
	return filepath.Join(filepath.Dir(base), ref), nil
}

// resolveRaw resolves the relative reference ref against base, an s3://
// URL, whose key is taken as written (no escapes; '?' and '#' are
// characters of a key, where a URL parser would end the path at them and
// resolve against what is left): the dot segments of ref are resolved
// against the folder of base's key, and every other character is kept.
func resolveRaw(base, ref string) string {
	i := strings.Index(base, "://") + 3
	root, key := base+"/", ""
	if j := strings.IndexByte(base[i:], '/'); j >= 0 {
		root, key = base[:i+j+1], base[i+j+1:]
	}
	dir := key[:strings.LastIndexByte(key, '/')+1]
	if rest, ok := strings.CutPrefix(ref, "/"); ok {
		dir, ref = "", rest // from the bucket
	}
	in := strings.Split(dir+ref, "/")
	out := make([]string, 0, len(in))
	for k, seg := range in {
		last := k == len(in)-1
		switch seg {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
			continue
		}
		if last {
			out = append(out, "") // "a/.." names the folder
		}
	}
	return root + strings.Join(out, "/")
}

// maxCSVLine bounds a line of a CSV catalog. encoding/csv buffers a
// whole record however long it is; a catalog row is a URL and a few
// numbers, so a longer line is not a catalog (a binary file, a file with
// no line ends) and is refused before the CSV reader copies it.
const maxCSVLine = 1 << 20

// csvRows hands each row of a CSV catalog to add, in one map it reuses.
func csvRows(data []byte, add func(Row) error) error {
	for line, rest := 1, data; len(rest) > 0; line++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			i = len(rest)
		}
		if n := len(bytes.TrimSuffix(rest[:i], []byte("\r"))); n > maxCSVLine {
			return fmt.Errorf("CSV line %d is longer than %d bytes (the most a catalog line may have)", line, maxCSVLine)
		}
		rest = rest[min(i+1, len(rest)):]
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if err == io.EOF {
		return nil // no header (the file is empty or blank): no rows
	}
	if err != nil {
		return fmt.Errorf("CSV header: %v", err)
	}
	header = slices.Clone(header)
	for i := range header {
		header[i] = strings.TrimSpace(strings.TrimPrefix(header[i], "\ufeff"))
	}
	if n := twiceNamed(header); n != "" {
		return fmt.Errorf("CSV header names the column %q twice", n)
	}
	row := Row{}
	for n := 0; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &Error{Row: n, Err: fmt.Errorf("%w: CSV: %v", ErrMalformed, err)}
		}
		clear(row)
		for i, v := range rec {
			// An empty cell is an absent value, except for url, which
			// every row needs: there it is an empty url.
			if i < len(header) && (v != "" || header[i] == colURL) {
				row[header[i]] = v
			}
		}
		if err := add(row); err != nil {
			return err
		}
	}
}

// jsonTwiceNamed is twiceNamed of the keys of raw, the text of one JSON
// object (after the separator before it) that decoded to m. A text with
// no escape holds a '"' then ':' (maybe with white space between) only
// where a key ends: a string's own '"' would be escaped. So when it has no
// escape and as many key ends as m has keys, no key is there twice (a
// nested object's keys only add to the count); any other object is read
// again, key by key.
func jsonTwiceNamed(raw []byte, m map[string]any) string {
	if bytes.IndexByte(raw, '\\') < 0 && keyEnds(raw) == len(m) {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimLeft(raw, ", \t\r\n")))
	if _, err := dec.Token(); err != nil { // {
		return ""
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		var skip json.RawMessage
		if err != nil || !ok || dec.Decode(&skip) != nil {
			return ""
		}
		keys = append(keys, k)
	}
	return twiceNamed(keys)
}

// keyEnds counts the colons of text that follow a '"' (white space
// between): the keys of a JSON text without escapes (jsonTwiceNamed).
func keyEnds(text []byte) int {
	n := 0
	for i := bytes.IndexByte(text, ':'); i >= 0; {
		j := i - 1
		for j >= 0 && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n') {
			j--
		}
		if j >= 0 && text[j] == '"' {
			n++
		}
		next := bytes.IndexByte(text[i+1:], ':')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return n
}

// tooManyRows is the error of a catalog of more than maxRows rows.
func tooManyRows(maxRows int) error {
	return &Error{Row: -1, Err: fmt.Errorf("%w: more than %d rows (the most a catalog may have)", ErrTooLarge, maxRows)}
}

// jsonRows reads one array of objects, or one object per line, decoding
// one object at a time and handing it to add, so that a row is checked
// (and the row bound holds) before the next is decoded. encoding/json
// refuses values nested deeper than 10000 levels, and every value it makes
// is smaller than its text: the file's size bounds them.
func jsonRows(data []byte, add func(Row) error) error {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\ufeff")))
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	array := bytes.HasPrefix(trimmed, []byte("["))
	if array {
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("JSON: %v", err)
		}
	}
	for n := 0; dec.More(); n++ {
		var m map[string]any
		start := dec.InputOffset()
		if err := dec.Decode(&m); err != nil {
			if array {
				return fmt.Errorf("JSON: %v", err)
			}
			return &Error{Row: n, Err: fmt.Errorf("%w: JSON: %v", ErrMalformed, err)}
		}
		if m == nil {
			return &Error{Row: n, Err: fmt.Errorf("%w: JSON: not an object", ErrMalformed)}
		}
		if k := jsonTwiceNamed(trimmed[start:dec.InputOffset()], m); k != "" {
			return &Error{Row: n, Err: fmt.Errorf("%w: JSON: the object names the column %q twice", ErrMalformed, k)}
		}
		for k, v := range m {
			if num, ok := v.(json.Number); ok {
				if iv, err := num.Int64(); err == nil {
					m[k] = iv
				} else if fv, err := num.Float64(); err == nil {
					m[k] = fv
				}
			}
		}
		if err := add(m); err != nil {
			return err
		}
	}
	if array {
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("JSON: %v", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return fmt.Errorf("JSON: data after the array")
		}
	}
	return nil
}
