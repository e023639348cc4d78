#!/usr/bin/env bash
# Provision what linux_arm64 needs, into .tools/ only (nothing system-wide):
#
#   .tools/bin/aarch64-linux-gnu-gcc   Debian's cross C compiler (gcc-aarch64-linux-gnu and
#                                      libc6-dev-arm64-cross, from the machine's own suite),
#                                      the CC of Go's cgo cross build
#   .tools/bin/qemu-aarch64-static     qemu-user, to run arm64 programs on this machine
#   .tools/bin/duckdb-arm64            Debian's DuckDB CLI for arm64 (package duckdb:arm64
#                                      from the unstable suite, its whole arm64 dependency
#                                      closure), started under qemu through its own loader
#
# How: tools/private-apt.sh (a private apt configuration, `apt-get install
# --download-only`, `dpkg-deb -x`). The cross compiler's own dependencies
# (libmpc, libisl, ...) are those of the machine's gcc: apt is given the
# machine's dpkg status so it fetches only what is missing, and the wrapper
# puts whatever it fetched on the library path. The arm64 CLI gets an empty
# status: all of its libraries are arm64 ones from the same suite.
#
# Idempotent: a part whose wrapper answers is left alone; --force provisions
# again. Exits non-zero with a message when a package cannot be had.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools_dir="$repo_root/.tools"
prefix="$tools_dir/arm64"
bin="$tools_dir/bin"
cross_suite=${CROSS_DEBIAN_SUITE:-bookworm}
duckdb_suite=${DUCKDB_DEBIAN_SUITE:-unstable}

die() { echo "install-arm64: $*" >&2; exit 1; }
# shellcheck source=tools/private-apt.sh
source "$repo_root/tools/private-apt.sh"

force=0
[[ "${1:-}" == "--force" ]] && force=1

# Paths in the wrappers are relative to .tools/, so the folder may move.
rel() { echo "\$tools/${1#"$tools_dir"/}"; }

# fetch DEST SUITE ARCH STATUS PACKAGE... downloads the packages and their
# dependencies and unpacks them into DEST/root (replacing it).
fetch() {
	local dest=$1 suite=$2 arch=$3 status=$4
	shift 4
	local apt_dir="$dest.apt"
	private_apt_setup "$apt_dir" "$suite" "$arch" "$status"
	local p
	for p in "$@"; do
		apt_candidate "$p" >/dev/null || die "package '$p' ($arch) is not available in Debian $suite"
		echo "install-arm64: $p $(apt_candidate "$p") ($arch, $suite)"
	done
	apt-get -q -y install --download-only "$@" || die "downloading $* ($arch, $suite) failed"
	local tmp="$dest.new"
	rm -rf "$tmp"
	mkdir -p "$tmp/root"
	shopt -s nullglob
	local debs=("$apt_dir"/cache/archives/*.deb)
	shopt -u nullglob
	[[ ${#debs[@]} -gt 0 ]] || die "no .deb files were downloaded for $*"
	local deb
	for deb in "${debs[@]}"; do
		dpkg-deb -x "$deb" "$tmp/root"
		dpkg-deb -f "$deb" Package Version Architecture | paste -sd' ' >>"$tmp/PACKAGES"
	done
	rm -rf "$apt_dir" "$dest"
	mv "$tmp" "$dest"
	unset APT_CONFIG
}

# The cross compiler and qemu-user.
check_cross() {
	[[ -x "$bin/aarch64-linux-gnu-gcc" && -x "$bin/qemu-aarch64-static" ]] || return 1
	local t
	t=$(mktemp -d) || return 1
	printf '#include <stdio.h>\nint main(void){puts("arm64 ok");return 0;}\n' >"$t/a.c"
	"$bin/aarch64-linux-gnu-gcc" -o "$t/a" "$t/a.c" 2>"$t/err" &&
		[[ "$("$bin/qemu-aarch64-static" -L "$prefix/cross/root/usr/aarch64-linux-gnu" "$t/a" 2>>"$t/err")" == "arm64 ok" ]]
	local rc=$?
	[[ $rc -eq 0 ]] || sed 's/^/install-arm64: /' "$t/err" >&2
	rm -rf "$t"
	return $rc
}

if [[ $force -eq 0 ]] && check_cross; then
	echo "arm64 cross compiler and qemu present: $bin/aarch64-linux-gnu-gcc, $bin/qemu-aarch64-static"
else
	mkdir -p "$prefix" "$bin"
	fetch "$prefix/cross" "$cross_suite" amd64 /var/lib/dpkg/status \
		gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
	root="$prefix/cross/root"
	gcc=$(ls "$root"/usr/bin/aarch64-linux-gnu-gcc-[0-9]* 2>/dev/null | head -n1)
	[[ -n "$gcc" ]] || die "no usr/bin/aarch64-linux-gnu-gcc-N in the unpacked packages"
	[[ -x "$root/usr/bin/qemu-aarch64-static" ]] || die "no usr/bin/qemu-aarch64-static in the unpacked packages"
	# gcc finds cc1, as, ld and the cross libc (usr/aarch64-linux-gnu)
	# relative to its own path; the sysroot makes ld read the libc's linker
	# scripts (libc.so names /usr/aarch64-linux-gnu/lib/libc.so.6) inside
	# the unpacked tree.
	cat >"$bin/aarch64-linux-gnu-gcc" <<W
#!/bin/sh
# Debian's $(basename "$gcc") ($cross_suite), unpacked by tools/install-arm64.sh.
tools=\$(cd "\$(dirname "\$0")/.." && pwd)
LD_LIBRARY_PATH="$(rel "$root/usr/lib/x86_64-linux-gnu")\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
PATH="$(rel "$root/usr/bin"):\$PATH" \\
exec "$(rel "$gcc")" --sysroot="$(rel "$root")" "\$@"
W
	ln -sf "../arm64/cross/root/usr/bin/qemu-aarch64-static" "$bin/qemu-aarch64-static"
	chmod +x "$bin/aarch64-linux-gnu-gcc"
	check_cross || die "the unpacked cross compiler cannot build a program that qemu runs (above)"
	echo "arm64 cross compiler and qemu ready: $bin/aarch64-linux-gnu-gcc, $bin/qemu-aarch64-static"
fi

# The arm64 DuckDB CLI.
check_cli() {
	[[ -x "$bin/duckdb-arm64" ]] || return 1
	local v
	v=$("$bin/duckdb-arm64" -version 2>/dev/null) || return 1
	[[ "$v" == v* ]] || return 1
	echo "$v"
}

if [[ $force -eq 0 ]] && version=$(check_cli); then
	echo "arm64 duckdb CLI present: $version ($bin/duckdb-arm64)"
	exit 0
fi
fetch "$prefix/duckdb" "$duckdb_suite" arm64 "" duckdb
root="$prefix/duckdb/root"
loader=
for l in "$root/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" "$root/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" "$root/lib/ld-linux-aarch64.so.1"; do
	if [[ -e "$l" ]]; then loader=$l; break; fi
done
[[ -n "$loader" ]] || die "no ld-linux-aarch64.so.1 in the unpacked arm64 packages"
[[ -x "$root/usr/bin/duckdb" ]] || die "no usr/bin/duckdb in the unpacked arm64 packages"
libpath=
for d in "$root/usr/lib/aarch64-linux-gnu" "$root/lib/aarch64-linux-gnu"; do
	[[ -d "$d" ]] && libpath+="${libpath:+:}$(rel "$d")"
done
cat >"$bin/duckdb-arm64" <<W
#!/bin/sh
# Debian's DuckDB CLI $(awk '$1 == "duckdb" { print $2 }' "$prefix/duckdb/PACKAGES") for arm64 ($duckdb_suite), under qemu-user;
# unpacked by tools/install-arm64.sh.
tools=\$(cd "\$(dirname "\$0")/.." && pwd)
exec "\$tools/bin/qemu-aarch64-static" "$(rel "$loader")" --library-path "$libpath" "$(rel "$root/usr/bin/duckdb")" "\$@"
W
chmod +x "$bin/duckdb-arm64"
version=$(check_cli) || die "the arm64 CLI does not start under qemu: $("$bin/duckdb-arm64" -version 2>&1 | head -n5)"
out=$("$bin/duckdb-arm64" -unsigned -batch -init /dev/null -list -noheader -c 'SELECT 42' 2>&1) ||
	die "'duckdb-arm64 -unsigned -c \"SELECT 42\"' failed: $out"
[[ "$out" == 42 ]] || die "'SELECT 42' printed '$out'"
echo "arm64 duckdb CLI $version ready: $bin/duckdb-arm64 (under qemu; SELECT 42 checked)"
