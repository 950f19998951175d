#!/usr/bin/env bash
# The real peers on loopback, from Maven Central: Apache Cassandra 5.0, Apache Kafka 4 (KRaft) and
# Debezium's Cassandra connector, each a JVM of its own on JDK 17 with a bounded heap.
#
#   bash deploy/dev/peers.sh resolve            fetch the pinned versions (deploy/dev/<peer>/pom.xml)
#   bash deploy/dev/peers.sh start [PEER...]    start cassandra, kafka, debezium (all by default)
#                                                and wait until each answers; prints the exports
#   eval "$(bash deploy/dev/peers.sh env)"      CASSANDRA_HOSTS, KAFKA_BROKERS, REKEY_PEERS_*
#   bash deploy/dev/peers.sh status             which are running, their pids and RSS
#   bash deploy/dev/peers.sh stop [PEER...]     stop them by their pid files (all by default)
#   bash deploy/dev/peers.sh ci-test            resolve (Spark's reader too), start all, run the
#                                                real-peer tier, stop
#
# REKEY_PEERS_CACHE   the jars, one folder per peer and version (~/.cache/rekey-peers)
# REKEY_PEERS_STATE   data, logs and pid files (/tmp/rekey-peers-<checksum of the checkout's
#                     path>); a start of a peer that is not running wipes its folder first
# REKEY_PEERS_JAVA    the java of JDK 17 (Cassandra 5.0 runs on 11 and 17 only)
# REKEY_PEERS_TIMEOUT seconds to wait for a peer to answer (300)
# Ports are free loopback ports chosen at start, unless REKEY_PEERS_CASSANDRA_PORT,
# REKEY_PEERS_CASSANDRA_STORAGE_PORT, REKEY_PEERS_KAFKA_PORT, REKEY_PEERS_KAFKA_CONTROLLER_PORT or
# REKEY_PEERS_DEBEZIUM_HTTP_PORT name them.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${REKEY_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rekey-peers}
# one state folder per checkout by default: two checkouts' peers never share pid files
STATE=${REKEY_PEERS_STATE:-${TMPDIR:-/tmp}/rekey-peers-$(printf %s "$REPO" | cksum | cut -d ' ' -f 1)}
JAVA=${REKEY_PEERS_JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}
TIMEOUT=${REKEY_PEERS_TIMEOUT:-300}
PEERS=(cassandra kafka debezium)

die() { echo "peers: $*" >&2; exit 1; }
log() { echo "peers: $*" >&2; }

# version PEER: the version its pom pins (the one dependency's <version>).
version() { sed -n 's:.*<version>\(.*\)</version>.*:\1:p' "$HERE/$1/pom.xml" | tail -n 1; }
libdir() { echo "$CACHE/$1-$(version "$1")"; }

resolve_one() {
  local p=$1 dir
  dir=$(libdir "$p")
  if [ -f "$dir/.complete" ]; then
    log "$p $(version "$p"): cached in $dir"
    return
  fi
  command -v mvn >/dev/null || die "mvn not found: apt-get install maven"
  log "$p $(version "$p"): resolving through Maven into $dir"
  rm -rf "$dir.tmp"
  mvn -B -q -f "$HERE/$p/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$dir.tmp" >&2 || die "$p: Maven could not resolve $(version "$p") (deploy/dev/$p/pom.xml)"
  rm -rf "$dir" && mv "$dir.tmp" "$dir" && touch "$dir/.complete"
}

cmd_resolve() {
  local p
  for p in "${@:-${PEERS[@]}}"; do resolve_one "$p"; done
}

need_java() {
  [ -x "$JAVA" ] || die "no JDK 17 at $JAVA (apt-get install openjdk-17-jdk-headless, or set REKEY_PEERS_JAVA)"
  "$JAVA" -version 2>&1 | grep -q '"17\.' || die "$JAVA is not JDK 17 (Cassandra 5.0 runs on 11 and 17 only)"
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: a loopback port nothing listens on (and none this script handed out already), below
# the kernel's range for outgoing connections' ports, so that no client socket takes it between
# this check and the peer's bind.
TAKEN=" "
free_port() {
  local p i lo=10000 hi
  hi=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$hi" -gt $((lo + 1000)) ] || hi=32768
  for i in $(seq 200); do
    p=$((lo + RANDOM % (hi - lo)))
    if [[ $TAKEN != *" $p "* ]] && port_free "$p"; then
      TAKEN+="$p "
      echo "$p"
      return
    fi
  done
  die "no free loopback port found"
}

pidfile() { echo "$STATE/$1/pid"; }
running() { # running PEER: its pid file names a live process
  local f
  f=$(pidfile "$1")
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}
rss_mib() { awk '/^VmRSS:/ {printf "%d", $2/1024}' "/proc/$1/status" 2>/dev/null || echo "?"; }
now_ms() { date +%s%3N; }

# setvar PEER NAME VALUE: remembered in the peer's vars file, read back by env.
setvar() { echo "$2=$3" >>"$STATE/$1/vars"; }
getvar() { sed -n "s/^$2=//p" "$STATE/$1/vars" 2>/dev/null | tail -n 1; }

# launch PEER LOG ARGS...: starts a JVM detached from this shell, records its pid.
launch() {
  local p=$1 out=$2
  shift 2
  setsid "$JAVA" "$@" </dev/null >>"$out" 2>&1 &
  echo $! >"$(pidfile "$p")"
}

# await PEER WHAT CHECK...: waits until CHECK succeeds, failing when the process dies or after
# TIMEOUT seconds; prints the time taken and the RSS.
await() {
  local p=$1 what=$2 t0 pid
  shift 2
  t0=$(now_ms)
  pid=$(cat "$(pidfile "$p")")
  while ! "$@" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$(pidfile "$p")"
      tail -n 30 "$STATE/$p/"*.log >&2 || true
      # AWAIT_EXITED_RC set: the caller starts the peer again
      [ -z "${AWAIT_EXITED_RC:-}" ] || return "$AWAIT_EXITED_RC"
      die "$p exited before $what (logs in $STATE/$p)"
    fi
    if [ $(($(now_ms) - t0)) -gt $((TIMEOUT * 1000)) ]; then
      tail -n 30 "$STATE/$p/"*.log >&2 || true
      die "$p: no $what within ${TIMEOUT}s (logs in $STATE/$p; raise REKEY_PEERS_TIMEOUT on a slow machine)"
    fi
    sleep 0.5 # polling a process we do not control
  done
  local ms=$(($(now_ms) - $(getvar "$p" begin_ms)))
  setvar "$p" start_ms "$ms"
  log "$p: $what after $((ms / 1000)).$(((ms % 1000) / 100)) s, RSS $(rss_mib "$pid") MiB (pid $pid)"
}

# cql_answers PORT: the native protocol answers OPTIONS with SUPPORTED (v4 frame: 0x84, opcode 6).
# The node opens its CQL port last in its start-up, once it can serve queries.
cql_answers() {
  local reply
  reply=$(timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"'
    printf "\x04\x00\x00\x01\x05\x00\x00\x00\x00" >&3
    head -c 5 <&3 | od -An -tx1' | tr -d ' \n')
  [ "$reply" = 8400000106 ]
}

# kafka_answers PORT: the broker answers an ApiVersions request (v0) without error.
kafka_answers() {
  local reply
  reply=$(timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"'
    # size 15: api key 18 (ApiVersions), version 0, correlation id 7, client id "peers"
    printf "\x00\x00\x00\x0f\x00\x12\x00\x00\x00\x00\x00\x07\x00\x05peers" >&3
    head -c 10 <&3 | od -An -tx1' | tr -d ' \n')
  # size (4 bytes), correlation id 7, error code 0
  [[ ${reply:8:12} == 000000070000 ]]
}

debezium_healthy() { curl -fsS "http://127.0.0.1:$1/health" >/dev/null; }

# begin PEER: checks the peer is resolved and not running, gives it an empty state folder and
# starts its clock (await reports the time from here); prints its jar folder.
begin() {
  local lib
  lib=$(libdir "$1")
  [ -f "$lib/.complete" ] || die "$1: not resolved (run: bash deploy/dev/peers.sh resolve)"
  running "$1" && die "$1 is already running (pid $(cat "$(pidfile "$1")")); stop it first"
  rm -rf "${STATE:?}/$1"
  mkdir -p "$STATE/$1"
  setvar "$1" begin_ms "$(now_ms)"
  echo "$lib"
}

# The JVM options Cassandra 5.0 needs on JDK 17 (apache/cassandra conf/jvm17-server.options:
# G1 and the JPMS exports and opens without which the JVM dies at start).
JVM17_CASSANDRA=(
  -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1 -XX:G1HeapRegionSize=16m
  -XX:G1RSetUpdatingPauseTimePercent=5 -XX:MaxGCPauseMillis=300 -XX:InitiatingHeapOccupancyPercent=70
  -Djdk.attach.allowAttachSelf=true
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
  --add-exports java.sql/java.sql=ALL-UNNAMED
  --add-exports java.base/java.lang.ref=ALL-UNNAMED
  --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
  --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
  --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
  --add-opens java.base/java.lang.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
  --add-opens java.base/jdk.internal.math=ALL-UNNAMED
  --add-opens java.base/jdk.internal.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
  --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.io=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED
  -Dio.netty.tryReflectionSetAccessible=true
  -Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11
  -Djava.net.preferIPv4Stack=true
)

start_cassandra() {
  local dir="$STATE/cassandra" lib native storage jamm
  lib=$(begin cassandra)
  mkdir -p "$dir"/{data,commitlog,cdc_raw,hints,saved_caches}
  native=${REKEY_PEERS_CASSANDRA_PORT:-$(free_port)}
  storage=${REKEY_PEERS_CASSANDRA_STORAGE_PORT:-$(free_port)}
  sed -e "s#@DIR@#$dir#g" -e "s#@NATIVE_PORT@#$native#g" -e "s#@STORAGE_PORT@#$storage#g" \
    "$HERE/cassandra/cassandra.yaml" >"$dir/cassandra.yaml"
  jamm=$(ls "$lib"/jamm-*.jar | head -n 1)
  setvar cassandra port "$native"
  # one node, its own seed: no gossip to settle and no ring to wait for (RING_DELAY, 30 s by
  # default, was most of its start)
  launch cassandra "$dir/stdout.log" -Xmx1g -Xss256k -XX:+ExitOnOutOfMemoryError "${JVM17_CASSANDRA[@]}" \
    "-javaagent:$jamm" \
    "-Dcassandra.config=file://$dir/cassandra.yaml" -Dcassandra-foreground=yes \
    "-Dcassandra.storagedir=$dir" "-Dcassandra.logdir=$dir" \
    "-Dlogback.configurationFile=$HERE/cassandra/logback.xml" \
    -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.superuser_setup_delay_ms=0 \
    -Dcassandra.ring_delay_ms=1000 \
    -cp "$lib/*" org.apache.cassandra.service.CassandraDaemon
  await cassandra "CQL answering on 127.0.0.1:$native" cql_answers "$native"
}

# start_kafka starts the broker, again on other ports (up to 3 times) when it exits before it
# answers: its own logging goes nowhere (no SLF4J binding), so a lost bind race shows only as
# an early exit.
start_kafka() {
  local attempt rc
  for attempt in 1 2 3; do
    rc=0
    start_kafka_once || rc=$?
    [ "$rc" != 0 ] || return 0
    log "kafka exited before it answered (attempt $attempt of 3)"
  done
  die "kafka exited before it answered, 3 times (logs in $STATE/kafka)"
}

# kafka_cluster_id prints a new cluster id: 16 random bytes in URL-safe base64 without padding,
# drawn again when it starts with '-', which the format tool would read as an option (Kafka's own
# Uuid.randomUuid does the same).
kafka_cluster_id() {
  local id
  while id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '='); [ "${id:0:1}" = - ]; do :; done
  echo "$id"
}

start_kafka_once() {
  local dir="$STATE/kafka" lib port cport id
  lib=$(begin kafka)
  port=${REKEY_PEERS_KAFKA_PORT:-$(free_port)}
  cport=${REKEY_PEERS_KAFKA_CONTROLLER_PORT:-$(free_port)}
  sed -e "s#@DIR@#$dir#g" -e "s#@PORT@#$port#g" -e "s#@CONTROLLER_PORT@#$cport#g" \
    "$HERE/kafka/server.properties" >"$dir/server.properties"
  setvar kafka port "$port"
  id=$(kafka_cluster_id)
  "$JAVA" -Xmx256m "-Dlog4j2.configurationFile=$HERE/kafka/log4j2.properties" -cp "$lib/*" \
    kafka.tools.StorageTool format --standalone -t "$id" -c "$dir/server.properties" \
    >"$dir/format.log" 2>&1 || { cat "$dir/format.log" >&2; die "kafka: formatting $dir/data failed"; }
  launch kafka "$dir/server.log" -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true \
    "-Dlog4j2.configurationFile=$HERE/kafka/log4j2.properties" \
    -cp "$lib/*" kafka.Kafka "$dir/server.properties"
  AWAIT_EXITED_RC=3 await kafka "broker answering on 127.0.0.1:$port" kafka_answers "$port"
}

start_debezium() {
  local dir="$STATE/debezium" lib http cport kport
  running cassandra || die "debezium: start cassandra first (it reads the node's cdc_raw)"
  running kafka || die "debezium: start kafka first (it produces to it)"
  lib=$(begin debezium)
  mkdir -p "$dir"/{relocation,offsets}
  http=${REKEY_PEERS_DEBEZIUM_HTTP_PORT:-$(free_port)}
  cport=$(getvar cassandra port)
  kport=$(getvar kafka port)
  sed -e "s#@DIR@#$dir#g" -e "s#@CASSANDRA_DIR@#$STATE/cassandra#g" -e "s#@HTTP_PORT@#$http#g" \
    -e "s#@KAFKA@#127.0.0.1:$kport#g" "$HERE/debezium/connector.properties" >"$dir/connector.properties"
  sed -e "s#@CASSANDRA@#127.0.0.1:$cport#g" "$HERE/debezium/application.conf" >"$dir/application.conf"
  setvar debezium port "$http"
  # the connector reads the node's commit log with Cassandra's own classes: the same JDK 17 options
  launch debezium "$dir/stdout.log" -Xmx512m "${JVM17_CASSANDRA[@]}" \
    "-Dlogback.configurationFile=$HERE/debezium/logback.xml" "-Ddebezium.logdir=$dir" \
    -cp "$lib/*" io.debezium.connector.cassandra.CassandraConnectorTask "$dir/connector.properties"
  await debezium "connector healthy on http://127.0.0.1:$http/health" debezium_healthy "$http"
}

cmd_start() {
  need_java
  mkdir -p "$STATE"
  local p
  for p in "${@:-${PEERS[@]}}"; do
    case $p in
    cassandra | kafka | debezium) "start_$p" ;;
    *) die "unknown peer $p (cassandra, kafka, debezium)" ;;
    esac
  done
  cmd_env
}

cmd_env() {
  local vars=()
  running cassandra && vars+=("CASSANDRA_HOSTS=127.0.0.1:$(getvar cassandra port)"
    "REKEY_PEERS_CASSANDRA_YAML=$STATE/cassandra/cassandra.yaml")
  running kafka && vars+=("KAFKA_BROKERS=127.0.0.1:$(getvar kafka port)")
  running debezium && vars+=("REKEY_PEERS_DEBEZIUM=http://127.0.0.1:$(getvar debezium port)"
    "REKEY_PEERS_DEBEZIUM_TOPIC_PREFIX=rekey" "REKEY_PEERS_DEBEZIUM_LOG=$STATE/debezium/connector.log")
  [ ${#vars[@]} -gt 0 ] || die "no peer is running (bash deploy/dev/peers.sh start)"
  echo "export ${vars[*]}"
}

cmd_status() {
  local p pid
  for p in "${PEERS[@]}"; do
    if running "$p"; then
      pid=$(cat "$(pidfile "$p")")
      echo "$p: running, pid $pid, RSS $(rss_mib "$pid") MiB, port $(getvar "$p" port), started in $(getvar "$p" start_ms) ms"
    else
      echo "$p: stopped"
    fi
  done
}

stop_one() {
  local p=$1 f pid i
  f=$(pidfile "$p")
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 120); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5 # polling a process we do not control
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$p (pid $pid) still running 60 s after SIGTERM: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "$p stopped (pid $pid)"
  fi
  rm -f "$f"
}

cmd_stop() {
  local p order=()
  # the connector first (it writes to both), then Kafka, then Cassandra
  if [ $# -eq 0 ]; then order=(debezium kafka cassandra); else order=("$@"); fi
  for p in "${order[@]}"; do stop_one "$p"; done
}

# The real-peer tier: the tests that read CASSANDRA_HOSTS / KAFKA_BROKERS, with
# REKEY_REQUIRE_REAL_PEERS=1 so that a missing peer fails them instead of falling back.
TIER_PKGS=(./source/cassandra/ ./source/cassandra/cassandratest/ ./source/kafka/ ./replicate/ ./cmd/rekey/)

cmd_ci_test() {
  local t0 t1 t2
  t0=$(date +%s)
  cmd_resolve
  bash "$HERE/spark/spark.sh" resolve >&2
  t1=$(date +%s)
  trap 'rc=$?; [ "$rc" = 0 ] || log "ci-test failed (exit $rc)"; cmd_status >&2; cmd_stop' EXIT
  mkdir -p "$STATE"
  # a subshell: a peer's die ends it alone, so its log is shown here (an exit inside the
  # redirected call would run the EXIT trap into start.log and leave the caller nothing)
  (cmd_start) >"$STATE/start.log" 2>&1 || { cat "$STATE/start.log" >&2; die "a peer could not start"; }
  cat "$STATE/start.log" >&2
  eval "$(cmd_env)"
  t2=$(date +%s)
  # Spark reads every output shape in the same run (cmd/rekey's TestSparkReadsEveryOutput)
  export REKEY_REQUIRE_REAL_PEERS=1 REKEY_SPARK_READER="$HERE/spark/spark.sh"
  log "resolve $((t1 - t0)) s, start $((t2 - t1)) s; running the real-peer tier"
  (cd "$REPO" && go test -p 1 -count=1 ${REKEY_PEERS_GO_TEST_FLAGS:--timeout=60m} "${TIER_PKGS[@]}")
  log "tests $(($(date +%s) - t2)) s"
}

# sourced (by peers_test.sh), it only defines its functions
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0
case ${1:-} in
resolve) shift; cmd_resolve "$@" ;;
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
env) cmd_env ;;
status) cmd_status ;;
ci-test) cmd_ci_test ;;
*) sed -n '2,/^set /p' "$0" | sed -n 's/^# \{0,1\}//p' >&2; exit 2 ;;
esac
