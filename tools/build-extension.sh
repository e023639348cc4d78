#!/usr/bin/env bash
# Build the extension files:
#
#   tools/build-extension.sh [MODE] [PLATFORM]     MODE: release | debug | profile
#                                                  PLATFORM: linux_amd64 (default) | linux_arm64
#
#   build/<mode>/remote_segments.duckdb_extension         C API v1.2.0, loads in DuckDB 1.4-2.0
#   build/<mode>/v2.0.0/remote_segments.duckdb_extension  the DuckDB 2.0 edition (V2 C API,
#       ABI C_STRUCT_UNSTABLE v2.0.0: loads in DuckDB 2.0.0 only)
# and for linux_arm64 the same two under build/<mode>/linux_arm64/, cross-built
# by Go's cgo with the cross C compiler of tools/install-arm64.sh
# (.tools/bin/aarch64-linux-gnu-gcc, or $CC_LINUX_ARM64).
# Each is the Go c-shared library exporting only its entry point
# (remote_segments_init_c_api, or remote_segments_init_c_api_v2 built with
# the duckdb_v2 tag), then the DuckDB metadata footer. The Makefile and
# CMakeLists.txt both call this, so there is one build.
set -euo pipefail
mode=${1:-release}
platform=${2:-linux_amd64}
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
version=${REMOTE_SEGMENTS_VERSION:-v0.1.0}
out="build/$mode"
# goenv: the environment of the library's go build (never of `go run` of the
# footer tool, which runs here).
case "$platform" in
linux_amd64) goenv=(GOOS=linux GOARCH=amd64) ;;
linux_arm64)
	out="build/$mode/linux_arm64"
	cc=${CC_LINUX_ARM64:-$repo_root/.tools/bin/aarch64-linux-gnu-gcc}
	[[ -x "$cc" ]] || { echo "build-extension: no arm64 cross compiler at $cc (run tools/install-arm64.sh)" >&2; exit 1; }
	goenv=(GOOS=linux GOARCH=arm64 CC="$cc")
	;;
*) echo "build-extension: platform must be linux_amd64 or linux_arm64, not $platform" >&2; exit 2 ;;
esac
mkdir -p "$out" "$out/v2.0.0"

tools/fetch-duckdb-headers.sh >/dev/null
tools/fetch-duckdb-v2-headers.sh >/dev/null

gcflags=""
strip=""
case "$mode" in
release) strip="-s -w" ;;
debug) gcflags="all=-N -l" ;;
profile) ;; # optimized like release, with its symbols: perf sees the Go and C frames as they run
*) echo "build-extension: mode must be release, debug or profile, not $mode" >&2; exit 2 ;;
esac

# build <dir> <exports map> <go tags> <abi> <api>
build() {
	local dir=$1 map=$2 tags=$3 abi=$4 api=$5
	env CGO_ENABLED=1 "${goenv[@]}" go build -buildmode=c-shared -trimpath -tags "$tags" -gcflags "$gcflags" \
		-ldflags "$strip -extldflags '-Wl,--version-script=$repo_root/extension/$map'" \
		-o "$dir/libremote_segments.so" ./extension
	rm -f "$dir/libremote_segments.h"
	go run ./extension/footer -in "$dir/libremote_segments.so" -out "$dir/remote_segments.duckdb_extension" \
		-abi "$abi" -version "$version" -api "$api" -platform "$platform"
	echo "built $dir/remote_segments.duckdb_extension ($abi $api $platform)"
}
build "$out" exports.map "" C_STRUCT v1.2.0
build "$out/v2.0.0" exports_v2.map duckdb_v2 C_STRUCT_UNSTABLE v2.0.0
