package catalog

// Chunk is one row of the catalog: a byte range of one object holding an
// Arrow IPC file or stream.
type Chunk struct {
	URL       string // absolute URL or local path of the object
	SegmentID string
	ChunkID   string
	Offset    int64 // first byte of the chunk in the object
	Length    int64 // bytes on the wire; -1 means to the end of the object
	Size      int64 // the object's size when a listing told it, else -1
	NumRows   int64 // -1 when the catalog does not say
	// DecodedBytes is the chunk's size once decoded, -1 when unknown.
	DecodedBytes int64
	// Version is the catalog's version column: an opaque key the catalog
	// vouches for, which changes whenever the object's bytes do. A local
	// cache serves a chunk that has one from entries of that version
	// without asking the store; "" means the catalog gives none.
	Version string
	// Listed is the object's version as the listing that found it gave
	// it (a glob or prefix over S3: the ETag, in the form of
	// store.Versioner), "" when none did: what the store said moments
	// before the scan, not a key the catalog vouches for.
	Listed string
	Row    int // position in the catalog, for errors and ordering
	// Bounds are the catalog's statistics of the chunk's columns (its
	// min_<col> and max_<col> fields); nil when the row has none.
	Bounds *Bounds
}

// Bounds holds, for columns of a chunk, the values of the catalog's fields
// min_<col> and max_<col> as the catalog gave them (string, int64, uint64
// or float64; a Parquet DATE or TIMESTAMP as its text, see
// parquet.Value.Text).
type Bounds struct {
	// A slice, not a map: a catalog bounds a few columns, and a chunk of
	// a million holds its own (a map of one column took several times
	// the chunk's other bytes).
	cols []columnBounds
}

// columnBounds is one column's min and max (nil: not given).
type columnBounds struct {
	col string
	v   [2]any
}

// Of returns column col's bounds: nil for one the catalog does not give
// (absent or NULL). Safe on a nil Bounds.
func (b *Bounds) Of(col string) (min, max any) {
	if b == nil {
		return nil, nil
	}
	for _, c := range b.cols {
		if c.col == col {
			return c.v[0], c.v[1]
		}
	}
	return nil, nil
}

// set sets side (0: min, 1: max) of column col's bounds to v.
func (b *Bounds) set(col string, side int, v any) {
	for i := range b.cols {
		if b.cols[i].col == col {
			b.cols[i].v[side] = v
			return
		}
	}
	c := columnBounds{col: col}
	c.v[side] = v
	b.cols = append(b.cols, c)
}

// The prefixes of a catalog field that gives a bound of a chunk column.
const (
	MinPrefix = "min_"
	MaxPrefix = "max_"
)

// WireLength is the chunk's length in bytes: Length, or what follows Offset
// in an object of known Size; -1 when unknown (read to the end).
func (c *Chunk) WireLength() int64 {
	if c.Length < 0 && c.Size >= 0 {
		return c.Size - c.Offset
	}
	return c.Length
}
