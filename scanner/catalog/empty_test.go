package catalog

// Empty catalogs of every shape a writer emits: each reads as 0 rows, and
// Parse then says the catalog has no rows (ErrNoChunks), naming it.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

func TestParquetEmpty(t *testing.T) {
	empty, full := parquettest.ArrowTable(0), parquettest.ArrowTable(20)
	defer empty.Release()
	defer full.Release()
	nulls0, nulls5 := parquettest.AllNullTable(0), parquettest.AllNullTable(5)
	defer nulls0.Release()
	defer nulls5.Release()
	for _, tt := range []struct {
		name string
		recs []arrow.RecordBatch
		opts []parquet.WriterProperty
		rows int
	}{
		// One row group of 0 rows whose chunks hold an empty dictionary
		// page and no data page (data_page_offset 0).
		{"arrow-go dictionary", []arrow.RecordBatch{empty}, nil, 0},
		// One row group of 0 rows whose chunks are 0 bytes at offset 0.
		{"arrow-go plain", []arrow.RecordBatch{empty}, []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}, 0},
		{"arrow-go v2 zstd", []arrow.RecordBatch{empty},
			[]parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Zstd)}, 0},
		{"arrow-go empty group between two", []arrow.RecordBatch{full, empty, full}, nil, 40},
		{"arrow-go plain empty group between two", []arrow.RecordBatch{full, empty, full},
			[]parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Snappy)}, 40},
		{"arrow-go all nulls", []arrow.RecordBatch{nulls5}, nil, 5},
		{"arrow-go all nulls, 0 rows", []arrow.RecordBatch{nulls0}, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := parquettest.WriteArrowBatches(t, tt.recs, tt.opts...)
			if rows := checkOracle(t, data); len(rows) != tt.rows {
				t.Fatalf("%d rows, want %d", len(rows), tt.rows)
			}
			chunks, err := Parse(data, Parquet, "/ds/cat.parquet")
			if tt.rows == 0 {
				checkNoRows(t, err, "/ds/cat.parquet")
				return
			}
			if err != nil || len(chunks) != tt.rows {
				t.Fatalf("Parse: %d chunks, %v; want %d", len(chunks), err, tt.rows)
			}
		})
	}
}

// TestParquetEmptyDuckDB: DuckDB writes an empty result as 0 row groups,
// and all-NULL columns with the type NULL (Parquet's UNKNOWN) or their own.
func TestParquetEmptyDuckDB(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, sql string
		rows      int
	}{
		{"where false", `SELECT 'a.arrow' AS url, 1::BIGINT AS length, 'x' AS segment_id WHERE false`, 0},
		{"empty range", `SELECT 'c' || i || '.arrow' AS url, i AS "offset" FROM range(0) t(i)`, 0},
		{"null columns", `SELECT 'c' || i || '.arrow' AS url, NULL AS length, NULL::BIGINT AS num_rows, NULL::VARCHAR AS chunk_id FROM range(3) t(i)`, 3},
		{"null columns, 0 rows", `SELECT 'c' || i || '.arrow' AS url, NULL AS length, NULL::BIGINT AS num_rows FROM range(3) t(i) WHERE i > 5`, 0},
	} {
		for _, codec := range []string{"uncompressed", "zstd"} {
			t.Run(tt.name+" "+codec, func(t *testing.T) {
				path := filepath.Join(dir, strings.ReplaceAll(tt.name+"-"+codec, " ", "_")+".parquet")
				parquettest.DuckDB(t, fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, COMPRESSION %s)", tt.sql, path, codec))
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if rows := checkOracle(t, data); len(rows) != tt.rows {
					t.Fatalf("%d rows, want %d", len(rows), tt.rows)
				}
				chunks, err := Parse(data, Parquet, path)
				if tt.rows == 0 {
					checkNoRows(t, err, path)
					return
				}
				if err != nil || len(chunks) != tt.rows || chunks[0].Length != -1 || chunks[0].NumRows != -1 || chunks[0].ChunkID != "c0" {
					t.Fatalf("Parse: %+v, %v", chunks, err)
				}
			})
		}
	}
}

// TestTextEmpty: the same for CSV and JSON catalogs.
func TestTextEmpty(t *testing.T) {
	for _, tt := range []struct {
		name   string
		format Format
		data   string
		rows   int
	}{
		{"csv empty file", CSV, "", 0},
		{"csv blank lines", CSV, "\n\n\r\n", 0},
		{"csv byte order mark only", CSV, "\ufeff", 0},
		{"csv header only", CSV, "url,length\n", 0},
		{"csv header without newline", CSV, "url,length", 0},
		{"csv header and blank lines", CSV, "url,length\n\n\n", 0},
		{"csv blank lines between rows", CSV, "\nurl,length\n\n/a.arrow,3\n\n/b.arrow,\n\n", 2},
		{"json empty file", JSON, "", 0},
		{"json blank", JSON, " \n\t\n", 0},
		{"json empty array", JSON, "[]", 0},
		{"json empty array and blanks", JSON, "\n [ \n ] \n", 0},
		{"json byte order mark and empty array", JSON, "\ufeff[]", 0},
		{"json byte order mark and array", JSON, "\ufeff[{\"url\": \"/a.arrow\"}]", 1},
		{"json lines with blank lines", JSON, "\n{\"url\": \"/a.arrow\"}\n\n\n{\"url\": \"/b.arrow\"}\n\n", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := Parse([]byte(tt.data), tt.format, "/ds/cat")
			if tt.rows == 0 {
				checkNoRows(t, err, "/ds/cat")
				return
			}
			if err != nil || len(chunks) != tt.rows {
				t.Fatalf("Parse: %+v, %v; want %d chunks", chunks, err, tt.rows)
			}
		})
	}
}

// checkNoRows checks err says that the catalog called name has no rows.
func checkNoRows(t *testing.T, err error, name string) {
	t.Helper()
	var ce *Error
	if !errors.Is(err, ErrNoChunks) || !errors.As(err, &ce) || ce.Catalog != name ||
		!strings.Contains(err.Error(), "catalog "+name+": no chunks: the catalog has no rows") {
		t.Fatalf("err = %v, want a *Error naming %s: the catalog has no rows", err, name)
	}
}
