package catalog

import (
	"errors"

	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet"
)

// parquetRows adds the rows of a Parquet catalog to b, a row group at a
// time. Only the catalog's columns are decoded; see parquet.ReadGroups.
func parquetRows(data []byte, b *listBuilder) error {
	row := Row{}
	first := true
	err := parquet.ReadGroups(data, isCatalogColumn, true, b.maxRows, func(cols []parquet.Column, n int, total int64) error {
		if first {
			b.grow(int(total))
		}
		for i := range n {
			clear(row)
			for _, c := range cols {
				if v := c.Values[i]; v != nil {
					row[c.Name] = v
				}
			}
			if err := b.add(row); err != nil {
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
	switch name {
	case colURL, colSegmentID, colChunkID, colOffset, colLength, colNumRows, colDecodedBytes:
		return true
	}
	return false
}
