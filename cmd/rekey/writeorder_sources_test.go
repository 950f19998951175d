package main

import (
	"crypto/md5"
	"fmt"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/report"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

func hasNote(wo *report.WriteOrder, parts ...string) bool {
	for _, n := range wo.Notes {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(n, p)
		}
		if all {
			return true
		}
	}
	return false
}

// A table whose every column is in its key (a follower list) has no cell WRITETIME() is defined
// on: the report says so and orders rows by the next evidence, the timestamp in the key.
func TestReportWriteOrderCassandraKeyOnlyTable(t *testing.T) {
	c := cassandratest.Open(t)
	cols := []cqltest.Column{{Name: "followee", Type: "bigint"}, {Name: "since", Type: "timestamp"}, {Name: "follower", Type: "bigint"}}
	if err := c.CreateTable("ks", "followers", cols, []string{"followee"}, []string{"since", "follower"}); err != nil {
		t.Fatal(err)
	}
	const base = int64(1_700_000_000_000) // ms
	if err := c.InsertMany("ks", "followers", 5000, func(i int, r map[string]any) error {
		r["followee"] = int64(i % 50)
		r["since"] = base + int64(i)*1000
		r["follower"] = int64(i)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const m = "version: 1\nsource:\n  name: ks.followers\ntarget:\n  table: followers\n  primary_key: \"[follower][followee]\"\n  columns:\n    since: since\n"
	_, out, rep := writeOrderReport(t, m, c.URI("ks", "followers", ""))
	wo := rep.WriteOrder
	if wo == nil || wo.Evidence != report.OrderTimeColumn || wo.Column != "since" {
		t.Fatalf("write order %+v, want the since column after WRITETIME()\n%s", wo, out)
	}
	if !hasNote(wo, "ks.followers", "no regular column", "WRITETIME()") {
		t.Errorf("no note that WRITETIME() cannot order a key-only table: %q\n%s", wo.Notes, out)
	}
	if !strings.Contains(out, "no regular column") {
		t.Errorf("the text report does not say why WRITETIME() is not used:\n%s", out)
	}
	if incrementalWarning(rep, "follower") == nil {
		t.Errorf("follower (rising with since) is not flagged:\n%s", out)
	}
}

// A server that refuses WRITETIME() (a Cassandra-compatible service without it) does not fail
// the report: it says the server refused it and orders rows by the next evidence.
func TestReportWriteOrderCassandraWriteTimeRefused(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t)
	cols := []cqltest.Column{{Name: "id", Type: "bigint"}, {Name: "created", Type: "timestamp"}, {Name: "note", Type: "text"}}
	if err := c.CreateTable("ks", "events", cols, []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	const base = int64(1_700_000_000_000)
	if err := c.InsertMany("ks", "events", 5000, func(i int, r map[string]any) error {
		r["id"] = int64(i)
		r["created"] = base + int64(i)*1000
		r["note"] = fmt.Sprintf("n%d", i%7)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	srv.RefuseSelector("writetime")
	const m = "version: 1\nsource:\n  name: ks.events\ntarget:\n  table: events\n  primary_key: \"[id]\"\n"
	code, out, rep := writeOrderReport(t, m, c.URI("ks", "events", ""))
	wo := rep.WriteOrder
	if wo == nil || wo.Evidence != report.OrderTimeColumn || wo.Column != "created" {
		t.Fatalf("exit %d, write order %+v, want the created column\n%s", code, wo, out)
	}
	if !hasNote(wo, "refused WRITETIME()", "Unsupported selector WRITETIME") {
		t.Errorf("no note that the server refused WRITETIME(): %q\n%s", wo.Notes, out)
	}
	if f := incrementalWarning(rep, "id"); f == nil || !strings.Contains(f.Message, "column created") {
		t.Errorf("id is not flagged with the created evidence:\n%s", out)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1 (--strict, the incremental id)", code)
	}
}

// --sample reads a spread sample of a Cassandra table and replays it: the rows keep their
// WRITETIME()s, so the sampled report judges the write order by the same evidence as the full
// one and flags the same incremental key.
func TestReportWriteOrderSampledCassandra(t *testing.T) {
	c := idEventsTable(t)
	const m = "version: 1\nsource:\n  name: ks.events\ntarget:\n  table: events\n  primary_key: \"[id]\"\n"
	uri := c.URI("ks", "events", "")
	_, out, full := writeOrderReport(t, m, uri)
	code, sout, sampled := writeOrderReport(t, m, uri, "--sample", "4000")
	if !sampled.Source.Sampled {
		t.Fatalf("--sample 4000 read everything:\n%s", sout)
	}
	if full.WriteOrder.Evidence != report.OrderWriteTime || sampled.WriteOrder.Evidence != full.WriteOrder.Evidence {
		t.Fatalf("evidence: full %q, sampled %q (notes %q), want both %q\n%s\n%s", full.WriteOrder.Evidence, sampled.WriteOrder.Evidence, sampled.WriteOrder.Notes, report.OrderWriteTime, out, sout)
	}
	if incrementalWarning(sampled, "id") == nil || code != 1 {
		t.Errorf("sampled: exit %d, id not flagged:\n%s", code, sout)
	}
}

// kafkaOrderMessages are n messages with an incremental id, created in id order, placed on 4
// partitions by a hash of the id with a skew (6/10, 2/10, 1/10, 1/10 of the ids), each
// partition in creation order; stamp gives message i's timestamp.
func kafkaOrderMessages(n int, stamp func(i int) time.Time) []kafkago.Message {
	msgs := make([]kafkago.Message, n)
	for i := range msgs {
		h := md5.Sum([]byte(fmt.Sprint(i)))
		p := []int{0, 0, 0, 0, 0, 0, 1, 1, 2, 3}[int(h[0])%10]
		msgs[i] = kafkago.Message{Partition: p, Key: []byte(fmt.Sprint(i)), Time: stamp(i),
			Value: []byte(fmt.Sprintf(`{"id":%d,"note":"n%d"}`, i, i%7))}
	}
	return msgs
}

// A topic whose messages carry an incremental id spread over partitions by its hash: read
// partition by partition the ids look spread; the message timestamps say they rise in creation
// order, and the report flags the id with that evidence, sampled or not. A producer that left
// every timestamp equal gives no order: the report falls back to each partition's offset order
// and says how the partitions are put side by side.
func TestReportWriteOrderKafka(t *testing.T) {
	c := kafkatest.Start(t)
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	rising := c.CreateTopic(t, "wo-rising", 4)
	c.Produce(t, rising, kafkaOrderMessages(8000, func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) })...)
	flat := c.CreateTopic(t, "wo-flat", 4)
	c.Produce(t, flat, kafkaOrderMessages(8000, func(int) time.Time { return base })...)
	brokers := strings.Join(c.Brokers, ",")
	const m = "version: 1\nsource:\n  name: events\n  columns:\n    id: bigint\n    note: text\ntarget:\n  table: events\n  primary_key: \"[id]\"\n"

	for _, extra := range [][]string{nil, {"--sample", "2000"}} {
		code, out, rep := writeOrderReport(t, m, "kafka://"+brokers+"/"+rising, extra...)
		if rep.WriteOrder == nil || rep.WriteOrder.Evidence != report.OrderKafkaTime {
			t.Fatalf("%v: write order %+v, want the message timestamps\n%s", extra, rep.WriteOrder, out)
		}
		if f := incrementalWarning(rep, "id"); f == nil || !strings.Contains(f.Message, "Kafka message timestamps") {
			t.Errorf("%v: id is not flagged with the timestamps' evidence:\n%s", extra, out)
		}
		if code != 1 {
			t.Errorf("%v: exit %d, want 1 under --strict", extra, code)
		}
		if th := rep.TimeHeatmap; th == nil || th.Axis != "time" || th.StartMillis > base.UnixMilli() || base.UnixMilli() >= th.StartMillis+th.BinMillis {
			t.Errorf("%v: no time heatmap whose first bin holds %v", extra, base)
		}
	}

	code, out, rep := writeOrderReport(t, m, "kafka://"+brokers+"/"+flat)
	wo := rep.WriteOrder
	if wo == nil || wo.Evidence != report.OrderKafkaOffset {
		t.Fatalf("equal timestamps: write order %+v, want offsets\n%s", wo, out)
	}
	if !hasNote(wo, "Kafka message timestamps gives no order") {
		t.Errorf("no note that the timestamps give no order: %q", wo.Notes)
	}
	if !strings.Contains(wo.Description, "offset order within each Kafka partition") || !strings.Contains(wo.Description, "share of its partition's window") {
		t.Errorf("the description does not say how partitions are interleaved: %q", wo.Description)
	}
	if f := incrementalWarning(rep, "id"); f == nil || !strings.Contains(f.Message, "offset order") {
		t.Errorf("equal timestamps: id is not flagged in offset order:\n%s", out)
	}
	if code != 1 {
		t.Errorf("equal timestamps: exit %d, want 1", code)
	}
}

// A Kafka window of changes in which one order is updated by every fifth message: the report
// counts each key's writes per window in the messages' timestamp order and names the hot row.
func TestReportSingleRowHotspotKafka(t *testing.T) {
	c := kafkatest.Start(t)
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	topic := c.CreateTopic(t, "hot-row", 4)
	msgs := kafkaOrderMessages(8000, func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) })
	for i := range msgs {
		if i%5 == 0 {
			msgs[i].Value = []byte(fmt.Sprintf(`{"id":42,"note":"n%d"}`, i%7))
		}
	}
	c.Produce(t, topic, msgs...)
	const m = "version: 1\nsource:\n  name: events\n  columns:\n    id: bigint\n    note: text\ntarget:\n  table: events\n  primary_key: \"[md5(id).substr(0,4) + id AS pk]\"\nregions:\n  count: 16\n"
	_, out, rep := writeOrderReport(t, m, "kafka://"+strings.Join(c.Brokers, ",")+"/"+topic)
	h := rep.HotRows
	if h.Order != report.OrderKafkaTime || len(h.Top) != 1 || !strings.HasSuffix(h.Top[0].Key[0], "42") || h.Top[0].WindowShare < 0.15 {
		t.Fatalf("hot rows %+v\n%s", h, out)
	}
	if !strings.Contains(out, "WARN   single_row_hotspot        key "+h.Top[0].Key[0]+" takes") && !strings.Contains(out, "WARN  single_row_hotspot        key "+h.Top[0].Key[0]+" takes") {
		t.Errorf("no single_row_hotspot warning:\n%s", out)
	}
}

// --sample N of a Cassandra table reads the first rows, in token order, of slices spread over the
// ring: whole runs of one partition's rows, not rows spread over the table. The report says so
// (how many slices, a partition's rows together), not "spread over the input": here 200 hosts'
// partitions of 100 rows each, of which the sample holds a few dozen.
func TestReportSampledCassandraSaysHowItWasDrawn(t *testing.T) {
	c := cassandratest.Open(t)
	cols := []cqltest.Column{{Name: "host", Type: "text"}, {Name: "seq", Type: "bigint"}, {Name: "msg", Type: "text"}}
	if err := c.CreateTable("ks", "logs", cols, []string{"host"}, []string{"seq"}); err != nil {
		t.Fatal(err)
	}
	if err := c.InsertMany("ks", "logs", 20000, func(i int, r map[string]any) error {
		r["host"] = fmt.Sprintf("host-%d", i%200)
		r["seq"] = int64(i / 200)
		r["msg"] = "m"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const m = "version: 1\nsource:\n  name: ks.logs\ntarget:\n  table: logs\n  primary_key: \"[host][seq]\"\n"
	_, out, rep := writeOrderReport(t, m, c.URI("ks", "logs", ""), "--sample", "2000")
	s := rep.Source.Sample
	if !rep.Source.Sampled || strings.Contains(s, "spread over the input") || !strings.Contains(s, "token order") || !strings.Contains(s, "64 slices") || !strings.Contains(s, "partition") {
		t.Errorf("the sample of a Cassandra table is named %q: want how it was drawn (the first rows in token order of 64 slices of the ring, a partition's rows together)\n%s", s, out)
	}
}
