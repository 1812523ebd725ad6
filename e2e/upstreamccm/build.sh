#!/usr/bin/env bash
# Builds the upstream openstack-cloud-controller-manager (the release pinned in
# this directory's go.mod), with that release's own RBAC manifests beside it,
# into a cache outside the clone, keyed by a hash of
# this module's go.mod, go.sum and this script, so fresh clones on the same
# machine reuse it. The takeover e2e runs it inside the lab, which has no
# route out, so `make tools` builds it beforehand. Idempotent: a complete
# cache entry is never rebuilt.
#
#   build.sh              build if needed, print the directory
#   build.sh --print-dir  print the directory only
set -euo pipefail

VERSION=v1.36.0 # must equal the k8s.io/cloud-provider-openstack requirement in go.mod

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${STACKWARD_UPSTREAM_CCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stackward/upstream-ccm}
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

if ! grep -qE "^\s*k8s.io/cloud-provider-openstack $VERSION( //.*)?$" "$here/go.mod"; then
  echo "build.sh pins $VERSION but go.mod requires another k8s.io/cloud-provider-openstack" >&2
  exit 1
fi
mkdir -p "$dir.partial"
start=$(date +%s)
cd "$here"
echo "building openstack-cloud-controller-manager $VERSION into $dir" >&2
# The same version stamps upstream's Makefile sets.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$VERSION \
  -X k8s.io/cloud-provider-openstack/pkg/version.Version=$VERSION" \
  -o "$dir.partial/" k8s.io/cloud-provider-openstack/cmd/openstack-cloud-controller-manager
# The RBAC upstream's manifests give the CCM, from the same release.
src=$(go list -m -f '{{.Dir}}' k8s.io/cloud-provider-openstack)
cp "$src/manifests/controller-manager/cloud-controller-manager-roles.yaml" \
  "$src/manifests/controller-manager/cloud-controller-manager-role-bindings.yaml" "$dir.partial/"
chmod u+w "$dir.partial"/*.yaml

rm -rf "$dir"
mv "$dir.partial" "$dir"
touch "$dir/.complete"
# Entries of other upstream versions go after two weeks unused.
find "$cache_root" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -mtime +14 -exec rm -rf {} + 2>/dev/null || true
echo "upstream CCM built in $(( $(date +%s) - start ))s" >&2
echo "$dir"
