package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// guideScenario is one of the design guides' example tables with the queries the guide
// designs it for, the rows generated in creation order.
type guideScenario struct {
	name    string
	yaml    string
	src     func() pipeline.Source
	queries []transform.Query
	first   string   // the advisor's #1: the design the guide gives for the queries
	warn    []string // every warning and error, rule names in the report's order
}

const scenarioRows = 60_000

func scenarioSource(make func(i int) []pipeline.Value) func() pipeline.Source {
	return func() pipeline.Source { return &samplingSource{memSource{n: scenarioRows, make: make}} }
}

// channelRow: the wide-table guide's orders(channel, id, ts): 3 channels holding 60, 30 and 10%
// of the orders, ids rising within each channel (a0000001, w0000001, u0000001 ...).
func channelRow(i int) []pipeline.Value {
	ch, letter := "alipay", "a"
	switch r := spreadOf(i, 10); {
	case r >= 9:
		ch, letter = "unionpay", "u"
	case r >= 6:
		ch, letter = "wechat", "w"
	}
	return []pipeline.Value{pipeline.Text(ch), pipeline.Text(fmt.Sprintf("%s%09d", letter, i)), pipeline.Int(guideBase + int64(i)), pipeline.Text("paid"), pipeline.Text("shanghai")}
}

// userOrderRow: orders by user, user ids random (seq false) or handed out in sequence (seq true:
// the newest users place the newest orders), order ids rising.
func userOrderRow(seq bool) func(i int) []pipeline.Value {
	return func(i int) []pipeline.Value {
		u := fmt.Sprintf("u%08x", collide.Mix64(spreadOf(i, 20000), 7)&0xffffffff)
		if seq {
			u = fmt.Sprintf("%09d", 100000000+i/3)
		}
		return []pipeline.Value{pipeline.Text(u), pipeline.Int(int64(i)), pipeline.Int(guideBase + int64(i)), pipeline.Text("NORMAL"), pipeline.Decimal("12.50")}
	}
}

// textOrderRow: orders by user (random user ids) whose order numbers are text, a date and hour
// then a sequence ('2015122410' and on), rising.
func textOrderRow(i int) []pipeline.Value {
	u := fmt.Sprintf("u%08x", collide.Mix64(spreadOf(i, 20000), 7)&0xffffffff)
	return []pipeline.Value{pipeline.Text(u), pipeline.Text(fmt.Sprintf("2015122410%06d", i)), pipeline.Int(guideBase + int64(i)), pipeline.Decimal("12.50")}
}

// typedOrderRow: an enumerated first column, order_type NORMAL (60%), GROUP, PRESALE, REFUND.
func typedOrderRow(i int) []pipeline.Value {
	t := "NORMAL"
	switch r := spreadOf(i, 10); {
	case r == 9:
		t = "REFUND"
	case r == 8:
		t = "PRESALE"
	case r >= 6:
		t = "GROUP"
	}
	return []pipeline.Value{pipeline.Text(t), pipeline.Int(int64(i)), pipeline.Text(fmt.Sprintf("u%06d", spreadOf(i+3, 50000))), pipeline.Int(guideBase + int64(i)), pipeline.Decimal("8.00")}
}

// clickRow: clicks per user, site and hour, with a row per update of the count (the same
// user, site and hour again with a higher count).
func clickRow(i int) []pipeline.Value {
	j := i / 2 // every record twice: the count as first written, then updated
	return []pipeline.Value{pipeline.Text(fmt.Sprintf("u%05d", spreadOf(j, 5000))), pipeline.Text(fmt.Sprintf("site%d", j%7)), pipeline.Int(int64(j / 500)), pipeline.Int(int64(10 + i%2*5)), pipeline.Int(guideBase + int64(i))}
}

// tableYAML is a mapping of the scenarios: source name and columns, table, key, 16 regions.
func tableYAML(source, columns, table, pk string) string {
	return fmt.Sprintf("\nversion: 1\nsource:\n  name: %s\n  columns: {%s}\ntarget:\n  table: %s\n  primary_key: %q\nregions:\n  count: 16\n", source, columns, table, pk)
}

func channelYAML(pk string) string {
	return tableYAML("shop.orders", "channel: text, id: text, ts: timestamp, status: text, location: text", "orders", pk)
}

func userOrderYAML(pk string) string {
	return tableYAML("shop.user_orders", "userid: text, orderid: bigint, ts: timestamp, status: text, amount: decimal", "user_orders", pk)
}

func textOrderYAML(pk string) string {
	return tableYAML("shop.text_orders", "userid: text, order_no: text, ts: timestamp, amount: decimal", "text_orders", pk)
}

func typedOrderYAML(pk string) string {
	return tableYAML("shop.typed_orders", "order_type: text, orderid: bigint, userid: text, ts: timestamp, amount: decimal", "typed_orders", pk)
}

func clickYAML(pk string) string {
	return tableYAML("web.clicks", "userid: text, site: text, hour: bigint, clicks: bigint, updated: timestamp", "clicks", pk)
}

func guideScenarios() []guideScenario {
	eq := func(cols ...string) transform.Query { return transform.Query{Equal: cols} }
	byChannel := []transform.Query{eq("channel", "id", "ts"), {Equal: []string{"channel"}, Range: "id"}}
	return []guideScenario{
		// the wide-table guide's orders: keep channel first (the queries read one channel) and
		// spread each channel's rising ids, "hash(id)+id or reverse(id)"; a salt would make every
		// GET 16 lookups
		{"channel orders", channelYAML("[channel][id][ts]"), scenarioSource(channelRow), byChannel,
			"[channel][md5(id).substr(0, 4) + id AS rk_hash][ts]", []string{"first_column_cardinality", "first_column_skew", "incremental_key_column"}},
		// "If most of the queries in your business contain conditions for the id column, we
		// recommend that you specify the id column as the leftmost primary key column"
		{"channel orders by id", channelYAML("[channel][id][ts]"), scenarioSource(channelRow), append(byChannel, eq("id")),
			"[md5(id).substr(0, 4) + id AS rk_hash][channel][ts]", []string{"first_column_cardinality", "first_column_skew", "incremental_key_column", "query_access"}},
		// random user ids: [userid][orderid] as it is
		{"user orders, random user ids", userOrderYAML("[userid][orderid]"), scenarioSource(userOrderRow(false)),
			[]transform.Query{eq("userid", "orderid"), {Equal: []string{"userid"}, Range: "orderid"}},
			"[userid][orderid]", nil},
		// sequential user ids, latest orders first: [md5(userid).subStr(0,4)][userId][orderid DESC]
		{"user orders, sequential user ids, newest first", userOrderYAML("[userid][orderid]"), scenarioSource(userOrderRow(true)),
			[]transform.Query{eq("userid", "orderid"), {Equal: []string{"userid"}, Range: "orderid", NewestFirst: true}},
			"[md5(userid).substr(0, 4) + userid AS rk_hash][orderid DESC]", []string{"incremental_key_column", "write_hotspot", "query_access"}},
		// order numbers kept as text ('2015122410'), the latest first: the guide's DESC, and "Replace
		// the STRING data type with the LONG or INT data type": 8 bytes in numeric order
		{"user orders, text order numbers, newest first", textOrderYAML("[userid][order_no]"), scenarioSource(textOrderRow),
			[]transform.Query{eq("userid", "order_no"), {Equal: []string{"userid"}, Range: "order_no", NewestFirst: true}},
			"[userid][long(order_no) AS order_no_long DESC]", []string{"query_access"}},
		// the guide's [userId][orderid][random(100)]: the salt behind the user spreads nothing
		{"user orders, trailing salt", userOrderYAML("[userid][orderid][random(100) AS salt]"), scenarioSource(userOrderRow(true)),
			[]transform.Query{eq("userid", "orderid")},
			"[md5(userid).substr(0, 4) + userid AS rk_hash][orderid]", []string{"trailing_salt", "salted_key", "incremental_key_column", "write_hotspot"}},
		// "Do not specify a column that contains enumerated data, such as order types ... as the
		// first primary key column": orders looked up by id get the id, hashed, first
		{"enumerated first column", typedOrderYAML("[order_type][orderid]"), scenarioSource(typedOrderRow),
			[]transform.Query{eq("orderid")},
			"[md5(orderid).substr(0, 4) + orderid AS rk_hash][order_type]", []string{"first_column_cardinality", "first_column_skew", "incremental_key_column", "region_balance", "query_access"}},
		// versions of one record that differ in a measure: the key stays, a version column keys them apart
		{"clicks with a version column", clickYAML("[userid][site][hour]"), scenarioSource(clickRow),
			[]transform.Query{eq("userid", "site", "hour")},
			"[userid][code(site, site_codes) AS site_code][hour][updated]", []string{"uniqueness"}},
		{"clicks without a version column", tableYAML("web.clicks", "userid: text, site: text, hour: bigint, clicks: bigint", "clicks", "[userid][site][hour]"), scenarioSource(func(i int) []pipeline.Value { return clickRow(i)[:4] }),
			[]transform.Query{eq("userid", "site", "hour")},
			"", []string{"uniqueness"}},
		// the guide's logs: [hostname][log-event][timestamp] for a metric's time range
		{"logs by host and event", withKeyText("../mappings/logs.yaml", ""), scenarioSource(logRow),
			[]transform.Query{{Equal: []string{"hostname", "log-event"}, Range: "ts"}},
			"[hostname][log-event][ts]", []string{"key_columns", "query_access"}},
		// "Query data that contains only the time dimension": the modulo bucket
		{"logs by time", withKeyText("../mappings/logs.yaml", ""), scenarioSource(logRow),
			[]transform.Query{{Range: "ts"}},
			"[ts % numBuckets AS bucket][ts][hostname][code(log-event, log-event_codes) AS log-event_code]", []string{"key_columns"}},
		// the transactions tables: one per access pattern
		{"transactions by seller", withKeyText("../mappings/transactions_by_seller.yaml", ""), scenarioSource(transactionRow),
			[]transform.Query{{Equal: []string{"seller_id"}, Range: "ts"}}, "[seller_id][ts][order_number]", nil},
		{"transactions by buyer", withKeyText("../mappings/transactions_by_buyer.yaml", ""), scenarioSource(transactionRow),
			[]transform.Query{{Equal: []string{"buyer_id"}, Range: "ts"}}, "[buyer_id][ts][order_number]", []string{"first_column_prefix"}},
		{"transactions by order number", withKeyText("../mappings/transactions_by_order.yaml", "[order_number]"), scenarioSource(transactionRow),
			[]transform.Query{eq("order_number")}, "[md5(order_number).substr(0, 4) + order_number AS rk_hash]", []string{"incremental_key_column", "write_hotspot"}},
		// a table Lindorm cannot write a row into: report refuses it as check and migrate do
		{"key-only target", strings.Replace(tableYAML("shop.follows", "userid: text, orderid: bigint", "follows", "[md5(userid).substr(0,4) + userid AS pk][orderid]"), "\nregions:", "\n  exclude: [userid]\nregions:", 1), scenarioSource(func(i int) []pipeline.Value { return userOrderRow(false)(i)[:2] }),
			[]transform.Query{eq("userid", "orderid")}, "", []string{"key_only_target"}},
	}
}

// TestGuideScenarios runs the guides' example tables through the report with the queries the
// guides design them for: the advisor's #1 is the guide's design, and the warnings are the
// anti-patterns the guides name, each quoting the guide where the rule comes from one.
func TestGuideScenarios(t *testing.T) {
	for _, sc := range guideScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			rep := runReport(t, sc.yaml, sc.src(), func(c *Config) { c.Queries = sc.queries; c.Workers = 1 })
			var got []string
			for _, f := range rep.Findings {
				if f.Severity != model.SevInfo {
					got = append(got, f.Rule)
				}
			}
			if !slices.Equal(got, sc.warn) {
				t.Errorf("warnings %v, want %v:\n%s", got, sc.warn, strings.Join(warnings(rep), "\n"))
			}
			if sc.first == "" {
				return
			}
			if len(rep.Alternatives) == 0 || rep.Alternatives[0].PrimaryKey != sc.first {
				var table []string
				for _, a := range rep.Alternatives {
					table = append(table, fmt.Sprintf("%d %s %s hot %.2f %+v", a.Rank, a.Grade, a.PrimaryKey, advise.WriteHotFactor(&a), a.Queries))
				}
				t.Errorf("#1 is not %s:\n%s", sc.first, strings.Join(table, "\n"))
			}
		})
	}
}

// The uniqueness advice on rows that differ in a measure: a version column when the source has
// one, never the measure; without one, the advice says they are versions of one record.
func TestUniquenessNeverAddsAMeasure(t *testing.T) {
	for _, sc := range guideScenarios() {
		if !strings.HasPrefix(sc.name, "clicks") {
			continue
		}
		rep := runReport(t, sc.yaml, sc.src(), func(c *Config) { c.Queries = sc.queries; c.Workers = 1 })
		s := rep.Uniqueness.Suggestion
		if s == nil {
			t.Fatalf("%s: no suggestion", sc.name)
		}
		for _, a := range rep.Alternatives {
			if slices.Contains(a.Added, "clicks") || strings.Contains(a.PrimaryKey, "[clicks]") {
				t.Errorf("%s: design %s keys on the measure clicks", sc.name, a.PrimaryKey)
			}
		}
		switch sc.name {
		case "clicks with a version column":
			if !slices.Equal(s.Add, []string{"updated"}) {
				t.Errorf("%s: add %v, want [updated]: %s", sc.name, s.Add, s.Message)
			}
		default:
			if len(s.Add) != 0 || !strings.Contains(s.Message, "differ only in `clicks`, which hold quantities") || !strings.Contains(s.Message, "versions of one record") || !strings.Contains(s.Message, "version column") {
				t.Errorf("%s: %+v", sc.name, s)
			}
		}
	}
}

// A table declared write-heavy (workload: write_heavy, or Config.Workload) ranks the write
// spread before the reads: the salt may then come first; by default it never outranks a design
// that spreads as well without one.
func TestWorkloadWriteHeavy(t *testing.T) {
	sc := guideScenarios()[0] // channel orders
	yml := sc.yaml + "workload: write_heavy\n"
	for name, mod := range map[string]func(*Config){
		"mapping": func(c *Config) {},
		"config":  func(c *Config) { c.Workload = transform.WorkloadWriteHeavy },
	} {
		src := yml
		if name == "config" {
			src = sc.yaml
		}
		rep := runReport(t, src, sc.src(), func(c *Config) { c.Queries = sc.queries; c.Workers = 1; mod(c) })
		if rep.Workload != transform.WorkloadWriteHeavy || rep.Alternatives[0].Salt == 0 {
			t.Errorf("%s: workload %q, #1 %s", name, rep.Workload, rep.Alternatives[0].PrimaryKey)
		}
		if text, _ := outputs(t, rep); !strings.Contains(text, "\n  workload write_heavy: the write spread ranks before the reads' cost") {
			t.Errorf("%s: the text does not say the ranking is write-heavy", name)
		}
	}
	rep := runReport(t, sc.yaml, sc.src(), func(c *Config) { c.Queries = sc.queries; c.Workers = 1 })
	if rep.Workload != transform.WorkloadReadsFirst {
		t.Errorf("default workload %q", rep.Workload)
	}
	for _, a := range rep.Alternatives {
		if a.Salt > 0 && (a.Rank == 1 || !strings.Contains(a.TradeOff, "a GET of one row becomes 16 lookups") || !strings.Contains(a.TradeOff, "rekey replicate rejects deletes")) {
			t.Errorf("salted design %s ranks %d: %s", a.PrimaryKey, a.Rank, a.TradeOff)
		}
	}
}

// --write-mapping names a salt's cost in the file it writes for a salted design.
func TestWrittenSaltedDesignNamesItsCost(t *testing.T) {
	sc := guideScenarios()[0]
	rep := runReport(t, sc.yaml, sc.src(), func(c *Config) { c.Queries = sc.queries; c.Workers = 1 })
	dir := t.TempDir()
	rep.Mapping.File = filepath.Join(dir, "orders.yaml")
	if err := os.WriteFile(rep.Mapping.File, []byte(sc.yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	prog, _ := compile(t, sc.yaml)
	if _, err := advise.WriteMappings(filepath.Join(dir, "designs"), rep.Mapping.File, rep, prog.Source()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "designs", "salt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "workload:") {
		t.Errorf("a reads-first run writes a workload the mapping did not have:\n%s", b)
	}
	// ranked write-heavy (--workload): the files say so, for the report run on them
	rep.Workload = transform.WorkloadWriteHeavy
	if _, err := advise.WriteMappings(filepath.Join(dir, "heavy"), rep.Mapping.File, rep, prog.Source()); err != nil {
		t.Fatal(err)
	}
	if m, err := transform.Load(filepath.Join(dir, "heavy", "salt.yaml")); err != nil || m.Workload != transform.WorkloadWriteHeavy {
		t.Errorf("workload %v %v", m, err)
	}
	text := strings.ReplaceAll(string(b), "\n# ", " ")
	for _, want := range []string{"The salt's cost: reads: a GET of one row becomes 16 lookups", "an update writes the row under a new key and leaves the old row behind, and rekey replicate rejects deletes"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, b)
		}
	}
}

// When every row is rejected no key was built: the key_length finding says so instead of
// printing lengths of zero, and the uniqueness finding instead of "no collisions" among none.
func TestKeyLengthWithoutKeys(t *testing.T) {
	yml := `
version: 1
source:
  columns: {id: text, v: text}
target:
  table: t
  primary_key: "[long(id) AS id_long]"
`
	rep := runReport(t, yml, &memSource{n: 50, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Text(fmt.Sprint("x", i)), pipeline.Text("v")}
	}}, nil)
	if rep.Totals.RowsOK != 0 {
		t.Fatalf("the fixture needs every row rejected: %+v", rep.Totals)
	}
	if f := wantSeverity(t, rep, "key_length", model.SevInfo); f.Message != "key length not measured: no row passed the mapping (see rejects)" {
		t.Errorf("key_length: %s", f.Message)
	}
	if f := wantSeverity(t, rep, "uniqueness", model.SevInfo); f.Message != "uniqueness not checked: no row passed the mapping (see rejects)" {
		t.Errorf("uniqueness: %s", f.Message)
	}
}

// For a declared query the key serves only by scanning the whole table, the advisor offers the
// guides' index beside the key changes: a secondary index when the query's columns as a key
// spread writes, with its CREATE INDEX; an index table keyed for the query when they would not.
func TestIndexOffers(t *testing.T) {
	by := func(rep *model.Report) map[string]model.IndexOffer {
		out := map[string]model.IndexOffer{}
		for _, x := range rep.Indexes {
			out[x.Query] = x
		}
		return out
	}
	// orders by user id, keyed by a hash of the order id: the user's orders need an index on
	// userid, whose values spread writes
	yml := typedOrderYAML("[md5(orderid).substr(0,4) + orderid AS pk]")
	rep := runReport(t, yml, scenarioSource(typedOrderRow)(), func(c *Config) {
		c.Queries = []transform.Query{{Equal: []string{"orderid"}}, {Equal: []string{"userid"}}}
		c.Workers = 1
	})
	x, ok := by(rep)["userid = ?"]
	if !ok || x.Kind != "secondary_index" || x.DDL != "CREATE INDEX IF NOT EXISTS idx_typed_orders_userid ON typed_orders (userid) ASYNC;" || x.Grade == "poor" ||
		!strings.Contains(x.Note, "run it after the bulk load") {
		t.Errorf("userid = ?: %+v (all %+v)", x, rep.Indexes)
	}
	if _, ok := by(rep)["orderid = ?"]; ok || len(rep.Indexes) != 1 {
		t.Errorf("an index for a query the key serves: %+v", rep.Indexes)
	}
	if f := findingOf(rep, "query_index"); f == nil || !strings.Contains(f.Message, x.DDL) || !strings.Contains(f.Message, `"For queries that cannot be expressed with GET or SCAN, use an index table or secondary index"`) {
		t.Errorf("query_index finding: %+v", f)
	}

	// orders by channel looked up by id alone: an index on id would be incremental, so the offer
	// is an index table keyed for the query
	sc := guideScenarios()[1]
	rep = runReport(t, sc.yaml, sc.src(), func(c *Config) { c.Queries = sc.queries; c.Workers = 1 })
	x, ok = by(rep)["id = ?"]
	if !ok || x.Kind != "index_table" || x.DDL != "" || x.Key != "[md5(id).substr(0, 4) + id AS rk_hash][channel][ts]" || !strings.Contains(x.Note, "would concentrate writes") ||
		!strings.Contains(x.Note, "DIR/query_order_hash_prefix.yaml") {
		t.Errorf("id = ?: %+v (all %+v)", x, rep.Indexes)
	}
}
