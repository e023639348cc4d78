#!/usr/bin/env bash
# Provision Dask distributed (Debian's python3-distributed and the packages it
# needs that this machine lacks) into .tools/dask/ without installing anything
# system-wide, and write .tools/bin/dask-python: the machine's Debian Python 3
# (/usr/bin/python3, the interpreter Debian builds these packages for) with
# the unpacked dist-packages on PYTHONPATH.
#
# How: `apt-get install --download-only` with the machine's own apt sources
# and package lists but a private archives folder, then `dpkg-deb -x` of each
# downloaded .deb into .tools/dask/root. apt resolves against the packages
# already installed, so only the missing ones are fetched; nothing is
# configured or installed. No `apt-get update`: when the machine's lists do
# not know python3-distributed, the script says so and fails.
#
# Idempotent: when the wrapper exists and imports distributed, nothing is
# done. Pass --force to provision again.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools_dir="$repo_root/.tools"
prefix="$tools_dir/dask"
root="$prefix/root"
wrapper="$tools_dir/bin/dask-python"
python=/usr/bin/python3
package=python3-distributed

die() { echo "install-dask: $*" >&2; exit 1; }

check_wrapper() {
	[[ -x "$wrapper" ]] || return 1
	"$wrapper" -c 'import dask, distributed; print("dask", dask.__version__, "distributed", distributed.__version__)' 2>/dev/null
}

force=0
[[ "${1:-}" == "--force" ]] && force=1
if [[ $force -eq 0 ]] && version=$(check_wrapper); then
	echo "Dask already provisioned: $version ($wrapper)"
	exit 0
fi

command -v apt-get >/dev/null || die "apt-get not found: this script needs a Debian-based machine"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found"
[[ -x "$python" ]] || die "$python not found: Debian's packages need the machine's Debian Python 3 (package python3)"
candidate=$(apt-cache policy "$package" 2>/dev/null | awk '/Candidate:/ { print $2 }')
[[ -n "$candidate" && "$candidate" != "(none)" ]] ||
	die "package $package is not known to this machine's apt lists (apt-get update, or a Debian release that has it)"
echo "install-dask: $package $candidate for $($python --version 2>&1)"

archives="$prefix/archives"
rm -rf "$prefix"
mkdir -p "$archives/partial" "$root"
apt-get -q -y install --download-only --no-install-recommends \
	-o Dir::Cache::archives="$archives" -o Debug::NoLocking=true "$package" ||
	die "downloading $package $candidate and its missing dependencies failed"
shopt -s nullglob
debs=("$archives"/*.deb)
[[ ${#debs[@]} -gt 0 ]] || die "no .deb files were downloaded (is $package installed system-wide? then use $python directly)"
for deb in "${debs[@]}"; do
	dpkg-deb -x "$deb" "$root"
	basename "$deb" >>"$prefix/PACKAGES"
done
rm -rf "$archives"
echo "$candidate" >"$prefix/VERSION"

mkdir -p "$(dirname "$wrapper")"
cat >"$wrapper" <<WRAP
#!/bin/sh
# $python with Debian's $package $candidate unpacked by tools/install-dask.sh.
tools=\$(cd "\$(dirname "\$0")/.." && pwd)
PYTHONPATH="\$tools/dask/root/usr/lib/python3/dist-packages\${PYTHONPATH:+:\$PYTHONPATH}" exec $python "\$@"
WRAP
chmod +x "$wrapper"
version=$(check_wrapper) || die "the unpacked packages do not import: $("$wrapper" -c 'import distributed' 2>&1 | tail -n3)"
echo "install-dask: ready: $version ($wrapper; ${#debs[@]} packages in $root)"
