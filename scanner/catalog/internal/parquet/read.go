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
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
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
