package parquet

// The Parquet reader against two real writers (the DuckDB CLI and arrow-go's
// pqarrow) and against arrow-go's reader as the oracle. arrow-go is imported
// by these tests only: the extension's catalog reader does not link it.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

func allColumns(string) bool { return true }

// maxRows is the row bound of these tests' reads: the catalog's DefaultMaxChunks.
const maxRows = 5_000_000

// readAll reads every column of data, not strict.
func readAll(data []byte) ([]map[string]any, error) {
	return Read(data, allColumns, false, maxRows)
}

// catalogColumn is the catalog's want: its seven columns, read strictly.
func catalogColumn(name string) bool {
	switch name {
	case "url", "segment_id", "chunk_id", "offset", "length", "num_rows", "decoded_bytes":
		return true
	}
	return false
}

// checkOracle reads data both ways (all columns) and compares.
func checkOracle(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	return parquettest.CheckOracle(t, data, readAll)
}

// duckdbQuery is a table of every column type catalogs meet, with NULLs,
// in 5000 rows (three row groups at ROW_GROUP_SIZE 2048).
const duckdbQuery = `SELECT
  'seg' || (i // 100) || '/chunk-' || i || '.arrow' AS url,
  CASE WHEN i % 7 = 0 THEN NULL ELSE 'c' || (i % 13) END AS chunk_id,
  (i % 100)::TINYINT AS i8, (i * 3 - 200)::SMALLINT AS i16, (i * 1000 - 7)::INTEGER AS i32, (i * 100000007)::BIGINT AS i64,
  (i % 200)::UTINYINT AS u8, (i * 7)::USMALLINT AS u16, (i * 70000)::UINTEGER AS u32, (i::UBIGINT * 3000000000000000) AS u64,
  CASE WHEN i % 5 = 0 THEN NULL ELSE i * 4096 END AS "offset",
  CASE WHEN i % 3 = 0 THEN NULL ELSE i / 3.0 END AS dbl, (i / 7.0)::FLOAT AS flt,
  i % 2 = 0 AS flag, DATE '2020-01-01' + (i % 50)::INTEGER AS day,
  '00000000-0000-0000-0000-0000000000' || lpad((i % 100)::VARCHAR, 2, '0') AS uuid_text,
  ('00000000-0000-0000-0000-0000000000' || lpad((i % 100)::VARCHAR, 2, '0'))::UUID AS uid,
  CASE WHEN i % 11 = 0 THEN NULL ELSE 'same' END AS constant
FROM range(5000) t(i)`

func TestParquetDuckDB(t *testing.T) {
	dir := t.TempDir()
	for _, version := range []string{"v1", "v2"} {
		for _, codec := range []string{"uncompressed", "snappy", "gzip", "zstd", "lz4"} {
			name := version + "-" + codec
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(dir, name+".parquet")
				parquettest.DuckDB(t, fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, COMPRESSION %s, ROW_GROUP_SIZE 2048, PARQUET_VERSION %s)",
					duckdbQuery, path, codec, version))
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				rows := checkOracle(t, data)
				if len(rows) != 5000 || rows[4999]["url"] != "seg49/chunk-4999.arrow" || rows[4999]["u64"] != uint64(4999*3000000000000000) ||
					rows[7]["chunk_id"] != nil || rows[8]["i16"] != int64(-176) || rows[9]["uid"] != "00000000-0000-0000-0000-000000000009" {
					t.Fatalf("rows read wrong: %v ... %v", rows[7], rows[4999])
				}
				if u, ok := rows[0]["flag"].(unsupported); !ok || !strings.Contains(u.String(), "BOOLEAN") {
					t.Fatalf("flag = %v (%T), want unsupported BOOLEAN", rows[0]["flag"], rows[0]["flag"])
				}
			})
		}
	}
}

func TestParquetArrowWriter(t *testing.T) {
	rec := parquettest.ArrowTable(1000)
	defer rec.Release()
	codecs := []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Zstd, compress.Codecs.Lz4Raw}
	for _, codec := range codecs {
		for _, page := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
			for _, enc := range []string{"dict", "plain", "delta"} {
				name := fmt.Sprintf("%s-v%d-%s", codec, page+1, enc)
				t.Run(name, func(t *testing.T) {
					opts := []parquet.WriterProperty{parquet.WithCompression(codec), parquet.WithDataPageVersion(page),
						parquet.WithMaxRowGroupLength(300), parquet.WithDataPageSize(512), parquet.WithBatchSize(64)}
					switch enc {
					case "plain":
						opts = append(opts, parquet.WithDictionaryDefault(false))
					case "delta":
						opts = append(opts, parquet.WithDictionaryDefault(false),
							parquet.WithEncodingFor("url", parquet.Encodings.DeltaByteArray),
							parquet.WithEncodingFor("opt_str", parquet.Encodings.DeltaLengthByteArray),
							parquet.WithEncodingFor("bin", parquet.Encodings.DeltaByteArray),
							parquet.WithEncodingFor("i16", parquet.Encodings.DeltaBinaryPacked),
							parquet.WithEncodingFor("i32", parquet.Encodings.DeltaBinaryPacked),
							parquet.WithEncodingFor("i64", parquet.Encodings.DeltaBinaryPacked),
							parquet.WithEncodingFor("u64", parquet.Encodings.DeltaBinaryPacked),
							parquet.WithEncodingFor("f32", parquet.Encodings.ByteStreamSplit),
							parquet.WithEncodingFor("f64", parquet.Encodings.ByteStreamSplit),
							parquet.WithEncodingFor("u32", parquet.Encodings.ByteStreamSplit),
							parquet.WithEncodingFor("fixed", parquet.Encodings.ByteStreamSplit))
					}
					data := parquettest.WriteArrow(t, rec, opts...)
					rows := checkOracle(t, data)
					if rows[999]["url"] != "seg19/chunk-999.arrow" || rows[997]["fixed"] != "ajz" || rows[3]["opt_str"] != nil {
						t.Fatalf("rows read wrong: %v %v", rows[3], rows[997])
					}
				})
			}
		}
	}
}

func TestParquetMalformed(t *testing.T) {
	rec := parquettest.ArrowTable(20)
	defer rec.Release()
	good := parquettest.WriteArrow(t, rec, parquet.WithCompression(compress.Codecs.Snappy))
	// Every truncation and every single-byte corruption of a good file is
	// rows or an error, never a panic (the recover wrapper would say
	// "internal error").
	for n := 0; n < len(good); n++ {
		if _, err := Read(good[:n], allColumns, false, maxRows); err == nil {
			t.Fatalf("the first %d bytes of %d read without error", n, len(good))
		} else if strings.Contains(err.Error(), "internal error") {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	for i := 0; i < len(good); i++ {
		for _, x := range []byte{0x01, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= x
			if _, err := Read(bad, allColumns, false, maxRows); err != nil && strings.Contains(err.Error(), "internal error") {
				t.Fatalf("byte %d ^ %#x: %v", i, x, err)
			}
		}
	}
	for _, tt := range []struct{ name, data, want string }{
		{"empty", "", "not a Parquet file"},
		{"no footer", "PAR1PAR1", "not a Parquet file"},
		{"encrypted", "PAR1....\x00\x00\x00\x00PARE", "encrypted"},
		{"footer too long", "PAR1....\xff\x00\x00\x00PAR1", "footer of 255 bytes"},
		{"bad thrift", "PAR1\x15\xff\xff\x03\x00\x00\x00PAR1", "footer: thrift"},
	} {
		if _, err := Read([]byte(tt.data), catalogColumn, true, maxRows); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// FuzzParquetCatalog: our reader never panics, and where it and pqarrow both
// read an input, the rows are equal. The seeds are small files of arrow-go's
// writer, and DuckDB's in testdata/fuzz/FuzzParquetCatalog (made by
// testdata/duckdb-seeds.sh).
func FuzzParquetCatalog(f *testing.F) {
	rec := parquettest.ArrowTable(20)
	defer rec.Release()
	f.Add(parquettest.CatalogFile(f))
	for _, opts := range [][]parquet.WriterProperty{
		nil,
		{parquet.WithDictionaryDefault(false), parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Zstd)},
		{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(7), parquet.WithDataPageSize(64)},
		{parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Gzip),
			parquet.WithEncodingFor("url", parquet.Encodings.DeltaByteArray), parquet.WithEncodingFor("opt_str", parquet.Encodings.DeltaLengthByteArray),
			parquet.WithEncodingFor("i64", parquet.Encodings.DeltaBinaryPacked), parquet.WithEncodingFor("f64", parquet.Encodings.ByteStreamSplit)},
	} {
		f.Add(parquettest.WriteArrow(f, rec, opts...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ours, err := Read(data, allColumns, false, maxRows)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatal(err)
			}
			return
		}
		if _, err := Read(data, catalogColumn, true, maxRows); err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatal(err)
		}
		theirs, err := parquettest.OracleRows(data)
		if err != nil {
			return
		}
		if err := parquettest.SameRows(ours, theirs); err != nil {
			t.Fatal(err)
		}
	})
}

// TestExtensionLinksNoParquetLibrary: the catalog reader is why the
// extension once linked arrow-go's Parquet packages (and through them grpc
// and protobuf): 33 MB and 30 MiB of RSS in every process that loads it.
func TestExtensionLinksNoParquetLibrary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command to list the extension's packages: %v", err)
	}
	out, err := exec.Command("go", "list", "-deps", "../../../../extension").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ../../../../extension: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "arrow-go/v18/parquet") || strings.Contains(dep, "google.golang.org/grpc") ||
			strings.Contains(dep, "google.golang.org/protobuf") || strings.Contains(dep, "apache/thrift") {
			t.Errorf("the extension depends on %s", dep)
		}
	}
}
