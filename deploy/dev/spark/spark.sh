#!/usr/bin/env bash
# Apache Spark in local mode, reading rekey's outputs as Lindorm's bulkload (LTS, a Spark job) does.
#
#   spark.sh resolve                 copy Spark's jars (pom.xml) into the cache and compile SparkRead.java
#   spark.sh read [--out FILE] [--csv-schema DDL] [--row-reader] DIR | --job BULKLOAD_JSON ...
#                                    one JVM reads every folder given and prints its rows as JSON lines
#                                    (SparkRead.java says how each type is rendered)
#   spark.sh ci-test                 resolve, then run the Go tier that migrates every type rekey emits
#                                    and compares what Spark reads with the source (REKEY_REQUIRE_REAL_PEERS=1:
#                                    a reader that cannot run fails it)
#
# The cache is ${REKEY_PEERS_CACHE:-$HOME/.cache/rekey-peers}/spark (jars, classes, JVM options).
# Java: JDK 17 ($REKEY_JAVA_HOME, else /usr/lib/jvm/java-17-openjdk-amd64). The JVM gets -Xmx1g
# ($REKEY_SPARK_HEAP), Spark's own --add-opens list for JDK 17 (JavaModuleOptions, written at resolve)
# and the time zone $REKEY_SPARK_TZ (default Asia/Shanghai, Lindorm's default session zone), so that
# a value whose reading depends on the zone shows up as a wrong value rather than passing in UTC.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${REKEY_PEERS_CACHE:-$HOME/.cache/rekey-peers}/spark"
java_home="${REKEY_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}"
java="$java_home/bin/java"
javac="$java_home/bin/javac"

die() { echo "spark.sh: $*" >&2; exit 1; }

resolve() {
  [ -x "$javac" ] || die "no JDK 17 at $java_home (apt-get install openjdk-17-jdk-headless, or set REKEY_JAVA_HOME)"
  command -v mvn >/dev/null 2>&1 || die "mvn is not on PATH (apt-get install maven)"
  mkdir -p "$cache"
  local stamp="$cache/pom.sha256" want
  want="$(sha256sum "$here/pom.xml" "$here/SparkRead.java" | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$cache/jvm-options" ]; then
    echo "spark: cached in $cache"
    return
  fi
  rm -rf "$cache/jars" "$cache/classes" "$stamp"
  local t0=$SECONDS
  # -B: no progress bars; the log says what failed when Maven Central refuses an artifact
  JAVA_HOME="$java_home" mvn -B -q -f "$here/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$cache/jars" >"$cache/mvn.log" 2>&1 ||
    { tail -n 40 "$cache/mvn.log" >&2; die "mvn dependency:copy-dependencies failed (log: $cache/mvn.log)"; }
  mkdir -p "$cache/classes"
  "$javac" -nowarn -d "$cache/classes" -cp "$cache/jars/*" "$here/SparkRead.java" ||
    die "javac SparkRead.java failed"
  "$java" -cp "$cache/classes:$cache/jars/*" SparkRead --module-options >"$cache/jvm-options" ||
    die "reading Spark's JVM options failed"
  echo "$want" >"$stamp"
  echo "spark: resolved $(ls "$cache/jars" | wc -l) jars and compiled SparkRead in $((SECONDS - t0)) s ($cache)"
}

read_cmd() {
  [ -f "$cache/jvm-options" ] || die "not resolved: run $0 resolve first"
  # shellcheck disable=SC2046 # the options file is one line of space-separated JVM options
  SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}" exec "$java" $(cat "$cache/jvm-options") -Xmx"${REKEY_SPARK_HEAP:-1g}" \
    -Duser.timezone="${REKEY_SPARK_TZ:-Asia/Shanghai}" \
    -Dlog4j2.level=WARN -Dlog4j.configurationFile="$here/log4j2.properties" \
    -cp "$cache/classes:$cache/jars/*" SparkRead "$@"
}

case "${1:-}" in
  resolve) resolve ;;
  read) shift; read_cmd "$@" ;;
  ci-test)
    t0=$SECONDS
    resolve
    echo "spark: resolve took $((SECONDS - t0)) s"
    t1=$SECONDS
    cd "$repo"
    set +e
    REKEY_SPARK_READER="$here/spark.sh" REKEY_REQUIRE_REAL_PEERS=1 \
      go test -count=1 -run 'TestSpark' -v ./cmd/rekey/ 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
    rc=${PIPESTATUS[0]}
    set -e
    echo "spark: the tier took $((SECONDS - t1)) s (exit $rc)"
    exit "$rc"
    ;;
  *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
