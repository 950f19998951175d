#!/usr/bin/env bash
# Writes cmd/rekey/default.pgo: the CPU profile `go build ./cmd/rekey` (and go run, go install)
# optimizes the binary with (Go's profile-guided optimization: hot calls inlined, interface calls
# on the hot paths devirtualized). The output is the same with or without it; the instructions
# are fewer (bench/icount.sh, 2026-12-03: migrate -2.5%, the wide shape -3.6%, verify -1.4%).
#
#   bash bench/pgo.sh        profile the benchmark's jobs and merge their profiles into default.pgo
#
# The jobs are the benchmark's, smaller: migrate of PGO_ROWS (1,000,000) orders rows with the two
# orders mappings and of the wide shape (when bench/run.sh has installed DuckDB's node client,
# which writes its CSV), report and verify of the same rows, replicate from kfake (bench/kafka)
# and migrate from the CQL test server (bench/cassandra). Run it again when the hot paths change
# a lot: a stale profile only optimizes less, it is never wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
ROWS=${PGO_ROWS:-1000000}
WORK=bench/work/pgo
rm -rf "$WORK" && mkdir -p "$WORK"
go build -o "$WORK/rekey" ./cmd/rekey
REKEY=$PWD/$WORK/rekey
CSV=$WORK/orders.csv
"$REKEY" gen orders --rows "$ROWS" --out "$CSV"

profile() { # profile NAME ARGS...: runs rekey ARGS with a CPU profile in $WORK/NAME.prof
  local name=$1; shift
  echo "pgo: $name ..."
  REKEY_CPUPROFILE="$WORK/$name.prof" "$REKEY" "$@" --progress never > "$WORK/$name.log"
}
profile migrate migrate -m mappings/orders.yaml --source "file:$CSV" --regions 16 --out "$WORK/out"
profile migrate_decimal migrate -m bench/orders-decimal.yaml --source "file:$CSV" --regions 16 --out "$WORK/out-decimal"
if [ -d bench/work/duckdb/node_modules/@duckdb/node-api ]; then
  cp bench/duckdb-wide.mjs bench/work/duckdb/
  node bench/work/duckdb/duckdb-wide.mjs gen "$PWD/$WORK/wide.csv" "$ROWS"
  profile migrate_wide migrate -m bench/wide.yaml --source "file:$WORK/wide.csv" --regions 16 --out "$WORK/out-wide"
else
  echo "pgo: migrate_wide skipped: DuckDB's node client is not installed (bash bench/run.sh core installs it)" >&2
fi
profile report report -m mappings/orders.yaml --source "file:$CSV" --regions 16 --tmp "$WORK"
profile verify verify -m mappings/orders.yaml --source "file:$CSV" --target "$WORK/out" --tmp "$WORK"
# the two harnesses start rekey with the environment they were given: its profile is rekey's alone
echo "pgo: replicate ..."
REKEY_CPUPROFILE="$PWD/$WORK/replicate.prof" go run ./bench/kafka -rekey "$REKEY" -messages "$((2 * ROWS))" -work "$WORK" \
  -json "$WORK/kafka.json" -rekey-args "--roll-interval 500ms" > /dev/null 2> "$WORK/replicate.log"
echo "pgo: cassandra ..."
REKEY_CPUPROFILE="$PWD/$WORK/cassandra.prof" go run ./bench/cassandra -rekey "$REKEY" -rows "$ROWS" -runs 1 -work "$WORK" \
  -json "$WORK/cassandra.json" > /dev/null 2> "$WORK/cassandra.log"
go tool pprof -proto "$WORK"/*.prof > cmd/rekey/default.pgo
echo "pgo: wrote cmd/rekey/default.pgo ($(wc -c < cmd/rekey/default.pgo) bytes) from $(ls "$WORK"/*.prof | wc -l) profiles"
