#!/usr/bin/env bash
# Builds rekey's container image with podman (or buildah): a static binary from the Go toolchain in
# a FROM-scratch image (deploy/Containerfile). No base image is pulled, so it builds offline.
#   bash deploy/image.sh [TAG]            # default tag rekey:dev
#   VERSION=1.2.0 bash deploy/image.sh registry.example.com/rekey:1.2.0
set -euo pipefail
# The tools first: the Go build below takes minutes on a cold cache.
if command -v podman >/dev/null 2>&1; then
  build=(podman build)
elif command -v buildah >/dev/null 2>&1; then
  build=(buildah bud)
else
  echo "image.sh: neither podman nor buildah is installed: install one (apt-get install podman, or dnf install podman) and run again" >&2
  exit 1
fi
cd "$(dirname "$0")/.."
tag="${1:-rekey:dev}"
version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
certs="${CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
[ -s "$certs" ] || { echo "image.sh: no CA bundle at $certs: install ca-certificates or set CA_CERTS" >&2; exit 1; }

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/etc/ssl/certs" "$root/tmp"
chmod 1777 "$root/tmp"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$root/rekey" ./cmd/rekey
cp "$certs" "$root/etc/ssl/certs/ca-certificates.crt"
chmod 644 "$root/etc/ssl/certs/ca-certificates.crt"
"${build[@]}" --quiet -f deploy/Containerfile -t "$tag" "$ctx"
echo "built $tag (rekey $version)"
