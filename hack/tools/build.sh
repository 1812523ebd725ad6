#!/usr/bin/env bash
# Builds the developer tools pinned in this module's go.mod (its `tool`
# lines: golangci-lint) into a cache outside the clone, keyed by a hash of
# go.mod, go.sum and this script, so fresh clones on the same machine reuse
# them. A cold build of golangci-lint takes a few minutes; a complete cache
# entry is never rebuilt.
#
#   build.sh              build if needed, print the directory
#   build.sh --print-dir  print the directory only
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${STACKWARD_DEVTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stackward/devtools}
key=$(cd "$here" && cat go.mod go.sum build.sh | sha256sum | cut -c1-16)
dir=$cache_root/$key

if [[ ${1:-} == --print-dir ]]; then
  echo "$dir"
  exit 0
fi
if [[ -f $dir/.complete ]]; then
  touch "$dir" # used: keeps it from being pruned
  echo "$dir"
  exit 0
fi

cd "$here"
start=$(date +%s)
rm -rf "$dir.partial"
mkdir -p "$dir.partial"
echo "building $(go list -f '{{.ImportPath}}' tool | xargs -n1 basename | tr '\n' ' ')into $dir" >&2
# `tool` is every tool line of go.mod, built with the versions go.sum pins.
go build -trimpath -ldflags "-s -w" -o "$dir.partial/" tool
rm -rf "$dir"
mv "$dir.partial" "$dir"
touch "$dir/.complete"
# Entries of other tool versions go after two weeks unused.
find "$cache_root" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -mtime +14 -exec rm -rf {} + 2>/dev/null || true
echo "tools built in $(( $(date +%s) - start ))s" >&2
echo "$dir"
