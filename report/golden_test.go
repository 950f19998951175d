package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/report/render"
)

var updateGolden = flag.Bool("update", false, "rewrite the report's golden files in testdata/golden")

// goldenReports are inputs that fire most rules between them: a monotonic key that hotspots, a
// hash prefix with a sample, a dictionary that makes rows collide (with rejects and duplicates),
// JSON and long text in the key, keys over Lindorm's limit and an empty input.
func goldenReports(t *testing.T) map[string]*model.Report {
	one := func(c *Config) { c.Workers = 1 } // heavy hitters and examples do not depend on scheduling
	reps := map[string]*model.Report{
		"monotonic": runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(20000), one),
		"hash_prefix_sampled": runReport(t, fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]"), events(20000),
			func(c *Config) { one(c); c.Sample = model.Sample{Fraction: 0.5} }),
		"few_values": runReport(t, fmt.Sprintf(eventsYAML, "[kind][ts]"), events(5000), one),
		"empty":      runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), &memSource{n: 0, make: events(1).make}, one),
	}
	splits := strings.Replace(fmt.Sprintf(eventsYAML, "[payload][ts]"), "count: 16", "split_keys: [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o]", 1)
	reps["prefix_splits_queries"] = runReport(t, splits, events(5000), func(c *Config) {
		one(c)
		for _, q := range []string{"payload=, ts range", "kind="} {
			pq, err := advise.ParseQuery(q)
			if err != nil {
				t.Fatal(err)
			}
			c.Queries = append(c.Queries, pq)
		}
	})
	channels := []string{"alipay", "alipay_hk", "wechat"}
	var rows [][]pipeline.Value
	for i := 0; i < 3000; i++ {
		rows = append(rows, []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(channels[i%3]), pipeline.Text(fmt.Sprint("x", i%7))})
	}
	for i := 0; i < 5; i++ {
		rows = append(rows, rows[i], []pipeline.Value{pipeline.Int(int64(9000 + i)), pipeline.Text("unionpay"), pipeline.Text("x")})
	}
	rows = append(rows, []pipeline.Value{pipeline.Int(1), pipeline.Text("wechat"), pipeline.Text(strings.Repeat("y", 3000))})
	src := &memSource{n: len(rows), batch: 777, make: func(i int) []pipeline.Value { return rows[i] }}
	reps["collisions"] = runReport(t, fmt.Sprintf(ordersYAML, "[code(channel, ch) AS c][code]"), src, one)
	jsonSrc := &memSource{n: 200, make: func(i int) []pipeline.Value {
		code := fmt.Sprintf(`{"user": %d, "tags": ["a"]}`, i)
		if i%2 == 1 {
			code = strings.Repeat("z", 300) + fmt.Sprint(i)
		}
		return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("wechat"), pipeline.Text(code)}
	}}
	reps["json_key"] = runReport(t, fmt.Sprintf(ordersYAML, "[id][code]"), jsonSrc, func(c *Config) { one(c); c.Strict = true })
	return reps
}

// TestGoldenOutputs pins the findings, the text, the JSON and the HTML page of the reports
// above byte for byte: a change of shape must not change what users read. Run with -update to
// rewrite them after a deliberate change, and review the diff.
func TestGoldenOutputs(t *testing.T) {
	for name, rep := range goldenReports(t) {
		rep.Totals.Seconds, rep.Totals.RowsPerSec = 1, float64(rep.Totals.RowsRead) // the only figures that vary by run
		for ext, write := range map[string]func(*bytes.Buffer, *model.Report) error{
			"txt":  func(b *bytes.Buffer, r *model.Report) error { return render.WriteText(b, r) },
			"json": func(b *bytes.Buffer, r *model.Report) error { return render.WriteJSON(b, r) },
			"html": func(b *bytes.Buffer, r *model.Report) error { return render.WriteHTML(b, r) },
		} {
			if ext == "html" && (name == "monotonic" || name == "hash_prefix_sampled" || name == "prefix_splits_queries") {
				continue // their heatmaps make pages of ~0.5 MB; the other pages have every section
			}
			var buf bytes.Buffer
			if err := write(&buf, rep); err != nil {
				t.Fatalf("%s.%s: %v", name, ext, err)
			}
			got := buf.String()
			path := filepath.Join("testdata", "golden", name+"."+ext)
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./report -run TestGoldenOutputs -update)", err)
			}
			if got != string(want) {
				diff := firstDiff(string(want), got)
				if ext == "html" { // one long line: say which element differs
					if diff = tokenDiff(t, want, buf.Bytes()); diff == "" {
						diff = "the same tags, attributes and text: only the escaping differs"
					}
				}
				t.Errorf("%s differs from %s:\n%s", name+"."+ext, path, diff)
			}
		}
	}
}

func firstDiff(want, got string) string {
	if i, w, g := firstDifference(strings.Split(want, "\n"), strings.Split(got, "\n")); i >= 0 {
		return fmt.Sprintf("line %d\nwant: %.300s\ngot:  %.300s", i+1, w, g)
	}
	return "(equal lines)"
}

// firstDifference is the first index at which want and got differ, with their elements there
// ("" past either's end), or -1 when they are equal.
func firstDifference(want, got []string) (int, string, string) {
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return i, w, g
		}
	}
	return -1, "", ""
}

// TestRuleTable checks the table of rules against what users read: every rule name is in
// report/README.md's table, and every finding of the golden reports comes from the row that
// names it.
func TestRuleTable(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range advise.Rules {
		if r.What == "" {
			t.Errorf("rule %v says nothing of what it checks", r.Names)
		}
		if r.Needs != advise.NeedsMapping && r.Needs != advise.NeedsSample || r.Worst == "" {
			t.Errorf("rule %v: needs %q, worst %q: say which evidence it needs and the worst it gives", r.Names, r.Needs, r.Worst)
		}
		if by := advise.RuleOf(r.SampledBy); r.SampledBy != "" && (by == nil || by.Needs != advise.NeedsSample) {
			t.Errorf("rule %v gives way to %q, which is no sample rule of the table", r.Names, r.SampledBy)
		}
		for _, n := range r.Names {
			if !bytes.Contains(readme, []byte("| `"+n+"` |")) {
				t.Errorf("rule %s is not in report/README.md's table", n)
			}
		}
	}
	for name, rep := range goldenReports(t) {
		f := advise.NewFacts(rep)
		for _, r := range advise.Rules {
			for _, fd := range r.Check(f) {
				if !slices.Contains(r.Names, fd.Rule) {
					t.Errorf("%s: the row %v gives a finding %s", name, r.Names, fd.Rule)
				}
			}
		}
	}
}

// A mapping alone is judged by the mapping's rules, and every data rule is reported as skipped,
// never passed; with a sample, a mapping rule that data can judge gives way to the data rule.
func TestRuleTableEvidence(t *testing.T) {
	p, _ := compile(t, fmt.Sprintf(eventsYAML, "[ts][id]"))
	names := func(fs []model.Finding) (out []string) {
		for _, f := range fs {
			out = append(out, f.Rule)
		}
		return out
	}
	fs, skipped := advise.Apply(advise.MappingFacts(p, p.DesignRules(false)))
	if got := names(fs); !slices.Equal(got, []string{"key_columns", "monotonic_first_key"}) {
		t.Errorf("mapping alone: findings %v, want key_columns and monotonic_first_key", got)
	}
	var sampleRules int
	for _, r := range advise.Rules {
		if r.Needs == advise.NeedsSample {
			sampleRules++
		}
	}
	if len(skipped) != sampleRules {
		t.Errorf("mapping alone: %d rules skipped, want every sample rule (%d)", len(skipped), sampleRules)
	}
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(2000), nil)
	got := names(rep.Findings)
	if slices.Contains(got, "monotonic_first_key") || !slices.Contains(got, "incremental_key_column") {
		t.Errorf("with a sample: findings %v, want incremental_key_column in place of monotonic_first_key", got)
	}
}

// A mapping rule gives way to its sample rule only where the sample gave it rows to judge: one
// row (no order to judge), or rows the mapping all rejects, leave the mapping's warning standing.
func TestMappingRuleHoldsWhenTheSampleCannotJudge(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(1), nil)
	if f := findingOf(rep, "monotonic_first_key"); f == nil || f.Severity != model.SevWarning {
		t.Errorf("one row: a TIMESTAMP first key column is not flagged; findings: %+v", rep.Findings)
	}
	coll := listKeyYAML
	// every row's key is null: rejected, so no key value was judged
	src := &memSource{n: 100, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Null, pipeline.Text("[1,2]"), pipeline.Text("v")}
	}}
	rep = runReport(t, coll, src, nil)
	if rep.Totals.RowsOK != 0 {
		t.Fatalf("%d rows accepted, want none", rep.Totals.RowsOK)
	}
	if f := findingOf(rep, "collection_in_key"); f == nil || f.Severity != model.SevWarning {
		t.Errorf("no row accepted: a collection in the key is not flagged; findings: %+v", rep.Findings)
	}
}
