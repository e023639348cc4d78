#!/usr/bin/env bash
# Build build/<mode>/remote_segments.duckdb_extension (mode: release | debug):
# the Go c-shared library exporting only remote_segments_init_c_api, then the
# DuckDB metadata footer. The Makefile and CMakeLists.txt both call this, so
# there is one build.
set -euo pipefail
mode=${1:-release}
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
version=${REMOTE_SEGMENTS_VERSION:-v0.1.0}
out="build/$mode"
mkdir -p "$out"

tools/fetch-duckdb-headers.sh >/dev/null

ldflags="-extldflags '-Wl,--version-script=$repo_root/extension/exports.map'"
gcflags=""
case "$mode" in
release) ldflags="-s -w $ldflags" ;;
debug) gcflags="all=-N -l" ;;
*) echo "build-extension: mode must be release or debug, not $mode" >&2; exit 2 ;;
esac

CGO_ENABLED=1 go build -buildmode=c-shared -trimpath -gcflags "$gcflags" -ldflags "$ldflags" \
	-o "$out/libremote_segments.so" ./extension
rm -f "$out/libremote_segments.h"
go run ./extension/footer -in "$out/libremote_segments.so" -out "$out/remote_segments.duckdb_extension" \
	-version "$version" -api v1.2.0 -platform linux_amd64
echo "built $out/remote_segments.duckdb_extension"
