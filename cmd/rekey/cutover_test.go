package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/kafka/cdcdemo"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// killAtEnv makes a rekey process started by a test SIGKILL itself at a step of the replicator:
// "applied:N" kills it when its N-th batch into a SQL table is applied and its offset not yet
// committed, "offset:N" right after the N-th batch's offset is committed.
const killAtEnv = "REKEY_TEST_KILL_AT"

// killAtStep is the replicator's hook that spec (killAtEnv) asks for.
func killAtStep(spec string) (hooks replicate.Hooks) {
	if spec == "" {
		return hooks
	}
	step, count, _ := strings.Cut(spec, ":")
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: want STEP:N\n", killAtEnv, spec)
		os.Exit(2)
	}
	var seen atomic.Int64
	hooks.Commit = func(s replicate.CommitStep, _ int, _, _ int64) error {
		if string(s) == step && seen.Add(1) == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way: nothing more may happen
		}
		return nil
	}
	return hooks
}

// cutoverPartitions: the topic is partitioned by the Cassandra partition key (a), so that the
// events of one Cassandra partition, range tombstones included, keep their order.
const cutoverPartitions = 2

// The cut-over of the README ("Cut-over without downtime"), step by step, while the application
// keeps writing to Cassandra (inserts, updates of some columns, cell deletes, row deletes, range
// tombstones) and the connector publishes each mutation's event: (1) the capture point is fixed
// (`replicate --mark-start` commits the topic's end offsets for the group while events keep
// arriving; those before it are never applied), (2) migrate copies the table into the SQL target,
// (3) replicate applies the captured changes from the mark, SIGKILLed at hook-chosen points (a
// batch applied whose offset is not committed, an offset just committed) and started again each
// time, (4) verify against Cassandra while writes go on, (5) writes stop, (6) replicate drains to
// the topic's end offsets, (7) verify says EQUAL, and the table equals a model of Cassandra
// applying the same mutations.
func TestCutoverWithWritesArriving(t *testing.T) { runCutover(t, false) }

// The same cut-over with the copy written as bulk-load files (migrate --out DIR) and the changes
// applied through SQL. Without a Lindorm to run the bulkload job, what is checked is what rekey
// controls: bulkload.json's writerConfig.timestamp is the copy's start (after the capture point,
// before the copy ended), so Lindorm keeps the changes written after it through SQL over the
// loaded cells; and the files, loaded into the table before replicate starts (as the runbook
// orders), then the changes from the mark, end equal to Cassandra. That the job stamps the cells
// with writerConfig.timestamp and that a later SQL write wins over them rests on Lindorm.
func TestCutoverFilesForTheCopySQLForTheChanges(t *testing.T) { runCutover(t, true) }

func runCutover(t *testing.T, files bool) {
	if testing.Short() {
		t.Skip("-short: the cut-over runs for about 20 s")
	}
	cas := cassandratest.Open(t)
	if cas.Real() {
		t.Skip("the application's writes go through the test server's Go API")
	}
	if err := cdcdemo.CreateTable(cas.Server); err != nil {
		t.Fatal(err)
	}
	// the table before capturing starts: no events
	w := cdcdemo.NewWriter(cas.Server, cutoverPartitions, 11)
	if err := w.Seed(150); err != nil {
		t.Fatal(err)
	}

	var srv *mysqltest.Server
	conns := "1"
	if mysqltest.MariaDBAvailable() {
		srv, conns = mysqltest.MariaDB(t), "4"
	} else {
		srv = mysqltest.GMS(t)
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "ev.yaml", cdcdemo.Mapping)
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))

	// the connector runs: the topic already holds events when the capture point is fixed
	kc := kafkatest.Start(t)
	topic := kc.CreateTopic(t, "cutover", cutoverPartitions)
	tw := kc.Writer(topic)
	defer tw.Close()
	w.Capture(tw)
	ctx, stopWrites := context.WithCancel(context.Background())
	defer stopWrites()
	writerDone := make(chan error, 1)
	go func() { writerDone <- w.Run(ctx, 5*time.Millisecond, nil) }()
	wait.For(t, func() bool { return w.Published() >= 100 }, "the connector's first events")

	// 1. fix the capture point: the group's offsets are the topic's end offsets now
	kafkaURI := "kafka://" + strings.Join(kc.Brokers, ",") + "/" + topic + "?group=cutover&format=debezium"
	before := w.Published()
	if code, out, errs := runCLI(t, "replicate", "--source", kafkaURI, "--mark-start"); code != 0 {
		t.Fatalf("replicate --mark-start: exit %d\n%s%s", code, out, errs)
	}
	marked := sumOffsets(kc.Committed(t, "cutover", topic, cutoverPartitions))
	if after := w.Published(); marked < int64(before) || marked > int64(after) {
		t.Fatalf("--mark-start committed %d offsets in all, want the end offsets between %d and %d", marked, before, after)
	}
	wait.For(t, func() bool { return w.Published() >= int(marked)+100 }, "changes between the capture point and the copy")

	// 2. copy the table while writes go on
	source := cas.URI("ks", "ev", "splits=8&page_size=20")
	target := srv.URI("")
	copyStart := time.Now()
	if files {
		out := filepath.Join(dir, "copy")
		if code, o, errs := runCLI(t, "migrate", "-m", mapping, "--source", source, "--out", out, "--progress", "never"); code != 0 {
			t.Fatalf("migrate: exit %d\n%s%s", code, o, errs)
		}
		checkCopyTimestamp(t, out, copyStart, time.Now())
		bulkLoad(t, srv, mapping, out)
	} else if code, out, errs := runCLI(t, "migrate", "-m", mapping, "--source", source, "--out", target, "--sql-conns", conns,
		"--state", filepath.Join(dir, "migrate-state"), "--progress", "never"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	copied := w.Published()

	// 3. apply the captured changes from the mark, killed at chosen points
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rep := &cutoverReplicate{exe: exe, log: filepath.Join(dir, "replicate.log"), args: []string{"replicate", "-m", mapping,
		"--source", kafkaURI, "--out", target, "--sql-conns", conns, "--state", filepath.Join(dir, "replicate-state"),
		"--progress", "never", "--session-timeout", "2s", "--rebalance-timeout", "4s", "--log-level", "info"}}
	for _, at := range []string{"applied:1", "offset:3", "applied:4", "offset:1"} {
		rep.start(t, at)
		rep.waitKilled(t)
	}
	rep.start(t, "")
	defer rep.stop()

	// 4. verify while the application still writes: only keys changed since are expected to differ
	verifyArgs := []string{"verify", "-m", mapping, "--source", source, "--target", target, "--progress", "never"}
	wait.For(t, func() bool {
		return sumOffsets(kc.Committed(t, "cutover", topic, cutoverPartitions)) > int64(copied)
	}, "replicate to apply some of the changes made after the copy")
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
	ends := w.Ends()
	wait.For(t, func() bool {
		rep.checkAlive(t)
		committed := kc.Committed(t, "cutover", topic, cutoverPartitions)
		for p, end := range ends {
			if committed[p] != end {
				return false
			}
		}
		return true
	}, "replicate to drain the topic")
	if code := rep.terminate(t); code != 0 {
		t.Fatalf("replicate: exit %d after SIGTERM\n%s", code, rep.logTail())
	}

	// 7. verify: EQUAL; then the switch. The table is Cassandra's table.
	code, out, errs = runCLI(t, verifyArgs...)
	if code != 0 || !strings.Contains(out+errs, "EQUAL") {
		t.Errorf("verify after the drain: exit %d\n%s%s", code, out, errs)
	}
	got := dumpTable(t, srv.DB(t), "SELECT a, b, c, x, y FROM ev")
	want := w.Rows()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("table (%d rows):\n%s\nCassandra (%d rows):\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	if rejects, _ := filepath.Glob(filepath.Join(dir, "replicate-state", "rejects", "*.jsonl")); len(rejects) != 0 {
		t.Errorf("replicate rejected messages: %v", rejects)
	}
	t.Logf("%d events (%d before the mark, %d before the copy ended), offsets %v, %d rows, %d replicate starts (%d SIGKILLed)",
		w.Published(), marked, copied, ends, len(want), rep.starts, rep.kills)
}

// checkCopyTimestamp checks that the copy's bulkload.json stamps the loaded cells with the copy's
// start: no earlier than migrate was started, no later than it ended.
func checkCopyTimestamp(t *testing.T, out string, started, ended time.Time) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "bulkload.json"))
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		WriterConfig struct {
			Timestamp *int64 `json:"timestamp"`
		} `json:"writerConfig"`
	}
	if err := json.Unmarshal(data, &job); err != nil {
		t.Fatalf("bulkload.json: %v\n%s", err, data)
	}
	ts := job.WriterConfig.Timestamp
	if ts == nil || *ts < started.UnixMilli() || *ts > ended.UnixMilli() {
		t.Fatalf("bulkload.json writerConfig.timestamp %v, want the copy's start, within [%d, %d]\n%s", ts, started.UnixMilli(), ended.UnixMilli(), data)
	}
}

// bulkLoad plays the bulkload job: it reads the copy's Parquet files with an independent reader
// and inserts their rows into the table, checking that they are the rows the manifest counts.
func bulkLoad(t *testing.T, srv *mysqltest.Server, mapping, out string) {
	t.Helper()
	prog, err := loadProgram(mapping)
	if err != nil {
		t.Fatal(err)
	}
	schema := prog.Target()
	paths, err := filepath.Glob(filepath.Join(out, "data", "region-*", "*.parquet"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Parquet files in %s: %v", out, err)
	}
	db := srv.DB(t)
	rows := 0
	for _, p := range paths {
		f, err := sinktest.ReadParquet(p, schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range f.Rows {
			args := make([]any, len(r))
			for i, v := range r {
				if v != "NULL" {
					args[i] = v
				}
			}
			if _, err := db.Exec("INSERT INTO ev (a, b, c, x, y) VALUES (?, ?, ?, ?, ?)", args...); err != nil {
				t.Fatalf("load %s: %v", p, err)
			}
			rows++
		}
	}
	manifest, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), fmt.Sprintf(`"rows_written": %d,`, rows)) {
		t.Fatalf("loaded %d rows; manifest:\n%s", rows, manifest)
	}
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
	t.Parallel()
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

// replicate --mark-start commits the topic's end offsets for a new group, so that replicate
// applies only the messages produced after it; it refuses a group that has offsets and the
// flags and the start= it would ignore. start=latest and max=, the window's bounds, are refused by replicate
// (they used to be accepted and ignored: the group read from the first offset).
func TestReplicateMarkStart(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	kc := kafkatest.Start(t)
	topic := kc.CreateTopic(t, "users", 2)
	user := func(p int, id string) kafkago.Message {
		return kafkago.Message{Partition: p, Value: []byte(`{"id":"` + id + `","name":"n","email":"e","visits":1}`)}
	}
	kc.Produce(t, topic, user(0, "old1"), user(1, "old2"), user(1, "old3"))
	uri := "kafka://" + strings.Join(kc.Brokers, ",") + "/" + topic + "?group=cut"
	out := filepath.Join(t.TempDir(), "out")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replicate", "-m", mapping, "--source", uri + "&start=latest", "--out", out}, "--mark-start"},
		{[]string{"replicate", "-m", mapping, "--source", uri + "&max=2", "--out", out}, "--mark-start"},
		{[]string{"replicate", "-m", mapping, "--source", uri, "--out", out, "--mark-start"}, "drop --mapping, --out"},
		// the mark fixes the start: a start= was ignored silently
		{[]string{"replicate", "--source", uri + "&start=earliest", "--mark-start"}, "drop start="},
		{[]string{"replicate", "--source", uri + "&start=latest", "--mark-start"}, "drop start="},
	} {
		if code, o, errs := runCLI(t, tc.args...); code != exitUsage || !strings.Contains(o+errs, tc.want) {
			t.Errorf("rekey %s: exit %d, want %d and %q\n%s%s", strings.Join(tc.args, " "), code, exitUsage, tc.want, o, errs)
		}
	}
	if got := kc.Committed(t, "cut", topic, 2); len(got) != 0 {
		t.Fatalf("a refused command committed offsets %v", got)
	}

	code, o, errs := runCLI(t, "replicate", "--source", uri, "--mark-start")
	if code != 0 || !strings.Contains(o, "0:1 1:2") {
		t.Fatalf("--mark-start: exit %d\n%s%s", code, o, errs)
	}
	if got := kc.Committed(t, "cut", topic, 2); got[0] != 1 || got[1] != 2 {
		t.Fatalf("committed %v, want the end offsets 0:1 1:2", got)
	}
	if code, o, errs := runCLI(t, "replicate", "--source", uri, "--mark-start"); code != exitUsage || !strings.Contains(o+errs, "partition 0 at 1, partition 1 at 2") {
		t.Errorf("--mark-start of a group with offsets: exit %d, want %d naming them\n%s%s", code, exitUsage, o, errs)
	}

	// the changes after the mark, and only they, are replicated
	kc.Produce(t, topic, user(0, "new1"), user(1, "new2"))
	done := make(chan int, 1)
	var output string
	sigs := make(chan os.Signal)
	go func() {
		code, o, e := cliRun{signals: sigs}.run(t, "replicate", "-m", mapping, "--source", uri, "--out", out, "--roll-interval", "100ms",
			"--progress", "never", "--session-timeout", "3s")
		output = o + e
		done <- code
	}()
	wait.For(t, func() bool {
		got := kc.Committed(t, "cut", topic, 2)
		return got[0] == 2 && got[1] == 3
	}, "replicate to commit the messages after the mark")
	interrupt(t, sigs, syscall.SIGTERM)
	if code := <-done; code != 0 {
		t.Fatalf("replicate: exit %d\n%s", code, output)
	}
	manifest, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), `"rows_written": 2,`) {
		t.Errorf("manifest, want the 2 rows produced after the mark:\n%s", manifest)
	}
}
