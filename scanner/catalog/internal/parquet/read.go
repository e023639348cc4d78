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
	scratch []Value
}

// ErrTooManyRows is wrapped by Read's error for a file of more than
// maxRows rows.
var ErrTooManyRows = errors.New("too many rows")

// Read decodes the flat columns want accepts into rows: column name to
// value (string, int64, uint64, float64, a date or timestamp as its
// text; a NULL is no entry). See
// ReadGroups for the columns, the limits and the errors.
func Read(data []byte, want func(column string) bool, strict bool, maxRows int) ([]map[string]any, error) {
	var rows []map[string]any
	err := ReadGroups(data, want, strict, maxRows, func(cols []Column, n int, _ int64) error {
		for i := range n {
			row := make(map[string]any, len(cols))
			for _, c := range cols {
				if v := c.Values[i]; v.Kind != KindNull {
					row[c.Name] = v.Any()
				}
			}
			rows = append(rows, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// Column is one column's values in a row group, one per row.
type Column struct {
	Name   string
	Values []Value
}

// ReadGroups decodes the flat columns want accepts one row group at a
// time and hands each group's columns (in file order) and rows to fn,
// with the rows of the whole file;
// the values are valid until fn returns. A nested or repeated column that
// want accepts is an error naming it; one it does not is skipped. A wanted
// column of a type a catalog does not use is an error when strict;
// otherwise (tests) its values are unsupported. A file of more than
// maxRows rows fails with ErrTooManyRows before any value is decoded. An
// error of fn is returned as it is; every other error begins "Parquet: ".
//
// A group at a time, so that what a large catalog costs beyond the rows
// its caller keeps is one group's values, not the file's.
func ReadGroups(data []byte, want func(column string) bool, strict bool, maxRows int, fn func(cols []Column, rows int, total int64) error) (err error) {
	fromFn := false
	defer func() {
		// Last resort: the decoders check every length, so this is a bug.
		if r := recover(); r != nil {
			err = fmt.Errorf("Parquet: internal error: %v", r)
		}
	}()
	err = readGroups(data, want, strict, maxRows, func(cols []Column, n int, total int64) error {
		if err := fn(cols, n, total); err != nil {
			fromFn = true
			return err
		}
		return nil
	})
	if err != nil && !fromFn {
		return fmt.Errorf("Parquet: %w", err)
	}
	return err
}

func readGroups(data []byte, want func(string) bool, strict bool, maxRows int, fn func([]Column, int, int64) error) error {
	f, err := readFooter(data)
	if err != nil {
		return err
	}
	cols, err := leaves(f.schema)
	if err != nil {
		return err
	}
	var total int64
	fits := minRows + maxRowsPerByte*int64(len(data))
	for g, rg := range f.rowGroups {
		if len(rg.columns) != len(cols) {
			return fmt.Errorf("row group %d has %d columns, the schema %d", g, len(rg.columns), len(cols))
		}
		if rg.numRows < 0 || rg.numRows > fits-total {
			return fmt.Errorf("row group %d: %d rows: more than %d in all in a file of %d bytes", g, rg.numRows, fits, len(data))
		}
		total += rg.numRows
	}
	if total > int64(maxRows) {
		return fmt.Errorf("%w: %d rows, more than %d", ErrTooManyRows, total, maxRows)
	}
	r := &pqReader{data: data, inflate: min(minInflated+maxInflation*int64(len(data)), maxInflated)}
	defer func() {
		if r.zstd != nil {
			r.zstd.Close()
		}
	}()
	type wanted struct {
		index int
		leaf  pqLeaf
		conv  converter
	}
	var picked []wanted
	for c, leaf := range cols {
		if !want(leaf.top) {
			continue
		}
		if leaf.nested {
			return fmt.Errorf("column %q is nested or repeated (a list, map or struct): catalog columns must be flat", leaf.top)
		}
		conv := converterOf(leaf.elem)
		if conv.kind == kindUnsupported && strict {
			return fmt.Errorf("column %q is %s: a catalog column is a string, an integer, a float, a date or a timestamp", leaf.top, conv.what)
		}
		picked = append(picked, wanted{c, leaf, conv})
	}
	decoded := make([]Column, len(picked))
	for g, rg := range f.rowGroups {
		if rg.numRows == 0 {
			// An empty row group holds no values, and its column
			// chunks may hold no data page: arrow-go writes an empty
			// table as one such group, with data_page_offset 0.
			continue
		}
		for k, w := range picked {
			if int64(cap(decoded[k].Values)) < rg.numRows {
				decoded[k].Values = make([]Value, 0, rg.numRows)
			}
			values, err := r.readChunk(rg.columns[w.index], w.leaf, w.conv, rg.numRows, decoded[k].Values[:0])
			if err != nil {
				return fmt.Errorf("column %q, row group %d: %w", w.leaf.top, g, err)
			}
			decoded[k] = Column{Name: w.leaf.top, Values: values}
		}
		if err := fn(decoded, int(rg.numRows), total); err != nil {
			return err
		}
	}
	return nil
}
