package catalog

// The Parquet reader against two real writers (the DuckDB CLI and arrow-go's
// pqarrow) and against arrow-go's reader as the oracle. arrow-go is imported
// by these tests only: the extension's catalog reader does not link it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// oracleRows reads data with pqarrow, mapping values as the catalog did
// before it had its own reader.
func oracleRows(data []byte) (rows []Row, err error) {
	defer func() {
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("pqarrow panicked: %v", r)
		}
	}()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	rows = make([]Row, tbl.NumRows())
	for i := range rows {
		rows[i] = Row{}
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		i := 0
		for _, chunk := range col.Data().Chunks() {
			for j := 0; j < chunk.Len(); j++ {
				if i >= len(rows) {
					return nil, errors.New("pqarrow: more values than rows")
				}
				if v := arrowValue(chunk, j); v != nil {
					rows[i][col.Name()] = v
				}
				i++
			}
		}
	}
	return rows, nil
}

// arrowValue is what parquetRows made of an arrow value before: string,
// int64, uint64, float64, nil, or "unsupported <type>".
func arrowValue(a arrow.Array, j int) any {
	if a.IsNull(j) {
		return nil
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(j)
	case *array.LargeString:
		return a.Value(j)
	case *array.StringView:
		return a.Value(j)
	case *array.Binary:
		return string(a.Value(j))
	case *array.Int8:
		return int64(a.Value(j))
	case *array.Int16:
		return int64(a.Value(j))
	case *array.Int32:
		return int64(a.Value(j))
	case *array.Int64:
		return a.Value(j)
	case *array.Uint8:
		return int64(a.Value(j))
	case *array.Uint16:
		return int64(a.Value(j))
	case *array.Uint32:
		return int64(a.Value(j))
	case *array.Uint64:
		return a.Value(j)
	case *array.Float32:
		return float64(a.Value(j))
	case *array.Float64:
		return a.Value(j)
	case *array.Dictionary:
		return arrowValue(a.Dictionary(), a.GetValueIndex(j))
	}
	return fmt.Sprintf("unsupported %s", a.DataType())
}

func allColumns(string) bool { return true }

// sameRows compares our rows with the oracle's: equal values of equal Go
// types, except where the oracle had no catalog value for the type
// ("unsupported ..."): there ours is unsupported too, or a string (we read
// FIXED_LEN_BYTE_ARRAY and UUID as text).
func sameRows(ours, theirs []Row) error {
	if len(ours) != len(theirs) {
		return fmt.Errorf("%d rows, the oracle %d", len(ours), len(theirs))
	}
	for i := range ours {
		for k, tv := range theirs[i] {
			ov, ok := ours[i][k]
			if s, isStr := tv.(string); isStr && strings.HasPrefix(s, "unsupported ") {
				if _, isUns := ov.(unsupported); ok && !isUns {
					if _, isStr := ov.(string); !isStr {
						return fmt.Errorf("row %d %q: %v (%T), the oracle %q", i, k, ov, ov, s)
					}
				}
				continue
			}
			if !ok || !reflect.DeepEqual(ov, tv) {
				if f1, ok1 := ov.(float64); ok1 {
					if f2, ok2 := tv.(float64); ok2 && f1 != f1 && f2 != f2 {
						continue // both NaN
					}
				}
				return fmt.Errorf("row %d %q: %v (%T), the oracle %v (%T)", i, k, ov, ov, tv, tv)
			}
		}
		for k, ov := range ours[i] {
			if _, ok := theirs[i][k]; !ok {
				return fmt.Errorf("row %d %q: %v (%T), the oracle has no value", i, k, ov, ov)
			}
		}
	}
	return nil
}

// checkOracle reads data both ways (all columns) and compares.
func checkOracle(t *testing.T, data []byte) []Row {
	t.Helper()
	ours, err := readParquet(data, allColumns, false, DefaultMaxChunks)
	if err != nil {
		t.Fatalf("our reader: %v", err)
	}
	theirs, err := oracleRows(data)
	if err != nil {
		t.Fatalf("pqarrow: %v", err)
	}
	if err := sameRows(ours, theirs); err != nil {
		t.Fatal(err)
	}
	return ours
}

// duckdb runs the DuckDB CLI, or skips saying why.
func duckdb(t *testing.T, sql string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cli := filepath.Join(filepath.Dir(file), "..", "..", ".tools", "bin", "duckdb")
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("no DuckDB CLI at %s (%v): the DuckDB-written files are not tested", cli, err)
	}
	out, err := exec.Command(cli, "-c", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
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
				duckdb(t, fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, COMPRESSION %s, ROW_GROUP_SIZE 2048, PARQUET_VERSION %s)",
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

// TestParquetDuckDBCatalog: a catalog as DuckDB writes it, through Parse.
func TestParquetDuckDBCatalog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cat.parquet")
	duckdb(t, "COPY (SELECT 'seg' || (i // 2) || '/c' || i || '.arrow' AS url, (i // 2)::INTEGER AS segment_id, i * 100 AS \"offset\","+
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
		{"date offset", "SELECT 'a.arrow' AS url, DATE '2020-01-01' AS \"offset\"", "", `column "offset" is DATE (INT32)`},
		{"bool url", "SELECT true AS url", "", `column "url" is BOOLEAN`},
		{"timestamp length", "SELECT 'a.arrow' AS url, TIMESTAMP '2020-01-01' AS length", "", `column "length" is TIMESTAMP (INT64)`},
		{"decimal", "SELECT 'a.arrow' AS url, 1.5::DECIMAL(10,2) AS num_rows", "", `column "num_rows" is DECIMAL (INT64)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".parquet")
			opts := "FORMAT parquet"
			if tt.opts != "" {
				opts += ", " + tt.opts
			}
			duckdb(t, fmt.Sprintf("COPY (%s) TO '%s' (%s)", tt.sql, path, opts))
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

// arrowTable is a record of every flat type pqarrow writes, with NULLs in
// the optional columns, n rows.
func arrowTable(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "opt_str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "fixed", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		null := i%5 == 3
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("seg%d/chunk-%d.arrow", i/50, i))
		if null {
			for _, f := range []int{1, 2, 3, 5, 8, 10, 12, 13, 14, 15} {
				b.Field(f).AppendNull()
			}
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i%17))
			b.Field(2).(*array.BinaryBuilder).Append([]byte{byte(i), 0, 255})
			b.Field(3).(*array.Int8Builder).Append(int8(i))
			b.Field(5).(*array.Int32Builder).Append(int32(i * -100003))
			b.Field(8).(*array.Uint16Builder).Append(uint16(i * 31))
			b.Field(10).(*array.Uint64Builder).Append(uint64(i) * 0x8000000000001)
			b.Field(12).(*array.Float64Builder).Append(float64(i) / 3)
			b.Field(13).(*array.BooleanBuilder).Append(i%2 == 0)
			b.Field(14).(*array.FixedSizeBinaryBuilder).Append([]byte{'a', byte('a' + i%26), 'z'})
			b.Field(15).(*array.Date32Builder).Append(arrow.Date32(i))
		}
		b.Field(4).(*array.Int16Builder).Append(int16(i - 1000))
		b.Field(6).(*array.Int64Builder).Append(int64(i) * 1e12)
		b.Field(7).(*array.Uint8Builder).Append(uint8(i))
		b.Field(9).(*array.Uint32Builder).Append(uint32(i) * 3000000)
		b.Field(11).(*array.Float32Builder).Append(float32(i) / 7)
	}
	return b.NewRecordBatch()
}

func writeArrow(t testing.TB, rec arrow.RecordBatch, opts ...parquet.WriterProperty) []byte {
	t.Helper()
	return writeArrowBatches(t, []arrow.RecordBatch{rec}, opts...)
}

// writeArrowBatches writes each record as its own row group (pqarrow's
// Write makes one per call, also for a record of 0 rows).
func writeArrowBatches(t testing.TB, recs []arrow.RecordBatch, opts ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(recs[0].Schema(), &buf, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestParquetArrowWriter(t *testing.T) {
	rec := arrowTable(1000)
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
					data := writeArrow(t, rec, opts...)
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
	rec := arrowTable(20)
	defer rec.Release()
	good := writeArrow(t, rec, parquet.WithCompression(compress.Codecs.Snappy))
	// Every truncation and every single-byte corruption of a good file is
	// rows or an error, never a panic (the recover wrapper would say
	// "internal error").
	for n := 0; n < len(good); n++ {
		if _, err := readParquet(good[:n], allColumns, false, DefaultMaxChunks); err == nil {
			t.Fatalf("the first %d bytes of %d read without error", n, len(good))
		} else if strings.Contains(err.Error(), "internal error") {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	for i := 0; i < len(good); i++ {
		for _, x := range []byte{0x01, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= x
			if _, err := readParquet(bad, allColumns, false, DefaultMaxChunks); err != nil && strings.Contains(err.Error(), "internal error") {
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
		if _, err := parquetRows([]byte(tt.data), DefaultMaxChunks); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// FuzzParquetCatalog: our reader never panics, and where it and pqarrow both
// read an input, the rows are equal. The seeds are small files of arrow-go's
// writer, and DuckDB's in testdata/fuzz/FuzzParquetCatalog (made by
// testdata/duckdb-seeds.sh).
func FuzzParquetCatalog(f *testing.F) {
	rec := arrowTable(20)
	defer rec.Release()
	f.Add(parquetCatalog(f))
	for _, opts := range [][]parquet.WriterProperty{
		nil,
		{parquet.WithDictionaryDefault(false), parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Zstd)},
		{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(7), parquet.WithDataPageSize(64)},
		{parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Gzip),
			parquet.WithEncodingFor("url", parquet.Encodings.DeltaByteArray), parquet.WithEncodingFor("opt_str", parquet.Encodings.DeltaLengthByteArray),
			parquet.WithEncodingFor("i64", parquet.Encodings.DeltaBinaryPacked), parquet.WithEncodingFor("f64", parquet.Encodings.ByteStreamSplit)},
	} {
		f.Add(writeArrow(f, rec, opts...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ours, err := readParquet(data, allColumns, false, DefaultMaxChunks)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatal(err)
			}
			return
		}
		if _, err := parquetRows(data, DefaultMaxChunks); err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatal(err)
		}
		theirs, err := oracleRows(data)
		if err != nil {
			return
		}
		if err := sameRows(ours, theirs); err != nil {
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
	out, err := exec.Command("go", "list", "-deps", "../../extension").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ../../extension: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "arrow-go/v18/parquet") || strings.Contains(dep, "google.golang.org/grpc") ||
			strings.Contains(dep, "google.golang.org/protobuf") || strings.Contains(dep, "apache/thrift") {
			t.Errorf("the extension depends on %s", dep)
		}
	}
}
