#!/usr/bin/env bash
# `make release`: checks its inputs and the registry, builds the images
# (make images), pushes them as REGISTRY/<image>:VERSION, then packages the
# chart with version VERSION (without the "v"), appVersion VERSION and its
# default image repositories set to REGISTRY/<image>, and pushes it to
# oci://REGISTRY/charts. Refuses, changing nothing, without REGISTRY, with
# uncommitted changes, with a VERSION that is not SemVer, or when the
# registry does not take pushes.
#
# Environment (the Makefile sets it): VERSION, REGISTRY, PLAIN_HTTP (non-empty:
# plain HTTP registry), IMAGES; HELM (default: helm on PATH, else the tools
# cache's helm4).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "make release: $*" >&2
  exit 1
}

[[ -n ${REGISTRY:-} ]] || die "REGISTRY is not set: make release REGISTRY=<host>/<path> [VERSION=vX.Y.Z]"
status=$(git status --porcelain 2>&1) || die "not a git checkout: $status"
[[ -z $status ]] || die "the working tree has uncommitted changes ($(wc -l <<<"$status") paths in git status): commit or stash them; a release is built from a commit"
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'
[[ ${VERSION:-} =~ $semver ]] || die "VERSION='${VERSION:-}' is not vMAJOR.MINOR.PATCH[-PRERELEASE]: tag the commit (git tag v0.1.0) or pass VERSION=v0.1.0"

registry=${REGISTRY%/}
chart_version=${VERSION#v}
images=(${IMAGES:-stackward-ccm stackward-approver})
plain=() helm_plain=()
if [[ -n ${PLAIN_HTTP:-} ]]; then
  plain=(-plain-http) helm_plain=(--plain-http)
fi
if [[ -z ${HELM:-} ]]; then
  if command -v helm >/dev/null; then HELM=helm; else HELM="$(e2e/tools/build.sh)/helm4"; fi
fi
helm_version=$("$HELM" version --short 2>&1) || die "HELM=$HELM does not run: $helm_version"

mkdir -p bin
(cd hack/imagetool && go build -o ../../bin/imagetool .)
echo "checking that $registry takes pushes"
bin/imagetool check -registry "$registry" "${plain[@]}" "${images[@]}" charts/stackward ||
  die "registry $registry is not usable (above); nothing was pushed"

make --no-print-directory images VERSION="$VERSION"

out=bin/release/$VERSION
rm -rf "$out"
mkdir -p "$out"
if ! bin/imagetool push -registry "$registry" "${plain[@]}" -layouts bin/images -tag "$VERSION" "${images[@]}" >"$out/images.txt"; then
  die "pushing images failed; pushed before the failure: $(cat "$out/images.txt" | tr '\n' ' ')"
fi
cat "$out/images.txt"

bin/imagetool chart -src charts/stackward -out "$out" -registry "$registry"
"$HELM" package "$out/stackward" --version "$chart_version" --app-version "$VERSION" -d "$out" >/dev/null
if ! "$HELM" push "$out/stackward-$chart_version.tgz" "oci://$registry/charts" "${helm_plain[@]}"; then
  die "pushing the chart failed; the images were pushed: $(tr '\n' ' ' <"$out/images.txt")"
fi

echo
echo "released $VERSION: images above, chart oci://$registry/charts/stackward:$chart_version"
echo "install: helm install stackward oci://$registry/charts/stackward --version $chart_version -n kube-system --set cloudConfig.existingSecret=<secret> ${helm_plain[*]}"
