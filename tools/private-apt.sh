# Sourced by the tools/install-*.sh scripts that take Debian packages without
# installing anything system-wide: a private apt configuration (own sources
# list, state, cache, status file, no system apt.conf.d hooks) whose mirror URI
# is read from the machine's own apt sources.
#
#   private_apt_setup DIR SUITE ARCH STATUS   write DIR/apt.conf and export APT_CONFIG
#
# ARCH is the architecture apt resolves for (amd64, or arm64 for another
# machine's packages: the dependency closure is then arm64 throughout).
# STATUS is the dpkg status file apt believes installed: an empty file makes
# apt download a package's whole dependency closure (nothing of the host is
# used), /var/lib/dpkg/status only what this machine lacks.
# The caller defines die().

# debian_mirror prints the machine's Debian mirror: the first URI of a deb
# source whose suites name a release of Debian proper (not -security), from
# deb822 .sources files or one-line .list files.
debian_mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r "$f" ]] || continue
		awk '
			BEGIN { RS = ""; FS = "\n" }
			{
				uris = ""; suites = ""; types = ""
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^URIs:/)   { uris = $i;   sub(/^URIs:[ \t]*/, "", uris) }
					if ($i ~ /^Suites:/) { suites = $i; sub(/^Suites:[ \t]*/, "", suites) }
					if ($i ~ /^Types:/)  { types = $i }
				}
				if (types ~ /deb([ \t]|$)/ && uris ~ /\/debian\/?([ \t]|$)/ && suites !~ /security/) {
					split(uris, u, /[ \t]+/); print u[1]; exit
				}
			}' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -r "$f" ]] || continue
		awk '$1 == "deb" {
				i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($i ~ /\/debian\/?$/ && $(i+1) !~ /security/) { print $i; exit }
			}' "$f"
	done
}

private_apt_setup() {
	local dir=$1 suite=$2 arch=$3 status=$4
	local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	command -v apt-get >/dev/null || die "apt-get not found: this script needs a Debian-based machine"
	command -v dpkg-deb >/dev/null || die "dpkg-deb not found"
	[[ -r "$keyring" ]] || die "$keyring missing (package debian-archive-keyring)"
	local mirror
	mirror=$(debian_mirror | head -n1)
	[[ -n "$mirror" ]] || die "no Debian mirror found in /etc/apt/sources.list{,.d/*}"
	mirror=${mirror%/}
	echo "private apt: mirror $mirror, suite $suite, architecture $arch"

	rm -rf "$dir"
	mkdir -p "$dir"/{etc/apt.conf.d,etc/preferences.d,state/lists/partial,cache/archives/partial}
	if [[ -z "$status" ]]; then
		status="$dir/state/status"
		: >"$status"
	fi
	echo "deb [arch=$arch signed-by=$keyring] $mirror $suite main" >"$dir/etc/sources.list"
	cat >"$dir/apt.conf" <<CONF
Dir::Etc::main "/dev/null";
Dir::Etc::parts "$dir/etc/apt.conf.d";
Dir::Etc::sourcelist "$dir/etc/sources.list";
Dir::Etc::sourceparts "-";
Dir::Etc::preferences "/dev/null";
Dir::Etc::preferencesparts "$dir/etc/preferences.d";
Dir::State "$dir/state";
Dir::State::status "$status";
Dir::Cache "$dir/cache";
Dir::Cache::archives "$dir/cache/archives";
Debug::NoLocking "true";
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
APT::Install-Recommends "false";
Acquire::Languages "none";
// The mirror may be a dated snapshot; the machine's own apt config does the same.
Acquire::Check-Valid-Until "false";
CONF
	export APT_CONFIG="$dir/apt.conf"
	apt-get -q update || die "apt-get update against $mirror $suite ($arch) failed"
}

# apt_candidate PACKAGE prints the version apt would download, or fails.
apt_candidate() {
	local c
	c=$(apt-cache policy "$1" | awk '/Candidate:/ { print $2 }')
	[[ -n "$c" && "$c" != "(none)" ]] || return 1
	echo "$c"
}
