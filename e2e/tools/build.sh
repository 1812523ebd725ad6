#!/usr/bin/env bash
# Builds the e2e lab's pinned binaries into a cache outside the clone, keyed by
# a hash of this module and of kubelet134/ (go.mod, go.sum, sources and this
# script), so fresh clones on the same machine reuse them. Idempotent: a
# complete cache entry is never rebuilt.
#
#   build.sh              build if needed, print the directory
#   build.sh --print-dir  print the directory only
set -euo pipefail

HELM3_VERSION=v3.21.4 # the newest Helm 3 on the k8s 1.36 client line
HELM4_VERSION=v4.2.4  # the newest Helm 4 on the k8s 1.36 client line
KUBE_VERSION=v1.37.2
# The oldest kubelet the version skew policy lets join a KUBE_VERSION control
# plane (three minors older), built from its own module in kubelet134/.
OLD_KUBELET_VERSION=v1.34.4
DISTRIBUTION_VERSION=v3.1.2 # the OCI registry the release e2e pushes to

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${STACKWARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stackward/tools}
key=$(cd "$here" && cat go.mod go.sum build.sh kubelet134/go.mod kubelet134/go.sum $(find . -name '*.go' | sort) | sha256sum | cut -c1-16)
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

mkdir -p "$dir.partial"
start=$(date +%s)
# ver_flags VERSION: the -X flags that stamp a Kubernetes binary as VERSION.
ver_flags() {
  local minor=${1#v1.} flags="" pkg
  minor=${minor%%.*}
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    flags+=" -X $pkg.gitVersion=$1 -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}
cd "$here"
echo "building kube-apiserver, kube-controller-manager, kubeadm, etcd, hollow-kubelet ($KUBE_VERSION and $OLD_KUBELET_VERSION), helm 3 and 4, registry into $dir" >&2
go build -trimpath -ldflags "-s -w $(ver_flags $KUBE_VERSION)" -o "$dir.partial/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubeadm \
  ./hollowkubelet
go build -trimpath -ldflags "-s -w" -o "$dir.partial/etcd" go.etcd.io/etcd/server/v3
mv "$dir.partial/hollowkubelet" "$dir.partial/hollow-kubelet"
echo "Kubernetes $KUBE_VERSION and etcd built in $(( $(date +%s) - start ))s" >&2

old_start=$(date +%s)
old_minor=${OLD_KUBELET_VERSION#v}
old_minor=${old_minor%.*}
(cd kubelet134 && go build -trimpath -ldflags "-s -w $(ver_flags $OLD_KUBELET_VERSION)" -o "$dir.partial/hollow-kubelet-$old_minor" .)
echo "hollow-kubelet-$old_minor built in $(( $(date +%s) - old_start ))s" >&2

# Helm's and the registry's own go.mod pin their dependencies; build each
# from it.
for pair in "helm3 helm.sh/helm/v3/cmd/helm@$HELM3_VERSION" "helm4 helm.sh/helm/v4/cmd/helm@$HELM4_VERSION" \
  "registry github.com/distribution/distribution/v3/cmd/registry@$DISTRIBUTION_VERSION"; do
  set -- $pair
  tmp=$(mktemp -d)
  GOBIN=$tmp go install -trimpath -ldflags "-s -w" "$2"
  pkg=${2%@*}
  mv "$tmp/${pkg##*/}" "$dir.partial/$1"
  rmdir "$tmp"
done

rm -rf "$dir"
mv "$dir.partial" "$dir"
touch "$dir/.complete"
# Entries of other tool versions (about 550 MB each) go after two weeks unused.
find "$cache_root" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -mtime +14 -exec rm -rf {} + 2>/dev/null || true
echo "tools built in $(( $(date +%s) - start ))s" >&2
echo "$dir"
