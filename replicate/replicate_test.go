package replicate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/transform"
)

func TestJSONEndToEnd(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-json", 3)
	msgs, want, poison := jsonStream(3, 400)
	c.Produce(t, topic, msgs...)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-json", "json", dir)
	cfg.Version = "v-test"
	rn := start(t, cfg)
	waitCommitted(t, c, "g-json", topic, endOffsets(t, c, topic), 60*time.Second)

	// metrics and health while running: /metrics scraped over HTTP, parsed as Prometheus exposition
	// (client_golang, with histograms and the Go and process metrics)
	srv := httptest.NewServer(rn.r.Handler())
	defer srv.Close()
	fams := scrape(t, srv.URL+"/metrics")
	// a scraper that asks for OpenMetrics gets it
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	if resp, err := httpClient.Do(req); err != nil {
		t.Error(err)
	} else {
		om, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "application/openmetrics-text") ||
			!strings.Contains(string(om), "\nrekey_messages_in_total 1200") || !strings.HasSuffix(string(om), "# EOF\n") {
			t.Errorf("OpenMetrics: %s %q:\n%s", resp.Status, ct, om)
		}
	}
	if h := get(t, srv.URL+"/healthz"); !strings.HasPrefix(h, "ok consuming") {
		t.Errorf("/healthz: %q", h)
	}
	rolls := rn.r.Metrics().Rolls.Load()
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	// stopped: unhealthy, 503
	if resp, err := httpClient.Get(srv.URL + "/healthz"); err != nil {
		t.Error(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(string(body), "unhealthy stopped") {
			t.Errorf("/healthz after the stop: %d %q", resp.StatusCode, body)
		}
	}
	p := program(t)
	got := applyOutputs(t, p.Target(), plan(t, p), dir)
	compareModels(t, got, want)
	m := readManifest(t, dir)
	var upserts, files, bytes int64
	for _, e := range m.Replication.Partitions {
		upserts += e.Upserts
	}
	for _, sg := range m.Replication.Segments {
		if sg.Data != nil {
			files, bytes = files+1, bytes+sg.Data.Bytes
		}
		if sg.Deletes != nil {
			files, bytes = files+1, bytes+sg.Deletes.Bytes
		}
	}
	// nothing was replayed: this process's counters are the manifest's
	for name, want := range map[string]float64{
		"rekey_messages_in_total":        1200,
		"rekey_messages_rejected_total":  float64(len(poison)),
		"rekey_rows_written_total":       float64(upserts),
		"rekey_deletes_total":            float64(m.Replication.Deletes),
		"rekey_files_committed_total":    float64(files),
		"rekey_bytes_written_total":      float64(bytes),
		"rekey_tombstones_dropped_total": 0,
		"rekey_generations_total":        1,
		"rekey_assigned_partitions":      3,
		"rekey_up":                       1,
	} {
		if got := metricValue(t, fams, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n := metricValue(t, fams, "rekey_offset_commits_total", nil); n < 3 {
		t.Errorf("%v offset commits", n)
	}
	for part, end := range endOffsets(t, c, topic) {
		l := map[string]string{"topic": topic, "partition": fmt.Sprint(part)}
		if got := metricValue(t, fams, "rekey_consumer_lag", l); got != 0 {
			t.Errorf("lag of partition %d: %v", part, got)
		}
		if got := metricValue(t, fams, "rekey_committed_offset", l); got != float64(end) {
			t.Errorf("committed offset of partition %d: %v, want %d", part, got, end)
		}
	}
	// histograms, not a summary: a roll's close, its manifest commit, each offset commit
	for name, count := range map[string]uint64{"rekey_roll_seconds": uint64(rolls), "rekey_manifest_commit_seconds": uint64(rolls),
		"rekey_offset_commit_seconds": uint64(metricValue(t, fams, "rekey_offset_commits_total", nil))} {
		f := fams[name]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.Metric) != 1 {
			t.Errorf("%s: not one histogram: %v", name, f)
			continue
		}
		h := f.Metric[0].GetHistogram()
		if h.GetSampleCount() != count || count == 0 || h.GetSampleSum() <= 0 || len(h.Bucket) < 10 {
			t.Errorf("%s: %d samples (want %d), sum %v, %d buckets", name, h.GetSampleCount(), count, h.GetSampleSum(), len(h.Bucket))
		}
	}
	if max := metricValue(t, fams, "rekey_roll_seconds_max", nil); max <= 0 || max > fams["rekey_roll_seconds"].Metric[0].GetHistogram().GetSampleSum() {
		t.Errorf("rekey_roll_seconds_max %v", max)
	}
	// the Go runtime's and the process's metrics, and the version
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if got := metricValue(t, fams, "rekey_build_info", map[string]string{"version": "v-test"}); got != 1 {
		t.Errorf("rekey_build_info: %v", got)
	}
	if rj := rejectsOf(t, dir); !sameSet(rj, poison) {
		t.Errorf("rejects %d, want %d poison messages", len(rj), len(poison))
	}
	if m.Replication.Deletes == 0 || m.Files == 0 || m.RowsIn != 1200 {
		t.Errorf("manifest: %d deletes, %d files, rows_in %d", m.Replication.Deletes, m.Files, m.RowsIn)
	}
	for _, f := range []string{"ddl.sql", "bulkload.json", "replicate.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// scrape gets url and parses it as the Prometheus text exposition format.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("%s: %s, Content-Type %q", url, resp.Status, ct)
	}
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s: not Prometheus text format: %v", url, err)
	}
	return fams
}

// metricValue is the value of the counter or gauge name whose labels include labels.
func metricValue(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Errorf("no metric %s", name)
		return math.NaN()
	}
	var found []float64
next:
	for _, m := range f.Metric {
		matched := 0
		for _, lp := range m.Label {
			if v, ok := labels[lp.GetName()]; ok {
				if v != lp.GetValue() {
					continue next
				}
				matched++
			}
		}
		if matched != len(labels) {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			found = append(found, m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			found = append(found, m.GetGauge().GetValue())
		default:
			t.Errorf("%s is a %s", name, f.GetType())
			return math.NaN()
		}
	}
	if len(found) != 1 {
		t.Errorf("%d series of %s with %v", len(found), name, labels)
		return math.NaN()
	}
	return found[0]
}

func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := httpGet(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// debeziumStream: orders whose source key is orderid; creates, snapshot reads, updates (a third
// of them change userid, hence the target key), deletes followed by tombstones, re-creates, and
// half of the events wrapped by the JSON converter with a schema.
func debeziumStream(parts, n int) ([]kafkago.Message, model) {
	want := model{}
	var msgs []kafkago.Message
	schema := `{"type":"struct","fields":[],"optional":false,"name":"x.Envelope"}`
	for p := 0; p < parts; p++ {
		live := map[int64]row{}
		for i := 0; i < n; i++ {
			orderid := int64(p*1000 + (i*11)%60)
			key := []byte(fmt.Sprintf(`{"orderid":%d}`, orderid))
			cur, exists := live[orderid]
			var env string
			switch {
			case !exists:
				r := row{userid: fmt.Sprintf("u%d", i%9), amount: int64(i), note: "c" + fmt.Sprint(i)}
				op := "c"
				if i < 20 {
					op = "r"
				}
				env = fmt.Sprintf(`{"before":null,"after":%s,"op":"%s","ts_ms":1}`, rowJSON(r, orderid), op)
				live[orderid] = r
				want.upsert(r, orderid)
			case i%4 == 3:
				env = fmt.Sprintf(`{"before":%s,"after":null,"op":"d","ts_ms":1}`, rowJSON(cur, orderid))
				delete(live, orderid)
				want.delete(cur.userid, orderid)
				msgs = append(msgs, kafkago.Message{Partition: p, Key: key, Value: wrap(env, schema, i)})
				msgs = append(msgs, kafkago.Message{Partition: p, Key: key}) // Debezium's tombstone
				continue
			default:
				r := cur
				r.amount, r.note = int64(i), "u"+fmt.Sprint(i)
				if i%3 == 0 {
					r.userid = fmt.Sprintf("u%d", (i+1)%9)
				}
				env = fmt.Sprintf(`{"before":%s,"after":%s,"op":"u","ts_ms":1}`, rowJSON(cur, orderid), rowJSON(r, orderid))
				if r.userid != cur.userid {
					want.delete(cur.userid, orderid)
				}
				live[orderid] = r
				want.upsert(r, orderid)
			}
			msgs = append(msgs, kafkago.Message{Partition: p, Key: key, Value: wrap(env, schema, i)})
		}
	}
	return msgs, want
}

func rowJSON(r row, orderid int64) string {
	return fmt.Sprintf(`{"userid":%q,"orderid":%d,"amount":%d,"note":%q}`, r.userid, orderid, r.amount, r.note)
}

func wrap(env, schema string, i int) []byte {
	if i%2 == 0 {
		return []byte(`{"schema":` + schema + `,"payload":` + env + `}`)
	}
	return []byte(env)
}

func TestDebeziumEndToEnd(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-dbz", 2)
	msgs, want := debeziumStream(2, 600)
	c.Produce(t, topic, msgs...)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-dbz", "debezium", dir)
	cfg.Memory = 1 << 20 // small buffers: several row groups per file
	rn := start(t, cfg)
	waitCommitted(t, c, "g-dbz", topic, endOffsets(t, c, topic), 60*time.Second)
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	if rj := rejectsOf(t, dir); len(rj) != 0 {
		t.Errorf("%d rejects", len(rj))
	}
	if m := readManifest(t, dir); m.Replication.Deletes == 0 {
		t.Error("no delete statements")
	}
}

var errCrash = errors.New("simulated crash")

// crashAt runs cfg until partition 1's first roll reaches the commit step: the process is
// killed there (a hook error leaves the disk as a kill would).
func crashAt(t *testing.T, cfg replicate.Config, step replicate.CommitStep) {
	t.Helper()
	var crashed atomic.Bool
	cfg.Hooks.Commit = func(s replicate.CommitStep, partition int, first, last int64) error {
		if s == step && partition == 1 && crashed.CompareAndSwap(false, true) {
			return errCrash
		}
		return nil
	}
	rn := start(t, cfg)
	select {
	case err := <-rn.done:
		if !errors.Is(err, errCrash) {
			t.Fatalf("run ended with %v, want the crash", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no crash")
	}
}

// TestCrashRecovery fails the process at the two dangerous points (files finished under
// temporary names; roll committed in the manifest, its offset not in Kafka), then restarts it:
// every message is reflected, committed files are left as they were (a committed roll is not
// replayed), and no overlapping segments remain.
func TestCrashRecovery(t *testing.T) {
	for _, point := range []string{"after-files", "before-files"} {
		t.Run(point, func(t *testing.T) {
			c := kafkatest.Start(t)
			topic := c.CreateTopic(t, "orders-crash-"+point, 3)
			group := "g-crash-" + point
			msgs, want, poison := jsonStream(3, 300)
			half := len(msgs) / 2
			// first half of each partition now, the rest after the crash
			var early, late []kafkago.Message
			for i, m := range msgs {
				if i%300 < 150 {
					early = append(early, m)
				} else {
					late = append(late, m)
				}
			}
			_ = half
			c.Produce(t, topic, early...)
			dir := t.TempDir()
			cfg := config(t, c, topic, group, "json", dir)
			var rolls atomic.Int64
			step := replicate.StepFinished
			if point == "after-files" {
				step = replicate.StepManifest
			}
			cfg.Hooks.Commit = func(s replicate.CommitStep, partition int, first, last int64) error {
				if s == step && partition == 1 && rolls.Add(1) == 2 {
					return errCrash
				}
				return nil
			}
			rn := start(t, cfg)
			// roll partition 1 twice: the second close crashes
			go func() {
				// once the first roll of partition 1 is closing
				if wait.Until(func() bool { return rolls.Load() >= 1 }, wait.Timeout) {
					c.Produce(t, topic, late[:len(late)/2]...)
				}
			}()
			select {
			case err := <-rn.done:
				if !errors.Is(err, errCrash) {
					t.Fatalf("run ended with %v, want the crash", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("no crash")
			}
			before := c.Committed(t, group, topic, 3)
			files := hashFiles(t, dir)
			c.Produce(t, topic, late[len(late)/2:]...)

			cfg.Hooks = replicate.Hooks{}
			rn = start(t, cfg)
			waitCommitted(t, c, group, topic, endOffsets(t, c, topic), 60*time.Second)
			if err := rn.shutdown(t); err != nil {
				t.Fatal(err)
			}
			p := program(t)
			compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
			if rj := rejectsOf(t, dir); !sameSet(rj, poison) {
				t.Errorf("rejects %d, want %d", len(rj), len(poison))
			}
			checkNoOverlap(t, dir)
			// same name, same content: the replay rewrote the interrupted roll identically
			after := hashFiles(t, dir)
			for name, h := range files {
				if after[name] != h {
					t.Errorf("%s changed after the replay", name)
				}
			}
			t.Logf("committed before restart: %v; %d files before, %d after", before, len(files), len(after))
		})
	}
}

// checkNoOverlap: within a region and partition, segments cover disjoint offset ranges (a replay
// reproduced the interrupted roll's files instead of writing overlapping ones).
func checkNoOverlap(t testing.TB, dir string) {
	t.Helper()
	m := readManifest(t, dir)
	type rp struct{ r, p int }
	last := map[rp]int64{}
	for _, s := range m.Replication.Segments {
		k := rp{s.Region, s.Partition}
		if prev, ok := last[k]; ok && s.FirstOffset <= prev && s.RollLast != prev {
			t.Errorf("region %d partition %d: segment %d-%d overlaps the previous roll ending at %d", s.Region, s.Partition, s.FirstOffset, s.RollLast, prev)
		}
		last[k] = s.RollLast
	}
}

// TestGroupHandover: two members share the partitions and the output folder; one leaves
// mid-stream and the other takes its partitions over from the committed offsets: the folder
// holds everything, once.
func TestGroupHandover(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-group", 4)
	msgs, want, poison := jsonStream(4, 500)
	var phase [3][]kafkago.Message // every partition has messages in every phase
	for i, m := range msgs {
		switch j := i % 500; {
		case j < 200:
			phase[0] = append(phase[0], m)
		case j < 350:
			phase[1] = append(phase[1], m)
		default:
			phase[2] = append(phase[2], m)
		}
	}
	c.Produce(t, topic, phase[0]...)
	dir := t.TempDir()
	a := start(t, config(t, c, topic, "g-two", "json", dir))
	b := start(t, config(t, c, topic, "g-two", "json", dir))
	// both members get partitions
	wait.For(t, func() bool {
		return a.r.Metrics().Assigned() > 0 && b.r.Metrics().Assigned() > 0 && a.r.Metrics().Assigned()+b.r.Metrics().Assigned() == 4
	}, "the 4 partitions shared by both members")
	read := func() int64 { return a.r.Metrics().MessagesIn.Load() + b.r.Metrics().MessagesIn.Load() }
	before := read()
	go c.Produce(t, topic, phase[1]...)
	// a leaves mid-stream, once it has read messages of its own (else it has nothing to write)
	wait.For(t, func() bool { return read() > before && a.r.Metrics().MessagesIn.Load() > 0 }, "phase 1 being read, a reading too")
	if err := a.shutdown(t); err != nil {
		t.Fatal(err)
	}
	c.Produce(t, topic, phase[2]...)
	waitCommitted(t, c, "g-two", topic, endOffsets(t, c, topic), 60*time.Second)
	wait.For(t, func() bool { return b.r.Metrics().Assigned() == 4 }, "b to hold the 4 partitions after a left")
	if err := b.shutdown(t); err != nil {
		t.Fatal(err)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	if rj := rejectsOf(t, dir); !sameSet(rj, poison) {
		t.Errorf("rejects %d, want %d", len(rj), len(poison))
	}
	if m := readManifest(t, dir); m.RowsIn != int64(len(msgs)) || m.RowsRejected != int64(len(poison)) {
		t.Errorf("manifest: rows_in %d, rows_rejected %d; %d messages, %d poison", m.RowsIn, m.RowsRejected, len(msgs), len(poison))
	}
	if a.r.Metrics().FilesCommitted.Load() == 0 {
		t.Error("a wrote nothing")
	}
}

// TestRollInterval: a roll closes at the interval although no further message arrives. The
// assignment's first roll closes after its first batch: the roll timed is the second.
func TestRollInterval(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-idle", 1)
	msgs, want, _ := jsonStream(1, 10)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-idle", "json", dir)
	cfg.RollInterval = time.Second
	rn := start(t, cfg)
	defer rn.shutdown(t)
	wait.For(t, func() bool { return rn.r.Metrics().Assigned() > 0 }, "the partition assigned")
	c.Produce(t, topic, msgs[0])
	waitCommitted(t, c, "g-idle", topic, map[int]int64{0: 1}, 20*time.Second)
	c.Produce(t, topic, msgs[1:]...)
	sent := time.Now()
	waitCommitted(t, c, "g-idle", topic, map[int]int64{0: 10}, 20*time.Second)
	if d := time.Since(sent); d < 900*time.Millisecond || d > 5*time.Second {
		t.Errorf("committed %v after the last message, want about the 1s interval", d)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	// a roll is counted once its offset commit returned, which the broker may show first
	wait.For(t, func() bool { return rn.r.Metrics().Rolls.Load() >= 2 }, "the rolls counted")
	if n := rn.r.Metrics().Rolls.Load(); n != 2 {
		t.Errorf("%d rolls, want the first batch's and the interval's", n)
	}
}

// TestFirstRollClosesAfterFirstBatch: a member's first committed offset after it is assigned a
// partition waits for one fetched batch and its roll's close, not for the roll interval; the
// rolls after it close on the interval.
func TestFirstRollClosesAfterFirstBatch(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-first", 1)
	msgs, want, _ := jsonStream(1, 10)
	c.Produce(t, topic, msgs[:5]...)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-first", "json", dir)
	cfg.RollInterval = time.Hour
	rn := start(t, cfg)
	waitCommitted(t, c, "g-first", topic, map[int]int64{0: 5}, 20*time.Second)
	wait.For(t, func() bool { return rn.r.Metrics().Rolls.Load() == 1 }, "the first roll counted")
	c.Produce(t, topic, msgs[5:]...)
	wait.For(t, func() bool { return rn.r.Metrics().MessagesIn.Load() == 10 }, "the second batch read")
	if got := c.Committed(t, "g-first", topic, 1)[0]; got != 5 {
		t.Errorf("committed offset %d with the second roll open, want 5 (the second roll waits for its interval)", got)
	}
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if n := rn.r.Metrics().Rolls.Load(); n != 2 {
		t.Errorf("%d rolls, want the first batch's and the stop's", n)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
}

// TestRollSize: rolls close at the size; the last partial roll closes at shutdown.
func TestRollSize(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-size", 1)
	var msgs []kafkago.Message
	want := model{}
	for i := 0; i < 30000; i++ {
		r := row{userid: fmt.Sprintf("user-%d", i), amount: int64(i), note: strings.Repeat("x", 40) + fmt.Sprint(i*7919)}
		msgs = append(msgs, kafkago.Message{Value: []byte(rowJSON(r, int64(i)))})
		want.upsert(r, int64(i))
	}
	c.Produce(t, topic, msgs...)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-size", "json", dir)
	cfg.RollInterval = time.Hour
	cfg.RollSize = 256 << 10
	cfg.Memory = 1 << 20
	rn := start(t, cfg)
	wait.For(t, func() bool { return rn.r.Metrics().MessagesIn.Load() >= 30000 }, "the 30000 messages read")
	// rolls close by size while the messages are read, the last one at shutdown
	wait.For(t, func() bool { return rn.r.Metrics().Rolls.Load() >= 3 }, "3 rolls closed by size before shutdown")
	rolls := rn.r.Metrics().Rolls.Load()
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, c, "g-size", topic, map[int]int64{0: 30000}, 10*time.Second)
	m := readManifest(t, dir)
	var max int64
	for _, s := range m.Replication.Segments {
		if s.Data != nil && s.Data.Bytes > max {
			max = s.Data.Bytes
		}
	}
	if max > 2*cfg.RollSize {
		t.Errorf("a file of %d bytes with rolls of %d", max, cfg.RollSize)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	t.Logf("%d rolls, %d segments, largest file %d bytes", rolls, len(m.Replication.Segments), max)
}

// TestRestartKeepsPlan: a directory refuses another mapping or plan.
func TestRestartKeepsPlan(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-state", 1)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-state", "json", dir)
	if _, err := replicate.New(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Plan.Splits = cfg.Plan.Splits[:1]
	if _, err := replicate.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "region plan") {
		t.Fatalf("a different plan was accepted: %v", err)
	}
}

// TestRestartKeepsMessageFormat: a directory refuses to go on reading its topic's messages in
// another format (json, then debezium): its committed rolls read them as the first one.
func TestRestartKeepsMessageFormat(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-msgformat", 1)
	dir := t.TempDir()
	if _, err := replicate.New(context.Background(), config(t, c, topic, "g-msgformat", "json", dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := replicate.New(context.Background(), config(t, c, topic, "g-msgformat", "debezium", dir)); err == nil || !strings.Contains(err.Error(), "debezium") {
		t.Fatalf("another message format was accepted: %v", err)
	}
}

// TestRestartKeepsKeyColumn: a directory refuses to go on with another keycol= (or none): its
// committed rolls filled that column from the messages' plain keys, and the rest would be filled
// otherwise. Before, a restart took keycol= as given, an output of both readings.
func TestRestartKeepsKeyColumn(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-keycol", 1)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-keycol", "json", dir)
	cfg.Kafka.KeyColumn = "orderid"
	if _, err := replicate.New(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, keycol := range []string{"", "userid"} {
		cfg := config(t, c, topic, "g-keycol", "json", dir)
		cfg.Kafka.KeyColumn = keycol
		if _, err := replicate.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "keycol=orderid") {
			t.Errorf("keycol=%q after keycol=orderid was accepted: %v", keycol, err)
		}
	}
	cfg = config(t, c, topic, "g-keycol", "json", dir)
	cfg.Kafka.KeyColumn = "orderid"
	if _, err := replicate.New(context.Background(), cfg); err != nil {
		t.Fatalf("the same keycol= must go on: %v", err)
	}
	// started without keycol=, a member with one is refused too
	plain := t.TempDir()
	if _, err := replicate.New(context.Background(), config(t, c, topic, "g-keycol", "json", plain)); err != nil {
		t.Fatal(err)
	}
	cfg = config(t, c, topic, "g-keycol", "json", plain)
	cfg.Kafka.KeyColumn = "orderid"
	if _, err := replicate.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "keycol=orderid") {
		t.Errorf("keycol=orderid after none was accepted: %v", err)
	}
}

func httpGet(url string) (string, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// hashFiles returns the SHA-256 of every committed file in the region folders.
func hashFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, _ := filepath.Glob(filepath.Join(dir, "data", "region-*", "p*"))
	for _, e := range ents {
		data, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		rel, _ := filepath.Rel(dir, e)
		out[rel] = hex.EncodeToString(sum[:])
	}
	return out
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// TestIdleMember: a member without partitions waits quietly (no rebalance storm), and a process
// of another consumer group is refused the folder.
func TestIdleMember(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-idle-member", 1)
	dir := t.TempDir()
	a := start(t, config(t, c, topic, "g-idle-member", "json", dir))
	b := start(t, config(t, c, topic, "g-idle-member", "json", dir))
	wait.For(t, func() bool { return a.r.Metrics().Assigned()+b.r.Metrics().Assigned() == 1 }, "the partition assigned to a member")
	time.Sleep(1500 * time.Millisecond) // the window the group is watched over, not a wait
	if n := a.r.Metrics().Rebalances.Load() + b.r.Metrics().Rebalances.Load(); n > 4 {
		t.Errorf("%d generations in 1.5s: the idle member makes the group rebalance", n)
	}
	// another group would read every partition into the folder again
	if _, err := replicate.New(context.Background(), config(t, c, topic, "g-other", "json", dir)); err == nil || !strings.Contains(err.Error(), "consumer group g-idle-member") {
		t.Errorf("a process of another group: %v", err)
	}
	msgs, want, _ := jsonStream(1, 50)
	c.Produce(t, topic, msgs...)
	waitCommitted(t, c, "g-idle-member", topic, map[int]int64{0: 50}, 30*time.Second)
	for _, rn := range []*running{a, b} {
		if err := rn.shutdown(t); err != nil {
			t.Fatal(err)
		}
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
}

// TestSASLGroup replicates through SASL/SCRAM: consumer group, fetches and offset look-ups.
func TestSASLGroup(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("SASL users are set up in kfake only")
	}
	c := kafkatest.Start(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "rk", "pw"), kfake.SeedTopics(2, "sasl-orders"))
	cfg := config(t, c, "sasl-orders", "g-sasl", "json", t.TempDir())
	cfg.Kafka.SASL = kafka.SASLConfig{Mechanism: "scram-sha-512", User: "rk", Password: "pw"}
	_, tr, err := cfg.Kafka.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	msgs, want, _ := jsonStream(2, 60)
	w := c.Writer("sasl-orders")
	w.Transport = tr
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rn := start(t, cfg)
	wait.For(t, func() bool {
		return rn.r.Metrics().MessagesIn.Load() >= 120 && rn.r.Metrics().OffsetCommits.Load() >= 2
	}, "120 messages read and 2 offset commits")
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), cfg.Out), want)
}

// TestMembersSamplingTogetherShareOnePlan: members of a new group started together each place a
// quantile plan from their own sample of the topic (messages keep arriving between the samples)
// before the output has one. Before, every member but the first to store replicate.json was
// refused ("its region plan differs ... use a new --out directory") though it ran with the same
// mapping and options. A plan placed from a sample is the data's, not the user's: the member takes
// the one the output stored, and writes nothing that disagrees with it.
func TestMembersSamplingTogetherShareOnePlan(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-sampled", 1)
	m, err := transform.Decode([]byte(strings.Replace(mappingYAML, "[md5(userid).substr(0,4) + userid AS pk1][orderid]", "[userid][orderid]", 1)), "orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	sampled := func(users ...string) pipeline.RegionPlan {
		t.Helper()
		var rows [][]pipeline.Value
		for i, u := range users {
			rows = append(rows, []pipeline.Value{pipeline.Text(u), pipeline.Int(int64(i)), pipeline.Int(1), pipeline.Text("x")})
		}
		pl, err := p.PlanRegions(transform.RegionRequest{Sample: rows})
		if err != nil {
			t.Fatal(err)
		}
		if pl.Strategy != "quantile" {
			t.Fatalf("plan %s, want quantile", pl.Strategy)
		}
		return pl
	}
	dir := t.TempDir()
	cfgA := config(t, c, topic, "g-sampled", "json", dir)
	cfgA.Program, cfgA.Plan = p, sampled("a", "b", "c", "d", "e", "f", "g", "h")
	cfgB := config(t, c, topic, "g-sampled", "json", dir)
	cfgB.Program, cfgB.Plan = p, sampled("m", "n", "o", "p", "q", "r", "s", "t", "u")

	if _, err := replicate.New(context.Background(), cfgB); err != nil { // B stores its plan first
		t.Fatal(err)
	}
	ddl, err := os.ReadFile(filepath.Join(dir, output.DDLFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replicate.New(context.Background(), cfgA); err != nil {
		t.Fatalf("a member that sampled the topic at another moment: %v", err)
	}
	if again, err := os.ReadFile(filepath.Join(dir, output.DDLFile)); err != nil || string(again) != string(ddl) {
		t.Errorf("%s rewritten with another plan:\n%s\nwas:\n%s", output.DDLFile, again, ddl)
	}
	var want []string
	for _, v := range cfgB.Plan.Splits {
		want = append(want, pipeline.SplitValue(cfgB.Plan.Type, v))
	}
	if got := readManifest(t, dir).Plan.Splits; !slices.Equal(got, want) {
		t.Errorf("the manifest's split keys %q are not the stored plan's %q", got, want)
	}
}

// TestBulkloadJobOfSegmentsWarns: a replication's bulkload.json reads every segment (data/*/) in
// one job, which stamps all their cells with one time, so a key updated in two segments keeps
// either version, and its delete files (deletes/) cannot run between segments as they must
// (replicate/README.md: "Load a region's segments in name order, and for each segment its data
// file (bulkload) before its .sql file"); submitted again later, it loads the segments already
// loaded over the changes made since. The job said nothing of it: it reads as ready to submit.
// It now carries rekey_warnings saying when it is right and what to submit otherwise.
func TestBulkloadJobOfSegmentsWarns(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-job", 1)
	dir := t.TempDir()
	if _, err := replicate.New(context.Background(), config(t, c, topic, "g-job", "json", dir)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, output.BulkloadFile))
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Warnings []string `json:"rekey_warnings"`
	}
	if err := json.Unmarshal(data, &job); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(job.Warnings, "\n")
	for _, want := range []string{"replication.segments", "deletes/", "one job per segment"} {
		if !strings.Contains(text, want) {
			t.Errorf("bulkload.json's rekey_warnings lack %q:\n%s", want, data)
		}
	}
}

// TestRestartRefusesAStateOfAnotherVersion: replicate.json written by a newer rekey (another
// version, or a field this one does not know, such as a setting the output is fixed to) is
// refused naming it: read as far as this rekey understands it, the restart would go on without
// that setting.
func TestRestartRefusesAStateOfAnotherVersion(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-stateversion", 1)
	for name, edit := range map[string][2]string{
		"field":   {`"version": 1,`, `"version": 1, "headers_column": "h",`},
		"version": {`"version": 1,`, `"version": 2,`},
	} {
		dir := t.TempDir()
		if _, err := replicate.New(context.Background(), config(t, c, topic, "g-stateversion", "json", dir)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "replicate.json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(data), edit[0], edit[1], 1)
		if edited == string(data) {
			t.Fatalf("%s: no %s in %s", name, edit[0], data)
		}
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := config(t, c, topic, "g-stateversion", "json", dir)
		if _, err := replicate.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "another rekey version") {
			t.Errorf("%s: a replicate.json of another rekey version was accepted: %v", name, err)
		}
		// a refusal of the output (exit 2), not a failure to retry
		_, err = replicate.Plan(context.Background(), replicate.PlanRequest{Store: cfg.Store, Out: dir, Kafka: cfg.Kafka, Program: cfg.Program})
		if pe := (*replicate.PlanError)(nil); !errors.As(err, &pe) || pe.Step != replicate.StepOutput {
			t.Errorf("%s: Plan: %v, want a refusal of the output", name, err)
		}
	}
}
