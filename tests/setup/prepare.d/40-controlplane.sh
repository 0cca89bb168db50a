#!/usr/bin/env bash
# The real Kubernetes control plane the operator's tests run against: kube-apiserver, kube-controller-manager,
# kube-scheduler and etcd, built from their Go modules (pinned by tests/setup/controlplane/go.mod and go.sum, which
# the Go toolchain checks every downloaded module against) into <repo>/.tools/controlplane/<version>/.
#
# Cold: downloads the modules from the Go module proxy and compiles (docs/operator.md gives the time and memory
# measured on the 2-core machine). Warm: the binaries exist with the stamp of this go.mod/go.sum/etcd main, and
# nothing is built. GOMODCACHE and GOCACHE stay where Go keeps them (outside the checkout), so a fresh clone on a
# machine that built once only relinks.
set -euo pipefail

K8S_VERSION="v1.35.4"   # k8s.io/kubernetes in go.mod; its staging modules are replaced by v0.35.4
here="$(cd "$(dirname "$0")/.." && pwd)/controlplane"
repo="$(cd "$here/../../.." && pwd)"
out="$repo/.tools/controlplane/$K8S_VERSION"
stamp_of() { cat "$here/go.mod" "$here/go.sum" "$here/cmd/etcd/main.go" "$0" | sha256sum | cut -d' ' -f1; }
stamp="$(stamp_of)"
binaries=(kube-apiserver kube-controller-manager kube-scheduler etcd)

complete() {
  [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ] || return 1
  for b in "${binaries[@]}"; do [ -x "$out/bin/$b" ] || return 1; done
}
if complete; then
  exit 0
fi
command -v go >/dev/null || { echo "40-controlplane.sh: Go is required (Go 1.26 is on every project machine)" >&2; exit 1; }

echo "Building the Kubernetes control plane $K8S_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) into $out"
started=$(date +%s)
mkdir -p "$out"
tmp="$(mktemp -d "$out/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
ldflags="$ldflags -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
# As Kubernetes' own release build (hack/lib/golang.sh): static binaries, no cgo. -mod=readonly: go.sum decides.
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -o "$tmp/" -ldflags "$ldflags" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler ./cmd/etcd)
mkdir -p "$out/bin"
for b in "${binaries[@]}"; do mv -f "$tmp/$b" "$out/bin/$b"; done
echo "$stamp" > "$out/.stamp"
"$out/bin/kube-apiserver" --version
echo "control plane built in $(( $(date +%s) - started )) s"
