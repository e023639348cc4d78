#!/usr/bin/env bash
# Provision the newest Debian DuckDB CLI (package `duckdb` from Debian's
# unstable suite) into .tools/duckdb/ without installing anything system-wide,
# and write the wrapper .tools/bin/duckdb that starts it through the unpacked
# dynamic loader.
#
# How: a private apt configuration (tools/private-apt.sh: own sources list,
# state, cache, an empty dpkg status so apt fetches the package's whole
# dependency closure, no system apt.conf.d hooks) whose mirror URI is read from
# the machine's own apt sources; `apt-get install --download-only`;
# `dpkg-deb -x` of every .deb into .tools/duckdb/root.
#
# Idempotent: when the wrapper exists and answers `-version`, nothing is done.
# Pass --force to provision again. Exits non-zero with a message when the
# package cannot be had.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools_dir="$repo_root/.tools"
prefix="$tools_dir/duckdb"
root="$prefix/root"
wrapper="$tools_dir/bin/duckdb"
apt_dir="$tools_dir/apt"
suite=${DUCKDB_DEBIAN_SUITE:-unstable}
package=duckdb

die() { echo "install-duckdb-cli: $*" >&2; exit 1; }

check_wrapper() {
	[[ -x "$wrapper" ]] || return 1
	local v
	v=$("$wrapper" -version 2>/dev/null) || return 1
	[[ "$v" == v* ]] || return 1
	echo "$v"
}

force=0
[[ "${1:-}" == "--force" ]] && force=1

if [[ $force -eq 0 ]] && version=$(check_wrapper); then
	echo "duckdb CLI already provisioned: $version ($wrapper)"
	exit 0
fi

# shellcheck source=tools/private-apt.sh
source "$repo_root/tools/private-apt.sh"
# An empty status: apt downloads the package's whole dependency closure.
private_apt_setup "$apt_dir" "$suite" amd64 ""
candidate=$(apt_candidate "$package") ||
	die "package '$package' is not available in Debian $suite"
echo "install-duckdb-cli: $package $candidate"

# An empty dpkg status makes apt download the full dependency closure
# (libc6, libstdc++6, libduckdb, ...): nothing of the host's libraries is used.
apt-get -q -y install --download-only "$package" ||
	die "downloading $package $candidate and its dependencies failed"

rm -rf "$prefix"
mkdir -p "$root"
shopt -s nullglob
debs=("$apt_dir"/cache/archives/*.deb)
[[ ${#debs[@]} -gt 0 ]] || die "no .deb files were downloaded"
for deb in "${debs[@]}"; do
	dpkg-deb -x "$deb" "$root"
done
echo "$candidate" >"$prefix/VERSION"

loader=
for l in "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$root/usr/lib64/ld-linux-x86-64.so.2" "$root/lib64/ld-linux-x86-64.so.2"; do
	if [[ -e "$l" ]]; then loader=$l; break; fi
done
[[ -n "$loader" ]] || die "no ld-linux-x86-64.so.2 in the unpacked packages"
[[ -x "$root/usr/bin/duckdb" ]] || die "no usr/bin/duckdb in the unpacked packages"

# Paths in the wrapper are relative to .tools/, so the folder may move.
rel() { echo "\$tools/${1#"$tools_dir"/}"; }
libpath=
for d in "$root/usr/lib/x86_64-linux-gnu" "$root/lib/x86_64-linux-gnu"; do
	[[ -d "$d" ]] && libpath+="${libpath:+:}$(rel "$d")"
done

mkdir -p "$(dirname "$wrapper")"
cat >"$wrapper" <<EOF
#!/bin/sh
# Debian's DuckDB CLI $candidate ($suite), unpacked by tools/install-duckdb-cli.sh.
tools=\$(cd "\$(dirname "\$0")/.." && pwd)
exec "$(rel "$loader")" --library-path "$libpath" "$(rel "$root/usr/bin/duckdb")" "\$@"
EOF
chmod +x "$wrapper"

# The downloaded archives and package lists are no longer needed.
rm -rf "$apt_dir"

version=$(check_wrapper) || die "the unpacked CLI does not start: $("$wrapper" -version 2>&1 | head -n5)"
out=$("$wrapper" -unsigned -batch -init /dev/null -list -noheader -c 'SELECT 42' 2>&1) ||
	die "'duckdb -unsigned -c \"SELECT 42\"' failed: $out"
[[ "$out" == 42 ]] || die "'SELECT 42' printed '$out'"
echo "duckdb CLI $version ($candidate) ready: $wrapper (-unsigned and SELECT 42 checked)"
