package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/report"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
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
	c := cassandratest.Open(t)
	c.Faults(t) // write times set per cell: the in-process server
	cols := []cqltest.Column{{Name: "id", Type: "bigint"}, {Name: "note", Type: "text"}}
	if err := c.CreateTable("ks", "events", cols, []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	const base = int64(1_700_000_000_000_000) // microseconds
	if err := c.InsertMany("ks", "events", 20000, func(i int, r map[string]any) error {
		r["id"] = int64(i)
		r["note"] = cqltest.Cell{Value: fmt.Sprintf("n%d", i%7), WriteTime: base + int64(i)*1000}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
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
