package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A replicate process stopped (SIGSTOP) right before a batch's statements, for longer than its
// session timeout, loses its partition: the broker (Kafka 4 in the real-peer tier) drops it and a
// second member takes the partition over, applies that batch and newer changes of the same keys.
// Continued (SIGCONT), the stopped process must not run its older batch's statements: it gives
// the batch up and joins the group again, and the table keeps the newest values. Before, it ran
// them, and was here SIGKILLed before the next batch: the table was left with the older values.
func TestReplicatePausedMemberLeavesItsBatchToItsSuccessor(t *testing.T) {
	srv := mysqltest.GMS(t)
	c := kafkatest.Start(t)
	session := "2s"
	if kafkatest.Real() {
		session = "6s" // Kafka's default group.min.session.timeout.ms
	}
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	topic := c.CreateTopic(t, "paused", 1)
	group := c.Group("paused")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	member := func(name string) *rekeyProc {
		p := &rekeyProc{name: name, exe: exe, logPath: filepath.Join(dir, name+".log"), args: []string{"replicate", "-m", mapping,
			"--source", "kafka://" + strings.Join(c.Brokers, ",") + "/" + topic + "?group=" + group + "&format=json",
			"--out", srv.URI(""), "--sql-conns", "1", "--state", filepath.Join(dir, name), "--progress", "never", // go-mysql-server: one connection
			"--session-timeout", session, "--rebalance-timeout", "4s", "--log-level", "info"}}
		t.Cleanup(p.stop)
		return p
	}
	keys := []string{"u1", "u2", "u3"}
	produce := func(version int) {
		var msgs []kafkago.Message
		for _, k := range keys {
			msgs = append(msgs, kafkago.Message{Key: fmt.Appendf(nil, `{"userid":%q,"orderid":1}`, k),
				Value: fmt.Appendf(nil, `{"userid":%q,"orderid":1,"status":"v%d","amount":"%d.00"}`, k, version, version)})
		}
		c.Produce(t, topic, msgs...)
	}
	committed := func(off int64) func() bool {
		return func() bool { return c.Committed(t, group, topic, 1)[0] >= off }
	}

	a := member("a")
	armPath := filepath.Join(dir, "a-arm")
	a.start(t, killArmEnv+"="+armPath)
	produce(1)
	wait.For(t, committed(3), "a to apply the first changes")
	arm(t, armPath, "applying:1:stop")
	produce(2)
	wait.For(t, func() bool { a.checkAlive(t); return processStopped(a.proc.Process.Pid) }, "a to stop before the statements of offsets 3-5")
	// continued, a dies before its next batch's statements: whatever it applied is then the
	// table's last word
	arm(t, armPath, "applying:1")

	b := member("b")
	b.start(t)
	wait.For(t, committed(6), "b to take the partition over and apply offsets 3-5")
	produce(3)
	wait.For(t, committed(9), "b to apply offsets 6-8")
	a.proc.Process.Signal(syscall.SIGCONT)
	gaveUp := func() bool { return strings.Contains(a.logSinceStart(), "stopping this generation's work") }
	if !wait.Until(func() bool { return !a.alive() || gaveUp() }, 60*time.Second) {
		t.Fatalf("a neither gave its batch up nor reached its next batch 60 s after it was continued\n%s", a.logTail())
	}
	rows, err := srv.DB(t).Query("SELECT status FROM orders WHERE orderid = 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var statuses []string
	for rows.Next() {
		var st string
		if err := rows.Scan(&st); err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, st)
	}
	if strings.Join(statuses, " ") != "v3 v3 v3" {
		t.Errorf("the table's statuses %q, want v3 for each of the 3 keys: the stopped member applied its older batch over its successor's\n%s\n%s", statuses, a.logTail(), b.logTail())
	}
	if !gaveUp() {
		t.Fatalf("a did not give its batch up once continued\n%s", a.logTail())
	}
	for _, p := range []*rekeyProc{a, b} {
		if code := p.terminate(t); code != 0 {
			t.Errorf("%s: exit %d after SIGTERM\n%s", p.name, code, p.logTail())
		}
	}
}

// processStopped tells whether process pid is stopped by a signal (state T in /proc).
func processStopped(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ')'
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}
