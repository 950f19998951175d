package report

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/report/render"
	"github.com/rekey/rekey/transform"
)

// readings: sensor readings (device_id, ts, seq, v). Every 50th row repeats the previous row's
// device and time (a second reading in the same millisecond): with a key of [device_id][ts]
// those two rows share a key and bulkload keeps one. They differ in seq always and in v for half
// of them.
const readingsYAML = `
version: 1
source:
  name: readings
  columns:
    device_id: text
    ts: timestamp
    seq: bigint
    v: double
target:
  table: readings
  primary_key: "%s"
regions:
  count: 16
%s`

const readingsBase = 1704067200000

func readingRow(i int) []pipeline.Value {
	k := i
	if i%50 == 1 {
		k = i - 1
	}
	v := float64(i % 5)
	if i%100 >= 50 {
		v = 7
	}
	return []pipeline.Value{
		pipeline.Text(fmt.Sprintf("dev-%03d", k%200)),
		pipeline.Int(readingsBase + int64(k)*10),
		pipeline.Int(int64(i)),
		pipeline.Float(v),
	}
}

func readings(n int) *samplingSource {
	return &samplingSource{memSource{n: n, make: readingRow}}
}

// bruteCollisions counts, by evaluating prog on every row, the rows its keys overwrite: per key,
// distinct source rows - 1.
func bruteCollisions(t *testing.T, prog *transform.Program, n int, row func(int) []pipeline.Value) int64 {
	t.Helper()
	ev := prog.NewEvaluator()
	out := make([]pipeline.Value, len(prog.Target().Columns))
	keyLen := prog.Target().KeyLen
	per := map[string]map[string]bool{}
	for i := 0; i < n; i++ {
		rec := pipeline.Record{Values: row(i), Seq: int64(i + 1)}
		if err := ev.Apply(&pipeline.Batch{Stream: "mem"}, &rec, out); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		k := fmt.Sprint(out[:keyLen])
		if per[k] == nil {
			per[k] = map[string]bool{}
		}
		per[k][fmt.Sprint(rec.Values)] = true
		ev.Reset()
	}
	var lost int64
	for _, s := range per {
		lost += int64(len(s) - 1)
	}
	return lost
}

// lostCell is the "lost" cell of the text advisor table's row for a design name (the column is
// right-aligned under its header).
func lostCell(t *testing.T, text, name string) string {
	t.Helper()
	end := -1
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "  lost  "); i >= 0 && strings.Contains(line, "design") {
			end = i + len("  lost")
			continue
		}
		if end > 0 && strings.Contains(line, name) && regexp.MustCompile(`^\s+\d+\s`).MatchString(line) && len(line) > end {
			cell := line[:end]
			return cell[strings.LastIndex(cell, " ")+1:]
		}
	}
	t.Fatalf("no advisor row for %q:\n%s", name, text)
	return ""
}

// The advisor's lost figure and the uniqueness rule count the same collisions (before: lost 0
// beside 4,446 overwritten rows, because the advisor sampled and missed adjacent duplicates). Here
// every collision is a pair of adjacent rows, and the advisor's subsample keeps one row in 20: it
// sees none of them. The mapping's lost figure must still be the uniqueness check's count.
func TestAdvisorLostCountsTheUniquenessCollisions(t *testing.T) {
	const n = 20000
	rep := runReport(t, fmt.Sprintf(readingsYAML, "[device_id][ts]", ""), readings(n), func(c *Config) { c.SubsampleMax = 1000 })
	u := rep.Uniqueness
	if u.CollisionRows != n/50 {
		t.Fatalf("uniqueness: %d rows overwritten, want %d", u.CollisionRows, n/50)
	}
	var buf bytes.Buffer
	if err := render.WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if got := lostCell(t, buf.String(), "* the mapping"); got != model.Count(u.CollisionRows) {
		t.Errorf("advisor: the mapping loses %s rows, the uniqueness check says %s:\n%s", got, model.Count(u.CollisionRows), buf.String())
	}
}

// The derived designs' lost figures are exact too: the rows a key on the columns they read would
// overwrite, counted over every row by the collision check (not on the subsample), and for the
// salt design the rows of those that also draw the same salt. The mapping's key
// [device_id][ts % 1000] puts each device's 100 readings under one key (more than the 32 rows a
// colliding key is compared on), so no verified key change is applied to the derived designs.
func TestDerivedDesignsLoseExactly(t *testing.T) {
	const n = 20000
	yml := fmt.Sprintf(readingsYAML, "[device_id][ts % 1000 AS t]", "")
	rep := runReport(t, yml, readings(n), func(c *Config) { c.SubsampleMax = 1000 })
	prog, m := compile(t, yml)
	if want := bruteCollisions(t, prog, n, readingRow); rep.Uniqueness.CollisionRows != want {
		t.Fatalf("uniqueness %d, brute force %d", rep.Uniqueness.CollisionRows, want)
	}
	byID := map[string]model.Alternative{}
	for _, a := range rep.Alternatives {
		byID[a.ID] = a
	}
	if a := byID["mapping"]; a.LostRows != rep.Uniqueness.CollisionRows || !a.OverwrittenExact {
		t.Errorf("mapping: lost %d (exact %v), uniqueness %d", a.LostRows, a.OverwrittenExact, rep.Uniqueness.CollisionRows)
	}
	for _, id := range []string{"source_key", "hash_prefix", "reverse", "salt"} {
		a, ok := byID[id]
		if !ok {
			t.Fatalf("no %s design: %+v", id, rep.Alternatives)
		}
		p, _, err := advise.CompileAlt(prog, m, a.Edit.Pk, false, a.Edit.Codes)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		want := bruteCollisions(t, p, n, readingRow)
		if a.Overwritten != want || !a.OverwrittenExact || a.LostRows != want {
			t.Errorf("%s %s: overwritten %d (exact %v, lost %d), brute force %d", id, a.PrimaryKey, a.Overwritten, a.OverwrittenExact, a.LostRows, want)
		}
		if len(a.Added) != 0 {
			t.Errorf("%s: columns added %v", id, a.Added)
		}
	}
	if byID["source_key"].LostRows != n/50 {
		t.Errorf("source key loses %d, want the %d adjacent pairs", byID["source_key"].LostRows, n/50)
	}
}

// The salt design's lost rows are counted with its own random(n), also when the data leaves the
// plan fewer regions than asked: a key on v (six values) is planned in at most six regions, and
// the salt design is still [random(16)].
func TestSaltDesignLosesExactlyWithFewRegions(t *testing.T) {
	const n = 20000
	yml := fmt.Sprintf(readingsYAML, "[v]", "")
	rep := runReport(t, yml, readings(n), func(c *Config) { c.SubsampleMax = 1000 })
	prog, m := compile(t, yml)
	if len(rep.Regions) >= 16 {
		t.Fatalf("the plan has %d regions: the test needs fewer than the 16 asked", len(rep.Regions))
	}
	var salt *model.Alternative
	for i := range rep.Alternatives {
		if rep.Alternatives[i].ID == "salt" {
			salt = &rep.Alternatives[i]
		}
	}
	if salt == nil || !strings.HasPrefix(salt.PrimaryKey, "[random(16)") {
		t.Fatalf("no salt design with random(16): %+v", rep.Alternatives)
	}
	p, _, err := advise.CompileAlt(prog, m, salt.Edit.Pk, false, salt.Edit.Codes)
	if err != nil {
		t.Fatal(err)
	}
	if want := bruteCollisions(t, p, n, readingRow); salt.Overwritten != want || !salt.OverwrittenExact {
		t.Errorf("%s: overwritten %d (exact %v), brute force %d", salt.PrimaryKey, salt.Overwritten, salt.OverwrittenExact, want)
	}
}

// A mapping whose key has a salt: rows that share the source key need not share the mapping's
// key, so the source key's collisions come from a second check keyed by it. (Each device has 50
// readings, more than the 32 rows a colliding key is compared on: no key change is applied.)
func TestSaltedMappingCountsTheSourceKey(t *testing.T) {
	const n = 10000
	yml := fmt.Sprintf(readingsYAML, "[random(16) AS s][device_id]", "")
	rep := runReport(t, yml, readings(n), func(c *Config) { c.SubsampleMax = 1000 })
	prog, m := compile(t, yml)
	if want := bruteCollisions(t, prog, n, readingRow); rep.Uniqueness.CollisionRows != want || want >= n-200 {
		t.Fatalf("uniqueness %d, brute force %d (fewer than %d: the salt parts rows)", rep.Uniqueness.CollisionRows, want, n-200)
	}
	found := 0
	for _, a := range rep.Alternatives {
		if a.IsMapping || a.Error != "" || len(a.Added) > 0 {
			continue
		}
		p, _, err := advise.CompileAlt(prog, m, a.Edit.Pk, false, a.Edit.Codes)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteCollisions(t, p, n, readingRow); a.Overwritten != want || !a.OverwrittenExact {
			t.Errorf("%s %s: overwritten %d (exact %v), brute force %d", a.ID, a.PrimaryKey, a.Overwritten, a.OverwrittenExact, want)
		}
		found++
	}
	if found < 3 {
		t.Errorf("only %d derived designs checked: %+v", found, rep.Alternatives)
	}
}

// The salt the report keeps per row is the one random(n) gives.
func TestSaltTokenMatchesRandom(t *testing.T) {
	prog, _ := compile(t, fmt.Sprintf(readingsYAML, "[random(13) AS s][device_id]", ""))
	ev := prog.NewEvaluator()
	out := make([]pipeline.Value, len(prog.Target().Columns))
	var buf []byte
	for _, origin := range []bool{false, true} {
		b := &pipeline.Batch{Stream: "topic/3", SaltOrigin: origin}
		for i := 0; i < 2000; i++ {
			vals := readingRow(i)
			if i%7 == 0 {
				vals[3] = pipeline.Null
			}
			rec := pipeline.Record{Values: vals, Seq: int64(i)}
			if err := ev.Apply(b, &rec, out); err != nil {
				t.Fatal(err)
			}
			var tok uint64
			tok, buf = transform.SaltToken(buf, b, &rec, prog.SaltOrder())
			if int64(tok%13) != out[0].Num {
				t.Fatalf("row %d (origin %v): salt %d, random(13) %d", i, origin, tok%13, out[0].Num)
			}
			ev.Reset()
		}
	}
}

// A uniqueness error shows for each example the columns in which the colliding source rows differ
// and suggests the smallest key change that removes the collisions ("add `seq` to the key").
func TestUniquenessSuggestsTheSmallestKeyChange(t *testing.T) {
	const n = 20000
	rep := runReport(t, fmt.Sprintf(readingsYAML, "[device_id][ts]", ""), readings(n), nil)
	f := wantSeverity(t, rep, "uniqueness", model.SevError)
	for _, want := range []string{"which differ only in seq", "add `seq` to the key ([device_id][ts][seq])"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("uniqueness finding lacks %q: %s", want, f.Message)
		}
	}
	var buf bytes.Buffer
	if err := render.WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if !regexp.MustCompile(`they differ only in seq(, v| and v)?, which the key does not read`).MatchString(text) ||
		!strings.Contains(text, "advice: add `seq` to the key") {
		t.Errorf("text output:\n%s", text)
	}
	u := rep.Uniqueness
	s := u.Suggestion
	if s == nil || fmt.Sprint(s.Add) != "[seq]" || !s.SeparatesAll || !s.Checked || s.PrimaryKey != "[device_id][ts][seq]" ||
		s.Pairs != n/50 || s.PairsLeft != 0 || s.CheckedKeys != n/50 {
		t.Fatalf("suggestion %+v", s)
	}
	if len(s.DifferIn) != 2 || s.DifferIn[0] != (model.ColumnDiff{Column: "seq", Pairs: n / 50}) || s.DifferIn[1] != (model.ColumnDiff{Column: "v", Pairs: n / 100}) {
		t.Errorf("differ in %+v", s.DifferIn)
	}
	for _, ex := range u.Examples {
		if d := fmt.Sprint(ex.DifferIn); d != "[seq]" && d != "[seq v]" || !ex.SameKeySources {
			t.Errorf("example %+v", ex)
		}
	}
	// the advisor offers the mapping with the change, and derives its designs with it: they lose
	// nothing
	var fixed *model.Alternative
	for i, a := range rep.Alternatives {
		switch {
		case a.ID == "mapping_unique":
			fixed = &rep.Alternatives[i]
		case a.IsMapping:
			if a.LostRows != n/50 {
				t.Errorf("mapping loses %d", a.LostRows)
			}
		case a.Error == "":
			if a.LostRows != 0 || fmt.Sprint(a.Added) != "[seq]" || !strings.HasSuffix(a.PrimaryKey, "[seq]") {
				t.Errorf("derived %s: %+v", a.ID, a)
			}
		}
	}
	if fixed == nil || fixed.PrimaryKey != "[device_id][ts][seq]" || fixed.LostRows != 0 || !fixed.OverwrittenExact || fixed.Rank >= rep.Alternatives[len(rep.Alternatives)-1].Rank {
		t.Errorf("the mapping + seq: %+v", fixed)
	}
}

// withoutRoomYAML and withoutRoomRow make rows that differ in more columns than the key has room
// for: pairs that share (a, b, c) and differ in exactly one of p, q, r, so telling them apart
// takes all three, six key columns.
const withoutRoomYAML = `
version: 1
source:
  columns: {a: bigint, b: bigint, c: bigint, p: bigint, q: bigint, r: bigint}
target:
  table: t
  primary_key: "[a][b][c]"
`

func withoutRoomRow(i int) []pipeline.Value {
	k := int64(i / 2)
	vals := []pipeline.Value{pipeline.Int(k), pipeline.Int(k % 7), pipeline.Int(k % 11), pipeline.Int(0), pipeline.Int(0), pipeline.Int(0)}
	if i%2 == 1 {
		vals[3+int(k%3)] = pipeline.Int(1)
	}
	return vals
}

// Rows that differ in more columns than the key has room for: the advice says so.
func TestUniquenessAdviceWithoutRoom(t *testing.T) {
	rep := runReport(t, withoutRoomYAML, &memSource{n: 3000, make: withoutRoomRow}, nil)
	s := rep.Uniqueness.Suggestion
	if s == nil || len(s.Add) != 0 || s.SeparatesAll || !strings.Contains(s.Message, "takes 3 more key columns (6 in all)") {
		t.Fatalf("suggestion %+v", s)
	}
	for _, a := range rep.Alternatives {
		if a.ID == "mapping_unique" || len(a.Added) > 0 {
			t.Errorf("a change was applied: %+v", a)
		}
	}
}

// A design that turns a declared range scan into a full-table fan-out (md5(ts).substr(0,4)+ts for a
// time series) must not rank first; before, it did.
func TestDeclaredRangeQueryRanksHashPrefixDown(t *testing.T) {
	const yml = `
version: 1
source:
  name: ops.logs
  columns: {ts: timestamp, hostname: text, level: text}
target:
  table: logs
  primary_key: "[ts][hostname]"
regions:
  count: 16
queries:
  - range: ts
`
	src := &samplingSource{memSource{n: 40000, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(readingsBase + int64(i)*3), pipeline.Text(fmt.Sprintf("web-%02d", i%20)), pipeline.Text("INFO")}
	}}}
	rep := runReport(t, yml, src, nil)
	if len(rep.Queries) != 1 || rep.Queries[0].Query != "ts range" || rep.Queries[0].Origin != "mapping" {
		t.Fatalf("queries %+v", rep.Queries)
	}
	rank := map[string]model.Alternative{}
	for _, a := range rep.Alternatives {
		rank[a.ID] = a
	}
	best := rep.Alternatives[0]
	if best.ID == "hash_prefix" || best.ID == "reverse" || best.Queries[0].Access == "full_scan" {
		t.Errorf("rank 1 is %s (%s)", best.ID, best.Queries[0].Note)
	}
	h, b := rank["hash_prefix"], rank["bucket"]
	if h.Queries[0].Access != "full_scan" || !strings.Contains(h.Queries[0].Note, "scrambles the order of ts") || h.Rank < b.Rank {
		t.Errorf("hash prefix (rank %d): %+v; bucket rank %d", h.Rank, h.Queries, b.Rank)
	}
	if b.Queries[0].Access != "scan" || b.Queries[0].Scans != 16 || b.Grade != "good" {
		t.Errorf("bucket: %+v", b)
	}
	// the same query from --query
	rep = runReport(t, strings.Replace(yml, "queries:\n  - range: ts\n", "", 1), src, func(c *Config) {
		c.Queries = []transform.Query{{Range: "ts"}}
	})
	if rep.Alternatives[0].ID == "hash_prefix" || rep.Queries[0].Origin != "--query" {
		t.Errorf("with --query: rank 1 %s, queries %+v", rep.Alternatives[0].ID, rep.Queries)
	}
}

// The case that ranked first before, a time series keyed by md5(ts).substr(0,4) + ts and read by
// device and time: the mapping's design scans the whole table for it (a warning), the advisor leads
// with the key the query wants, [device_id][ts].
func TestQueryOrderedDesign(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(readingsYAML, "[md5(ts).substr(0,4) + ts AS h][device_id][seq]", "queries:\n  - {equal: [device_id], range: ts}\n"),
		readings(20000), nil)
	var own, order *model.Alternative
	for i, a := range rep.Alternatives {
		if a.IsMapping {
			own = &rep.Alternatives[i]
		}
		if a.ID == "query_order" {
			order = &rep.Alternatives[i]
		}
	}
	if own == nil || own.Queries[0].Access != "full_scan" || own.Rank == 1 {
		t.Fatalf("mapping: %+v", own)
	}
	f := wantSeverity(t, rep, "query_access", model.SevWarning)
	if !strings.Contains(f.Message, "q1 device_id = ? and ts range: a scan of every region") {
		t.Errorf("finding: %s", f.Message)
	}
	if order == nil || order.PrimaryKey != "[device_id][ts][seq]" || order.Queries[0].Access != "scan" || order.Queries[0].Scans != 1 ||
		len(order.Queries[0].Filtered) != 0 {
		t.Fatalf("query order design: %+v", order)
	}
	if best := rep.Alternatives[0]; best.Queries[0].Access == "full_scan" || len(best.Queries[0].Filtered) > 0 {
		t.Errorf("rank 1 %s: %+v", best.ID, best.Queries)
	}
}

// The read note is right when a range column stands before an equality column: [ts][device_id] read
// by device_id and a ts range is one scan of the whole ts range that filters device_id.
func TestRangeBeforeEqualityReadNote(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(readingsYAML, "[ts][device_id][seq]", "queries:\n  - {equal: [device_id], range: ts}\n"), readings(20000), nil)
	f := wantSeverity(t, rep, "query_access", model.SevWarning)
	for _, want := range []string{"one SCAN of a ts range", "the range column ts stands before device_id in the key", "reads the whole ts range for every value of device_id and filters device_id"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("read note lacks %q: %s", want, f.Message)
		}
	}
	for _, a := range rep.Alternatives {
		if a.IsMapping && (a.Queries[0].Access != "scan" || fmt.Sprint(a.Queries[0].Filtered) != "[device_id]") {
			t.Errorf("mapping plan %+v", a.Queries[0])
		}
	}
	var buf bytes.Buffer
	if err := render.WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "q1  device_id = ? and ts range  (from mapping)") {
		t.Errorf("text output:\n%s", buf.String())
	}
}

func TestPlanQuery(t *testing.T) {
	q := func(s string) transform.Query {
		x, err := advise.ParseQuery(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, c := range []struct {
		key, query string
		access     string
		scans      int64
		filtered   string
		note       string
	}{
		{"[device_id][ts]", "device_id=, ts range", "scan", 1, "[]", "one SCAN of a ts range within device_id fixed by the query"},
		{"[ts][device_id]", "device_id=, ts range", "scan", 1, "[device_id]", "the range column ts stands before device_id"},
		{"[ts % 16 AS b][ts][device_id]", "ts range", "scan", 16, "[]", "times 16: one per value of b"},
		{"[random(8) AS s][device_id][ts]", "device_id=, ts range", "scan", 8, "[]", "times 8"},
		{"[md5(device_id).substr(0,4) + device_id AS h][ts]", "device_id=, ts range", "scan", 1, "[]", "within h fixed by the query"},
		{"[md5(ts).substr(0,4) + ts AS h][device_id]", "ts range", "full_scan", -1, "[ts]", "scrambles the order of ts"},
		{"[device_id][seq][ts]", "device_id=, ts range", "scan", 1, "[ts]", "key column seq comes next"},
		{"[device_id][ts]", "device_id=, ts=", "get", 1, "[]", "a GET"},
		{"[device_id]", "device_id=, ts range", "get", 1, "[ts]", "a GET: the query fixes every key column, filtering ts"},
		{"[random(8) AS s][device_id]", "device_id=", "get", 8, "[]", "8 GETs, one per value of s"},
		{"[device_id][ts % 1000 AS t]", "device_id=", "scan", 1, "[]", "one SCAN of all rows with device_id fixed"},
		{"[seq][device_id]", "device_id=", "full_scan", -1, "[device_id]", "the query does not fix the first key column seq"},
	} {
		prog, _ := compile(t, fmt.Sprintf(readingsYAML, c.key, ""))
		p := advise.PlanQuery(advise.KeyShape(prog), q(c.query))
		if p.Access != c.access || p.Scans != c.scans || fmt.Sprint(p.Filtered) != c.filtered || !strings.Contains(p.Note, c.note) {
			t.Errorf("%s, %s: %+v", c.key, c.query, p)
		}
	}
}

// A range of a timeuuid, uuid or inet column held as it is in the key is no key range: Lindorm
// orders the VARCHAR by its text, Cassandra the column by its time or bytes (a timeuuid's text
// starts with the time's low bits). The plan says the scan filters the range; a range of a text
// column stays one. Before, it said "one SCAN of a event_id range", a read the key cannot serve.
func TestPlanQueryRangeOfAColumnTheKeyDoesNotOrder(t *testing.T) {
	const yml = `
version: 1
source:
  name: events
  columns:
    device_id: text
    event_id: %s
    v: double
target:
  table: events
  primary_key: "[device_id][event_id]"
`
	q, err := advise.ParseQuery("device_id=, event_id range")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ typ, access, filtered, note string }{
		{"timeuuid", "scan", "[event_id]", "the key holds event_id (timeuuid) as text, which Cassandra orders otherwise"},
		{"uuid", "scan", "[event_id]", "the key holds event_id (uuid) as text, which Cassandra orders otherwise"},
		{"inet", "scan", "[event_id]", "the key holds event_id (inet) as text, which Cassandra orders otherwise"},
		{"text", "scan", "[]", "one SCAN of a event_id range within device_id fixed by the query"},
		{"bigint", "scan", "[]", "one SCAN of a event_id range within device_id fixed by the query"},
	} {
		prog, _ := compile(t, fmt.Sprintf(yml, c.typ))
		p := advise.PlanQuery(advise.KeyShape(prog), q)
		if p.Access != c.access || fmt.Sprint(p.Filtered) != c.filtered || !strings.Contains(p.Note, c.note) {
			t.Errorf("event_id %s: %+v; want %s, filtered %s, a note saying %q", c.typ, p, c.access, c.filtered, c.note)
		}
	}
}

func TestParseQuery(t *testing.T) {
	for in, want := range map[string]string{
		"device_id=, ts range":          "device_id = ? and ts range",
		"device_id=?,ts range":          "device_id = ? and ts range",
		" a = , b=? , log-event range":  "a = ? and b = ? and log-event range",
		"ts range":                      "ts range",
		"host=, ts range, newest_first": "host = ? and ts range, newest first",
	} {
		q, err := advise.ParseQuery(in)
		if err != nil || q.String() != want {
			t.Errorf("ParseQuery(%q) = %q, %v; want %q", in, q.String(), err, want)
		}
	}
	for in, want := range map[string]string{
		"device_id":        "is neither COLUMN=, COLUMN range nor newest_first",
		"a range, b range": "more than one range column",
		"a=, a=":           `column "a" is listed twice`,
		"":                 "names no column",
		"ts range, ts=":    "both in equal and the range",
		"device id=":       "is not a column name",
		"a=, newest_first": "order: newest_first needs a range column",
	} {
		if _, err := advise.ParseQuery(in); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "e.g. --query 'device_id=, ts range'") {
			t.Errorf("ParseQuery(%q): %v, want ...%s...", in, err, want)
		}
	}
	src := pipeline.SourceSchema{{Name: "device_id", Type: "text"}, {Name: "ts", Type: "timestamp"}}
	if err := advise.CheckQueries([]transform.Query{{Equal: []string{"device"}, Range: "ts"}}, src); err == nil ||
		!strings.Contains(err.Error(), `"device" is not a source column (source columns: device_id, ts)`) {
		t.Errorf("CheckQueries: %v", err)
	}
}

// sourceErrs is a source whose every tenth record failed to decode (Err set by the source, as a
// Kafka message that is no JSON, or a delete): every key design rejects those alike.
type sourceErrs struct{ memSource }

func (s *sourceErrs) Run(ctx context.Context, _ map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	for i := 0; i < s.n; i += 1000 {
		var recs []pipeline.Record
		for k := i; k < min(i+1000, s.n); k++ {
			rec := pipeline.Record{Values: s.make(k), Seq: int64(k + 1)}
			if k%10 == 9 {
				rec = pipeline.Record{Seq: int64(k + 1), Err: &pipeline.RowError{Code: "parse", Message: "not JSON"}, Raw: "{"}
			}
			recs = append(recs, rec)
		}
		select {
		case out <- pipeline.Batch{Stream: "mem", Records: recs}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// The rows the source itself rejects (a message that is no JSON, a delete) are lost by every
// design alike: each design's lost figure counts them, as the mapping's does, so the advisor's
// lost column compares the designs on the same rows rather than charge them to the mapping alone.
func TestAdvisorLostCountsTheSourceRejectsForEveryDesign(t *testing.T) {
	const n = 20000
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]"), &sourceErrs{memSource{n: n, make: events(n).make}}, nil)
	if rep.Totals.RowsRejected != n/10 {
		t.Fatalf("rejected %d, want the source's %d", rep.Totals.RowsRejected, n/10)
	}
	if len(rep.Alternatives) < 3 {
		t.Fatalf("alternatives %+v", rep.Alternatives)
	}
	for _, a := range rep.Alternatives {
		if a.Error != "" {
			continue
		}
		if a.RejectedRows != n/10 || a.LostRows != a.Overwritten+n/10 {
			t.Errorf("%s %s: rejected %d, lost %d (overwritten %d), want the source's %d rejects in both", a.ID, a.PrimaryKey, a.RejectedRows, a.LostRows, a.Overwritten, n/10)
		}
	}
}

// A timestamp read in a unit (source.timestamp_unit, or its own timestamp(us)) is still a time:
// the advisor derives the same designs from it, the guide's modulo bucket of an incremental time
// among them ("a range of ts (a time range) becomes 16 scans"), as without the unit.
func TestAdvisorDesignsOfATimestampWithAUnit(t *testing.T) {
	designs := func(unit, tsType string) (ids []string, bucket model.Alternative) {
		yml := fmt.Sprintf(readingsYAML, "[ts][device_id]", "")
		yml = strings.Replace(yml, "  columns:\n", unit+"  columns:\n", 1)
		yml = strings.Replace(yml, "ts: timestamp", "ts: "+tsType, 1)
		rep := runReport(t, yml, readings(5000), func(c *Config) { c.SubsampleMax = 1000 })
		for _, a := range rep.Alternatives {
			ids = append(ids, a.ID)
			if a.ID == "bucket" {
				bucket = a
			}
		}
		return ids, bucket
	}
	want, b := designs("", "timestamp")
	if b.ID == "" || !strings.Contains(b.TradeOff, "(a time range)") {
		t.Fatalf("without a unit: designs %v, bucket %+v", want, b)
	}
	for _, c := range [][2]string{{"  timestamp_unit: ms\n", "timestamp"}, {"", "timestamp(ms)"}} {
		got, gb := designs(c[0], c[1])
		if strings.Join(got, " ") != strings.Join(want, " ") || gb.PrimaryKey != b.PrimaryKey || gb.TradeOff != b.TradeOff {
			t.Errorf("%q ts: %s: designs %v, want %v; bucket %s (%s), want %s (%s)", c[0], c[1], got, want, gb.PrimaryKey, gb.TradeOff, b.PrimaryKey, b.TradeOff)
		}
	}
}
