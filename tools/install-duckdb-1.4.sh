#!/usr/bin/env bash
# Install DuckDB 1.4.4's shared library into .tools/duckdb-1.4.4/libduckdb.so:
# the engine of the third C test host (tools/build-host.sh 1.4.4), so the
# claim that the extension loads in DuckDB 1.4 is tested. It comes from the
# npm package @duckdb/node-bindings-linux-x64@1.4.4-r.4 (no DuckDB 1.4 CLI is
# reachable from here); the package also holds the Node addon, which is not
# kept.
#
# Pinned: the package version and the library's sha256. Idempotent: when the
# library is present with that sum, nothing is fetched. The install is
# atomic (a rename), since .tools/ may be shared by several checkouts.
set -euo pipefail

package=@duckdb/node-bindings-linux-x64@1.4.4-r.4
sha256=1ef33048e12235115ac0d277a0aaccbb560e33248144f488b5ac005cd9ba81b5

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$repo_root/.tools/duckdb-1.4.4"
lib="$dest/libduckdb.so"

die() { echo "install-duckdb-1.4: $*" >&2; exit 1; }

if [[ -f "$lib" ]] && echo "$sha256  $lib" | sha256sum --check --status; then
	echo "DuckDB 1.4.4 library present: $lib"
	exit 0
fi

command -v npm >/dev/null || die "npm not found (needed to fetch $package)"
mkdir -p "$repo_root/.tools"
tmp=$(mktemp -d "$repo_root/.tools/.duckdb-1.4.4.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "$package" >/dev/null) || die "npm pack $package failed"
tarball=$(ls "$tmp"/*.tgz 2>/dev/null | head -1)
[[ -n "$tarball" ]] || die "npm pack $package produced no tarball"
tar -xzf "$tarball" -C "$tmp" package/libduckdb.so package/LICENSE || die "no libduckdb.so in $tarball"
got=$(sha256sum "$tmp/package/libduckdb.so" | cut -d' ' -f1)
[[ "$got" == "$sha256" ]] || die "libduckdb.so from $package has sha256 $got, expected $sha256"

mkdir -p "$tmp/install"
mv "$tmp/package/libduckdb.so" "$tmp/package/LICENSE" "$tmp/install/"
rm -rf "$dest.old"
[[ -e "$dest" ]] && mv "$dest" "$dest.old"
mv "$tmp/install" "$dest"
rm -rf "$dest.old"
echo "DuckDB 1.4.4 library installed: $lib"
