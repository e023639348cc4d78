package catalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet"
)

// parquetRows adds the rows of a Parquet catalog to b, a row group at a
// time. Only the catalog's columns are decoded; see parquet.ReadGroups.
func parquetRows(data []byte, b *listBuilder) error {
	var row cells
	first := true
	err := parquet.ReadGroups(data, isCatalogColumn, true, b.maxRows, func(cols []parquet.Column, n int, total int64) error {
		if first {
			b.grow(int(total))
		}
		names := make([]string, len(cols))
		for k, c := range cols {
			names[k] = c.Name
		}
		if n := twiceNamed(names); n != "" {
			return fmt.Errorf("the file names the column %q twice", n)
		}
		index := make([]int, len(cols))
		bounds := make([]boundCell, len(cols)) // side -1: a catalog column
		for k, c := range cols {
			index[k] = columnIndex(c.Name)
			bounds[k].side = -1
			if index[k] < 0 {
				bounds[k].col, bounds[k].side = boundOf(c.Name)
			}
		}
		for i := range n {
			row.bounds = row.bounds[:0]
			for k, c := range cols {
				if bounds[k].side >= 0 {
					if v := c.Values[i]; v.Kind != parquet.KindNull {
						var bound any
						switch v.Kind {
						case parquet.KindString:
							bound = strings.Clone(v.Str) // a view of the row group's bytes
						case parquet.KindDate, parquet.KindTimestamp:
							// As text, which says what a number would
							// not: its unit, and whether it is UTC.
							text, err := v.Text()
							if err != nil {
								return &Error{Row: b.rows, Err: fmt.Errorf("%w: %q is a %v", ErrMalformed, c.Name, err)}
							}
							bound = text
						default:
							bound = v.Any()
						}
						row.bounds = append(row.bounds, boundCell{col: bounds[k].col, side: bounds[k].side, v: bound})
					}
					continue
				}
				row.c[index[k]] = cell{v: c.Values[i]}
			}
			if err := b.addCells(&row); err != nil {
				return err
			}
		}
		if first {
			// The text of the rows to come, at this group's bytes a row.
			b.growTextFor(int(total) - n)
			first = false
		}
		return nil
	})
	if errors.Is(err, parquet.ErrTooManyRows) {
		return tooManyRows(b.maxRows)
	}
	return err
}

func isCatalogColumn(name string) bool {
	if columnIndex(name) >= 0 {
		return true
	}
	_, side := boundOf(name)
	return side >= 0
}
