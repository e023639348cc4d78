#!/usr/bin/env bash
# Build a C test host from test/host/duckdb_host.c:
#
#   tools/build-host.sh [--force]          build/host/duckdb_host, linked against the
#                                          static DuckDB 1.5.6 of the Go driver's bindings
#                                          module (the pinned engine, host "engine")
#   tools/build-host.sh [--force] 1.4.4    build/host/duckdb_host_1.4.4, linked against
#                                          DuckDB 1.4.4's libduckdb.so
#                                          (tools/install-duckdb-1.4.sh, host "engine-1.4")
#
# The static link line follows the bindings' own cgo LDFLAGS
# (duckdb-go-bindings/lib/linux-amd64/prebuilt.go). The 1.4.4 host compiles
# against DuckDB 1.4.4's duckdb.h (tools/fetch-duckdb-headers.sh) and finds the
# library through its rpath.
#
# Idempotent: rebuilds only when the source or this script is newer than the
# binary. Pass --force to rebuild anyway.
set -euo pipefail

bindings_version=v0.10506.0

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$repo_root/test/host/duckdb_host.c"
out_dir="$repo_root/build/host"

die() { echo "build-host: $*" >&2; exit 1; }

force=0
if [[ "${1:-}" == "--force" ]]; then
	force=1
	shift
fi
engine=${1:-static}
case "$engine" in
static) bin="$out_dir/duckdb_host" ;;
1.4.4) bin="$out_dir/duckdb_host_1.4.4" ;;
*) die "engine must be 'static' (1.5.6) or 1.4.4, not $engine" ;;
esac

if [[ $force == 0 && -x "$bin" && "$bin" -nt "$src" && "$bin" -nt "${BASH_SOURCE[0]}" ]]; then
	echo "$(basename "$bin") up to date: $bin"
	exit 0
fi

CC=${CC:-gcc}
CXX=${CXX:-g++}
mkdir -p "$out_dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ "$engine" == 1.4.4 ]]; then
	"$repo_root/tools/install-duckdb-1.4.sh" >/dev/null
	"$repo_root/tools/fetch-duckdb-headers.sh" >/dev/null
	libdir=$(cd "$repo_root/.tools/duckdb-1.4.4" && pwd -P)
	"$CC" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -I"$repo_root/build/include" -c "$src" -o "$tmp/duckdb_host.o"
	"$CC" -o "$tmp/duckdb_host" "$tmp/duckdb_host.o" -L"$libdir" -lduckdb -Wl,-rpath,"$libdir"
else
	modcache=$(cd "$repo_root" && go env GOMODCACHE)
	lib="$modcache/github.com/duckdb/duckdb-go-bindings/lib/linux-amd64@$bindings_version"
	if [[ ! -f "$lib/libduckdb_static.a" ]]; then
		(cd "$repo_root" && go mod download "github.com/duckdb/duckdb-go-bindings/lib/linux-amd64@$bindings_version") ||
			die "cannot download github.com/duckdb/duckdb-go-bindings/lib/linux-amd64@$bindings_version"
	fi
	[[ -f "$lib/libduckdb_static.a" && -f "$lib/duckdb.h" ]] || die "no libduckdb_static.a / duckdb.h in $lib"
	"$CC" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra \
		-DDUCKDB_STATIC_BUILD -I"$lib" -c "$src" -o "$tmp/duckdb_host.o"
	"$CXX" -o "$tmp/duckdb_host" "$tmp/duckdb_host.o" -rdynamic -L"$lib" \
		-lduckdb_static -lduckdb_generated_extension_loader -lautocomplete_extension \
		-lcore_functions_extension -licu_extension -ljson_extension -lparquet_extension \
		-ltpcds_extension -ltpch_extension -lduckdb_fastpforlib -lduckdb_fmt -lduckdb_fsst \
		-lduckdb_hyperloglog -lduckdb_mbedtls -lduckdb_miniz -lduckdb_pg_query -lduckdb_re2 \
		-lduckdb_skiplistlib -lduckdb_utf8proc -lduckdb_yyjson -lduckdb_zstd \
		-lstdc++ -lm -ldl -lpthread
fi

mv "$tmp/duckdb_host" "$bin"
echo "built $bin (DuckDB $("$bin" -version))"
