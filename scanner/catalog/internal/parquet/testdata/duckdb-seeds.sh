#!/usr/bin/env bash
# Writes the DuckDB-made seeds of FuzzParquetCatalog: small Parquet files in
# the shapes a catalog has (strings, integers of each width, doubles, NULLs,
# several row groups), PARQUET_VERSION V1 and V2 (data page V2, DELTA and
# BYTE_STREAM_SPLIT encodings), one per codec. Run from scanner/catalog/internal/parquet.
set -euo pipefail
cli=${DUCKDB:-../../../../.tools/bin/duckdb}
out=testdata/fuzz/FuzzParquetCatalog
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
query="SELECT 'seg' || (i // 4) || '/c' || i || '.arrow' AS url,
  CASE WHEN i % 3 = 0 THEN NULL ELSE 'k' || (i % 5) END AS chunk_id,
  (i % 100)::TINYINT AS i8, (i * 3 - 200)::SMALLINT AS i16, (i * 1000 - 7)::INTEGER AS i32,
  CASE WHEN i % 4 = 0 THEN NULL ELSE i * 100000007 END AS \"offset\",
  (i * 7)::USMALLINT AS u16, (i::UBIGINT * 3000000000000000) AS length,
  CASE WHEN i % 3 = 0 THEN NULL ELSE i / 3.0 END AS dbl, (i / 7.0)::FLOAT AS flt
FROM range(9) t(i)"
for v in v1 v2; do
	for c in uncompressed snappy gzip zstd lz4; do
		"$cli" -c "SET threads = 1; COPY ($query) TO '$tmp/$v-$c.parquet' (FORMAT parquet, COMPRESSION $c, PARQUET_VERSION $v, ROW_GROUP_SIZE 4)"
	done
done
cat > "$tmp/seed.go" <<'GO'
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	for _, in := range os.Args[2:] {
		data, err := os.ReadFile(in)
		if err != nil {
			panic(err)
		}
		name := "duckdb-" + filepath.Base(in[:len(in)-len(".parquet")])
		if err := os.WriteFile(filepath.Join(os.Args[1], name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data), 0o644); err != nil {
			panic(err)
		}
	}
}
GO
go run "$tmp/seed.go" "$out" "$tmp"/*.parquet
