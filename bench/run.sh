#!/usr/bin/env bash
# rekey's benchmark, one command:   bash bench/run.sh
# Cases (BENCH_CASES, default all): core, memory.
#   core    5M-row orders CSV -> 16 regions of zstd Parquet, rekey migrate next to DuckDB doing the
#           same job in the same run (DuckDB installed from npm into bench/work/duckdb).
#   memory  rekey migrate from gen:orders with 5M and with 50M rows: peak RSS must not grow.
# ROWS overrides the row count of the core case. Results: bench/work/results.json and a table.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
ROWS=${ROWS:-5000000}
CASES=${BENCH_CASES:-core memory}
WORK=bench/work
mkdir -p "$WORK"
go build -o "$WORK/rekey" ./cmd/rekey
REKEY="$WORK/rekey"
RESULTS="$WORK/results.json"
echo "{}" > "$RESULTS"

record() { # record NAME JSONFILE
  node -e 'const fs=require("fs");const r=JSON.parse(fs.readFileSync(process.argv[1]));r[process.argv[2]]=JSON.parse(fs.readFileSync(process.argv[3]));fs.writeFileSync(process.argv[1],JSON.stringify(r,null,2))' "$RESULTS" "$1" "$2"
}

migrate() { # migrate NAME SOURCE
  rm -rf "$WORK/out-$1"
  "$REKEY" migrate -m mappings/orders.yaml --source "$2" --out "$WORK/out-$1" --regions 16 \
    --progress never --stats-json "$WORK/$1.json" > "$WORK/$1.summary"
  record "$1" "$WORK/$1.json"
}

for c in $CASES; do
  case $c in
  core)
    CSV="$WORK/orders-$ROWS.csv"
    if [ ! -f "$CSV" ]; then
      echo "generating $CSV ..."
      "$REKEY" gen orders --rows "$ROWS" --out "$CSV"
    fi
    if [ ! -d "$WORK/duckdb/node_modules/@duckdb/node-api" ]; then
      echo "installing DuckDB (npm @duckdb/node-api) into $WORK/duckdb ..."
      mkdir -p "$WORK/duckdb"
      (cd "$WORK/duckdb" && npm init -y >/dev/null && npm install --no-audit --no-fund @duckdb/node-api >/dev/null)
    fi
    cp bench/duckdb.mjs "$WORK/duckdb/duckdb.mjs"
    echo "core: rekey migrate, $ROWS rows ..."
    migrate rekey_migrate "file:$CSV"
    echo "core: DuckDB, same job ..."
    rm -rf "$WORK/out-duckdb"
    node "$WORK/duckdb/duckdb.mjs" "$PWD/$CSV" "$PWD/$WORK/out-duckdb" "$ROWS" > "$WORK/duckdb.json"
    record duckdb "$WORK/duckdb.json"
    ;;
  memory)
    echo "memory: rekey migrate from gen:orders, 5M rows ..."
    migrate gen_5m "gen:orders?rows=5000000"
    echo "memory: rekey migrate from gen:orders, 50M rows ..."
    migrate gen_50m "gen:orders?rows=50000000"
    ;;
  *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done

node - "$RESULTS" <<'JS'
const r = JSON.parse(require('fs').readFileSync(process.argv[2]));
const mb = b => (b / 1048576).toFixed(0) + ' MiB';
const line = (name, x) => console.log(`${name.padEnd(22)} ${Math.round(x.rows_per_sec).toLocaleString('en').padStart(12)} rows/s ${x.seconds.toFixed(2).padStart(8)} s   peak RSS ${mb(x.peak_rss_bytes)}`);
console.log('\ncase                        throughput     time   memory');
for (const [k, v] of Object.entries(r)) line(k, v);
if (r.rekey_migrate && r.duckdb) {
  const ratio = r.rekey_migrate.rows_per_sec / r.duckdb.rows_per_sec;
  console.log(`\nrekey / DuckDB throughput ratio: ${ratio.toFixed(2)} (target >= 1.0); rekey peak RSS ${mb(r.rekey_migrate.peak_rss_bytes)} (target < 512 MiB)`);
}
if (r.gen_5m && r.gen_50m) {
  console.log(`peak RSS 5M rows ${mb(r.gen_5m.peak_rss_bytes)} vs 50M rows ${mb(r.gen_50m.peak_rss_bytes)} (target: unchanged)`);
}
JS
