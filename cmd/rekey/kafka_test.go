package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// ordersMessages are n JSON rows of mappings/orders.yaml over 2 partitions, every 100th a
// tombstone and the 7th poison.
func ordersMessages(n int) []kafkago.Message {
	var msgs []kafkago.Message
	for i := 0; i < n; i++ {
		key := fmt.Sprintf(`{"userid":"user%04d","orderid":%d}`, i%300, i)
		m := kafkago.Message{Partition: i % 2, Key: []byte(key)}
		switch {
		case i == 7:
			m.Value = []byte(`{"userid":`)
		case i%100 == 99:
		default:
			m.Value = []byte(fmt.Sprintf(`{"userid":"user%04d","orderid":%d,"channel":"taobao","ts":"2024-05-01T10:00:00Z","status":"paid","location":"hz","amount":"12.50"}`, i%300, i))
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func TestKafkaMigrateAndReplicate(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "cli-orders", 2)
	c.Produce(t, topic, ordersMessages(2000)...)
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	brokers := strings.Join(c.Brokers, ",")

	// migrate a bounded window: 1000 messages, nothing committed
	dir := t.TempDir()
	mig := filepath.Join(dir, "migrate")
	// exit 1: completed, with the deletes and the poison message rejected (1.1% of the rows:
	// over the default limit of 1%, hence --max-rejects)
	if code, out, errs := runCLI(t, "migrate", "-m", mapping, "--source", "kafka://"+brokers+"/"+topic+"?max=1000", "--out", mig, "--progress", "never",
		"--max-rejects", "-1", "--stats-json", filepath.Join(dir, "stats.json")); code != 1 {
		t.Fatalf("migrate: exit %d, want 1\n%s%s", code, out, errs)
	}
	var st struct {
		RowsIn       int64 `json:"rows_in"`
		RowsWritten  int64 `json:"rows_written"`
		RowsRejected int64 `json:"rows_rejected"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if st.RowsIn != 1000 || st.RowsRejected != 11 || st.RowsWritten != 989 { // tombstones 99..999 step 100 (10) + poison 7
		t.Errorf("migrate over the window: %+v", st)
	}

	// the dry-run report reads a window without committing anything
	rep := mustRun(t, "report", "-m", mapping, "--source", "kafka://"+brokers+"/"+topic+"?start=latest&max=500", "--progress", "never")
	if !strings.Contains(rep, "500") {
		t.Errorf("report over 500 messages:\n%s", rep)
	}
	if got := c.Committed(t, "cli", topic, 2); len(got) != 0 {
		t.Fatalf("the window committed offsets: %v", got)
	}

	// replicate the whole topic, then SIGTERM: rolls committed, offsets committed, exit 1 for the
	// message rejected
	out := filepath.Join(dir, "replicate")
	session := "3s"
	if kafkatest.Real() {
		session = "6s" // Kafka's default group.min.session.timeout.ms
	}
	done := make(chan int, 1)
	var stdout, stderr string
	sigs := make(chan os.Signal)
	live := &lockedBuffer{}
	go func() {
		// --progress auto with stderr a pipe: plain status lines
		code, o, e := cliRun{signals: sigs, stderr: live}.run(t, "replicate", "-m", mapping, "--source", "kafka://"+brokers+"/"+topic+"?group=cli&format=json",
			"--out", out, "--roll-interval", "300ms", "--metrics-addr", "127.0.0.1:0", "--log-level", "info", "--progress-interval", "100ms", "--session-timeout", session)
		stdout, stderr = o+e, e
		done <- code
	}()
	wait.For(t, func() bool {
		committed := c.Committed(t, "cli", topic, 2)
		return committed[0] == 1000 && committed[1] == 1000
	}, "replicate to commit the offsets of all 2000 messages")
	// the first roll commits after the first batch, so all may be committed before the first
	// status line: the line is what this test looks at, so it waits for it too
	wait.For(t, func() bool { return strings.Contains(live.String(), "replicating (consuming): ") },
		"a plain status line while replicate consumes")
	addr := servedMetricsAddr(live.String()) // logged (--log-level info) before it consumed
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "rekey_messages_in_total 2000") {
		t.Errorf("/metrics:\n%s", body)
	}
	interrupt(t, sigs, syscall.SIGTERM)
	select {
	case code := <-done:
		if code != exitRejects || !strings.Contains(stdout, "warning: 1 messages rejected by this process (parse 1)") {
			t.Fatalf("replicate exit %d, want 1 and a warning for the message rejected:\n%s", code, stdout)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("replicate did not stop on SIGTERM")
	}
	if !strings.Contains(stdout, "Replication summary") {
		t.Errorf("no summary:\n%s", stdout)
	}
	// before, --progress auto printed nothing without a terminal
	if !strings.Contains(stderr, "replicating (consuming): ") || !strings.Contains(stderr, "replicating (stopped): 2,000 messages read") {
		t.Errorf("no plain status line:\n%s", stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") {
		t.Errorf("control characters on a non-terminal stderr:\n%q", stderr)
	}
	m := readReplication(t, out)
	// every message is written (1979 upserts, 20 tombstones as DELETE statements) or rejected
	var upserts int64
	for _, p := range m.Replication.Partitions {
		upserts += p.Upserts
	}
	if m.RowsIn != 2000 || m.RowsWritten != 1999 || m.RowsRejected != 1 || upserts != 1979 || m.Replication.Deletes != 20 {
		t.Errorf("manifest: in %d written %d rejected %d upserts %d deletes %d", m.RowsIn, m.RowsWritten, m.RowsRejected, upserts, m.Replication.Deletes)
	}
	if _, err := os.Stat(filepath.Join(out, "ddl.sql")); err != nil {
		t.Error(err)
	}
}

// readReplication reads the manifest.json replicate keeps in dir.
func readReplication(t *testing.T, dir string) replicate.Manifest {
	t.Helper()
	var m replicate.Manifest
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A window of a topic (report, migrate, check) never joins a consumer group: group= would be
// ignored, so it is refused (exit 2, saying what it is for) before any broker is dialled.
func TestKafkaWindowRefusesGroup(t *testing.T) {
	t.Parallel()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	src := "kafka://127.0.0.1:1/orders?group=g" // port 1 answers nothing
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"migrate", "--out", out, "--progress", "never"},
		{"report", "--progress", "never"},
		{"check", "--regions", "4"},
	} {
		args = append(args, "-m", mapping, "--source", src)
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, "group=g: ") || !strings.Contains(errs, "drop group=") {
			t.Errorf("rekey %s: exit %d, want 2 refusing group=:\n%s", strings.Join(args, " "), code, errs)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused migrate created its --out")
	}
}

// start=latest takes the last max= messages: without max= the window would be every message
// retained, as start=earliest reads it, so it is refused (exit 2) before any broker is dialled.
func TestKafkaWindowLatestNeedsMax(t *testing.T) {
	t.Parallel()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	for _, cmd := range []string{"report", "check"} {
		args := []string{cmd, "-m", mapping, "--source", "kafka://127.0.0.1:1/orders?start=latest"}
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, "start=latest reads the last max= messages") {
			t.Errorf("rekey %s: exit %d, want 2 refusing start=latest without max=:\n%s", strings.Join(args, " "), code, errs)
		}
	}
}

// A window that max= cuts short of what the topic retains is part of the topic: the report says
// so (its sample, the uniqueness check's "on the sample", figures scaled to the messages the
// topic retains) rather than judge the window's 500 messages as the whole table, exactly.
func TestKafkaReportOfAWindowCutShortIsASample(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "cli-orders-part", 2)
	c.Produce(t, topic, ordersMessages(2000)...)
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	brokers := strings.Join(c.Brokers, ",")
	dir := t.TempDir()
	read := func(name, max string) (string, struct {
		Source struct {
			Sampled bool
			Sample  string
			Scale   float64
		}
		Uniqueness struct{ Exact bool }
	}) {
		js := filepath.Join(dir, name+".json")
		code, out, errs := runCLI(t, "report", "-m", mapping, "--source", "kafka://"+brokers+"/"+topic+"?max="+max, "--progress", "never", "--json", js)
		if code != 0 {
			t.Fatalf("report max=%s: exit %d\n%s%s", max, code, out, errs)
		}
		var rep struct {
			Source struct {
				Sampled bool
				Sample  string
				Scale   float64
			}
			Uniqueness struct{ Exact bool }
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		return out, rep
	}
	out, rep := read("part", "500")
	if !rep.Source.Sampled || rep.Uniqueness.Exact || rep.Source.Scale != 4 || !strings.Contains(rep.Source.Sample, "500 of the 2,000 messages") {
		t.Errorf("a window of 500 of 2,000 messages: source %+v, uniqueness exact %v", rep.Source, rep.Uniqueness.Exact)
	}
	if !strings.Contains(out, "(on the sample)") || !strings.Contains(out, "  note  sample ") {
		t.Errorf("the report of 500 of 2,000 messages does not say it judged a sample:\n%s", out)
	}
	// max= past what the topic holds: the window is the whole topic
	if _, rep := read("whole", "5000"); rep.Source.Sampled || !rep.Uniqueness.Exact {
		t.Errorf("a window of every message: source %+v, uniqueness exact %v", rep.Source, rep.Uniqueness.Exact)
	}
}

// A window whose partition an open transaction holds back ends there (after the window's idle
// wait, with a warning): the report judged the messages before it only, and says so, as a
// sample of the window (its uniqueness check not exact, the messages it did not read named),
// rather than judge what it read as the whole window, exactly.
func TestKafkaReportOfAWindowHeldBackIsASample(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "cli-orders-held", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	txn, plain := c.Producers(t, topic)
	row := func(i int) *kgo.Record {
		return &kgo.Record{Value: []byte(fmt.Sprintf(`{"userid":"user%04d","orderid":%d,"channel":"jd","ts":"2024-01-01T00:00:00Z","status":"new","location":"x","amount":"1.00"}`, i%300, i))}
	}
	for i := range 1000 {
		if err := plain.ProduceSync(ctx, row(i)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, row(1000)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	defer txn.EndTransaction(context.Background(), kgo.TryAbort)
	for i := 1001; i < 1100; i++ {
		if err := plain.ProduceSync(ctx, row(i)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	js := filepath.Join(t.TempDir(), "r.json")
	code, out, errs := runCLI(t, "report", "-m", filepath.Join("..", "..", "mappings", "orders.yaml"), "--source", "kafka://"+strings.Join(c.Brokers, ",")+"/"+topic,
		"--progress", "never", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Source struct {
			Sampled bool
			Sample  string
		}
		Totals struct {
			RowsRead int64 `json:"rows_read"`
		}
		Uniqueness struct{ Exact bool }
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Totals.RowsRead != 1000 {
		t.Fatalf("read %d messages, want the 1,000 before the open transaction\n%s", rep.Totals.RowsRead, out)
	}
	if !rep.Source.Sampled || rep.Uniqueness.Exact || !strings.Contains(rep.Source.Sample, topic+"/0") || !strings.Contains(rep.Source.Sample, "1000 to 1099") {
		t.Errorf("a window read up to an open transaction: source %+v, uniqueness exact %v", rep.Source, rep.Uniqueness.Exact)
	}
	if !strings.Contains(out, "(on the sample)") || !strings.Contains(out, "open transaction") {
		t.Errorf("the report of a window held back does not say what it left out:\n%s", out)
	}
}
