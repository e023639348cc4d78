#!/usr/bin/env bash
# Build build/host/duckdb_host: test/host/duckdb_host.c linked against the
# static DuckDB 1.5.6 of the Go driver's bindings module (the pinned engine, the
# second SQL test host). The link line follows the bindings' own cgo LDFLAGS
# (duckdb-go-bindings/lib/linux-amd64/prebuilt.go).
#
# Idempotent: rebuilds only when the source or this script is newer than the
# binary. Pass --force to rebuild anyway.
set -euo pipefail

bindings_version=v0.10506.0

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$repo_root/test/host/duckdb_host.c"
out_dir="$repo_root/build/host"
bin="$out_dir/duckdb_host"

die() { echo "build-host: $*" >&2; exit 1; }

if [[ "${1:-}" != "--force" && -x "$bin" && "$bin" -nt "$src" && "$bin" -nt "${BASH_SOURCE[0]}" ]]; then
	echo "duckdb_host up to date: $bin"
	exit 0
fi

modcache=$(cd "$repo_root" && go env GOMODCACHE)
lib="$modcache/github.com/duckdb/duckdb-go-bindings/lib/linux-amd64@$bindings_version"
if [[ ! -f "$lib/libduckdb_static.a" ]]; then
	(cd "$repo_root" && go mod download "github.com/duckdb/duckdb-go-bindings/lib/linux-amd64@$bindings_version") ||
		die "cannot download github.com/duckdb/duckdb-go-bindings/lib/linux-amd64@$bindings_version"
fi
[[ -f "$lib/libduckdb_static.a" && -f "$lib/duckdb.h" ]] || die "no libduckdb_static.a / duckdb.h in $lib"

CC=${CC:-gcc}
CXX=${CXX:-g++}
mkdir -p "$out_dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$CC" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra \
	-DDUCKDB_STATIC_BUILD -I"$lib" -c "$src" -o "$tmp/duckdb_host.o"
"$CXX" -o "$tmp/duckdb_host" "$tmp/duckdb_host.o" -rdynamic -L"$lib" \
	-lduckdb_static -lduckdb_generated_extension_loader -lautocomplete_extension \
	-lcore_functions_extension -licu_extension -ljson_extension -lparquet_extension \
	-ltpcds_extension -ltpch_extension -lduckdb_fastpforlib -lduckdb_fmt -lduckdb_fsst \
	-lduckdb_hyperloglog -lduckdb_mbedtls -lduckdb_miniz -lduckdb_pg_query -lduckdb_re2 \
	-lduckdb_skiplistlib -lduckdb_utf8proc -lduckdb_yyjson -lduckdb_zstd \
	-lstdc++ -lm -ldl -lpthread

mv "$tmp/duckdb_host" "$bin"
echo "built $bin (DuckDB $("$bin" -version))"
