package report

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/report/render"
	"github.com/rekey/rekey/transform"
)

// The design guides' example tables, with rows generated in creation order (increasing ids and
// timestamps, as an application writes them). The guide's designs (the mappings/ files) get no
// warning; the naive keys the guides warn about are flagged and ranked below the guide's fixes.

// guideTable is a table of rows made in creation order.
func guideTable(make func(i int) []pipeline.Value) pipeline.Source {
	return &samplingSource{memSource{n: 200_000, make: make}}
}

const guideBase = 1704067200000

// spreadOf is a fixed pseudo-random value of i (users and sellers placing orders at random).
func spreadOf(i int, n uint64) uint64 { return collide.Mix64(uint64(i), 0x9e37) % n }

var channels = []string{"alipay", "alipay", "alipay", "alipay", "taobao", "taobao", "taobao", "wechat", "wechat", "jd"}

func channelOrderRow(i int) []pipeline.Value {
	return []pipeline.Value{pipeline.Text(channels[spreadOf(i, 10)]), pipeline.Text(fmt.Sprint(1_000_000_000 + i)), pipeline.Int(guideBase + int64(i)), pipeline.Text("paid"), pipeline.Text("hz")}
}

func orderRow(i int) []pipeline.Value {
	return []pipeline.Value{pipeline.Text(fmt.Sprintf("user%06d", spreadOf(i, 100000))), pipeline.Int(int64(i)), pipeline.Text(channels[i%10]),
		pipeline.Int(guideBase + int64(i)), pipeline.Text("paid"), pipeline.Text("hz"), pipeline.Decimal("12.50")}
}

func logRow(i int) []pipeline.Value {
	// a few events per millisecond at irregular times
	return []pipeline.Value{pipeline.Int(guideBase + int64(i)*7 + int64(spreadOf(i, 7))), pipeline.Text(fmt.Sprintf("web-%02d", spreadOf(i, 50))), pipeline.Text(fmt.Sprintf("event-%d", i%7)),
		pipeline.Text("info"), pipeline.Int(int64(i % 300)), pipeline.Text("ok")}
}

func transactionRow(i int) []pipeline.Value {
	return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(fmt.Sprintf("%x", collide.Mix64(spreadOf(i, 20000), 1))), pipeline.Text(fmt.Sprintf("buyer%06d", spreadOf(i+7, 100000))),
		pipeline.Int(guideBase + int64(i)), pipeline.Text("item"), pipeline.Int(1), pipeline.Decimal("3.20"), pipeline.Text("paid")}
}

// withKey is a mapping file with another primary key; a regions.size is scaled to the test's
// table (the heaviest first-column value then passes it, as it would 8 GiB in production).
func withKey(t *testing.T, file, pk string) string {
	t.Helper()
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
	return withKeyText(file, pk)
}

// withKeyText is withKey outside a test (the file is the repository's).
func withKeyText(file, pk string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		panic(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case pk != "" && strings.HasPrefix(line, "  primary_key:"):
			line = "  primary_key: \"" + pk + "\""
		case strings.HasPrefix(line, "  size:"):
			line = "  size: 1MiB"
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func guideReport(t *testing.T, yml string, src pipeline.Source, queries []transform.Query) *model.Report {
	t.Helper()
	return runReport(t, yml, src, func(c *Config) {
		c.Queries = queries
	})
}

func warnings(rep *model.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Severity != model.SevInfo {
			out = append(out, f.Rule+": "+f.Message)
		}
	}
	return out
}

func mappingAlt(rep *model.Report) model.Alternative {
	for _, a := range rep.Alternatives {
		if a.IsMapping {
			return a
		}
	}
	return model.Alternative{}
}

func altRank(t *testing.T, rep *model.Report, id string) int {
	t.Helper()
	for _, a := range rep.Alternatives {
		if a.ID == id || a.SameAs == id {
			return a.Rank
		}
	}
	t.Fatalf("no design %s among %+v", id, rep.Alternatives)
	return 0
}

// incrementalWarning is the incremental_key_column warning about key column col.
func incrementalWarning(rep *model.Report, col string) *model.Finding {
	for i, f := range rep.Findings {
		if f.Rule == "incremental_key_column" && f.Severity == model.SevWarning && strings.Contains(f.Message, "key column "+col+" is incremental") {
			return &rep.Findings[i]
		}
	}
	return nil
}

func TestGuideExampleTables(t *testing.T) {
	timeRange := []transform.Query{{Range: "ts"}}
	cases := []struct {
		name    string
		file    string
		row     func(int) []pipeline.Value
		naive   string
		column  string   // the naive key's incremental column, the guide's hotspot
		says    []string // what its incremental_key_column warning says: the evidence and the guide's fix
		fix     string   // the derived design the guide's fix is, in the naive key's report
		queries []transform.Query
	}{
		{"orders(channel, id, ts)", "../mappings/channel_orders.yaml", channelOrderRow, "[channel][id][ts]", "id",
			[]string{"rises with the write order", "column ts (timestamp), inferred", "one hot range per value", "[channel][md5(id).substr(0,4) + id]"}, "hash_next", nil},
		{"orders by user", "../mappings/orders.yaml", orderRow, "[orderid]", "orderid",
			[]string{"rises with the write order", "column ts (timestamp), inferred", "[orderid % 16][orderid]", "[md5(orderid).substr(0,4) + orderid]"}, "", nil},
		{"logs by host", "../mappings/logs.yaml", logRow, "[ts][hostname][log-event]", "ts",
			[]string{"TIMESTAMP, and times only grow", "[ts % 16][ts]"}, "bucket", timeRange},
		{"transactions by seller", "../mappings/transactions_by_seller.yaml", transactionRow, "[ts][order_number]", "ts",
			[]string{"TIMESTAMP, and times only grow", "[ts % 59][ts]"}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			guide := guideReport(t, withKey(t, tc.file, ""), guideTable(tc.row), tc.queries)
			if w := warnings(guide); len(w) > 0 && !(len(w) == 1 && strings.HasPrefix(w[0], "key_columns: 4 key columns")) {
				// the guide's own logs table has 4 key columns: the 1-3 advice stays
				t.Errorf("the guide's design %s gets warnings:\n%s", guide.Mapping.PrimaryKey, strings.Join(w, "\n"))
			}
			if own := mappingAlt(guide); own.Grade != "good" || advise.IncrementalFirst(&own) {
				t.Errorf("the guide's design %s is graded %s (rank %d)", own.PrimaryKey, own.Grade, own.Rank)
			}

			naive := guideReport(t, withKey(t, tc.file, tc.naive), guideTable(tc.row), tc.queries)
			if f := incrementalWarning(naive, tc.column); f == nil {
				t.Errorf("naive key %s: no incremental_key_column warning on %s; warnings:\n%s\nkey columns %+v\nplan %+v", tc.naive, tc.column, strings.Join(warnings(naive), "\n"), naive.Mapping.KeyColumns, naive.Plan)
			} else {
				for _, want := range tc.says {
					if !strings.Contains(f.Message, want) {
						t.Errorf("naive key %s: the warning does not say %q: %s", tc.naive, want, f.Message)
					}
				}
			}
			own := mappingAlt(naive)
			if own.Rank == 1 {
				t.Errorf("naive key %s ranks first: %+v", tc.naive, naive.Alternatives)
			}
			if first := naive.Alternatives[0]; advise.IncrementalFirst(&first) {
				t.Errorf("an incremental key ranks first: %s", first.PrimaryKey)
			}
			if tc.fix != "" {
				if r := altRank(t, naive, tc.fix); r >= own.Rank {
					t.Errorf("the guide's fix %s ranks %d, the naive key %d", tc.fix, r, own.Rank)
				}
				if naive.Alternatives[0].ID != tc.fix {
					t.Errorf("the advisor ranks %s %s first, not the guide's fix %s", naive.Alternatives[0].ID, naive.Alternatives[0].PrimaryKey, tc.fix)
				}
			}
		})
	}
}

// A counter per channel ([channel][seq], each channel numbering its own orders from its own
// base) does not rise with the write order across channels, but within each channel it does:
// the write-order model flags it from the rows of each channel in write order, even when the
// export's order is scrambled.
func TestIncrementalWithinPrefix(t *testing.T) {
	const n = 40_000
	yml := `
version: 1
source:
  name: shop.channel_orders
  columns:
    channel: text
    seq: bigint
    ts: timestamp
    status: text
target:
  table: channel_orders
  primary_key: "[channel][seq]"
`
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		j := int64(i) * 7919 % n // the export's order is not the write order
		ch := j % 4
		return []pipeline.Value{pipeline.Text([]string{"alipay", "taobao", "wechat", "jd"}[ch]), pipeline.Int(ch*1_000_000 + j/4), pipeline.Int(guideBase + j*1000), pipeline.Text("paid")}
	}}}
	rep := guideReport(t, yml, src, nil)
	f := incrementalWarning(rep, "seq")
	if f == nil {
		t.Fatalf("no incremental_key_column warning on seq; warnings:\n%s\nwrite order %+v", strings.Join(warnings(rep), "\n"), rep.WriteOrder)
	}
	for _, want := range []string{"keeps its direction within each channel in write order", "[channel][md5(seq).substr(0,4) + seq]"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("the warning does not say %q: %s", want, f.Message)
		}
	}
	if kc := rep.Mapping.KeyColumns[1]; !kc.Incremental || !strings.Contains(kc.IncrementalEvidence, "within each channel") {
		t.Errorf("key column seq: %+v", kc)
	}
	if ko := rep.WriteOrder.KeyColumns[1]; math.Abs(ko.RankCorrelation) >= collide.IncrementalRho || ko.RisesInPrefix < 0.99 {
		t.Errorf("seq's figures: rank correlation %.2f, rises in prefix %.2f", ko.RankCorrelation, ko.RisesInPrefix)
	}
}

// The guide's "most recent records of a metric" query, [hostname][log-event][timestamp DESC]: a
// declared newest-first query gets the DESC design, which ranks above the same key stored
// ascending, and the ascending key's plan says the rows come back oldest first.
func TestGuideNewestFirstQueryDesc(t *testing.T) {
	latest := []transform.Query{{Equal: []string{"hostname", "log-event"}, Range: "ts", NewestFirst: true}}
	for _, c := range []struct{ key, asc, desc string }{
		{"[hostname][log-event][ts]", "mapping", "newest_first"},
		{"", "query_order", "query_order_newest_first"}, // the guide's logs table, bucketed by time
	} {
		rep := guideReport(t, withKey(t, "../mappings/logs.yaml", c.key), guideTable(logRow), latest)
		var asc, desc *model.Alternative
		for i, a := range rep.Alternatives {
			switch {
			case a.ID == c.desc:
				desc = &rep.Alternatives[i]
			case a.ID == c.asc || c.asc == "mapping" && a.IsMapping:
				asc = &rep.Alternatives[i]
			}
		}
		if asc == nil || desc == nil {
			t.Fatalf("%s: no %s or %s among %+v", c.key, c.asc, c.desc, rep.Alternatives)
		}
		if desc.PrimaryKey != "[hostname][log-event][ts DESC]" || desc.Queries[0].Unordered || !strings.Contains(desc.Queries[0].Note, "newest first in key order (ts DESC)") {
			t.Errorf("%s: the DESC design %s: %+v", c.key, desc.PrimaryKey, desc.Queries)
		}
		if !asc.Queries[0].Unordered || !strings.Contains(asc.Queries[0].Note, "declare [ts DESC]") {
			t.Errorf("%s: the ascending design %s: %+v", c.key, asc.PrimaryKey, asc.Queries)
		}
		if desc.Rank >= asc.Rank {
			t.Errorf("%s: the DESC design ranks %d, the ascending one %d", c.key, desc.Rank, asc.Rank)
		}
		if got := render.PlanText(asc.Queries[0]); got != "1^" {
			t.Errorf("%s: the ascending design's q1 cell %q, want 1^ (read oldest first)", c.key, got)
		}
	}
}

// The guide's shorter keys as designs: a key column of numbers written as text gets the mapping's
// design with long() ('2015122410' as Long(2015122410)), one with a few long names gets code()
// with a dictionary of the observed values ('taobao' as 'tb'); both lose nothing, store shorter
// keys, and rank above the same key with the text as it is.
func TestGuideLongAndCodeDesigns(t *testing.T) {
	rep := guideReport(t, withKey(t, "../mappings/channel_orders.yaml", "[channel][id][ts]"), guideTable(channelOrderRow), nil)
	own := mappingAlt(rep)
	want := map[string]string{
		"long_id":      "[channel][long(id) AS id_long][ts]",
		"code_channel": "[code(channel, channel_codes) AS channel_code][id][ts]",
	}
	for _, a := range rep.Alternatives {
		pk, ok := want[a.ID]
		if !ok {
			continue
		}
		delete(want, a.ID)
		if a.PrimaryKey != pk || a.Error != "" || a.LostRows != 0 || a.MeanKeyBytes >= own.MeanKeyBytes || a.Rank >= own.Rank {
			t.Errorf("%s: %s (error %q), lost %d, key bytes %.1f (the mapping's %.1f), rank %d (the mapping's %d)", a.ID, a.PrimaryKey, a.Error, a.LostRows, a.MeanKeyBytes, own.MeanKeyBytes, a.Rank, own.Rank)
		}
		if a.ID == "code_channel" && fmt.Sprint(a.Edit.Codes) != "{channel_codes [[alipay 0] [jd 1] [taobao 2] [wechat 3]]}" {
			t.Errorf("code_channel dictionary %v", a.Edit.Codes)
		}
	}
	if len(want) > 0 {
		t.Errorf("no design %v among %+v", want, rep.Alternatives)
	}
	// numbers with a leading zero would merge under long() ("007" and "7"): no long() design
	rep = guideReport(t, withKey(t, "../mappings/channel_orders.yaml", "[channel][id][ts]"), guideTable(func(i int) []pipeline.Value {
		r := channelOrderRow(i)
		r[1] = pipeline.Text(fmt.Sprintf("%07d", i))
		return r
	}), nil)
	for _, a := range rep.Alternatives {
		if a.ID == "long_id" {
			t.Errorf("long() proposed for ids with leading zeros: %s", a.PrimaryKey)
		}
	}
	// a channel the subsample misses (a few rows of 200,000): a dictionary of the subsample's
	// values would reject them, so no code()
	rep = runReport(t, withKey(t, "../mappings/channel_orders.yaml", "[channel][id][ts]"), guideTable(func(i int) []pipeline.Value {
		r := channelOrderRow(i)
		if i%50_000 == 7 {
			r[0] = pipeline.Text("unionpay")
		}
		return r
	}), func(c *Config) { c.SubsampleMax = 1000 })
	for _, a := range rep.Alternatives {
		if a.ID == "code_channel" {
			t.Errorf("code() proposed from a subsample without every channel: %s %v", a.PrimaryKey, a.Edit.Codes)
		}
	}
}

// [ts][orderid] with both rising together: ts's warning says where new rows go; orderid, behind
// an incremental prefix, gets a note pointing to it, never the claim that its rows spread.
func TestIncrementalBehindAnIncrementalPrefix(t *testing.T) {
	const n = 20_000
	yml := `
version: 1
source:
  name: shop.orders
  columns:
    orderid: bigint
    ts: timestamp
    status: text
target:
  table: orders
  primary_key: "[ts][orderid]"
`
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		j := int64(i) * 7919 % n // a token scan's order
		return []pipeline.Value{pipeline.Int(j), pipeline.Int(guideBase + j*1000), pipeline.Text("paid")}
	}}}
	rep := guideReport(t, yml, src, nil)
	if incrementalWarning(rep, "ts") == nil {
		t.Fatalf("no incremental_key_column warning on ts:\n%s", strings.Join(warnings(rep), "\n"))
	}
	for _, f := range rep.Findings {
		if f.Rule == "incremental_key_column" && strings.Contains(f.Message, "key column orderid") {
			if !strings.Contains(f.Message, "itself incremental") || strings.Contains(f.Message, "no hot range") {
				t.Errorf("orderid's finding: %s", f.Message)
			}
			return
		}
	}
	t.Errorf("no incremental_key_column finding on orderid")
}

// A declared newest-first query on a key that stores its range column ascending breaks the
// guide's "[userid][orderid DESC]" ("you can design the primary key as [userid][orderid DESC] to
// sort the data in descending order"): a warning, as a scan that filters is, so that neither the
// verdict nor rekey check, which lists warnings only, passes the design as following the guides.
func TestNewestFirstQueryOnAnAscendingKeyIsAWarning(t *testing.T) {
	latest := []transform.Query{{Equal: []string{"hostname", "log-event"}, Range: "ts", NewestFirst: true}}
	for key, want := range map[string]string{"[hostname][log-event][ts]": model.SevWarning, "[hostname][log-event][ts DESC]": model.SevInfo} {
		rep := guideReport(t, withKey(t, "../mappings/logs.yaml", key), guideTable(logRow), latest)
		f := findingOf(rep, "query_access")
		if f == nil || f.Severity != want {
			t.Errorf("%s: query_access %+v, want %s", key, f, want)
		}
	}
}
