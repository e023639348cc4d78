#!/usr/bin/env bash
# Fetch duckdb_extension.h and its matching duckdb.h (DuckDB C API headers) from
# the npm package duckdb@1.4.4 into build/include/. The extension is compiled
# against them with DUCKDB_EXTENSION_API_VERSION 1.2.0, which loads in DuckDB
# 1.4.x, 1.5.x and 2.0.x.
#
# Pinned: the package version and the sha256 of both headers. Idempotent: when
# both headers are present with the recorded sums, nothing is fetched.
set -euo pipefail

version=1.4.4
declare -A sha256=(
	[duckdb_extension.h]=514a5b639cd800e90f1556e8e039cff7f0b4a256e461754dd55caf79dc16db00
	[duckdb.h]=cbe6a827284375c5a646b8f27dbd3a00808ce8738b5bbb49c190cb1e08540281
)

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$repo_root/build/include"

die() { echo "fetch-duckdb-headers: $*" >&2; exit 1; }

verified() {
	local name
	for name in "${!sha256[@]}"; do
		[[ -f "$dest/$name" ]] || return 1
		echo "${sha256[$name]}  $dest/$name" | sha256sum --check --status || return 1
	done
}

if verified; then
	echo "DuckDB $version headers present: $dest"
	exit 0
fi

command -v npm >/dev/null || die "npm not found (needed to fetch the npm package duckdb@$version)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "duckdb@$version" >/dev/null) || die "npm pack duckdb@$version failed"
tarball="$tmp/duckdb-$version.tgz"
[[ -f "$tarball" ]] || die "npm pack did not produce $tarball"

members=()
for name in "${!sha256[@]}"; do
	members+=("package/src/duckdb/src/include/$name")
done
tar -xzf "$tarball" -C "$tmp" "${members[@]}" || die "headers not found in $tarball"

for name in "${!sha256[@]}"; do
	got=$(sha256sum "$tmp/package/src/duckdb/src/include/$name" | cut -d' ' -f1)
	[[ "$got" == "${sha256[$name]}" ]] ||
		die "$name from duckdb@$version has sha256 $got, expected ${sha256[$name]}"
done

mkdir -p "$dest"
for name in "${!sha256[@]}"; do
	install -m 0644 "$tmp/package/src/duckdb/src/include/$name" "$dest/$name"
done
verified || die "verification after install failed"
echo "DuckDB $version headers installed: $dest/{duckdb_extension.h,duckdb.h}"
