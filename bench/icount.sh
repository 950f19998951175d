#!/usr/bin/env bash
# Instruction counts of rekey's hot paths: a figure the machine's noise does not move, so CI can
# guard speed where a timer cannot (a 2-core machine shared with other jobs varies by 20%).
#
#   bash bench/icount.sh                  count, compare with bench/icount.json; exit 1 when a job
#                                         takes more than ICOUNT_TOLERANCE (3%) more instructions
#   bash bench/icount.sh --update "why"   count and record the counts as the new baseline, with why
#
# Each job runs the real binary twice, on ICOUNT_ROWS (50,000) and on twice as many rows, under
# valgrind's callgrind with one transform worker; from the two counts the script reports each job's
# instructions per row, (I(n2) - I(n1)) / (n2 - n1), and its fixed part, I(n1) - n1 x per row (the
# start, the mapping's compilation, the files' footers), so a fixed cost does not hide in a per-row
# figure and a per-row cost does not hide behind a fixed one. Both are judged against the baseline:
# the per-row count by itself, the fixed part by how much it adds to the smaller run.
# GOMAXPROCS=1, GOGC=off and a memory limit far above the jobs' heaps (rekey's own soft limit,
# 80% of --memory, would start the collector in one run and not in the next) take the
# scheduler's and the collector's timing out of
# the count (run to run it then varies by about 0.1%; allocations still count, in mallocgc), async
# preemption is off, and cpu.rdtscp=off keeps the runtime off RDTSCP, which valgrind cannot decode.
# The counts depend on the Go toolchain, valgrind and the CPU's vector instructions (MD5 hash
# prefixes run eight at a time on AVX2, one at a time without): with other versions or another
# CPU feature than the baseline's the script prints the counts and does not judge them.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
BASELINE=bench/icount.json
ROWS=${ICOUNT_ROWS:-50000}
ROWS2=$((2 * ROWS))
TOL=${ICOUNT_TOLERANCE:-0.03}
update=""
if [ "${1:-}" = "--update" ]; then
  [ -n "${2:-}" ] || { echo "usage: bash bench/icount.sh --update \"why the counts changed\"" >&2; exit 2; }
  update=$2
fi
command -v valgrind >/dev/null || { echo "bench/icount.sh needs valgrind (apt-get install valgrind)" >&2; exit 2; }
WORK=bench/work/icount
rm -rf "$WORK" && mkdir -p "$WORK"
go build -o "$WORK/rekey" ./cmd/rekey
"$WORK/rekey" gen orders --rows "$ROWS" --out "$WORK/orders-$ROWS.csv"
"$WORK/rekey" gen orders --rows "$ROWS2" --out "$WORK/orders-$ROWS2.csv"
# the wide shape (bench/wide.yaml): its CSV is written by DuckDB (bench/duckdb-wide.mjs gen), whose
# node client bench/run.sh installs in bench/work/duckdb; without it the job is skipped, and said so
DUCKDB=bench/work/duckdb
wide=""
if [ -d "$DUCKDB/node_modules/@duckdb/node-api" ]; then
  cp bench/duckdb-wide.mjs "$DUCKDB/"
  for rows in "$ROWS" "$ROWS2"; do node "$DUCKDB/duckdb-wide.mjs" gen "$PWD/$WORK/wide-$rows.csv" "$rows"; done
  wide=1
else
  echo "migrate_wide: skipped: DuckDB's node client is not installed (bash bench/run.sh core installs it in $DUCKDB)" >&2
fi

count() { # count JOB ARGS...: prints JOB's instruction count
  local job=$1; shift
  if ! env GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 GOGC=off GOMEMLIMIT=64GiB \
      valgrind --tool=callgrind --callgrind-out-file="$WORK/$job.callgrind" "$WORK/rekey" "$@" --progress never \
      > "$WORK/$job.log" 2>&1; then
    # verify exits 1 when the target differs: every job here must succeed
    tail -20 "$WORK/$job.log" >&2; echo "icount: $job failed" >&2; exit 1
  fi
  grep -E '^==[0-9]+== Collected : ' "$WORK/$job.log" | awk '{print $4}'
}

lines=""
for rows in "$ROWS" "$ROWS2"; do
  csv="$WORK/orders-$rows.csv"
  job=(-m mappings/orders.yaml --source "file:$csv" --regions 16 --workers 1)
  # the larger run's profile keeps the plain name: callgrind_annotate bench/work/icount/JOB.callgrind
  sfx=""; [ "$rows" = "$ROWS" ] && sfx="-$rows"
  lines+="migrate $rows $(count "migrate$sfx" migrate "${job[@]}" --out "$WORK/out-$rows")"$'\n'
  lines+="migrate_decimal $rows $(count "migrate_decimal$sfx" migrate -m bench/orders-decimal.yaml --source "file:$csv" --regions 16 --workers 1 --out "$WORK/out-decimal-$rows")"$'\n'
  if [ -n "$wide" ]; then
    lines+="migrate_wide $rows $(count "migrate_wide$sfx" migrate -m bench/wide.yaml --source "file:$WORK/wide-$rows.csv" --regions 16 --workers 1 --out "$WORK/out-wide-$rows")"$'\n'
  fi
  lines+="report $rows $(count "report$sfx" report "${job[@]}" --tmp "$WORK")"$'\n'
  lines+="verify $rows $(count "verify$sfx" verify -m mappings/orders.yaml --source "file:$csv" --workers 1 --target "$WORK/out-$rows" --tmp "$WORK")"$'\n'
done

goversion=$(go env GOVERSION)
vgversion=$(valgrind --version)
cpu=$(grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo avx2 || echo "no avx2")
node - "$BASELINE" "$ROWS" "$ROWS2" "$TOL" "$goversion" "$vgversion" "$update" "$lines" "$cpu" <<'JS'
const fs = require('fs');
const [file, r1, r2, tol, go, valgrind, why, text, cpu] = process.argv.slice(2);
const n1 = Number(r1), n2 = Number(r2), t = Number(tol);
const raw = {};
for (const l of text.trim().split('\n')) {
  const [j, rows, c] = l.split(' ');
  (raw[j] ??= {})[rows] = Number(c);
}
// per row: the difference of the two runs over the difference of their rows; fixed: what is left of
// the smaller run
const now = {};
for (const [j, c] of Object.entries(raw)) {
  const perRow = (c[n2] - c[n1]) / (n2 - n1);
  now[j] = { per_row: Math.round(perRow), fixed: Math.round(c[n1] - n1 * perRow), [n1]: c[n1], [n2]: c[n2] };
}
const fmt = x => x.toLocaleString('en-US');
if (why) {
  fs.writeFileSync(file, JSON.stringify({ rows: [n1, n2], go, valgrind, cpu, why, instructions: now }, null, 2) + '\n');
  for (const [j, c] of Object.entries(now)) console.log(`${j.padEnd(16)} ${fmt(c.per_row)} instructions per row, fixed ${c.fixed.toExponential(3)} (baseline recorded)`);
  process.exit(0);
}
const base = JSON.parse(fs.readFileSync(file));
const sameRows = Array.isArray(base.rows) && base.rows[0] === n1 && base.rows[1] === n2;
const comparable = base.go === go && base.valgrind === valgrind && (base.cpu ?? 'avx2') === cpu && sameRows;
const pct = x => (x >= 0 ? '+' : '') + (100 * x).toFixed(1) + '%';
let failed = [];
for (const [j, c] of Object.entries(now)) {
  const b = sameRows ? base.instructions[j] : undefined;
  if (!b || b.per_row === undefined) {
    console.log(`${j.padEnd(16)} ${fmt(c.per_row)} instructions per row, fixed ${c.fixed.toExponential(3)}: no baseline`);
    continue;
  }
  const perRow = c.per_row / b.per_row - 1;
  const fixed = (c.fixed - b.fixed) / b[n1]; // what the fixed part's change adds to the smaller run
  const verdict = x => x > t ? 'MORE' : x < -t ? 'less (record it: --update)' : 'ok';
  console.log(`${j.padEnd(16)} ${fmt(c.per_row)} instructions per row, baseline ${fmt(b.per_row)} (${pct(perRow)}) ${verdict(perRow)}; ` +
    `fixed ${c.fixed.toExponential(3)}, baseline ${b.fixed.toExponential(3)} (${pct(fixed)} of the ${fmt(n1)}-row run) ${verdict(fixed)}`);
  if (perRow > t || fixed > t) failed.push(j);
}
if (!comparable) {
  console.log(`the baseline was counted with ${base.go}, ${base.valgrind}, ${base.cpu ?? 'avx2'}, rows ${JSON.stringify(base.rows)}; this run ${go}, ${valgrind}, ${cpu}, rows [${n1},${n2}]: not judged`);
} else if (failed.length) {
  console.log(`\n${failed.join(', ')}: more than ${(100 * t).toFixed(0)}% more instructions than the baseline ("${base.why}").`);
  console.log('Find where with callgrind_annotate bench/work/icount/JOB.callgrind (or REKEY_CPUPROFILE); if the cost is meant, record it: bash bench/icount.sh --update "why"');
  process.exit(1);
}
JS
