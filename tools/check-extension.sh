#!/usr/bin/env bash
# Check a built extension file: it exports only the entry point (no Go
# runtime symbols), references no real duckdb_* symbol (every call goes
# through the API table), and carries DuckDB's metadata footer for C API
# v1.2.0 on linux_amd64 (linux_arm64 for a path under linux_arm64/), or, for
# the 2.0 edition (a path under v2.0.0/), the entry point
# remote_segments_init_c_api_v2 and ABI C_STRUCT_UNSTABLE v2.0.0.
set -euo pipefail
ext=${1:-build/release/remote_segments.duckdb_extension}
die() { echo "check-extension: $ext: $*" >&2; exit 1; }
[[ -f "$ext" ]] || die "missing (run make)"

platform=linux_amd64
[[ "$ext" == */linux_arm64/* ]] && platform=linux_arm64
entry=remote_segments_init_c_api
wants=(duckdb_signature C_STRUCT v1.2.0 "$platform")
if [[ "$ext" == */v2.0.0/* ]]; then
	entry=remote_segments_init_c_api_v2
	wants=(duckdb_signature C_STRUCT_UNSTABLE v2.0.0 "$platform")
fi
exported=$(nm -D --defined-only "$ext" | awk '{print $3}')
[[ "$exported" == "$entry" ]] || die "exports more than the entry point $entry: $(echo $exported)"

if nm -D --undefined-only "$ext" | grep -q ' duckdb_'; then
	die "references real duckdb_* symbols: $(nm -D --undefined-only "$ext" | grep ' duckdb_' | head -3)"
fi

footer=$(tail -c 534 "$ext" | head -c 278 | tr -d '\0' | tr -c '[:print:]' ' ')
for want in "${wants[@]}"; do
	[[ "$footer" == *"$want"* ]] || die "footer lacks $want: $footer"
done
echo "check-extension: $ext exports only $entry; footer: $(echo $footer)"
