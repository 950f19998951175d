package main

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rekey/rekey/report"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// writeOrderReport runs rekey report --strict with a mapping and returns the exit code, the
// output and the JSON report.
func writeOrderReport(t *testing.T, mapping, source string, extra ...string) (int, string, report.Report) {
	t.Helper()
	dir := t.TempDir()
	m, js := filepath.Join(dir, "m.yaml"), filepath.Join(dir, "r.json")
	if err := os.WriteFile(m, []byte(mapping), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"report", "-m", m, "--source", source, "--strict", "--json", js, "--regions", "16"}, extra...)
	code, out := reportCLI(t, args...)
	var rep report.Report
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatalf("exit %d, no JSON: %v\n%s", code, err, out)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return code, out, rep
}

func findingsOf(rep report.Report, rule string) []report.Finding {
	var out []report.Finding
	for _, f := range rep.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func incrementalWarning(rep report.Report, column string) *report.Finding {
	for _, f := range findingsOf(rep, "incremental_key_column") {
		if f.Severity == report.SevWarning && strings.Contains(f.Message, "column "+column+" is incremental") {
			return &f
		}
	}
	return nil
}

// A table whose incremental id is the partition key, one row per partition: the token scan
// serves it in hash order, where it looks evenly spread; its WRITETIME()s say the application
// wrote the ids in increasing order, and that is the order Lindorm will see.
func TestReportWriteOrderCassandraPartitionKey(t *testing.T) {
	c := idEventsTable(t)
	uri := c.URI("ks", "events", "")
	const naive = "version: 1\nsource:\n  name: ks.events\ntarget:\n  table: events\n  primary_key: \"[id]\"\n"
	code, out, rep := writeOrderReport(t, naive, uri)
	if rep.WriteOrder == nil || rep.WriteOrder.Evidence != report.OrderWriteTime {
		t.Fatalf("write order %+v, want Cassandra WRITETIME()\n%s", rep.WriteOrder, out)
	}
	f := incrementalWarning(rep, "id")
	if f == nil || !strings.Contains(f.Message, "WRITETIME()") {
		t.Fatalf("no incremental_key_column warning naming id and WRITETIME():\n%s", out)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1 under --strict", code)
	}
	if rep.Hotspot.HotFactor < 8 {
		t.Errorf("hot factor %.1f in write order, want one region per window", rep.Hotspot.HotFactor)
	}
	// the guide's fix: a hash prefix on the incrementing id
	const hashed = "version: 1\nsource:\n  name: ks.events\ntarget:\n  table: events\n  primary_key: \"[md5(id).substr(0,4) + id AS k]\"\n"
	_, out, rep = writeOrderReport(t, hashed, uri)
	if fs := findingsOf(rep, "incremental_key_column"); len(fs) > 0 {
		t.Errorf("the hash prefix is flagged: %+v\n%s", fs, out)
	}
	if rep.Hotspot.HotFactor > 2 {
		t.Errorf("hash prefix hot factor %.1f, want an even spread", rep.Hotspot.HotFactor)
	}
}

// Long partitions served in clustering order: in arrival order each host's seq rises (looks
// monotonic); the application writes the hosts round robin, so in write order host is not
// monotonic, but seq is incremental after a prefix of 4 values: four hot ranges.
func TestReportWriteOrderLongPartitions(t *testing.T) {
	c := cassandratest.Open(t)
	cols := []cqltest.Column{{Name: "host", Type: "text"}, {Name: "seq", Type: "bigint"}, {Name: "msg", Type: "text"}}
	if err := c.CreateTable("ks", "logs", cols, []string{"host"}, []string{"seq"}); err != nil {
		t.Fatal(err)
	}
	const base = int64(1_700_000_000_000_000)
	if err := c.InsertMany("ks", "logs", 20000, func(i int, r map[string]any) error {
		r["host"] = fmt.Sprintf("host-%d", i%4)
		r["seq"] = int64(i / 4)
		r["msg"] = cqltest.Cell{Value: "m", WriteTime: base + int64(i)*1000}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const m = "version: 1\nsource:\n  name: ks.logs\ntarget:\n  table: logs\n  primary_key: \"[host][seq]\"\n"
	code, out, rep := writeOrderReport(t, m, c.URI("ks", "logs", ""))
	if rep.WriteOrder.Evidence != report.OrderWriteTime {
		t.Fatalf("write order %+v\n%s", rep.WriteOrder, out)
	}
	if f := incrementalWarning(rep, "seq"); f == nil || !strings.Contains(f.Message, "only 4 distinct values") {
		t.Errorf("seq after 4 hosts is not flagged:\n%s", out)
	}
	if incrementalWarning(rep, "host") != nil {
		t.Errorf("host flagged as incremental:\n%s", out)
	}
	if fs := findingsOf(rep, "first_column_monotonic"); len(fs) != 1 || fs[0].Severity != report.SevInfo {
		t.Errorf("first_column_monotonic %+v: host is not monotonic in write order", fs)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// A CSV export sorted by md5 of an incremental id, with a ts column: the file's order looks
// like an even spread, the ts column says ids rise with time.
func TestReportWriteOrderHashOrderedExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type row struct {
		id  int
		sum string
	}
	rows := make([]row, 20000)
	for i := range rows {
		h := md5.Sum([]byte(fmt.Sprint(i)))
		rows[i] = row{i, hex.EncodeToString(h[:])}
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].sum < rows[b].sum })
	var sb strings.Builder
	sb.WriteString("id,ts,amount\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%d,%d,%d\n", r.id, 1704067200000+int64(r.id)*1000, r.id%97)
	}
	csv := filepath.Join(dir, "export.csv")
	if err := os.WriteFile(csv, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const mapping = "version: 1\nsource:\n  name: export\n  columns:\n    id: bigint\n    ts: timestamp\n    amount: int\ntarget:\n  table: t\n  primary_key: \"%s\"\n"
	code, out, rep := writeOrderReport(t, fmt.Sprintf(mapping, "[id]"), "file:"+csv)
	if rep.WriteOrder.Evidence != report.OrderTimeColumn || rep.WriteOrder.Column != "ts" {
		t.Fatalf("write order %+v, want the ts column\n%s", rep.WriteOrder, out)
	}
	if f := incrementalWarning(rep, "id"); f == nil || !strings.Contains(f.Message, "column ts") {
		t.Errorf("id is not flagged with the ts evidence:\n%s", out)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, fix := range []string{"[md5(id).substr(0,4) + id AS k]", "[id % 16 AS b][id]"} {
		_, out, rep = writeOrderReport(t, fmt.Sprintf(mapping, fix), "file:"+csv)
		for _, f := range findingsOf(rep, "incremental_key_column") {
			if f.Severity == report.SevWarning {
				t.Errorf("%s flagged: %s", fix, f.Message)
			}
		}
		if rep.Hotspot.HotFactor > 2.5 {
			t.Errorf("%s: hot factor %.1f\n%s", fix, rep.Hotspot.HotFactor, out)
		}
	}
	// declared: --write-order names the column; a column of another type is refused
	_, out, rep = writeOrderReport(t, fmt.Sprintf(mapping, "[id]"), "file:"+csv, "--write-order", "ts")
	if rep.WriteOrder.Evidence != report.OrderDeclared {
		t.Errorf("--write-order ts: evidence %q\n%s", rep.WriteOrder.Evidence, out)
	}
	m := filepath.Join(dir, "m.yaml")
	os.WriteFile(m, []byte(fmt.Sprintf(mapping, "[id]")), 0o644)
	if code, out := reportCLI(t, "report", "-m", m, "--source", "file:"+csv, "--write-order", "nope"); code != 2 || !strings.Contains(out, "--write-order") {
		t.Errorf("--write-order nope: exit %d\n%s", code, out)
	}
}

// idEventsTable is ks.events on the in-process CQL server: 20,000 rows whose partition key id
// was written in increasing order (its WRITETIME()s rise with it), served in token order.
func idEventsTable(t *testing.T) *cassandratest.Cluster {
	c := cassandratest.Open(t)
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
	return c
}

// The playground's table (go run ./cmd/playground cassandra): orders whose ids and timestamps
// rise together, ts a second apart. Keyed by the incrementing id, or by time then id, every new
// order lands in the last region; the guide's fixes (a hash prefix, a modulo bucket) must rank
// above both, and the bucket must spread: ts % 16 of whole seconds takes only two values.
func TestReportPlaygroundOrders(t *testing.T) {
	c := cassandratest.Open(t)
	if err := cassandratest.SeedOrders(c, 20000); err != nil {
		t.Fatal(err)
	}
	uri := c.URI("shop", "orders", "")
	for _, tc := range []struct{ pk, column string }{{"[orderid]", "orderid"}, {"[ts][orderid]", "ts"}} {
		t.Run(tc.pk, func(t *testing.T) {
			m := "version: 1\nsource:\n  name: shop.orders\ntarget:\n  table: orders\n  primary_key: \"" + tc.pk + "\"\n"
			code, out, rep := writeOrderReport(t, m, uri)
			if incrementalWarning(rep, tc.column) == nil {
				t.Errorf("no incremental_key_column warning on %s:\n%s", tc.column, out)
			}
			if code != 1 {
				t.Errorf("exit %d, want 1 under --strict", code)
			}
			rank := map[string]report.Alternative{}
			for _, a := range rep.Alternatives {
				rank[a.ID] = a
				if a.SameAs != "" {
					rank[a.SameAs] = a
				}
			}
			own := rank["mapping"]
			if b := rank["bucket"]; tc.column == "ts" && (!strings.Contains(b.PrimaryKey, "[ts / 1000 % 16 AS") || !strings.Contains(b.TradeOff, "ts advances in steps of 1000")) {
				t.Errorf("the bucket of a timestamp in whole seconds: %s (%s)", b.PrimaryKey, b.TradeOff)
			}
			for _, fix := range []string{"hash_prefix", "bucket"} {
				a, ok := rank[fix]
				if !ok || a.Rank >= own.Rank || a.Grade == "poor" {
					t.Errorf("the guide's %s %s ranks %d (%s), the mapping %s %d (%s):\n%s", fix, a.PrimaryKey, a.Rank, a.Grade, tc.pk, own.Rank, own.Grade, out)
				}
			}
		})
	}
}

// With nothing to tell the write order, a file source's rows are judged in file order, and the
// report says so (an export's order may be the application's, a token scan's never is).
func TestReportWriteOrderFileOrder(t *testing.T) {
	t.Parallel()
	csv := filepath.Join(t.TempDir(), "orders.csv")
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "%d,x\n", (i*7919)%2000)
	}
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, rep := writeOrderReport(t, `version: 1
source:
  name: ks.orders
  columns: {id: bigint, v: text}
target:
  table: orders
  primary_key: "[md5(id).substr(0,4) + id AS k]"
`, "file:"+csv)
	if rep.WriteOrder == nil || rep.WriteOrder.Evidence != report.OrderArrival || !strings.Contains(rep.WriteOrder.Description, "(file order)") {
		t.Errorf("write order of a file source: %+v\n%s", rep.WriteOrder, out)
	}
}
