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
	return parse(data, format, base, DefaultMaxChunks)
}

// parse is Parse with a bound on the rows, checked as they are read.
func parse(data []byte, format Format, base string, maxRows int) ([]Chunk, error) {
	var rows []Row
	var err error
	switch format {
	case Parquet:
		rows, err = parquetRows(data, maxRows)
	case CSV:
		rows, err = csvRows(data, maxRows)
	case JSON:
		rows, err = jsonRows(data, maxRows)
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
	return FromRows(rows, base, base)
}

// FromRows turns catalog rows into chunks; relative URLs resolve
// against base ("" means they must be absolute). name names the catalog in
// errors.
//
// No rows is an error wrapping ErrNoChunks, not an empty scan: the scan's
// columns are those of its first chunk, so a catalog with no row (an
// empty file, a CSV header alone, [], a Parquet file of no rows) leaves
// them unknown, and a query naming a column could not even be bound.
func FromRows(rows []Row, base, name string) ([]Chunk, error) {
	if len(rows) == 0 {
		return nil, &Error{Catalog: name, Row: -1,
			Err: fmt.Errorf("%w: the catalog has no rows, so there is no chunk to take the scan's columns from", ErrNoChunks)}
	}
	out := make([]Chunk, len(rows))
	for i, r := range rows {
		c, err := chunkFromRow(r, base)
		if err != nil {
			return nil, &Error{Catalog: name, Row: i, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
		}
		c.Row = i
		out[i] = c
	}
	return out, nil
}

func chunkFromRow(r Row, base string) (Chunk, error) {
	c := Chunk{Length: -1, Size: -1, NumRows: -1, DecodedBytes: -1}
	u, ok := r[colURL]
	if !ok || u == nil {
		return c, fmt.Errorf("no %q", colURL)
	}
	s, ok := u.(string)
	if !ok {
		return c, fmt.Errorf("%q is %T, not a string", colURL, u)
	}
	if strings.TrimSpace(s) == "" {
		return c, fmt.Errorf("%q is empty", colURL)
	}
	var err error
	if c.URL, err = resolveURL(base, s); err != nil {
		return c, err
	}
	c.SegmentID, err = textField(r, colSegmentID, segmentOf(c.URL))
	if err != nil {
		return c, err
	}
	c.ChunkID, err = textField(r, colChunkID, chunkIDOf(c.URL))
	if err != nil {
		return c, err
	}
	if c.Version, err = textField(r, colVersion, ""); err != nil {
		return c, err
	}
	for _, f := range []struct {
		name string
		dst  *int64
		def  int64
	}{{colOffset, &c.Offset, 0}, {colLength, &c.Length, -1}, {colNumRows, &c.NumRows, -1}, {colDecodedBytes, &c.DecodedBytes, -1}} {
		if *f.dst, err = intField(r, f.name, f.def); err != nil {
			return c, err
		}
	}
	if c.Length == 0 {
		return c, fmt.Errorf("%q is 0: a chunk has at least one byte", colLength)
	}
	for name, v := range r {
		col, side := boundOf(name)
		if side < 0 {
			continue
		}
		if c.Bounds == nil {
			c.Bounds = &Bounds{byColumn: map[string][2]any{}}
		}
		b := c.Bounds.byColumn[col]
		b[side] = v
		c.Bounds.byColumn[col] = b
	}
	return c, nil
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

func textField(r Row, name, def string) (string, error) {
	v, ok := r[name]
	if !ok || v == nil {
		return def, nil
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatInt(int64(v), 10), nil
		}
	}
	return "", fmt.Errorf("%q is %v (%T), not a string or an integer", name, v, v)
}

func intField(r Row, name string, def int64) (int64, error) {
	v, ok := r[name]
	if !ok || v == nil {
		return def, nil
	}
	var n int64
	switch v := v.(type) {
	case int64:
		n = v
	case uint64:
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("%q is %d, too large", name, v)
		}
		n = int64(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) >= 1<<53 {
			return 0, fmt.Errorf("%q is %v, not an integer", name, v)
		}
		n = int64(v)
	case string:
		var err error
		if n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return 0, fmt.Errorf("%q is %q, not an integer", name, v)
		}
	default:
		return 0, fmt.Errorf("%q is %T, not an integer", name, v)
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

// maxCSVLine bounds a line of a CSV catalog. encoding/csv buffers a
// whole record however long it is; a catalog row is a URL and a few
// numbers, so a longer line is not a catalog (a binary file, a file with
// no line ends) and is refused before the CSV reader copies it.
const maxCSVLine = 1 << 20

func csvRows(data []byte, maxRows int) ([]Row, error) {
	for line, rest := 1, data; len(rest) > 0; line++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			i = len(rest)
		}
		if n := len(bytes.TrimSuffix(rest[:i], []byte("\r"))); n > maxCSVLine {
			return nil, fmt.Errorf("CSV line %d is longer than %d bytes (the most a catalog line may have)", line, maxCSVLine)
		}
		rest = rest[min(i+1, len(rest)):]
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if err == io.EOF {
		return nil, nil // no header (the file is empty or blank): no rows
	}
	if err != nil {
		return nil, fmt.Errorf("CSV header: %v", err)
	}
	header = slices.Clone(header)
	for i := range header {
		header[i] = strings.TrimSpace(strings.TrimPrefix(header[i], "\ufeff"))
	}
	var rows []Row
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, &Error{Row: len(rows), Err: fmt.Errorf("%w: CSV: %v", ErrMalformed, err)}
		}
		if len(rows) == maxRows {
			return nil, tooManyRows(maxRows)
		}
		row := Row{}
		for i, v := range rec {
			// An empty cell is an absent value, except for url, which
			// every row needs: there it is an empty url.
			if i < len(header) && (v != "" || header[i] == colURL) {
				row[header[i]] = v
			}
		}
		rows = append(rows, row)
	}
}

// tooManyRows is the error of a catalog of more than maxRows rows.
func tooManyRows(maxRows int) error {
	return &Error{Row: -1, Err: fmt.Errorf("%w: more than %d rows (the most a catalog may have)", ErrTooLarge, maxRows)}
}

// jsonRows reads one array of objects, or one object per line, decoding
// one object at a time so that the row bound holds before a row is made.
// encoding/json refuses values nested deeper than 10000 levels, and every
// value it makes is smaller than its text: the file's size bounds them.
func jsonRows(data []byte, maxRows int) ([]Row, error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\ufeff")))
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var raw []map[string]any
	array := bytes.HasPrefix(trimmed, []byte("["))
	if array {
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("JSON: %v", err)
		}
	}
	for dec.More() {
		if len(raw) == maxRows {
			return nil, tooManyRows(maxRows)
		}
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if array {
				return nil, fmt.Errorf("JSON: %v", err)
			}
			return nil, &Error{Row: len(raw), Err: fmt.Errorf("%w: JSON: %v", ErrMalformed, err)}
		}
		raw = append(raw, m)
	}
	if array {
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("JSON: %v", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("JSON: data after the array")
		}
	}
	rows := make([]Row, len(raw))
	for i, m := range raw {
		if m == nil {
			return nil, &Error{Row: i, Err: fmt.Errorf("%w: JSON: not an object", ErrMalformed)}
		}
		row := Row{}
		for k, v := range m {
			if n, ok := v.(json.Number); ok {
				if iv, err := n.Int64(); err == nil {
					v = iv
				} else if fv, err := n.Float64(); err == nil {
					v = fv
				}
			}
			row[k] = v
		}
		rows[i] = row
	}
	return rows, nil
}
