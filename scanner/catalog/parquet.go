package catalog

import (
	"errors"

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
		index := make([]int, len(cols))
		for k, c := range cols {
			index[k] = columnIndex(c.Name)
		}
		for i := range n {
			for k, c := range cols {
				row[index[k]] = cell{v: c.Values[i]}
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

func isCatalogColumn(name string) bool { return columnIndex(name) >= 0 }
