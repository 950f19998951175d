#!/usr/bin/env bash
# Instruction counts of rekey's hot paths: a figure the machine's noise does not move, so CI can
# guard speed where a timer cannot (a 2-core machine shared with other jobs varies by 20%).
#
#   bash bench/icount.sh                  count, compare with bench/icount.json; exit 1 when a job
#                                         takes more than ICOUNT_TOLERANCE (3%) more instructions
#   bash bench/icount.sh --update "why"   count and record the counts as the new baseline, with why
#
# Each job runs the real binary on ICOUNT_ROWS (50,000) rows under valgrind's callgrind with one
# transform worker. GOMAXPROCS=1 and GOGC=off take the scheduler's and the collector's timing out of
# the count (run to run it then varies by about 0.1%; allocations still count, in mallocgc), async
# preemption is off, and cpu.rdtscp=off keeps the runtime off RDTSCP, which valgrind cannot decode.
# The counts depend on the Go toolchain and valgrind: with other versions than the baseline's the
# script prints the counts and does not judge them.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
BASELINE=bench/icount.json
ROWS=${ICOUNT_ROWS:-50000}
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
"$WORK/rekey" gen orders --rows "$ROWS" --out "$WORK/orders.csv"

count() { # count JOB ARGS...: prints JOB's instruction count
  local job=$1; shift
  if ! env GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 GOGC=off \
      valgrind --tool=callgrind --callgrind-out-file="$WORK/$job.callgrind" "$WORK/rekey" "$@" --progress never \
      > "$WORK/$job.log" 2>&1; then
    # verify exits 1 when the target differs: every job here must succeed
    tail -20 "$WORK/$job.log" >&2; echo "icount: $job failed" >&2; exit 1
  fi
  grep -E '^==[0-9]+== Collected : ' "$WORK/$job.log" | awk '{print $4}'
}

job=(-m mappings/orders.yaml --source "file:$WORK/orders.csv" --regions 16 --workers 1)
declare -A n
n[migrate]=$(count migrate migrate "${job[@]}" --out "$WORK/out")
n[migrate_decimal]=$(count migrate_decimal migrate -m bench/orders-decimal.yaml --source "file:$WORK/orders.csv" --regions 16 --workers 1 --out "$WORK/out-decimal")
n[report]=$(count report report "${job[@]}" --tmp "$WORK")
n[verify]=$(count verify verify -m mappings/orders.yaml --source "file:$WORK/orders.csv" --workers 1 --target "$WORK/out" --tmp "$WORK")

counts=$(for j in "${!n[@]}"; do echo "$j ${n[$j]}"; done | sort)
goversion=$(go env GOVERSION)
vgversion=$(valgrind --version)
node - "$BASELINE" "$ROWS" "$TOL" "$goversion" "$vgversion" "$update" "$counts" <<'JS'
const fs = require('fs');
const [file, rows, tol, go, valgrind, why, lines] = process.argv.slice(2);
const now = Object.fromEntries(lines.trim().split('\n').map(l => l.split(' ')).map(([j, c]) => [j, Number(c)]));
if (why) {
  fs.writeFileSync(file, JSON.stringify({ rows: Number(rows), go, valgrind, why, instructions: now }, null, 2) + '\n');
  for (const [j, c] of Object.entries(now)) console.log(`${j.padEnd(16)} ${c.toExponential(4)} instructions (baseline recorded)`);
  process.exit(0);
}
const base = JSON.parse(fs.readFileSync(file));
const comparable = base.go === go && base.valgrind === valgrind && base.rows === Number(rows);
let failed = [];
for (const [j, c] of Object.entries(now)) {
  const b = base.instructions[j];
  const change = b ? (c / b - 1) : NaN;
  const verdict = !b ? 'no baseline' : change > Number(tol) ? 'MORE' : change < -Number(tol) ? 'less (record it: --update)' : 'ok';
  console.log(`${j.padEnd(16)} ${c.toExponential(4)} instructions, baseline ${b ? b.toExponential(4) : '-'} (${b ? (change >= 0 ? '+' : '') + (100 * change).toFixed(1) + '%' : ''}) ${verdict}`);
  if (b && change > Number(tol)) failed.push(j);
}
if (!comparable) {
  console.log(`the baseline was counted with ${base.go}, ${base.valgrind}, ${base.rows} rows; this run ${go}, ${valgrind}, ${rows} rows: not judged`);
} else if (failed.length) {
  console.log(`\n${failed.join(', ')}: more than ${(100 * tol).toFixed(0)}% more instructions than the baseline ("${base.why}").`);
  console.log('Find where with callgrind_annotate bench/work/icount/JOB.callgrind (or REKEY_CPUPROFILE); if the cost is meant, record it: bash bench/icount.sh --update "why"');
  process.exit(1);
}
JS
