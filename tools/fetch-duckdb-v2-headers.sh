#!/usr/bin/env bash
# Fetch the DuckDB 2.0.0 V2 C API function table for the 2.0 edition of the
# extension into build/include-v2/duckdb_ext_api_v2.h.
#
# Debian's libduckdb-dev 2.0.0 ships that table only inside the internal C++
# header duckdb/main/capi_v2/extension_api_v2.hpp (620 members, band v2.0.0),
# which includes a duckdb_v2.h the package lacks and ends in an inline C++
# function. This script takes the struct alone (from `typedef struct {` to
# `} duckdb_ext_api_v2;`); the types it names are written by hand in
# cabi/duckdb_v2_types.h and checked against the library by
# cabi/v2check (make test).
#
# Pinned: the package version and the sha256 of the .deb and of the header.
# Idempotent: when the extracted table is present with the recorded sum,
# nothing is fetched. The package comes through a private apt configuration
# (tools/private-apt.sh), never the machine's own.
set -euo pipefail

package=libduckdb-dev
version=2.0.0+dfsg2-1
deb_sha256=1ce46f2e7286e942ad3c319c7f838fc5d950dce9ca9698a2c294d79f44a439ff
hpp_sha256=005cb1456abecdb28990c20744b3baf0e29abc16136fce505f33ce53b48dcc9d
hpp=usr/include/duckdb/main/capi_v2/extension_api_v2.hpp

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$repo_root/build/include-v2"
out="$dest/duckdb_ext_api_v2.h"
stamp="$dest/duckdb_ext_api_v2.h.sha256"

die() { echo "fetch-duckdb-v2-headers: $*" >&2; exit 1; }

# The table is checked by the sum of the header it came from (stamp) and by
# its own content (the struct's name and member count).
if [[ -f "$out" && -f "$stamp" && "$(cat "$stamp")" == "$hpp_sha256" ]] && grep -q '} duckdb_ext_api_v2;' "$out"; then
	echo "DuckDB V2 function table present: $out"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tools/private-apt.sh
source "$repo_root/tools/private-apt.sh"
private_apt_setup "$tmp/apt" unstable amd64 "" >/dev/null
(cd "$tmp" && apt-get -q download "$package=$version" >/dev/null 2>&1) || die "apt-get download $package=$version failed"
deb=$(ls "$tmp"/${package}_*.deb 2>/dev/null | head -n1)
[[ -f "$deb" ]] || die "no .deb downloaded"
got=$(sha256sum "$deb" | cut -d' ' -f1)
[[ "$got" == "$deb_sha256" ]] || die "$(basename "$deb") has sha256 $got, expected $deb_sha256"

dpkg-deb -x "$deb" "$tmp/root"
[[ -f "$tmp/root/$hpp" ]] || die "$hpp not in $package $version"
got=$(sha256sum "$tmp/root/$hpp" | cut -d' ' -f1)
[[ "$got" == "$hpp_sha256" ]] || die "$hpp has sha256 $got, expected $hpp_sha256"

mkdir -p "$dest"
{
	echo "// The V2 C API function table of DuckDB 2.0.0: the struct of $hpp"
	echo "// from Debian's $package $version (sha256 $hpp_sha256),"
	echo "// extracted by tools/fetch-duckdb-v2-headers.sh. Include cabi/duckdb_v2_types.h first."
	echo "#pragma once"
	awk '/^typedef struct \{/ { on = 1 } on { print } /^\} duckdb_ext_api_v2;/ { exit }' "$tmp/root/$hpp"
} >"$out.tmp"
members=$(grep -c '(\*duckdb_v2_' "$out.tmp" || true)
[[ "$members" == 620 ]] || die "extracted table has $members members, expected 620"
mv "$out.tmp" "$out"
echo "$hpp_sha256" >"$stamp"
echo "DuckDB V2 function table ($members members) installed: $out"
