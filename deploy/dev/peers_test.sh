#!/usr/bin/env bash
# peers_test.sh: peers.sh fails loudly. A peer that cannot start within the time allowed must end
# ci-test with the peer's own error on stderr, a non-zero exit and no peer left running.
# Needs the peers resolved (bash deploy/dev/peers.sh resolve); takes a few seconds.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Kafka's format tool reads a cluster id that starts with '-' as an option and fails; one draw in
# 64 would. 1000 draws all pass unless a leading '-' is drawn again (odds of a miss: 2e-7).
ids=$(bash -c 'source "$1/peers.sh"; for _ in $(seq 1000); do kafka_cluster_id; done' _ "$here")
[ "$(printf '%s\n' "$ids" | grep -c '^[A-Za-z0-9_][A-Za-z0-9_-]\{21\}$')" = 1000 ] || {
  printf '%s\n' "$ids" | grep -v '^[A-Za-z0-9_][A-Za-z0-9_-]\{21\}$' | head -3 >&2
  echo "peers_test: a Kafka cluster id is not 22 URL-safe characters, or starts with '-'" >&2; exit 1
}
state=$(mktemp -d "${TMPDIR:-/tmp}/rekey-peers-test.XXXXXX")
trap 'rm -rf "$state"' EXIT
rc=0
REKEY_PEERS_STATE="$state" REKEY_PEERS_TIMEOUT=1 bash "$here/peers.sh" ci-test >"$state/out" 2>&1 || rc=$?
fail() { cat "$state/out" >&2; echo "peers_test: $*" >&2; exit 1; }
[ "$rc" != 0 ] || fail "ci-test exited 0 although no peer could start within 1 s"
grep -q "cassandra: no CQL answering .* within 1s" "$state/out" || fail "the peer's error is not on stderr"
grep -q "a peer could not start" "$state/out" || fail "ci-test did not say that a peer could not start"
if [ -f "$state/cassandra/pid" ] && kill -0 "$(cat "$state/cassandra/pid")" 2>/dev/null; then
  fail "cassandra is still running after ci-test failed"
fi
echo "peers_test: ok (Kafka cluster ids never start with '-'; a peer that cannot start fails ci-test loudly and is stopped)"
