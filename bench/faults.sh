#!/usr/bin/env bash
# rekey's fault campaign, one command:   bash bench/faults.sh
# Kills `rekey migrate` (built from ./cmd/rekey) with SIGKILL at KILLS random points per source
# (several in the first second, several around the final commit) and resumes it until it ends,
# for a CSV file and a Cassandra table (the CQL test server, in the campaign's process), then
# checks each run against a clean run: every row once, same counts, same rejects, no leftovers.
# Prints one line per run and "file: 20/20 runs matched the clean run's rows; cassandra: 20/20";
# exits 1 if a run did not match (its output is kept). 5 to 10 minutes on a busy 2-core machine.
#   KILLS (20)  ROWS (150000, the CSV file)  CASSANDRA_ROWS (150000)  SOURCES (file,cassandra)
#   SEED (from the clock, printed: the same seed draws the same kill points)
#   STORE=versitygw: --out is a bucket prefix on versitygw (a real S3 server the campaign starts;
#   REKEY_VERSITYGW or ~/go/bin/versitygw), checked through the S3 API too (no stray objects, no
#   unfinished multipart uploads)
# More flags: go run ./bench/faults -h
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
exec go run ./bench/faults -kills "${KILLS:-20}" -rows "${ROWS:-150000}" \
  -cassandra-rows "${CASSANDRA_ROWS:-150000}" -sources "${SOURCES:-file,cassandra}" -seed "${SEED:-0}" \
  -store "${STORE:-}" "$@"
