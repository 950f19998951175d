package main

import (
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gocql/gocql"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka/cdcdemo"
)

// The cut-over playground serves what it prints: the CQL table ks.ev, seeded; the topic
// cdc.ks.ev, receiving the connector's events while the application writes; the empty SQL table
// ev; and writes stop when the printed stop command runs, after which the printed end offsets
// are the topic's and stay so.
func TestCutoverPlaygroundServesWhatItPrints(t *testing.T) {
	for _, p := range []*int{&cassandraPort, &kafkaPort, &sqlPort} {
		saved := *p
		*p = 0 // any free port: a playground may be running on this machine
		defer func() { *p = saved }()
	}
	opts.rows, opts.rate, opts.port = 300, 500, 0
	opts.stopFile = "" // the default: a stop file of this playground's own
	out := &syncBuffer{}
	waitFor(t, func(ctx context.Context, w *syncBuffer) error { return runCutover(ctx, io.MultiWriter(w, out)) }, `(STOP_WRITES=)`)
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  ([A-Z_]+)=(.*)$`).FindAllStringSubmatch(out.String(), -1) {
		vars[m[1]] = m[2]
	}
	cas := regexp.MustCompile(`^cassandra://([0-9.]+):([0-9]+)/ks/ev$`).FindStringSubmatch(vars["CASS"])
	kafka := regexp.MustCompile(`^kafka://([0-9.:]+)/cdc\.ks\.ev$`).FindStringSubmatch(vars["KAFKA"])
	table := regexp.MustCompile(`^mysql://root@([0-9.:]+)/cutover$`).FindStringSubmatch(vars["TABLE"])
	touch := regexp.MustCompile(`^'touch (.+)'$`).FindStringSubmatch(vars["STOP_WRITES"])
	if cas == nil || kafka == nil || table == nil || touch == nil {
		t.Fatalf("variables %q in:\n%s", vars, out)
	}
	// not one path every playground on the machine watches
	stopFile := touch[1]
	if !strings.HasPrefix(filepath.Base(filepath.Dir(stopFile)), "rekey-playground-") || stopFile == filepath.Join(os.TempDir(), "rekey-playground-stop-writes") {
		t.Fatalf("the stop file %s is not one of this playground's own", stopFile)
	}
	// the banner names the runbook the variables are for, a file of the repository
	runbook := regexp.MustCompile(`Rehearse the runbook in (\S+\.md) \("([^"]+)"\)`).FindStringSubmatch(out.String())
	if runbook == nil {
		t.Fatalf("the banner names no runbook:\n%s", out)
	}
	if text, err := os.ReadFile(filepath.Join("../..", runbook[1])); err != nil || !strings.HasPrefix(string(text), "# "+runbook[2]) {
		t.Fatalf("the banner's runbook %s titled %q: %v", runbook[1], runbook[2], err)
	}

	cl := gocql.NewCluster(cas[1])
	cl.Port, _ = strconv.Atoi(cas[2])
	cl.ProtoVersion = 4
	sess, err := cl.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var n, a int
	iter := sess.Query(`SELECT a FROM ks.ev`).Iter()
	for iter.Scan(&a) {
		n++
	}
	if err := iter.Close(); err != nil || n == 0 {
		t.Fatalf("read %d rows of ks.ev: %v", n, err)
	}

	db, err := sql.Open("mysql", "root@tcp("+table[1]+")/cutover")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT COUNT(*) FROM ev").Scan(&n); err != nil || n != 0 {
		t.Fatalf("table ev: %d rows, %v; want it empty", n, err)
	}

	ends := func() []int64 {
		t.Helper()
		var out []int64
		for p := range cdcPartitions {
			pc, err := kafkago.DialLeader(context.Background(), "tcp", kafka[1], cdcTopic, p)
			if err != nil {
				t.Fatal(err)
			}
			last, err := pc.ReadLastOffset()
			pc.Close()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, last)
		}
		return out
	}
	wait.For(t, func() bool { return sum(ends()) >= 50 }, "the connector's first 50 events")
	// the events are the connector's: the decoder's Cassandra shape
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{kafka[1]}, Topic: cdcTopic, Partition: 0})
	defer r.Close()
	m, err := r.ReadMessage(context.Background())
	if err != nil || !strings.Contains(string(m.Value), `"connector":"cassandra"`) || !strings.Contains(string(m.Value), `"set":true`) {
		t.Fatalf("first event %s: %v", m.Value, err)
	}

	if err := os.WriteFile(stopFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stopped := regexp.MustCompile(`Writes stopped: \d+ events published, the topic's end offsets \(partition:offset\) are 0:(\d+) 1:(\d+)`)
	wait.For(t, func() bool { return stopped.FindStringSubmatch(out.String()) != nil }, "the writes to stop")
	said := stopped.FindStringSubmatch(out.String())
	got := ends()
	if said[1] != strconv.FormatInt(got[0], 10) || said[2] != strconv.FormatInt(got[1], 10) {
		t.Fatalf("printed end offsets %v, the topic's are %v", said[1:], got)
	}
}

func sum(v []int64) (n int64) {
	for _, x := range v {
		n += x
	}
	return n
}

// mappings/ev.yaml, the runbook's mapping, is the mapping of the playground's table.
func TestEvMappingIsThePlaygroundTable(t *testing.T) {
	data, err := os.ReadFile("../../mappings/ev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != cdcdemo.Mapping {
		t.Fatalf("mappings/ev.yaml:\n%s\nwant cdcdemo.Mapping:\n%s", data, cdcdemo.Mapping)
	}
}

// Two cut-over playgrounds on one machine watch two stop files: touching one's stops only its
// writes. -stop-file names one instead.
func TestCutoverStopFilePerPlayground(t *testing.T) {
	a, cleanA, err := stopFilePath("")
	if err != nil {
		t.Fatal(err)
	}
	b, cleanB, err := stopFilePath("")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two playgrounds watch one stop file %s", a)
	}
	cleanA()
	cleanB()
	if _, err := os.Stat(filepath.Dir(a)); !os.IsNotExist(err) {
		t.Errorf("the stop file's folder %s is left after the playground: %v", filepath.Dir(a), err)
	}
	given := filepath.Join(t.TempDir(), "stop")
	if err := os.WriteFile(given, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, clean, err := stopFilePath(given)
	if err != nil || p != given {
		t.Fatalf("-stop-file %s: %s, %v", given, p, err)
	}
	clean()
	if _, err := os.Stat(given); !os.IsNotExist(err) {
		t.Errorf("-stop-file %s left from an earlier run is not removed at the start", given)
	}
}
