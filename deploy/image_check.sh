#!/usr/bin/env bash
# Smoke test of a built image (deploy/image.sh). Containers cannot run on every build machine, so the
# image is checked from outside: its configuration (user, entrypoint) from podman image inspect, and
# its filesystem exported from a created, never started, container: exactly the binary, the CA
# bundle and /tmp; the binary is static and answers --version.
set -euo pipefail
tag="${1:-rekey:dev}"
fail() { echo "image_check: $tag: $*" >&2; exit 1; }

user="$(podman image inspect --format '{{.Config.User}}' "$tag")"
entry="$(podman image inspect --format '{{json .Config.Entrypoint}}' "$tag")"
[ "$user" = "65532:65532" ] || fail "user is '$user', want 65532:65532 (non-root)"
[ "$entry" = '["/rekey"]' ] || fail "entrypoint is $entry, want [\"/rekey\"]"

work="$(mktemp -d)"
cid=""
trap '[ -n "$cid" ] && podman rm -f "$cid" >/dev/null 2>&1; rm -rf "$work"' EXIT
cid="$(podman create "$tag")"
podman export "$cid" -o "$work/rootfs.tar"
mkdir "$work/rootfs"
tar -xf "$work/rootfs.tar" -C "$work/rootfs"

# Only what the Containerfile puts there (podman adds empty mount points for /etc, /proc and the like).
files="$(cd "$work/rootfs" && find . -type f | sort | tr '\n' ' ')"
[ "$files" = "./etc/ssl/certs/ca-certificates.crt ./rekey " ] || fail "files: $files (want the binary and the CA bundle only)"
[ -z "$(cd "$work/rootfs" && find . -name sh -o -name busybox)" ] || fail "holds a shell"
grep -q "BEGIN CERTIFICATE" "$work/rootfs/etc/ssl/certs/ca-certificates.crt" || fail "the CA bundle holds no certificate"
mode="$(stat -c %a "$work/rootfs/tmp")"
[ "$mode" = 1777 ] || fail "/tmp has mode $mode, want 1777 (the non-root user spools there)"
if file "$work/rootfs/rekey" 2>/dev/null | grep -q "dynamically linked"; then fail "rekey is dynamically linked"; fi
out="$("$work/rootfs/rekey" --version)" || fail "rekey --version failed"
case "$out" in "rekey version "*) ;; *) fail "rekey --version printed '$out'";; esac
echo "image_check: $tag ok: $out, user $user, entrypoint $entry"
