#!/usr/bin/env bash
# Builds metrics-server (the release pinned in this directory's go.mod), with
# that release's own manifests (manifests/base) beside it, into a cache
# outside the clone, keyed by a hash of this module's go.mod, go.sum and
# this script, so fresh clones on the same machine reuse it. The metrics e2e
# runs it inside the lab, which has no route out, so `make lab-tools` builds it
# beforehand. Idempotent: a complete cache entry is never rebuilt.
#
#   build.sh              build if needed, print the directory
#   build.sh --print-dir  print the directory only
set -euo pipefail

VERSION=v0.8.0 # must equal the sigs.k8s.io/metrics-server requirement in go.mod

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${STACKWARD_METRICS_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stackward/metrics-server}
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

if ! grep -qE "^\s*sigs.k8s.io/metrics-server $VERSION( //.*)?$" "$here/go.mod"; then
  echo "build.sh pins $VERSION but go.mod requires another sigs.k8s.io/metrics-server" >&2
  exit 1
fi
mkdir -p "$dir.partial"
start=$(date +%s)
cd "$here"
echo "building metrics-server $VERSION into $dir" >&2
# The version stamp upstream's Makefile sets.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=$VERSION" \
  -o "$dir.partial/" sigs.k8s.io/metrics-server/cmd/metrics-server
# The Deployment, RBAC, Service and APIService upstream installs, from the
# same release: the e2e runs that Deployment with the documented changes.
src=$(go list -m -f '{{.Dir}}' sigs.k8s.io/metrics-server)
cp "$src"/manifests/base/{deployment,rbac,service,apiservice}.yaml "$dir.partial/"
chmod u+w "$dir.partial"/*.yaml

rm -rf "$dir"
mv "$dir.partial" "$dir"
touch "$dir/.complete"
# Entries of other metrics-server versions go after two weeks unused.
find "$cache_root" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -mtime +14 -exec rm -rf {} + 2>/dev/null || true
echo "metrics-server built in $(( $(date +%s) - start ))s" >&2
echo "$dir"
