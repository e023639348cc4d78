package catalog

import (
	"errors"

	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet"
)

// parquetRows reads a Parquet catalog of at most maxRows rows. Only the
// catalog's columns are decoded; see parquet.Read.
func parquetRows(data []byte, maxRows int) ([]Row, error) {
	rows, err := parquet.Read(data, isCatalogColumn, true, maxRows)
	if errors.Is(err, parquet.ErrTooManyRows) {
		return nil, tooManyRows(maxRows)
	}
	if err != nil {
		return nil, err
	}
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out, nil
}

func isCatalogColumn(name string) bool {
	switch name {
	case colURL, colSegmentID, colChunkID, colOffset, colLength, colNumRows, colDecodedBytes, colVersion:
		return true
	}
	_, side := boundOf(name)
	return side >= 0
}
