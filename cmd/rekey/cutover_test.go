package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// killAtEnv makes a rekey process started by a test SIGKILL itself at a step of the replicator:
// "applied:N" kills it when its N-th batch into a SQL table is applied and its offset not yet
// committed, "offset:N" right after the N-th batch's offset is committed.
const killAtEnv = "REKEY_TEST_KILL_AT"

// killAtStep sets the replicator's hook that spec (killAtEnv) asks for.
func killAtStep(spec string) {
	if spec == "" {
		return
	}
	step, count, _ := strings.Cut(spec, ":")
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: want STEP:N\n", killAtEnv, spec)
		os.Exit(2)
	}
	var seen atomic.Int64
	replicateHooks.Commit = func(s replicate.CommitStep, _ int, _, _ int64) error {
		if string(s) == step && seen.Add(1) == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way: nothing more may happen
		}
		return nil
	}
}

// evMapping maps ks.ev (a int, b int, c int, x text, y int, PRIMARY KEY (a, b, c)) to ev.
const evMapping = `version: 1
source:
  name: ks.ev
  columns:
    a: int
    b: int
    c: int
    x: text
    y: int
target:
  table: ev
  primary_key: "[a][b][c]"
`

// cutoverPartitions: the topic is partitioned by the Cassandra partition key (a), so that the
// events of one Cassandra partition, range tombstones included, keep their order.
const cutoverPartitions = 2

// cassandraWriter is the application: it keeps mutating the Cassandra table ks.ev (a int, b int,
// c int, x text, y int, PRIMARY KEY (a, b, c)) and, for each mutation, publishes the event
// Debezium's Cassandra connector publishes for it, after the mutation is applied, in the order
// of the mutations (the commit log's). model is Cassandra's table, as in the mixed-stream test.
type cassandraWriter struct {
	srv   *cqltest.Server
	topic *kafkago.Writer
	rng   *rand.Rand

	mu    sync.Mutex
	model cassandraModel
	ends  [cutoverPartitions]int64 // the next offset of each partition
	n     int                      // mutations made
}

// cutoverEvent is the connector's event of a mutation of ks.ev made at wt, keyed by the primary
// key (the partition key alone for a range tombstone).
func cutoverEvent(op string, wt time.Time, key string, a int, cells ...string) kafkago.Message {
	source := fmt.Sprintf(`{"version":"2.7.0.Final","connector":"cassandra","name":"cutover","ts_ms":%d,"ts_us":%d,"snapshot":"false",`+
		`"db":"NULL","cluster":"Test Cluster","file":"CommitLog-7-1.log","pos":120,"keyspace":"ks","table":"ev"}`, wt.UnixMilli(), wt.UnixMicro())
	return kafkago.Message{Partition: a % cutoverPartitions, Key: []byte(key),
		Value: []byte(`{"ts_ms":` + strconv.FormatInt(wt.UnixMilli(), 10) + `,"op":"` + op + `","source":` + source + `,"after":{` + strings.Join(cells, ",") + `}}`)}
}

// store writes the model's row k into the test server, as Cassandra holds it after a mutation.
func (w *cassandraWriter) store(k [3]int) error {
	row := w.model[k]
	if row == nil {
		_, err := w.srv.Delete("ks", "ev", map[string]any{"a": k[0], "b": k[1], "c": k[2]})
		return err
	}
	vals := map[string]any{"a": k[0], "b": k[1], "c": k[2], "x": nil, "y": nil}
	if v := row["x"]; v != "NULL" {
		vals["x"] = v
	}
	if v := row["y"]; v != "NULL" {
		y, _ := strconv.Atoi(v)
		vals["y"] = y
	}
	return w.srv.Insert("ks", "ev", vals)
}

// mutate makes one random mutation in Cassandra and returns its event. x is never null, so that
// no row is key-only (migrate rejects those: Lindorm cannot store them).
func (w *cassandraWriter) mutate() (kafkago.Message, error) {
	rng := w.rng
	k := [3]int{rng.IntN(8), rng.IntN(6), rng.IntN(4)}
	key := fmt.Sprintf(`{"a":%d,"b":%d,"c":%d}`, k[0], k[1], k[2])
	keyCells := []string{`"a":` + cell(fmt.Sprint(k[0])), `"b":` + cell(fmt.Sprint(k[1])), `"c":` + cell(fmt.Sprint(k[2]))}
	now := time.Now()
	setX := func(row map[string]string) string {
		row["x"] = fmt.Sprint("s", rng.IntN(1000))
		return `"x":` + cell(`"`+row["x"]+`"`)
	}
	setY := func(row map[string]string) string {
		if rng.IntN(3) == 0 { // DELETE y FROM ks.ev WHERE ...: a tombstone cell
			row["y"] = "NULL"
			return `"y":` + deletedCell()
		}
		row["y"] = fmt.Sprint(rng.IntN(1000))
		return `"y":` + cell(row["y"])
	}
	row := w.model[k]
	var m kafkago.Message
	switch r := rng.IntN(20); {
	case r < 6 || row == nil && r < 14: // INSERT INTO ks.ev (a, b, c, x[, y]) VALUES (...)
		if row == nil {
			row = map[string]string{"y": "NULL"}
			w.model[k] = row
		}
		cells := append(keyCells, setX(row))
		if rng.IntN(2) == 0 {
			cells = append(cells, setY(row))
		}
		m = cutoverEvent("i", now, key, k[0], cells...)
	case r < 14: // UPDATE ks.ev SET x = .. WHERE ..., SET y = .., DELETE y FROM ...
		var cells []string
		switch rng.IntN(3) {
		case 0:
			cells = append(keyCells, setX(row))
		case 1:
			cells = append(keyCells, setY(row))
		default:
			cells = append(keyCells, setX(row), setY(row))
		}
		m = cutoverEvent("u", now, key, k[0], cells...)
	case r < 18: // DELETE FROM ks.ev WHERE a = .. AND b = .. AND c = ..
		delete(w.model, k)
		m = cutoverEvent("d", now, key, k[0], append(keyCells, `"x":`+deletedCell(), `"y":`+deletedCell())...)
	default: // DELETE FROM ks.ev WHERE a = .. AND b >= .. AND b < ..
		lo := rng.IntN(6)
		hi := lo + 1 + rng.IntN(2)
		var gone [][3]int
		for rk := range w.model {
			if rk[0] == k[0] && rk[1] >= lo && rk[1] < hi {
				gone = append(gone, rk)
			}
		}
		for _, rk := range gone {
			delete(w.model, rk)
			if err := w.store(rk); err != nil {
				return m, err
			}
		}
		return cutoverEvent("r", now, fmt.Sprintf(`{"a":%d}`, k[0]), k[0], `"a":`+cell(fmt.Sprint(k[0])),
			`"_range_start":`+rangeBound("INCL_START_BOUND", "b", fmt.Sprint(lo)),
			`"_range_end":`+rangeBound("EXCL_END_BOUND", "b", fmt.Sprint(hi))), nil
	}
	return m, w.store(k)
}

// run mutates and publishes until ctx ends: a few mutations at a time, each batch of events
// published before the next mutations are made.
func (w *cassandraWriter) run(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond) // the application's pace, not a synchronisation
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		w.mu.Lock()
		msgs := make([]kafkago.Message, 0, 5)
		for range 5 {
			m, err := w.mutate()
			if err != nil {
				w.mu.Unlock()
				return err
			}
			msgs = append(msgs, m)
		}
		// Cassandra applied them; the connector publishes them (a failed publish stops the
		// application: its events must not be missing)
		if err := w.topic.WriteMessages(context.Background(), msgs...); err != nil {
			w.mu.Unlock()
			return err
		}
		for _, m := range msgs {
			w.ends[m.Partition]++
		}
		w.n += len(msgs)
		w.mu.Unlock()
	}
}

func (w *cassandraWriter) mutations() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// The cut-over of the README ("Cut-over without downtime"), step by step, while the application
// keeps writing to Cassandra (inserts, updates of some columns, cell deletes, row deletes, range
// tombstones) and the connector publishes each mutation's event: (1) capturing starts (the topic
// is new: a new consumer group starts at its first offset), (2) migrate copies the table into
// the SQL target, (3) replicate applies the captured changes from the start, SIGKILLed at
// hook-chosen points (a batch applied whose offset is not committed, an offset just committed)
// and started again each time, (4) verify against Cassandra while writes go on, (5) writes stop,
// (6) replicate drains to the topic's end offsets, (7) verify says EQUAL, and the table equals
// a model of Cassandra applying the same mutations.
func TestCutoverWithWritesArriving(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cut-over runs for about 20 s")
	}
	cas := cassandratest.Open(t)
	if cas.Real() {
		t.Skip("the application's writes go through the test server's Go API")
	}
	if err := cas.CreateTable("ks", "ev", []cqltest.Column{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"},
		{Name: "x", Type: "text"}, {Name: "y", Type: "int"}}, []string{"a"}, []string{"b", "c"}); err != nil {
		t.Fatal(err)
	}
	// the table before capturing starts: no events
	w := &cassandraWriter{srv: cas.Server, rng: rand.New(rand.NewPCG(11, 3)), model: cassandraModel{}}
	for range 150 {
		if _, err := w.mutate(); err != nil {
			t.Fatal(err)
		}
	}
	w.n = 0

	var srv *mysqltest.Server
	conns := "1"
	if mysqltest.MariaDBAvailable() {
		srv, conns = mysqltest.MariaDB(t), "4"
	} else {
		srv = mysqltest.GMS(t)
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "ev.yaml", evMapping)
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))

	// 1. capturing starts: every mutation from now on has its event in the topic
	kc := kafkatest.Start(t)
	topic := kc.CreateTopic(t, "cutover", cutoverPartitions)
	w.topic = kc.Writer(topic)
	defer w.topic.Close()
	ctx, stopWrites := context.WithCancel(context.Background())
	defer stopWrites()
	writerDone := make(chan error, 1)
	go func() { writerDone <- w.run(ctx) }()
	waitFor(t, "the application's first writes", func() bool { return w.mutations() >= 200 })

	// 2. copy the table while writes go on
	source := cas.URI("ks", "ev", "splits=8&page_size=20")
	target := srv.URI("")
	if code, out, errs := runCLI(t, "migrate", "-m", mapping, "--source", source, "--out", target, "--sql-conns", conns,
		"--state", filepath.Join(dir, "migrate-state"), "--progress", "never"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	copied := w.mutations()

	// 3. apply the captured changes from the first offset, killed at chosen points
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rep := &cutoverReplicate{exe: exe, log: filepath.Join(dir, "replicate.log"), args: []string{"replicate", "-m", mapping,
		"--source", "kafka://" + strings.Join(kc.Brokers, ",") + "/" + topic + "?group=cutover&format=debezium",
		"--out", target, "--sql-conns", conns, "--state", filepath.Join(dir, "replicate-state"),
		"--progress", "never", "--session-timeout", "2s", "--rebalance-timeout", "4s", "--log-level", "info"}}
	for _, at := range []string{"applied:1", "offset:3", "applied:4", "offset:1"} {
		rep.start(t, at)
		rep.waitKilled(t)
	}
	rep.start(t, "")
	defer rep.stop()

	// 4. verify while the application still writes: only keys changed since are expected to differ
	verifyArgs := []string{"verify", "-m", mapping, "--source", source, "--target", target, "--progress", "never"}
	waitFor(t, "replicate to apply some of the changes made after the copy", func() bool {
		return sumOffsets(kc.Committed(t, "cutover", topic, cutoverPartitions)) > int64(copied)
	})
	code, out, errs := runCLI(t, verifyArgs...)
	if code != 0 && code != exitDifferent {
		t.Fatalf("verify during writes: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("verify while writes arrive (exit %d): %s", code, firstLine(out+errs, "EQUAL", "DIFFERENT"))

	// 5. stop writes; 6. drain: replicate until the topic's end offsets
	stopWrites()
	if err := <-writerDone; err != nil {
		t.Fatalf("the application's writes: %v", err)
	}
	ends := w.ends
	waitFor(t, "replicate to drain the topic", func() bool {
		rep.checkAlive(t)
		committed := kc.Committed(t, "cutover", topic, cutoverPartitions)
		for p, end := range ends {
			if committed[p] != end {
				return false
			}
		}
		return true
	})
	if code := rep.terminate(t); code != 0 {
		t.Fatalf("replicate: exit %d after SIGTERM\n%s", code, rep.logTail())
	}

	// 7. verify: EQUAL; then the switch. The table is Cassandra's table.
	code, out, errs = runCLI(t, verifyArgs...)
	if code != 0 || !strings.Contains(out+errs, "EQUAL") {
		t.Errorf("verify after the drain: exit %d\n%s%s", code, out, errs)
	}
	got := dumpTable(t, srv.DB(t), "SELECT a, b, c, x, y FROM ev")
	want := w.model.rows()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("table (%d rows):\n%s\nCassandra (%d rows):\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	if rejects, _ := filepath.Glob(filepath.Join(dir, "replicate-state", "rejects", "*.jsonl")); len(rejects) != 0 {
		t.Errorf("replicate rejected messages: %v", rejects)
	}
	t.Logf("%d mutations with events (%d before the copy ended), offsets %v, %d rows, %d replicate starts (%d SIGKILLed)",
		w.n, copied, ends, len(want), rep.starts, rep.kills)
}

// cutoverReplicate is the `rekey replicate` process of the cut-over, run from the test binary.
type cutoverReplicate struct {
	exe, log     string
	args         []string
	proc         *exec.Cmd
	exited       chan struct{}
	starts       int
	kills        int
	expectKilled bool
}

func (r *cutoverReplicate) start(t *testing.T, killAt string) {
	t.Helper()
	r.starts++
	log, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	fmt.Fprintf(log, "=== start %d (kill at %q)\n", r.starts, killAt)
	cmd := exec.Command(r.exe, r.args...)
	cmd.Env = append(os.Environ(), rekeyProcessEnv+"=1", killAtEnv+"="+killAt)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start rekey replicate: %v", err)
	}
	r.proc, r.exited, r.expectKilled = cmd, make(chan struct{}), killAt != ""
	go func() { cmd.Wait(); close(r.exited) }()
}

// waitKilled waits for the process to reach its kill point and die of SIGKILL.
func (r *cutoverReplicate) waitKilled(t *testing.T) {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("replicate did not reach its kill point\n%s", r.logTail())
	}
	ws, ok := r.proc.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("replicate ended with %v, not at its kill point\n%s", r.proc.ProcessState, r.logTail())
	}
	r.kills++
}

func (r *cutoverReplicate) checkAlive(t *testing.T) {
	t.Helper()
	select {
	case <-r.exited:
		t.Fatalf("replicate exited on its own (%v)\n%s", r.proc.ProcessState, r.logTail())
	default:
	}
}

// terminate stops the process with SIGTERM and returns its exit code.
func (r *cutoverReplicate) terminate(t *testing.T) int {
	t.Helper()
	r.proc.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("replicate did not stop on SIGTERM\n%s", r.logTail())
	}
	return r.proc.ProcessState.ExitCode()
}

func (r *cutoverReplicate) stop() {
	if r.proc != nil {
		r.proc.Process.Kill()
		<-r.exited
	}
}

func (r *cutoverReplicate) logTail() string {
	data, _ := os.ReadFile(r.log)
	if len(data) > 6000 {
		data = data[len(data)-6000:]
	}
	return string(data)
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sumOffsets(m map[int]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// firstLine returns the first line of s that holds one of words.
func firstLine(s string, words ...string) string {
	for _, line := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				return line
			}
		}
	}
	return ""
}

// write_time=true (Lindorm's cell timestamps from the events' write times) is refused where it
// does not apply, before anything is written: on mysql://, for migrate (a copy's rows carry no
// write time), for replicate of events other than Debezium's.
func TestWriteTimeRefusedWhereItDoesNotApply(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	state := filepath.Join(t.TempDir(), "state")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", "mysql://root@127.0.0.1:1/db?write_time=true", "--state", state}, "a MySQL row has none"},
		{[]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", "lindorm://root@127.0.0.1:1/db?write_time=true", "--state", state}, "a copy has none"},
		{[]string{"replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/t?group=g&format=json", "--out", "lindorm://root@127.0.0.1:1/db?write_time=true", "--state", state}, "use format=debezium"},
	} {
		code, out, errs := runCLI(t, append(tc.args, "--progress", "never")...)
		if code != exitUsage || !strings.Contains(out+errs, tc.want) {
			t.Errorf("rekey %s: exit %d, want %d and %q\n%s%s", strings.Join(tc.args, " "), code, exitUsage, tc.want, out, errs)
		}
	}
}
