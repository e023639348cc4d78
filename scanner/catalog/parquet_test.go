package catalog

// Parquet catalogs as the DuckDB CLI writes them, through Parse. The reader
// itself is tested in internal/parquet.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

// checkOracle reads data with the catalog's Parquet reader (all columns)
// and with arrow-go's, and compares.
func checkOracle(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	return parquettest.CheckOracle(t, data, func(data []byte) ([]map[string]any, error) {
		return parquet.Read(data, func(string) bool { return true }, false, DefaultMaxChunks)
	})
}

// TestParquetDuckDBCatalog: a catalog as DuckDB writes it, through Parse.
func TestParquetDuckDBCatalog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cat.parquet")
	parquettest.DuckDB(t, "COPY (SELECT 'seg' || (i // 2) || '/c' || i || '.arrow' AS url, (i // 2)::INTEGER AS segment_id, i * 100 AS \"offset\","+
		" CASE WHEN i = 1 THEN NULL ELSE 100 END::UBIGINT AS length, i::SMALLINT AS num_rows, true AS extra_flag, [1, 2] AS extra_list"+
		" FROM range(3) t(i)) TO '"+path+"' (FORMAT parquet)")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data, Parquet, "s3://b/ds/cat.parquet")
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{
		{URL: "s3://b/ds/seg0/c0.arrow", SegmentID: "0", ChunkID: "c0", Offset: 0, Length: 100, Size: -1, NumRows: 0, DecodedBytes: -1, Row: 0},
		{URL: "s3://b/ds/seg0/c1.arrow", SegmentID: "0", ChunkID: "c1", Offset: 100, Length: -1, Size: -1, NumRows: 1, DecodedBytes: -1, Row: 1},
		{URL: "s3://b/ds/seg1/c2.arrow", SegmentID: "1", ChunkID: "c2", Offset: 200, Length: 100, Size: -1, NumRows: 2, DecodedBytes: -1, Row: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// TestParquetDuckDBErrors: what a catalog cannot hold is an error naming it.
func TestParquetDuckDBErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, sql, opts, want string }{
		{"brotli", "SELECT 'a.arrow' AS url", "COMPRESSION brotli", "compression codec BROTLI is not supported"},
		{"nested url", "SELECT ['a.arrow'] AS url", "", `column "url" is nested or repeated`},
		{"struct length", "SELECT 'a.arrow' AS url, {'x': 1} AS length", "", `column "length" is nested or repeated`},
		{"date offset", "SELECT 'a.arrow' AS url, DATE '2020-01-01' AS \"offset\"", "", `row 0: bad catalog: "offset" is DATE 2020-01-01, not an integer`},
		{"bool url", "SELECT true AS url", "", `column "url" is BOOLEAN`},
		{"timestamp length", "SELECT 'a.arrow' AS url, TIMESTAMP '2020-01-01' AS length", "", `row 0: bad catalog: "length" is TIMESTAMP 2020-01-01 00:00:00, not an integer`},
		{"time length", "SELECT 'a.arrow' AS url, TIME '12:00:00' AS length", "", `column "length" is TIME (INT64)`},
		{"decimal", "SELECT 'a.arrow' AS url, 1.5::DECIMAL(10,2) AS num_rows", "", `column "num_rows" is DECIMAL (INT64)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".parquet")
			opts := "FORMAT parquet"
			if tt.opts != "" {
				opts += ", " + tt.opts
			}
			parquettest.DuckDB(t, fmt.Sprintf("COPY (%s) TO '%s' (%s)", tt.sql, path, opts))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(data, Parquet, "/c.parquet")
			var ce *Error
			if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a *Error with %q", err, tt.want)
			}
		})
	}
}
