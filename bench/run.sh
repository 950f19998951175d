#!/usr/bin/env bash
# rekey's benchmark, one command:   bash bench/run.sh
# Cases (BENCH_CASES, default all): core, stages, memory, report, verify, cassandra, kafka, sql, cdcsql,
# store, shards, cassandra-real, kafka-real.
#   core    5M-row orders CSV -> 16 regions of zstd Parquet, rekey migrate next to DuckDB doing the
#           same job in the same run (DuckDB installed from npm into bench/work/duckdb), in two job
#           shapes: mappings/orders.yaml (amount as DECIMAL(18,2)) and bench/orders-decimal.yaml
#           (amount as the unscaled decimal, DECIMAL(38,18)); alternated CORE_RUNS times, medians.
#           A third shape, wide rows: WIDE_ROWS (2M) rows of 30 columns of mixed types, every column
#           but the key null in about half the rows (bench/wide.yaml; the CSV written by DuckDB,
#           bench/duckdb-wide.mjs gen), next to DuckDB doing the same job (bench/duckdb-wide.mjs job).
#   memory  rekey migrate from gen:orders with 5M and with 50M rows: peak RSS must not grow.
#   report  rekey report (dry run, writes nothing) over the core case's CSV and over gen:orders
#           with 5M rows, each alternated with rekey migrate of the same input CORE_RUNS times,
#           medians; then over gen:orders with 50M rows, alternated the same way: faster than
#           migrate, peak RSS must not grow.
#   verify  rekey verify of the core case's CSV against the folder rekey migrate wrote from it,
#           migrate and verify alternated CORE_RUNS times, medians: verify must be at least as
#           fast as migrate wrote it.
#   cassandra  1M rows served by the CQL test server (source/cassandra/cqltest, own process) over
#           token ranges: rekey migrate (source + transform + Parquet) next to a bare gocql scan of
#           the same ranges (the ceiling) and to rekey's Cassandra source alone (the scan's own
#           work), 3 alternated runs each, medians (CASSANDRA_ROWS overrides the count); each side
#           in its own process, the server's CPU time reported per side (bench/cassandra).
#   kafka   2M JSON messages pre-produced to kfake (an in-process Kafka, own process): rekey replicate to Parquet
#           (rolls at 64 MiB or 500 ms, whichever comes first) next to a bare kafka-go group reader draining the same topic
#           (KAFKA_MESSAGES overrides the count); each side in its own process, alternated CORE_RUNS
#           times, medians, kfake's CPU time reported per side (bench/kafka). And the start:
#           replicate's first committed offset against the bare reader's first message, each
#           from its process start.
#   sql     rekey migrate into MariaDB over mysql:// next to a bare go-sql-driver program doing the
#           same batched inserts (2,000 rows per statement) of the same rows on the same number of
#           connections, alternated, medians (SQL_ROWS, default 1M; SQL_CONNS, default 4); needs
#           mariadbd (apt-get install mariadb-server) or REKEY_MYSQL_DSN (bench/sql). After each
#           migrate, rekey verify checks the table against the CSV: at least as fast as migrate wrote it.
#   cdcsql  CDCSQL_MESSAGES (default 1M) change events of Debezium's Cassandra connector (inserts,
#           updates of some columns, cell deletes, row deletes over 1M keys; 6 partitions of kfake,
#           own process): rekey replicate into MariaDB next to a bare go-sql-driver program applying
#           the same changes with the same statements, batches and connections (SQL_CONNS),
#           alternated CORE_RUNS times, medians, the table compared after every run: >= 0.9x
#           (bench/cdcsql).
#   store   the core case's job (ROWS rows of the orders CSV) written to a real S3 server, versitygw
#           on loopback (its binary from $REKEY_VERSITYGW, PATH, ~/go/bin or the CI cache, else built
#           once into bench/work), next to the same job to a local folder, alternated CORE_RUNS
#           times, medians: store throughput >= 0.9x local, peak RSS < 512 MiB; versitygw's own CPU
#           time is reported. Then the last store run's objects, downloaded through the S3 API, and
#           the last local run are read back with DuckDB: same rows, sums and checksums (bench/store).
#           Also the local job with its CSV read from the bucket (--source s3://...): >= 0.9x local.
#   shards  the core case's CSV as 8 files: rekey migrate of the folder in one process next to 4
#           shards of it writing one --out (--shard i/4 --shared-out, one after the other) and the
#           finishing step (rekey merge --out, metadata only): total CPU of the shards and the
#           finishing step within 1.1x the one process's, its time independent of the data size.
#   stages  where rekey migrate's CPU goes on the core CSV, stage by stage (a CPU profile), next to
#           each stage's floor measured on the same bytes, for both job shapes (bench/stages).
#   cassandra-real  a real Cassandra 5 node (deploy/dev/peers.sh, state in $BENCH_PEERS_STATE, default
#           /tmp/rekey-peers-bench) loaded with CASSANDRA_REAL_ROWS rows (default 1M) of shop.orders:
#           rekey migrate to Parquet next to the Spark Cassandra Connector (Spark 3.5 in local[2],
#           bench/cassandra-real/SccUnload.java: the same job, zstd Parquet) and to DSBulk's unload
#           (CSV), each in its own process on the same cores, alternated CORE_RUNS times, medians:
#           rekey >= 2x the connector's rows/s. CPU seconds and peak RSS of each side and the node's
#           CPU seconds during each (bench/cassandra-real). Needs JDK 17 and Maven.
#   kafka-real  KAFKA_REAL_MESSAGES (default 2M) JSON messages produced to a real Kafka 4 broker
#           (deploy/dev/peers.sh): rekey replicate to Parquet next to the bare kafka-go group
#           reader of the kafka case, alternated CORE_RUNS times, medians: >= 0.8x; the broker's CPU
#           seconds during each side (bench/kafka -brokers).
# ROWS overrides the row count of the core and store cases. Results: bench/work/results.json and a table.
# BENCH_QUICK=1 runs every case on small inputs, once: it checks that the benchmark runs (CI runs
# it), its figures mean nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
if [ -n "${BENCH_QUICK:-}" ]; then
  export ROWS=${ROWS:-100000} CORE_RUNS=${CORE_RUNS:-1} CASSANDRA_ROWS=${CASSANDRA_ROWS:-50000} \
    KAFKA_MESSAGES=${KAFKA_MESSAGES:-50000} CDCSQL_MESSAGES=${CDCSQL_MESSAGES:-20000} SQL_ROWS=${SQL_ROWS:-50000} GEN_SMALL=${GEN_SMALL:-100000} GEN_LARGE=${GEN_LARGE:-1000000} \
    CASSANDRA_REAL_ROWS=${CASSANDRA_REAL_ROWS:-20000} KAFKA_REAL_MESSAGES=${KAFKA_REAL_MESSAGES:-20000} \
    WIDE_ROWS=${WIDE_ROWS:-50000}
fi
ROWS=${ROWS:-5000000}
WIDE_ROWS=${WIDE_ROWS:-2000000}   # the core case's wide shape
GEN_SMALL=${GEN_SMALL:-5000000}   # the memory and report cases' two gen:orders sizes
GEN_LARGE=${GEN_LARGE:-50000000}
CASES=${BENCH_CASES:-core stages memory report verify cassandra kafka sql cdcsql store shards cassandra-real kafka-real}
WORK=bench/work
mkdir -p "$WORK"
go build -o "$WORK/rekey" ./cmd/rekey
REKEY="$WORK/rekey"
RESULTS="$WORK/results.json"
echo "{}" > "$RESULTS"

record() { # record NAME JSONFILE
  node -e 'const fs=require("fs");const r=JSON.parse(fs.readFileSync(process.argv[1]));r[process.argv[2]]=JSON.parse(fs.readFileSync(process.argv[3]));fs.writeFileSync(process.argv[1],JSON.stringify(r,null,2))' "$RESULTS" "$1" "$2"
}

migrate() { # migrate NAME SOURCE [MAPPING]
  rm -rf "$WORK/out-$1"
  "$REKEY" migrate -m "${3:-mappings/orders.yaml}" --source "$2" --out "$WORK/out-$1" --regions 16 \
    --progress never --stats-json "$WORK/$1.json" > "$WORK/$1.summary"
  record "$1" "$WORK/$1.json"
}

report_run() { # report_run NAME SOURCE
  "$REKEY" report -m mappings/orders.yaml --source "$2" --regions 16 --progress never \
    --stats-json "$WORK/$1.json" > "$WORK/$1.summary"
  record "$1" "$WORK/$1.json"
}

median() { # median NAME... : NAME = the run with the median rows/s among NAME_1..NAME_n
  node -e 'const fs=require("fs");const f=process.argv[1];const r=JSON.parse(fs.readFileSync(f));
    for (const n of process.argv.slice(2)) { const runs=Object.keys(r).filter(k=>k.startsWith(n+"_")&&/_\d+$/.test(k));
      const v=runs.map(k=>r[k]).sort((a,b)=>a.rows_per_sec-b.rows_per_sec); r[n]=v[Math.floor(v.length/2)];
      r[n].runs=v.map(x=>Math.round(x.rows_per_sec)); for (const k of runs) delete r[k]; }
    fs.writeFileSync(f, JSON.stringify(r,null,2))' "$RESULTS" "$@"
}

core_csv() { # the core case's CSV, generated once
  CSV="$WORK/orders-$ROWS.csv"
  if [ ! -f "$CSV" ]; then
    echo "generating $CSV ..."
    "$REKEY" gen orders --rows "$ROWS" --out "$CSV"
  fi
}

duckdb_install() {
  if [ ! -d "$WORK/duckdb/node_modules/@duckdb/node-api" ]; then
    echo "installing DuckDB (npm @duckdb/node-api) into $WORK/duckdb ..."
    mkdir -p "$WORK/duckdb"
    (cd "$WORK/duckdb" && npm init -y >/dev/null && npm install --no-audit --no-fund @duckdb/node-api >/dev/null)
  fi
}

versitygw_bin() { # prints the path of versitygw v1.8.0, found as store/s3store/s3test finds it, or built once
  local p
  if [ -n "${REKEY_VERSITYGW:-}" ]; then echo "$REKEY_VERSITYGW"; return; fi
  if p=$(command -v versitygw); then echo "$p"; return; fi
  for p in "$(go env GOPATH)/bin/versitygw" \
    "${REKEY_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rekey-ci}/versitygw-v1.8.0/versitygw" \
    "$PWD/$WORK/versitygw-v1.8.0/versitygw"; do
    if [ -x "$p" ]; then echo "$p"; return; fi
  done
  echo "building versitygw v1.8.0 into $WORK/versitygw-v1.8.0 (about 4 minutes, once) ..." >&2
  GOBIN="$PWD/$WORK/versitygw-v1.8.0" go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 >&2
  echo "$PWD/$WORK/versitygw-v1.8.0/versitygw"
}

# The real peers (deploy/dev/peers.sh), started by the cases that need them and stopped on exit.
# Their own state folder (BENCH_PEERS_STATE), not the checkout's: the benchmark drops and reloads
# shop.orders, which must not happen to a node started for the tests.
PEERS_STATE=${BENCH_PEERS_STATE:-${TMPDIR:-/tmp}/rekey-peers-bench}
PEERS_STARTED=""
peers() { REKEY_PEERS_STATE="$PEERS_STATE" bash deploy/dev/peers.sh "$@"; }
stop_peers() { if [ -n "$PEERS_STARTED" ]; then peers stop $PEERS_STARTED; fi; }
trap stop_peers EXIT
start_peer() { # start_peer NAME: resolves and starts it once (a peer already running there is used as it is)
  if [[ $'\n'$(peers status) == *$'\n'"$1: running"* ]]; then return; fi
  peers resolve "$1"
  PEERS_STARTED+="$1 "
  peers start "$1" > /dev/null
}
peer_pid() { cat "$PEERS_STATE/$1/pid"; }
JAVA17=${REKEY_PEERS_JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}

bench_jars() { # bench_jars NAME POM: the POM's dependencies copied once into a cache folder; prints it
  local dir
  dir="${REKEY_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rekey-peers}/bench/$1-$(sha256sum "$2" | cut -c1-12)"
  if [ ! -f "$dir/.complete" ]; then
    echo "resolving $2 through Maven into $dir ..." >&2
    rm -rf "$dir.tmp"
    mkdir -p "$(dirname "$dir")" # a fresh machine has no cache folder yet: the log goes beside the jars
    mvn -B -q -f "$2" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir.tmp/jars" > "$dir.mvn.log" 2>&1 ||
      { tail -n 30 "$dir.mvn.log" >&2; echo "Maven could not resolve $2 (log: $dir.mvn.log)" >&2; exit 1; }
    rm -rf "$dir" && mv "$dir.tmp" "$dir" && touch "$dir/.complete"
  fi
  echo "$dir"
}

scc_script() { # writes $WORK/scc.sh, which runs SccUnload (Spark 3.5 + the connector) on JDK 17
  local dir javac
  dir=$(bench_jars scc bench/cassandra-real/pom-scc.xml)
  javac="$(dirname "$JAVA17")/javac"
  mkdir -p "$WORK/scc-classes"
  "$javac" -nowarn -d "$WORK/scc-classes" -cp "$dir/jars/*" bench/cassandra-real/SccUnload.java
  "$JAVA17" -cp "$WORK/scc-classes:$dir/jars/*" SccUnload --module-options > "$WORK/scc-jvm-options"
  cat > "$WORK/scc.sh" <<SH
#!/bin/sh
# SccUnload HOST PORT KEYSPACE TABLE OUTDIR: Spark 3.5 local[2] with the Spark Cassandra Connector
SPARK_LOCAL_IP=127.0.0.1 exec "$JAVA17" $(cat "$WORK/scc-jvm-options") -Xmx1g \
  -Dlog4j.configurationFile="$PWD/deploy/dev/spark/log4j2.properties" \
  -cp "$PWD/$WORK/scc-classes:$dir/jars/*" SccUnload "\$@"
SH
}

dsbulk_script() { # writes $WORK/dsbulk.sh, which runs DSBulk's unload to CSV on JDK 17
  local dir
  dir=$(bench_jars dsbulk bench/cassandra-real/pom-dsbulk.xml)
  cat > "$WORK/dsbulk.sh" <<SH
#!/bin/sh
# dsbulk.sh HOST PORT KEYSPACE TABLE OUTDIR: DSBulk's unload of the table to CSV files in OUTDIR
exec "$JAVA17" -Xmx1g -cp "$dir/jars/*" com.datastax.oss.dsbulk.runner.DataStaxBulkLoader unload \
  -h "\$1" -port "\$2" -k "\$3" -t "\$4" -url "\$5" -logDir "\$5.logs"
SH
}

for c in $CASES; do
  case $c in
  core)
    core_csv
    duckdb_install
    cp bench/duckdb.mjs bench/duckdb-wide.mjs "$WORK/duckdb/"
    WIDE_CSV="$WORK/wide-$WIDE_ROWS.csv"
    if [ ! -f "$WIDE_CSV" ]; then
      echo "generating $WIDE_CSV ..."
      # under another name until whole: a run killed while DuckDB writes leaves no file that
      # the next run would take as generated
      rm -f "$WORK/wide-$WIDE_ROWS.partial.csv"
      node "$WORK/duckdb/duckdb-wide.mjs" gen "$PWD/$WORK/wide-$WIDE_ROWS.partial.csv" "$WIDE_ROWS"
      mv "$WORK/wide-$WIDE_ROWS.partial.csv" "$WIDE_CSV"
    fi
    # These 2-core machines are noisy: alternate the two CORE_RUNS times, keep each one's median.
    for i in $(seq "${CORE_RUNS:-3}"); do
      echo "core: rekey migrate, $ROWS rows (run $i) ..."
      migrate "rekey_migrate_$i" "file:$CSV"
      echo "core: DuckDB, same job (run $i) ..."
      rm -rf "$WORK/out-duckdb"
      node "$WORK/duckdb/duckdb.mjs" "$PWD/$CSV" "$PWD/$WORK/out-duckdb" "$ROWS" > "$WORK/duckdb_$i.json"
      record "duckdb_$i" "$WORK/duckdb_$i.json"
      echo "core, decimal shape: rekey migrate, $ROWS rows (run $i) ..."
      migrate "decimal_rekey_$i" "file:$CSV" bench/orders-decimal.yaml
      echo "core, decimal shape: DuckDB, same job (run $i) ..."
      rm -rf "$WORK/out-duckdb"
      node "$WORK/duckdb/duckdb.mjs" "$PWD/$CSV" "$PWD/$WORK/out-duckdb" "$ROWS" 'DECIMAL(38,18)' > "$WORK/decimal_duckdb_$i.json"
      record "decimal_duckdb_$i" "$WORK/decimal_duckdb_$i.json"
      echo "core, wide shape: rekey migrate, $WIDE_ROWS rows (run $i) ..."
      migrate "wide_rekey_$i" "file:$WIDE_CSV" bench/wide.yaml
      echo "core, wide shape: DuckDB, same job (run $i) ..."
      rm -rf "$WORK/out-duckdb"
      node "$WORK/duckdb/duckdb-wide.mjs" job "$PWD/$WIDE_CSV" "$PWD/$WORK/out-duckdb" "$WIDE_ROWS" > "$WORK/wide_duckdb_$i.json"
      record "wide_duckdb_$i" "$WORK/wide_duckdb_$i.json"
    done
    rm -rf "$WORK/out-duckdb" "$WORK"/out-rekey_migrate_* "$WORK"/out-decimal_rekey_* "$WORK"/out-wide_rekey_*
    median rekey_migrate duckdb decimal_rekey decimal_duckdb wide_rekey wide_duckdb
    ;;
  stages)
    core_csv
    for m in mappings/orders.yaml bench/orders-decimal.yaml; do
      echo "stages: where rekey migrate's CPU goes, $m, $ROWS rows ..."
      go run ./bench/stages -rekey "$REKEY" -csv "$CSV" -mapping "$m" -work "$WORK" -json "$WORK/stages-$(basename "$m" .yaml).json" > "$WORK/stages-$(basename "$m" .yaml).md"
    done
    ;;
  memory)
    echo "memory: rekey migrate from gen:orders, $GEN_SMALL rows ..."
    migrate gen_5m "gen:orders?rows=$GEN_SMALL"
    echo "memory: rekey migrate from gen:orders, $GEN_LARGE rows ..."
    migrate gen_50m "gen:orders?rows=$GEN_LARGE"
    rm -rf "$WORK/out-gen_5m" "$WORK/out-gen_50m"
    ;;
  report)
    CSV="$WORK/orders-$ROWS.csv"
    [ -f "$CSV" ] || "$REKEY" gen orders --rows "$ROWS" --out "$CSV"
    # report and migrate of the same input alternated CORE_RUNS times, medians; each run starts
    # with the previous one's files on disk (sync), not with their writeback to pay for
    for i in $(seq "${CORE_RUNS:-3}"); do
      echo "report: rekey report, $ROWS rows (run $i) ..."
      sync; report_run "rekey_report_$i" "file:$CSV"
      echo "report: rekey migrate, same input (run $i) ..."
      sync; migrate "report_migrate_csv_$i" "file:$CSV"
      echo "report: rekey report from gen:orders, $GEN_SMALL rows (run $i) ..."
      sync; report_run "report_gen_5m_$i" "gen:orders?rows=$GEN_SMALL"
      echo "report: rekey migrate, same input (run $i) ..."
      sync; migrate "report_migrate_gen_5m_$i" "gen:orders?rows=$GEN_SMALL"
    done
    rm -rf "$WORK"/out-report_migrate_*
    median rekey_report report_migrate_csv report_gen_5m report_migrate_gen_5m
    # a 50M-row run's time varies by 15% here from one minute to the next: alternated too
    for i in $(seq "${CORE_RUNS:-3}"); do
      echo "report: rekey report from gen:orders, $GEN_LARGE rows (run $i) ..."
      sync; report_run "report_gen_50m_$i" "gen:orders?rows=$GEN_LARGE"
      echo "report: rekey migrate, same input (run $i) ..."
      sync; migrate "report_migrate_gen_50m_$i" "gen:orders?rows=$GEN_LARGE"
      rm -rf "$WORK/out-report_migrate_gen_50m_$i"
    done
    median report_gen_50m report_migrate_gen_50m
    ;;
  verify)
    CSV="$WORK/orders-$ROWS.csv"
    [ -f "$CSV" ] || "$REKEY" gen orders --rows "$ROWS" --out "$CSV"
    for i in $(seq "${CORE_RUNS:-3}"); do
      echo "verify: rekey migrate, $ROWS rows (run $i) ..."
      migrate "verify_migrate_$i" "file:$CSV"
      echo "verify: rekey verify of that output (run $i) ..."
      code=0
      "$REKEY" verify -m mappings/orders.yaml --source "file:$CSV" --target "$WORK/out-verify_migrate_$i" \
        --progress never --stats-json "$WORK/verify_$i.json" > "$WORK/verify_$i.summary" || code=$?
      if [ "$code" != 0 ]; then cat "$WORK/verify_$i.summary"; echo "verify: exit $code, want 0 (equal)" >&2; exit 1; fi
      record "verify_$i" "$WORK/verify_$i.json"
      rm -rf "$WORK/out-verify_migrate_$i"
    done
    median verify_migrate verify
    ;;
  cassandra)
    echo "cassandra: rekey migrate from the CQL test server vs a bare gocql scan, ${CASSANDRA_ROWS:-1000000} rows ..."
    go run ./bench/cassandra -rekey "$REKEY" -rows "${CASSANDRA_ROWS:-1000000}" -work "$WORK" -json "$WORK/cassandra.json" > /dev/null
    record cassandra_bare "$WORK/cassandra-bare.json"
    record cassandra_source "$WORK/cassandra-source.json"
    record cassandra_rekey "$WORK/cassandra-rekey.json"
    ;;
  kafka)
    echo "kafka: rekey replicate vs a bare kafka-go group reader, ${KAFKA_MESSAGES:-2000000} messages ..."
    # rolls closed every 500 ms, as a service runs it; the start (process start to the first
    # committed offset) is the first fetched batch and its roll's close (a partition's first
    # roll closes after its first batch)
    go run ./bench/kafka -rekey "$REKEY" -messages "${KAFKA_MESSAGES:-2000000}" -runs "${CORE_RUNS:-3}" -work "$WORK" \
      -json "$WORK/kafka.json" -rekey-args "--roll-interval 500ms" > /dev/null
    record kafka_bare "$WORK/kafka-bare.json"
    record kafka_rekey "$WORK/kafka-rekey.json"
    ;;
  sql)
    echo "sql: rekey migrate into MariaDB vs a bare go-sql-driver loop, ${SQL_ROWS:-1000000} rows ..."
    go run ./bench/sql -rekey "$REKEY" -rows "${SQL_ROWS:-1000000}" -conns "${SQL_CONNS:-4}" -work "$WORK" -json "$WORK/sql.json" > /dev/null
    record sql_bare "$WORK/sql-bare.json"
    record sql_rekey "$WORK/sql-rekey.json"
    record sql_verify "$WORK/sql-verify.json"
    ;;
  cdcsql)
    echo "cdcsql: rekey replicate of Debezium's Cassandra events into MariaDB vs a bare go-sql-driver program, ${CDCSQL_MESSAGES:-1000000} events ..."
    go run ./bench/cdcsql -rekey "$REKEY" -messages "${CDCSQL_MESSAGES:-1000000}" -conns "${SQL_CONNS:-4}" -runs "${CORE_RUNS:-3}" \
      -work "$WORK" -json "$WORK/cdcsql.json" > /dev/null
    record cdcsql_bare "$WORK/cdcsql-bare.json"
    record cdcsql_rekey "$WORK/cdcsql-rekey.json"
    ;;
  store)
    core_csv
    duckdb_install
    VGW=$(versitygw_bin)
    echo "store: rekey migrate to versitygw ($VGW) on loopback vs to a local folder, $ROWS rows ..."
    go run ./bench/store -rekey "$REKEY" -versitygw "$VGW" -csv "$CSV" -rows "$ROWS" -runs "${CORE_RUNS:-3}" \
      -work "$WORK" -json "$WORK/store.json" > /dev/null
    record store_local "$WORK/store-local.json"
    record store_s3 "$WORK/store-store.json"
    record store_read "$WORK/store-read.json"
    echo "store: reading both outputs back with DuckDB ..."
    cp bench/readback.mjs "$WORK/duckdb/readback.mjs"
    code=0
    node "$WORK/duckdb/readback.mjs" "$PWD/$WORK/out-store-local" "$PWD/$WORK/store-readback" "$ROWS" > "$WORK/store-readback.json" || code=$?
    record store_readback "$WORK/store-readback.json"
    if [ "$code" != 0 ]; then cat "$WORK/store-readback.json"; echo "store: DuckDB readback differs from the local run" >&2; exit 1; fi
    rm -rf "$WORK/out-store-local" "$WORK/store-readback" "$WORK/store-vgw"
    ;;
  shards)
    core_csv
    SH="$WORK/shards"; rm -rf "$SH"; mkdir -p "$SH/export"
    # the core CSV dealt round-robin into 8 files, each with the header
    awk -v dir="$SH/export" 'NR==1{h=$0; next} {f=sprintf("%s/part-%d.csv", dir, (NR-2)%8); if(!(f in seen)){print h > f; seen[f]=1} print > f}' "$CSV"
    cpu() { # cpu NAME CMD...: runs CMD, appends "NAME wall user+sys" to $SH/times
      /usr/bin/time -f "$1 %e %U %S" -a -o "$SH/times" "${@:2}" > /dev/null
    }
    echo "shards: one process over 8 files vs 4 shards writing one --out + the finishing step, $ROWS rows ..."
    job=(migrate -m mappings/orders.yaml --source "file:$SH/export" --regions 16 --progress never)
    cpu one "$REKEY" "${job[@]}" --out "$SH/one"
    for i in 0 1 2 3; do cpu "shard$i" "$REKEY" "${job[@]}" --shard "$i/4" --shared-out --out "$SH/all"; done
    cpu merge "$REKEY" merge --out "$SH/all"
    "$REKEY" verify -m mappings/orders.yaml --source "file:$SH/export" --target "$SH/all" --progress never > "$SH/verify.txt" || { cat "$SH/verify.txt"; echo "shards: the finished shards differ from the source" >&2; exit 1; }
    node -e 'const fs=require("fs");const t={};for(const l of fs.readFileSync(process.argv[1],"utf8").trim().split("\n")){const [n,w,u,s]=l.split(" ");t[n]={wall:+w,cpu:+u+ +s};}
      const sh=[0,1,2,3].map(i=>t["shard"+i]);const cpu=sh.reduce((a,x)=>a+x.cpu,0)+t.merge.cpu;
      const r={rows_per_sec:+process.argv[2]/(sh.reduce((a,x)=>a+x.wall,0)+t.merge.wall),seconds:sh.reduce((a,x)=>a+x.wall,0)+t.merge.wall,
        one_cpu_seconds:t.one.cpu,one_seconds:t.one.wall,shards_cpu_seconds:cpu,merge_seconds:t.merge.wall,merge_cpu_seconds:t.merge.cpu};
      fs.writeFileSync(process.argv[3],JSON.stringify(r))' "$SH/times" "$ROWS" "$WORK/shards.json"
    record shards "$WORK/shards.json"
    rm -rf "$SH"
    ;;
  cassandra-real)
    start_peer cassandra
    scc_script
    dsbulk_script
    hosts=$(peers env | tr ' ' '\n' | sed -n 's/^CASSANDRA_HOSTS=//p')
    echo "cassandra-real: rekey migrate vs the Spark Cassandra Connector vs DSBulk unload on a real Cassandra node ($hosts), ${CASSANDRA_REAL_ROWS:-1000000} rows ..."
    go run ./bench/cassandra-real -rekey "$REKEY" -hosts "$hosts" -server-pid "$(peer_pid cassandra)" \
      -rows "${CASSANDRA_REAL_ROWS:-1000000}" -runs "${CORE_RUNS:-3}" -scc "sh $WORK/scc.sh" -dsbulk "sh $WORK/dsbulk.sh" \
      -work "$WORK" -json "$WORK/cassandra-real.json" > /dev/null
    record cassandra_real_rekey "$WORK/cassandra-real-rekey.json"
    record cassandra_real_scc "$WORK/cassandra-real-scc.json"
    record cassandra_real_dsbulk "$WORK/cassandra-real-dsbulk.json"
    ;;
  kafka-real)
    start_peer kafka
    brokers=$(peers env | tr ' ' '\n' | sed -n 's/^KAFKA_BROKERS=//p')
    echo "kafka-real: rekey replicate vs a bare kafka-go group reader on a real Kafka broker ($brokers), ${KAFKA_REAL_MESSAGES:-2000000} messages ..."
    go run ./bench/kafka -rekey "$REKEY" -brokers "$brokers" -broker-pid "$(peer_pid kafka)" -runs "${CORE_RUNS:-3}" \
      -messages "${KAFKA_REAL_MESSAGES:-2000000}" -work "$WORK" -json "$WORK/kafka-real.json" > /dev/null
    record kafka_real_bare "$WORK/kafka-real-bare.json"
    record kafka_real_rekey "$WORK/kafka-real-rekey.json"
    ;;
  *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done

node - "$RESULTS" <<'JS'
const r = JSON.parse(require('fs').readFileSync(process.argv[2]));
const mb = b => (b / 1048576).toFixed(0) + ' MiB';
const line = (name, x) => console.log(`${name.padEnd(22)} ${Math.round(x.rows_per_sec).toLocaleString('en').padStart(12)} rows/s ${x.seconds.toFixed(2).padStart(8)} s   ${x.peak_rss_bytes ? 'peak RSS ' + mb(x.peak_rss_bytes) : '(same process)'}${x.runs ? '   median of ' + x.runs.join(', ') : ''}`);
// a target judged on a full run only: a quick run's inputs are too small for its figures to mean anything
const judged = pass => process.env.BENCH_QUICK ? 'not judged (quick run)' : pass ? 'PASS' : 'FAIL';
console.log('\ncase                        throughput     time   memory');
for (const [k, v] of Object.entries(r)) if (v.rows_per_sec !== undefined) line(k, v);
if (r.rekey_migrate && r.duckdb) {
  const ratio = r.rekey_migrate.rows_per_sec / r.duckdb.rows_per_sec;
  console.log(`\nrekey / DuckDB throughput ratio: ${ratio.toFixed(2)} (target >= 2.0); rekey peak RSS ${mb(r.rekey_migrate.peak_rss_bytes)} (target < 512 MiB): ${judged(ratio >= 2.0 && r.rekey_migrate.peak_rss_bytes < 512 * 1048576)}`);
}
if (r.decimal_rekey && r.decimal_duckdb) {
  const ratio = r.decimal_rekey.rows_per_sec / r.decimal_duckdb.rows_per_sec;
  console.log(`decimal shape: rekey / DuckDB throughput ratio: ${ratio.toFixed(2)} (target >= 2.0); rekey peak RSS ${mb(r.decimal_rekey.peak_rss_bytes)} (target < 512 MiB): ${judged(ratio >= 2.0 && r.decimal_rekey.peak_rss_bytes < 512 * 1048576)}`);
}
if (r.wide_rekey && r.wide_duckdb) {
  const ratio = r.wide_rekey.rows_per_sec / r.wide_duckdb.rows_per_sec;
  console.log(`wide shape (30 columns, half null): rekey / DuckDB throughput ratio: ${ratio.toFixed(2)} (target >= 2.0); rekey peak RSS ${mb(r.wide_rekey.peak_rss_bytes)} (target < 512 MiB): ${judged(ratio >= 2.0 && r.wide_rekey.peak_rss_bytes < 512 * 1048576)}`);
}
if (r.gen_5m && r.gen_50m) {
  console.log(`peak RSS ${r.gen_5m.rows_in} rows ${mb(r.gen_5m.peak_rss_bytes)} vs ${r.gen_50m.rows_in} rows ${mb(r.gen_50m.peak_rss_bytes)} (target: unchanged)`);
}
{
  const m = r.report_migrate_csv || r.rekey_migrate;
  if (r.rekey_report && m) {
    console.log(`rekey report / migrate throughput ratio, ${r.rekey_report.rows_in} rows of CSV: ${(r.rekey_report.rows_per_sec / m.rows_per_sec).toFixed(2)} (target > 1.0)`);
  }
  if (r.report_gen_5m && r.report_migrate_gen_5m) {
    console.log(`rekey report / migrate throughput ratio, gen:orders ${r.report_gen_5m.rows_in} rows: ${(r.report_gen_5m.rows_per_sec / r.report_migrate_gen_5m.rows_per_sec).toFixed(2)} (target > 1.0)`);
  }
  const m50 = r.report_migrate_gen_50m || r.gen_50m;
  if (r.report_gen_50m && m50) {
    console.log(`rekey report / migrate throughput ratio, gen:orders ${r.report_gen_50m.rows_in} rows: ${(r.report_gen_50m.rows_per_sec / m50.rows_per_sec).toFixed(2)} (target > 1.0)`);
  }
}
if (r.verify && r.verify_migrate) {
  console.log(`rekey verify / migrate throughput ratio: ${(r.verify.rows_per_sec / r.verify_migrate.rows_per_sec).toFixed(2)} (target >= 1.0); verify peak RSS ${mb(r.verify.peak_rss_bytes)}`);
}
if (r.report_gen_5m && r.report_gen_50m) {
  console.log(`report peak RSS ${r.report_gen_5m.rows_in} rows ${mb(r.report_gen_5m.peak_rss_bytes)} vs ${r.report_gen_50m.rows_in} rows ${mb(r.report_gen_50m.peak_rss_bytes)} (target: unchanged)`);
}
if (r.cassandra_rekey && r.cassandra_bare) {
  console.log(`rekey migrate from Cassandra / bare gocql scan throughput ratio: ${(r.cassandra_rekey.rows_per_sec / r.cassandra_bare.rows_per_sec).toFixed(2)} (target >= 0.8)`);
  if (r.cassandra_source) console.log(`rekey's Cassandra source alone / bare gocql scan throughput ratio: ${(r.cassandra_source.rows_per_sec / r.cassandra_bare.rows_per_sec).toFixed(2)} (the same work on both sides; CPU ${r.cassandra_source.cpu_seconds.toFixed(2)} vs ${r.cassandra_bare.cpu_seconds.toFixed(2)} s)`);
}
if (r.kafka_rekey && r.kafka_bare) {
  const ratio = r.kafka_rekey.rows_per_sec / r.kafka_bare.rows_per_sec;
  console.log(`rekey replicate / bare kafka-go reader throughput ratio: ${ratio.toFixed(2)} (target >= 1.0): ${judged(ratio >= 1.0)}; replicate peak RSS ${mb(r.kafka_rekey.peak_rss_bytes)} (target < 512 MiB)`);
  const runs = x => (x.runs || []).map(v => Math.round(v / 1000) + 'k').join(', ');
  console.log(`  medians of ${(r.kafka_rekey.runs || []).length} alternated runs; rekey ${runs(r.kafka_rekey)} msg/s, CPU ${r.kafka_rekey.cpu_seconds.toFixed(2)} s; bare ${runs(r.kafka_bare)}, CPU ${r.kafka_bare.cpu_seconds.toFixed(2)} s; kfake's CPU ${r.kafka_rekey.server_cpu_seconds.toFixed(2)} vs ${r.kafka_bare.server_cpu_seconds.toFixed(2)} s`);
  if (r.kafka_rekey.start_seconds && r.kafka_bare.start_seconds) {
    const gap = r.kafka_rekey.start_seconds - r.kafka_bare.start_seconds;
    console.log(`replicate start: first committed offset ${r.kafka_rekey.start_seconds.toFixed(2)} s after the process start, the bare reader's first message ${r.kafka_bare.start_seconds.toFixed(2)} s: ${gap.toFixed(2)} s later (target <= 0.3 s): ${judged(gap <= 0.3)}`);
  }
}
const cpu = x => `CPU ${x.cpu_seconds.toFixed(2)} s, peak RSS ${mb(x.peak_rss_bytes)}, node CPU ${x.server_cpu_seconds.toFixed(2)} s`;
if (r.cassandra_real_rekey) {
  const x = r.cassandra_real_rekey;
  console.log(`\nreal Cassandra 5 node, ${x.rows_in} rows (load average ${x.loadavg} when rekey's median run started; ${require('os').cpus().length} cores, shared with the peer):`);
  console.log(`  rekey migrate to Parquet: ${Math.round(x.rows_per_sec).toLocaleString('en')} rows/s, ${cpu(x)}`);
  if (r.cassandra_real_scc) {
    const s = r.cassandra_real_scc, ratio = x.rows_per_sec / s.rows_per_sec;
    console.log(`  Spark Cassandra Connector to Parquet (local[2]): ${Math.round(s.rows_per_sec).toLocaleString('en')} rows/s (the job alone, without the JVM's and Spark's start: ${s.job_seconds.toFixed(2)} s of ${s.seconds.toFixed(2)} s), ${cpu(s)}`);
    console.log(`  rekey migrate / Spark Cassandra Connector throughput ratio: ${ratio.toFixed(2)} (target >= 2.0): ${judged(ratio >= 2)}; against the Spark job alone ${(x.seconds > 0 ? s.job_seconds / x.seconds : 0).toFixed(2)}`);
  }
  if (r.cassandra_real_dsbulk) {
    const d = r.cassandra_real_dsbulk;
    console.log(`  DSBulk unload to CSV: ${Math.round(d.rows_per_sec).toLocaleString('en')} rows/s, ${cpu(d)}`);
    console.log(`  rekey migrate / DSBulk unload throughput ratio: ${(x.rows_per_sec / d.rows_per_sec).toFixed(2)} (no target: DSBulk writes CSV, not Parquet)`);
  }
}
if (r.kafka_real_rekey && r.kafka_real_bare) {
  const x = r.kafka_real_rekey, b = r.kafka_real_bare, ratio = x.rows_per_sec / b.rows_per_sec;
  console.log(`\nreal Kafka 4 broker, ${x.rows_in} messages (load average ${x.loadavg} when rekey's median run started; ${require('os').cpus().length} cores, shared with the peer):`);
  console.log(`  rekey replicate to Parquet: ${Math.round(x.rows_per_sec).toLocaleString('en')} msg/s, ${cpu(x).replace('node', 'broker')}`);
  console.log(`  bare kafka-go group reader: ${Math.round(b.rows_per_sec).toLocaleString('en')} msg/s, ${cpu(b).replace('node', 'broker')}`);
  console.log(`  rekey replicate / bare kafka-go reader throughput ratio: ${ratio.toFixed(2)} (target >= 0.8): ${judged(ratio >= 0.8)}`);
}
if (r.sql_rekey && r.sql_bare) {
  console.log(`rekey migrate into MariaDB / bare go-sql-driver inserts throughput ratio: ${(r.sql_rekey.rows_per_sec / r.sql_bare.rows_per_sec).toFixed(2)} (target >= 0.8); rekey peak RSS ${mb(r.sql_rekey.peak_rss_bytes)} (target < 512 MiB)`);
}
if (r.cdcsql_rekey && r.cdcsql_bare) {
  const ratio = r.cdcsql_rekey.rows_per_sec / r.cdcsql_bare.rows_per_sec;
  console.log(`rekey replicate of Debezium's Cassandra events into MariaDB / bare go-sql-driver program throughput ratio: ${ratio.toFixed(2)} (target >= 0.9): ${judged(ratio >= 0.9)}; CPU ${r.cdcsql_rekey.cpu_seconds.toFixed(1)} s vs ${r.cdcsql_bare.cpu_seconds.toFixed(1)} s, rekey peak RSS ${mb(r.cdcsql_rekey.peak_rss_bytes)}`);
}
if (r.sql_verify && r.sql_rekey) {
  console.log(`rekey verify against MariaDB / rekey migrate into it throughput ratio: ${(r.sql_verify.rows_per_sec / r.sql_rekey.rows_per_sec).toFixed(2)} (target >= 1.0); verify peak RSS ${mb(r.sql_verify.peak_rss_bytes)}`);
}
for (const m of ['orders', 'orders-decimal']) {
  const f = require('path').join(require('path').dirname(process.argv[2]), `stages-${m}.md`);
  if (require('fs').existsSync(f)) console.log(`\nstages, ${m}: ` + require('fs').readFileSync(f, 'utf8').trim());
}
if (r.shards) {
  const x = r.shards, ratio = x.shards_cpu_seconds / x.one_cpu_seconds;
  console.log(`4 shards + finishing step / one process total CPU: ${ratio.toFixed(2)} (target <= 1.1; ${x.shards_cpu_seconds.toFixed(1)} s vs ${x.one_cpu_seconds.toFixed(1)} s); finishing step (metadata only) ${x.merge_seconds.toFixed(2)} s wall, ${x.merge_cpu_seconds.toFixed(2)} s CPU`);
}
if (r.store_s3 && r.store_local) {
  const ratio = r.store_s3.rows_per_sec / r.store_local.rows_per_sec, rss = r.store_s3.peak_rss_bytes;
  const pass = ratio >= 0.9 && rss < 512 * 1048576 && (!r.store_readback || r.store_readback.ok);
  console.log(`rekey migrate to versitygw / to a local folder throughput ratio: ${ratio.toFixed(2)} (target >= 0.9); store peak RSS ${mb(rss)}, local ${mb(r.store_local.peak_rss_bytes)} (target < 512 MiB): ${process.env.BENCH_QUICK ? 'not judged (quick run)' : pass ? 'PASS' : 'FAIL'}`);
  console.log(`  load average when the median runs started: local ${r.store_local.loadavg}, store ${r.store_s3.loadavg} (2 cores, shared)`);
  console.log(`  versitygw (same cores) spent ${r.store_s3.server_cpu_seconds.toFixed(1)} s CPU per run (rekey ${r.store_s3.cpu_seconds.toFixed(1)} s, local rekey ${r.store_local.cpu_seconds.toFixed(1)} s); versitygw peak RSS ${mb(r.store_s3.server_peak_rss_bytes)}`);
  if (r.store_read) {
    const read = r.store_read.rows_per_sec / r.store_local.rows_per_sec;
    console.log(`rekey migrate reading the CSV from versitygw / from local disk throughput ratio: ${read.toFixed(2)} (target >= 0.9): ${judged(read >= 0.9)}; peak RSS ${mb(r.store_read.peak_rss_bytes)}`);
  }
  if (r.store_readback) console.log(`  DuckDB readback of the objects vs the local run: ${r.store_readback.ok ? 'equal' : 'DIFFERENT'} (${r.store_readback.store.rows} rows, sum(amount) ${r.store_readback.store.amount_sum}, checksum ${r.store_readback.store.checksum})`);
}
JS
