package report

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/report/render"
)

const eventsYAML = `
version: 1
source:
  name: events
  columns:
    ts: timestamp
    id: bigint
    kind: text
    payload: text
target:
  table: events
  primary_key: "%s"
regions:
  count: 16
`

func events(n int) *samplingSource {
	kinds := []string{"click", "view", "buy"}
	return &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{
			pipeline.Int(1704067200000 + int64(i)*7), // monotonic timestamps
			pipeline.Int(int64(i)),
			pipeline.Text(kinds[(i*7919)%3]),
			pipeline.Text(fmt.Sprintf("p%d", i%100)),
		}
	}}}
}

func TestMonotonicFirstColumnIsFlagged(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(100000), nil)
	// the incremental column is the warning; the monotonic share backs it as a note
	inc := wantSeverity(t, rep, "incremental_key_column", model.SevWarning)
	if !strings.Contains(inc.Message, "first key column ts") || !strings.Contains(inc.Message, "column ts (timestamp), inferred") {
		t.Errorf("incremental_key_column does not name the column and the evidence: %s", inc.Message)
	}
	f := wantSeverity(t, rep, "first_column_monotonic", model.SevInfo)
	if f.Evidence["monotonic_up"] < 0.999 {
		t.Errorf("monotonic_up = %v, want ~1", f.Evidence["monotonic_up"])
	}
	h := wantSeverity(t, rep, "write_hotspot", model.SevWarning)
	// 16 regions over the whole range: each window writes one region (two at a boundary)
	if h.Evidence["hot_factor"] < 12 || rep.Hotspot.MeanTopShare < 0.8 {
		t.Errorf("hot factor %v, mean top share %v: want one region per window", h.Evidence["hot_factor"], rep.Hotspot.MeanTopShare)
	}
	// the regions themselves are balanced: the hotspot is in time, not in space
	if rep.Distribution.RowsMaxMean > 1.2 {
		t.Errorf("rows max/mean %v, want balanced quantile regions", rep.Distribution.RowsMaxMean)
	}
	if rep.Verdict.ExitCode != 0 {
		t.Errorf("exit code %d, want 0 (warnings only)", rep.Verdict.ExitCode)
	}
	// the busiest region moves through the regions in key order
	last := -1
	for _, w := range rep.HotspotWindows {
		if w.TopRegion < last {
			t.Fatalf("window %d: busiest region %d after %d", w.Index, w.TopRegion, last)
		}
		last = w.TopRegion
	}
	// the advisor does better than the mapping, and says so
	if len(rep.Alternatives) < 4 {
		t.Fatalf("alternatives: %+v", rep.Alternatives)
	}
	var own, best *model.Alternative
	ids := map[string]bool{}
	for i := range rep.Alternatives {
		a := &rep.Alternatives[i]
		ids[a.ID] = true
		if a.IsMapping {
			own = a
		}
		if a.Rank == 1 {
			best = a
		}
	}
	if own == nil || own.Grade != "poor" || own.SameAs != "source_key" || best.IsMapping {
		t.Errorf("mapping %+v, best %+v", own, best)
	}
	for _, id := range []string{"hash_prefix", "reverse", "bucket", "salt"} {
		if !ids[id] {
			t.Errorf("no %s alternative", id)
		}
	}
	for _, a := range rep.Alternatives {
		if a.ID == "hash_prefix" && (a.Grade != "good" || a.Reads.Get != 1 || a.Reads.RangeScan != -1) {
			t.Errorf("hash prefix: %+v", a)
		}
		if a.ID == "salt" && a.Reads.Get != 16 {
			t.Errorf("salt reads: %+v", a.Reads)
		}
		if a.ID == "bucket" && (a.Reads.RangeScan != 16 || a.Reads.Get != 1) {
			t.Errorf("bucket reads: %+v", a.Reads)
		}
	}
}

func TestFewFirstColumnValuesAreFlagged(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[kind][id]"), events(30000), nil)
	if rep.FirstColumn.Distinct != 3 || !rep.FirstColumn.DistinctExact {
		t.Fatalf("distinct %d (exact %v), want exactly 3", rep.FirstColumn.Distinct, rep.FirstColumn.DistinctExact)
	}
	f := wantSeverity(t, rep, "first_column_cardinality", model.SevWarning)
	if f.Evidence["distinct"] != 3 {
		t.Errorf("evidence %v", f.Evidence)
	}
	// a quantile plan cannot place more regions than values
	if rep.Plan.Regions > 3 {
		t.Errorf("plan has %d regions over 3 values", rep.Plan.Regions)
	}
	// with --regions 16 over a hex/bucket-free column the quantile plan still stops at 3; ask a
	// fixed plan to see unreachable regions
	rep2 := runReport(t, fmt.Sprintf(eventsYAML, "[kind][id]")+"\n", events(30000), func(c *Config) { c.Regions = 16 })
	if rep2.Plan.Regions > 3 || !strings.Contains(rep2.Plan.Note, "placed") {
		t.Errorf("plan %+v", rep2.Plan)
	}
	var sum float64
	for _, tv := range rep.FirstColumn.Top {
		if tv.Rows != tv.RowsMin {
			t.Errorf("top value %+v not exact", tv)
		}
		sum += tv.Share
	}
	if len(rep.FirstColumn.Top) != 3 || math.Abs(sum-1) > 1e-9 {
		t.Errorf("top values %+v", rep.FirstColumn.Top)
	}
	// the write spread is poor: at most 3 of the regions ever get a write
	if rep.Hotspot.TopRegions > 3 {
		t.Errorf("%d distinct busiest regions", rep.Hotspot.TopRegions)
	}
}

func TestExplicitSplitsOverFewValuesLeaveEmptyRegions(t *testing.T) {
	yml := strings.Replace(fmt.Sprintf(eventsYAML, "[kind][id]"), "count: 16", "split_keys: [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o]", 1)
	rep := runReport(t, yml, events(30000), nil)
	if rep.Plan.Regions != 16 || rep.Plan.Strategy != "explicit" {
		t.Fatalf("plan %+v", rep.Plan)
	}
	f := wantSeverity(t, rep, "empty_regions", model.SevWarning)
	if f.Evidence["empty_regions"] != 13 || f.Evidence["unreachable_regions"] != 13 {
		t.Errorf("evidence %v", f.Evidence)
	}
	if rep.Distribution.Unreachable != 13 {
		t.Errorf("unreachable %d", rep.Distribution.Unreachable)
	}
}

func TestHashPrefixIsUniform(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]")
	rep := runReport(t, yml, events(400000), nil)
	if rep.Plan.Strategy != "hex_prefix" || rep.Plan.Regions != 16 {
		t.Fatalf("plan %+v", rep.Plan)
	}
	d := rep.Distribution
	if d.RowsMaxMean > 1.03 || d.CV > 0.02 {
		t.Errorf("max/mean %.4f, CV %.4f: want uniform", d.RowsMaxMean, d.CV)
	}
	if rep.Hotspot.HotFactor > 1.5 {
		t.Errorf("hot factor %.2f, want close to 1", rep.Hotspot.HotFactor)
	}
	wantSeverity(t, rep, "region_balance", model.SevInfo)
	wantSeverity(t, rep, "write_hotspot", model.SevInfo)
	wantSeverity(t, rep, "first_column_monotonic", model.SevInfo)
	if rep.Verdict.Errors != 0 || rep.Verdict.Warnings != 0 || rep.Verdict.ExitCode != 0 {
		t.Errorf("verdict %+v: %+v", rep.Verdict, rep.Findings)
	}
	if rep.Uniqueness.Keys != 400000 || rep.Uniqueness.CollisionRows != 0 {
		t.Errorf("uniqueness %+v", rep.Uniqueness)
	}
	var own *model.Alternative
	for i := range rep.Alternatives {
		if rep.Alternatives[i].IsMapping {
			own = &rep.Alternatives[i]
		}
	}
	if own == nil || own.SameAs != "hash_prefix" || own.Grade != "good" {
		t.Errorf("the mapping's design: %+v", own)
	}
}

const ordersYAML = `
version: 1
source:
  name: orders
  columns:
    id: bigint
    channel: text
    code: text
target:
  table: orders
  primary_key: "%s"
  codes:
    ch: {alipay: ap, alipay_hk: ap, wechat: wx}
  on_missing_code: reject
regions:
  count: 4
`

func TestPlantedCollisionsAreCountedExactly(t *testing.T) {
	// ids 0..9999 each come through three channels; the dictionary maps alipay and alipay_hk
	// to the same code, so every id has exactly one overwritten row: 10,000 in all. 37 rows are
	// sent twice, identically: duplicates, not collisions. 11 rows have a channel the
	// dictionary lacks (dict_miss).
	const ids = 10000
	channels := []string{"alipay", "alipay_hk", "wechat"}
	var rows [][]pipeline.Value
	for i := 0; i < ids; i++ {
		for _, c := range channels {
			rows = append(rows, []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(c), pipeline.Text("x")})
		}
	}
	for i := 0; i < 37; i++ {
		rows = append(rows, rows[i*3+2]) // wechat rows, again
	}
	for i := 0; i < 11; i++ {
		rows = append(rows, []pipeline.Value{pipeline.Int(int64(ids + i)), pipeline.Text("unionpay"), pipeline.Text("x")})
	}
	src := &memSource{n: len(rows), batch: 777, make: func(i int) []pipeline.Value { return rows[i] }}
	rep := runReport(t, fmt.Sprintf(ordersYAML, "[code(channel, ch) AS c][id]"), src, nil)
	u := rep.Uniqueness
	if u.CollisionRows != ids || u.CollidingKeys != ids || u.DuplicateRows != 37 || u.Keys != 2*ids {
		t.Fatalf("uniqueness: %d collision rows, %d colliding keys, %d duplicates, %d keys", u.CollisionRows, u.CollidingKeys, u.DuplicateRows, u.Keys)
	}
	f := wantSeverity(t, rep, "uniqueness", model.SevError)
	if f.Evidence["collision_rows"] != ids {
		t.Errorf("evidence %v", f.Evidence)
	}
	wantSeverity(t, rep, "duplicates", model.SevInfo)
	if rep.Totals.RowsRejected != 11 || rep.Totals.RejectCodes["dict_miss"] != 11 {
		t.Errorf("rejects %d %v", rep.Totals.RowsRejected, rep.Totals.RejectCodes)
	}
	if n := len(rep.Totals.RejectExamples); n != collide.RejectExamplesPerCode || rep.Totals.RejectExamples[0].Code != "dict_miss" ||
		!strings.HasPrefix(rep.Totals.RejectExamples[0].Position, "mem:") {
		t.Errorf("reject examples %+v", rep.Totals.RejectExamples)
	}
	if rep.Verdict.ExitCode != 2 {
		t.Errorf("exit code %d, want 2", rep.Verdict.ExitCode)
	}
	if len(u.Examples) != maxCollisionExamples {
		t.Fatalf("%d examples", len(u.Examples))
	}
	for _, ex := range u.Examples {
		if ex.Key[0] != "ap" || ex.Sources != 2 || ex.Rows != 2 || len(ex.Origins) != 2 || ex.SameKeySources {
			t.Fatalf("example %+v", ex)
		}
		a, b := ex.Origins[0].Values, ex.Origins[1].Values
		if a["id"] != b["id"] || a["id"] != ex.Key[1] || a["channel"] == b["channel"] ||
			!strings.HasPrefix(a["channel"], "alipay") || !strings.HasPrefix(b["channel"], "alipay") {
			t.Fatalf("example origins %+v", ex.Origins)
		}
	}
	if fmt.Sprint(u.SourceColumns) != "[channel id]" {
		t.Errorf("source columns %v", u.SourceColumns)
	}
}

func TestLongParsesCollide(t *testing.T) {
	// long('007') and long('7') are the same key
	codes := []string{"7", "007", "8", "9", "0009", "10"}
	src := &memSource{n: len(codes), make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(1), pipeline.Text("wechat"), pipeline.Text(codes[i])}
	}}
	rep := runReport(t, fmt.Sprintf(ordersYAML, "[long(code) AS k]"), src, nil)
	u := rep.Uniqueness
	if u.CollisionRows != 2 || u.CollidingKeys != 2 || u.Keys != 4 {
		t.Fatalf("uniqueness %+v", u)
	}
	keys := map[string]bool{}
	for _, ex := range u.Examples {
		keys[ex.Key[0]] = true
	}
	if !keys["7"] || !keys["9"] {
		t.Errorf("examples %+v", u.Examples)
	}
}

func TestKeysOverTheLimitAreErrors(t *testing.T) {
	src := &memSource{n: 100, make: func(i int) []pipeline.Value {
		s := "x"
		if i%10 == 0 {
			s = strings.Repeat("y", 3000)
		}
		return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("wechat"), pipeline.Text(s + fmt.Sprint(i))}
	}}
	rep := runReport(t, fmt.Sprintf(ordersYAML, "[code][id]"), src, nil)
	f := wantSeverity(t, rep, "key_length", model.SevError)
	if f.Evidence["over_limit"] != 10 || rep.Totals.RejectCodes["key_too_long"] != 10 {
		t.Errorf("evidence %v, codes %v", f.Evidence, rep.Totals.RejectCodes)
	}
	if rep.Verdict.ExitCode != 2 {
		t.Errorf("exit %d", rep.Verdict.ExitCode)
	}
}

func TestJSONAndLongTextInTheKey(t *testing.T) {
	src := &memSource{n: 200, make: func(i int) []pipeline.Value {
		code := fmt.Sprintf(`{"user": %d, "tags": ["a"]}`, i)
		if i%2 == 1 {
			code = strings.Repeat("z", 300) + fmt.Sprint(i)
		}
		return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("wechat"), pipeline.Text(code)}
	}}
	rep := runReport(t, fmt.Sprintf(ordersYAML, "[id][code]"), src, func(c *Config) { c.Strict = true })
	f := wantSeverity(t, rep, "key_json_text", model.SevWarning)
	if f.Evidence["json_like"] != 100 || f.Evidence["long_text"] != 100 {
		t.Errorf("evidence %v", f.Evidence)
	}
	if rep.Verdict.ExitCode != 1 {
		t.Errorf("strict exit code %d, want 1", rep.Verdict.ExitCode)
	}
}

func TestSampling(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]")
	rep := runReport(t, yml, events(50000), func(c *Config) { c.Sample = model.Sample{Fraction: 0.1} })
	// one row in 10 by a hash of its position: about 5,000, scaled by what was read over analysed
	analysed := rep.Totals.RowsAnalysed
	if rep.Totals.RowsRead != 50000 || analysed < 4700 || analysed > 5300 || !rep.Source.Sampled || rep.Source.Scale != 50000/float64(analysed) {
		t.Errorf("fraction: read %d analysed %d source %+v", rep.Totals.RowsRead, analysed, rep.Source)
	}
	if est := float64(rep.Totals.TargetBytes) * rep.Source.Scale; math.Abs(float64(rep.Totals.EstimatedTargetBytes)-est) > 1 || rep.Uniqueness.Exact {
		t.Errorf("totals %+v, want the target bytes scaled by %.3f", rep.Totals, rep.Source.Scale)
	}
	wantSeverity(t, rep, "sample", model.SevInfo)
	// a spread sample from a source that can sample
	rep = runReport(t, yml, events(50000), func(c *Config) { c.Sample = model.Sample{Rows: 2000} })
	if rep.Totals.RowsAnalysed != 2000 || rep.Source.Scale != 25 {
		t.Errorf("rows: analysed %d source %+v", rep.Totals.RowsAnalysed, rep.Source)
	}
	// the first rows of a source that cannot
	src := &memSource{n: 50000, make: events(50000).make}
	p, m := compile(t, yml)
	rep, err := Run(context.Background(), Config{Program: p, Mapping: m, Source: struct{ pipeline.Source }{src}, TmpDir: t.TempDir(),
		Sample: model.Sample{Rows: 3000}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.RowsRead != 3000 || rep.Source.ScaleKnown {
		t.Errorf("limit: read %d source %+v", rep.Totals.RowsRead, rep.Source)
	}
	for _, c := range []struct {
		in   string
		want model.Sample
		bad  bool
	}{{"", model.Sample{}, false}, {"100%", model.Sample{}, false}, {"5%", model.Sample{Fraction: 0.05}, false}, {"2k", model.Sample{Rows: 2000}, false},
		{"1m", model.Sample{Rows: 1000000}, false}, {"0", model.Sample{}, true}, {"150%", model.Sample{}, true}, {"x", model.Sample{}, true}} {
		got, err := ParseSample(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseSample(%q) = %+v, %v", c.in, got, err)
		}
	}
}

func TestRecommendation(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]")
	rep := runReport(t, yml, events(20000), func(c *Config) { c.Nodes = 3 })
	r := rep.Recommendation
	if r.Bulkload.Regions != 1 || len(r.Bulkload.SplitKeys) != 0 || r.Bulkload.SQL != "" {
		t.Errorf("bulkload %+v", r.Bulkload)
	}
	if r.API == nil || r.API.Regions != 12 || len(r.API.SplitKeys) != 11 || r.API.Strategy != "hex_prefix" ||
		!strings.HasPrefix(r.API.SQL, "SPLITKEYS='1555,2aaa,") {
		t.Errorf("api %+v", r.API)
	}
	if r.RegionSize != 8<<30 {
		t.Errorf("region size %d", r.RegionSize)
	}
}

func TestTextOutput(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(20000), nil)
	var buf bytes.Buffer
	if err := render.WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"VERDICT  WARN", "WARN  incremental_key_column", "WRITE HOTSPOTS OVER TIME", "ADVISOR", "RECOMMENDED REGIONS", "* the mapping"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// worst first
	if strings.Index(out, "  WARN  ") > strings.Index(out, "  note  ") {
		t.Errorf("findings not worst first:\n%s", out)
	}
}

func TestEmptyInput(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), &memSource{n: 0, make: events(1).make}, nil)
	if rep.Totals.RowsRead != 0 || rep.Verdict.ExitCode != 0 {
		t.Errorf("%+v %+v", rep.Totals, rep.Verdict)
	}
	// before, an empty input said "VERDICT OK"; it is a warning that nothing was judged.
	if rep.Verdict.Warnings == 0 || rep.Findings[0].Rule != "no_rows" {
		t.Errorf("an empty input is not flagged: %+v, first finding %+v", rep.Verdict, rep.Findings[0])
	}
	var buf bytes.Buffer
	if err := render.WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	// nothing was measured: no finding may read "ok" (the key length and uniqueness say so)
	if text := buf.String(); regexp.MustCompile(`(?m)^\s+ok\s`).MatchString(text) || !regexp.MustCompile(`note  uniqueness +uniqueness not checked`).MatchString(text) {
		t.Errorf("an empty input's findings:\n%s", text)
	}
	if err := render.WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
}

// A source whose every row the mapping rejects (a wrong column type, a code missing from the
// dictionary) would migrate nothing: an error, not a warning with exit 0, and the sections that
// measure accepted keys say that they measured none instead of printing zeros.
func TestEveryRowRejectedIsAnError(t *testing.T) {
	src := &memSource{n: 500, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("unionpay"), pipeline.Text("x")}
	}}
	rep := runReport(t, fmt.Sprintf(ordersYAML, "[code(channel, ch) AS c][id]"), src, nil)
	if rep.Totals.RowsRejected != 500 || rep.Totals.RowsOK != 0 {
		t.Fatalf("totals %+v", rep.Totals)
	}
	f := wantSeverity(t, rep, "rejects", model.SevError)
	if !strings.Contains(f.Message, "every row") {
		t.Errorf("rejects finding %q does not say that every row is rejected", f.Message)
	}
	if rep.Verdict.ExitCode != 2 {
		t.Errorf("exit code %d, want 2", rep.Verdict.ExitCode)
	}
	var buf bytes.Buffer
	if err := render.WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, section := range []string{"KEY SHAPE  2 columns, lengths", "UNIQUENESS ", "FIRST KEY COLUMN ", "REGIONS ", "WRITE HOTSPOTS OVER TIME "} {
		if !regexp.MustCompile(`(?m)^` + section + ` not measured: no row passed the mapping`).MatchString(text) {
			t.Errorf("section %s does not say it measured nothing:\n%s", section, text)
		}
	}
}

// releasingSource is a memSource whose batches count their Release calls.
type releasingSource struct {
	memSource
	sent, released atomic.Int64
}

func (s *releasingSource) Run(ctx context.Context, _ map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	for i := 0; i < s.n; i += 1000 {
		var recs []pipeline.Record
		for k := i; k < min(i+1000, s.n); k++ {
			recs = append(recs, pipeline.Record{Values: s.make(k), Seq: int64(k + 1)})
		}
		var once atomic.Bool
		b := pipeline.Batch{Stream: "mem", Records: recs, Release: func() {
			if once.Swap(true) {
				panic("a batch released twice")
			}
			clear(recs) // as the file source reuses them: nothing may read them after this
			s.released.Add(1)
		}}
		s.sent.Add(1)
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// The report gives every batch back to its source once it is done with it (the file source then
// reuses the batch's memory, as migrate lets it), and the figures are those of a run that keeps
// them.
func TestReportReleasesEveryBatch(t *testing.T) {
	src := &releasingSource{memSource: memSource{n: 30000, make: events(1).make}}
	mod := func(c *Config) { c.Workers = 1 }
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), src, mod)
	if sent, released := src.sent.Load(), src.released.Load(); sent != 30 || released != sent {
		t.Fatalf("%d batches sent, %d released", sent, released)
	}
	kept := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), &memSource{n: 30000, make: events(1).make}, mod)
	rep.Totals.Seconds, rep.Totals.RowsPerSec, kept.Totals.Seconds, kept.Totals.RowsPerSec = 0, 0, 0, 0
	var a, b bytes.Buffer
	if err := render.WriteJSON(&a, rep); err != nil {
		t.Fatal(err)
	}
	if err := render.WriteJSON(&b, kept); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("released batches change the report: %s", firstDiff(b.String(), a.String()))
	}
}

// listKeyYAML keys table t by a text and a list<int>.
const listKeyYAML = `
version: 1
source:
  name: t
  columns:
    id: text
    tags: list<int>
    v: text
target:
  table: t
  primary_key: "[id][tags]"
regions:
  count: 4
`

// A list<int> in the key is JSON text ([1,2,3]) as a list<text> is: with a sample, where
// key_json_text judges the values in collection_in_key's place, it is still flagged.
func TestNumericCollectionInKeyIsJSON(t *testing.T) {
	yml := listKeyYAML
	src := &memSource{n: 3000, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Text(fmt.Sprintf("u%05d", (i*7919)%100000)), pipeline.Text(fmt.Sprintf("[%d,%d,3]", i%7, i%11)), pipeline.Text("v")}
	}}
	rep := runReport(t, yml, src, nil)
	f := wantSeverity(t, rep, "key_json_text", model.SevWarning)
	if !strings.Contains(f.Message, "key column tags") {
		t.Errorf("key_json_text does not name tags: %s", f.Message)
	}
}

// A declared write-order column that holds no value orders nothing: the report must not judge
// the windows "in write order (declared column ...)" when it judged them in arrival order. It
// falls back, says so, and a dense id read in a shuffled order is still judged a sequence.
func TestDeclaredWriteOrderWithoutValues(t *testing.T) {
	yml := `
version: 1
source:
  name: orders
  columns:
    id: bigint
    created_at: timestamp
    v: text
target:
  table: orders
  primary_key: "[id]"
regions:
  count: 16
`
	const n = 50000
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(i*7919) % n), pipeline.Null, pipeline.Text("x")}
	}}}
	rep := runReport(t, yml, src, func(c *Config) {
		c.Order = model.OrderHints{Column: "created_at", ColumnOrigin: "source.write_order"}
	})
	if rep.WriteOrder.Evidence == model.OrderDeclared {
		t.Errorf("write order judged by the declared column created_at, which has no value: %+v", rep.WriteOrder)
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Message, "declared column created_at") {
			t.Errorf("finding %s claims the declared order: %s", f.Rule, f.Message)
		}
	}
	wantSeverity(t, rep, "incremental_key_column", model.SevWarning)
}

// timeUUID is the text of a version-1 UUID of time ms (epoch milliseconds) and a 100 ns tick.
func timeUUID(ms, tick int64) string {
	t := uint64(ms*10000+tick) + 0x01B21DD213814000
	return fmt.Sprintf("%08x-%04x-%04x-9abc-1234567890ab", t&0xffffffff, t>>32&0xffff, t>>48&0x0fff|0x1000)
}

// A timeuuid key column is Lindorm text that begins with the low bits of its time: the rows an
// application writes within seconds of each other share their leading characters and land in
// one region. A sample spread over days (read in hash order) cannot show it in its windows: the
// column is judged incremental by what it is, as a TIMESTAMP is, and the design graded poor.
func TestTimeUUIDKeyIsIncremental(t *testing.T) {
	yml := `
version: 1
source:
  name: events
  columns:
    id: timeuuid
    v: text
target:
  table: events
  primary_key: "[id]"
regions:
  count: 16
`
	const n = 50000
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		k := int64(i*7919) % n // token order: a shuffle of the creation order
		return []pipeline.Value{pipeline.Text(timeUUID(1700000000000+k*30*86400*1000/n, k%9999)), pipeline.Text("x")}
	}}}
	rep := runReport(t, yml, src, nil)
	f := wantSeverity(t, rep, "incremental_key_column", model.SevWarning)
	if !strings.Contains(f.Message, "timeuuid") {
		t.Errorf("incremental_key_column does not say the column is a timeuuid: %s", f.Message)
	}
	// reversed, a timeuuid leads with its node and clock sequence, fixed for one writer
	for _, a := range rep.Alternatives {
		if (a.IsMapping || strings.Contains(a.PrimaryKey, "reverse(")) && (a.Grade != "poor" || !a.Incremental) {
			t.Errorf("design %s grades %s (incremental first %v)", a.PrimaryKey, a.Grade, a.Incremental)
		}
	}
}

// The sample finding counts the rows analysed, which on a sample are fewer than the rows read:
// it must not call them the rows read (TOTALS lists both).
func TestSampleFindingCountsRowsAnalysed(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]"), events(20000), func(c *Config) { c.Sample = model.Sample{Fraction: 0.5} })
	if rep.Totals.RowsRead == rep.Totals.RowsAnalysed {
		t.Fatalf("the sample analysed every row read: %+v", rep.Totals)
	}
	f := wantSeverity(t, rep, "sample", model.SevInfo)
	if want := model.Count(rep.Totals.RowsAnalysed) + " rows analysed"; !strings.Contains(f.Message, want) {
		t.Errorf("sample finding %q does not say %q (rows read: %d)", f.Message, want, rep.Totals.RowsRead)
	}
}

// An inferred write order is a guess: a date column that is no creation time (a birth date)
// must not clear an auto-increment id, which the guide rules out as a first key column whatever
// order the rows come in. Its dense values still make it a sequence.
func TestSequenceIsIncrementalInAnInferredOrder(t *testing.T) {
	yml := `
version: 1
source:
  name: users
  columns:
    id: bigint
    birth_date: date
    name: text
target:
  table: users
  primary_key: "[id]"
regions:
  count: 16
`
	src := &samplingSource{memSource{n: 50000, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(i + 1)), pipeline.Int(int64(-7305 + (i*7919)%20000)), pipeline.Text("n")}
	}}}
	rep := runReport(t, yml, src, nil)
	if rep.WriteOrder.Evidence != model.OrderTimeColumn {
		t.Fatalf("write order %+v, want the inferred column birth_date", rep.WriteOrder)
	}
	wantSeverity(t, rep, "incremental_key_column", model.SevWarning)
	for _, a := range rep.Alternatives {
		if a.IsMapping && (a.Grade != "poor" || !a.Incremental) {
			t.Errorf("the mapping's design grades %s (incremental first %v)", a.Grade, a.Incremental)
		}
	}
}

// A counter written as fixed-width text (a zero-padded number, behind a shared prefix: o0000001,
// o0000002, ...) sorts as its numbers do, so it is the auto-increment id the guide rules out as
// a first key column. Read in a shuffled order with nothing to tell the write order (a token
// scan, an export sorted by something else), its dense values still make it a sequence, as the
// same ids stored as integers are.
func TestZeroPaddedTextCounterIsIncremental(t *testing.T) {
	yml := `
version: 1
source:
  name: orders
  columns:
    oid: text
    v: text
target:
  table: orders
  primary_key: "[oid]"
regions:
  count: 16
`
	const n = 50000
	for _, format := range []string{"%08d", "o%07d"} {
		src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
			return []pipeline.Value{pipeline.Text(fmt.Sprintf(format, int64(i*7919)%n+1)), pipeline.Text("x")}
		}}}
		rep := runReport(t, yml, src, nil)
		if rep.WriteOrder.Evidence != model.OrderArrival {
			t.Fatalf("%s: write order %+v, want arrival order", format, rep.WriteOrder)
		}
		f := findingOf(rep, "incremental_key_column")
		if f == nil || f.Severity != model.SevWarning {
			t.Errorf("%s: a shuffled zero-padded counter key is not judged incremental: %+v", format, f)
		}
		for _, a := range rep.Alternatives {
			if a.IsMapping && (a.Grade != "poor" || !a.Incremental) {
				t.Errorf("%s: the mapping's design grades %s (incremental first %v)", format, a.Grade, a.Incremental)
			}
		}
	}
}

// A date or time written as text (2024-01-02, the guide's '2015122410'), or as the digits of an
// integer (long(day) of it), sorts as its times do: every new row lands at the end of the key
// space, as a TIMESTAMP key's does. Read in a shuffled order with nothing to tell the write
// order, the column is judged incremental by what it holds, not passed because the shuffle
// shows no hotspot.
func TestDateTextKeyIsIncremental(t *testing.T) {
	yml := `
version: 1
source:
  name: events
  columns:
    day: text
    id: bigint
    v: text
target:
  table: events
  primary_key: "[day][id]"
regions:
  count: 16
`
	const n = 50000
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, layout := range []string{"2006-01-02", "2006010215", "2006-01-02T15:04:05Z"} {
		src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
			k := int64(i*7919) % n // a shuffle of the creation order
			at := start.Add(time.Duration(k) * 20 * time.Minute)
			return []pipeline.Value{pipeline.Text(at.Format(layout)), pipeline.Int(k * 104729), pipeline.Text("x")}
		}}}
		rep := runReport(t, yml, src, nil)
		if rep.WriteOrder.Evidence != model.OrderArrival {
			t.Fatalf("%s: write order %+v, want arrival order", layout, rep.WriteOrder)
		}
		f := findingOf(rep, "incremental_key_column")
		if f == nil || f.Severity != model.SevWarning || !strings.Contains(f.Message, "first key column day") {
			t.Errorf("%s: a shuffled date text key is not judged incremental: %+v", layout, f)
		}
		// long(day) of digits is the same times as integers (20200101)
		for _, a := range rep.Alternatives {
			if (a.IsMapping || strings.HasPrefix(a.PrimaryKey, "[long(")) && (a.Grade != "poor" || !a.Incremental) {
				t.Errorf("%s: design %s grades %s (incremental first %v)", layout, a.PrimaryKey, a.Grade, a.Incremental)
			}
		}
	}
}

// A declared write-order column that holds no value gives way to the next evidence: another
// time column of the row, when there is one, not arrival order. Here the declared created_at
// is empty and ts holds the creation time; the ids rise with it (sparsely: no sequence), read
// shuffled. Judged by ts they are incremental; in arrival order nothing would show it.
func TestDeclaredWriteOrderWithoutValuesFallsBackOnATimeColumn(t *testing.T) {
	yml := `
version: 1
source:
  name: orders
  columns:
    id: bigint
    created_at: timestamp
    ts: timestamp
    v: text
target:
  table: orders
  primary_key: "[id]"
regions:
  count: 16
`
	const n = 50000
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		k := int64(i*7919) % n // a shuffle of the creation order
		return []pipeline.Value{pipeline.Int(k*1000 + k%7), pipeline.Null, pipeline.Int(1700000000000 + k*1000), pipeline.Text("x")}
	}}}
	rep := runReport(t, yml, src, func(c *Config) {
		c.Order = model.OrderHints{Column: "created_at", ColumnOrigin: "source.write_order"}
	})
	if rep.WriteOrder.Evidence != model.OrderTimeColumn || rep.WriteOrder.Column != "ts" {
		t.Errorf("write order %+v, want the time column ts", rep.WriteOrder)
	}
	wantSeverity(t, rep, "incremental_key_column", model.SevWarning)
}

// With nothing to tell the write order, the rows are judged in the order they were read, which
// an export sorted by the key makes monotonic whatever the application does: the findings name
// that order as what it is, never as "write order", and make the hotspot they infer from it
// conditional on the application writing in it.
func TestArrivalOrderIsNotCalledWriteOrder(t *testing.T) {
	yml := `
version: 1
source:
  name: users
  columns:
    userid: text
    v: text
target:
  table: users
  primary_key: "[userid]"
regions:
  count: 16
`
	const n = 20000
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		// random ids, exported sorted by the key
		return []pipeline.Value{pipeline.Text(fmt.Sprintf("u%010d", int64(i)*499979+int64(i*7919%997))), pipeline.Text("x")}
	}}}
	rep := runReport(t, yml, src, nil)
	if rep.WriteOrder.Evidence != model.OrderArrival {
		t.Fatalf("write order %+v, want arrival order", rep.WriteOrder)
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Message, "write order (arrival order)") {
			t.Errorf("finding %s calls the order read the write order: %s", f.Rule, f.Message)
		}
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Message, "judged in write order by arrival order") {
			t.Errorf("finding %s calls the order read the write order: %s", f.Rule, f.Message)
		}
	}
	f := wantSeverity(t, rep, "first_column_monotonic", model.SevWarning)
	if !strings.Contains(f.Message, "if the application creates rows in this order, every new row lands at the end of the key space") {
		t.Errorf("first_column_monotonic asserts a hotspot from the order read: %s", f.Message)
	}
	// a sequence read shuffled is incremental by its values, not by any order
	seq := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Text(fmt.Sprintf("u%08d", int64(i*7919)%n)), pipeline.Text("x")}
	}}}
	f = wantSeverity(t, runReport(t, yml, seq, nil), "incremental_key_column", model.SevWarning)
	if strings.Contains(f.Message, "write order") || !strings.Contains(f.Message, "judged by its values") {
		t.Errorf("incremental_key_column names a write order it did not have: %s", f.Message)
	}
}

// In write order the windows are cut from the write-ordered subsample, not from every row: the
// hotspot figures say whose rows their windows hold, so that they add up to the rows they count
// (here 100,000 rows accepted, a 5,000-row subsample).
func TestWriteOrderWindowsSayTheyAreTheSubsamples(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(100000), func(c *Config) { c.SubsampleMax = 5000 })
	sub := rep.WriteOrder.SubsampleRows
	if int64(sub) >= rep.Totals.RowsOK || int64(rep.Hotspot.Windows)*rep.Hotspot.RowsPerWindow > int64(sub) {
		t.Fatalf("subsample %d rows, accepted %d, windows %d of %d", sub, rep.Totals.RowsOK, rep.Hotspot.Windows, rep.Hotspot.RowsPerWindow)
	}
	want := fmt.Sprintf("of a %s-row subsample of the %s rows accepted", model.Count(int64(sub)), model.Count(rep.Totals.RowsOK))
	if f := wantSeverity(t, rep, "write_hotspot", model.SevWarning); !strings.Contains(f.Message, want) {
		t.Errorf("write_hotspot does not say %q: %s", want, f.Message)
	}
	// the single-row hotspot counts keys in windows of the subsample too
	if f := findingOf(rep, "single_row_hotspot"); f == nil || !strings.Contains(f.Message, fmt.Sprintf("of a %s-row subsample", model.Count(rep.HotRows.Rows))) {
		t.Errorf("single_row_hotspot does not say it counted a subsample's windows: %+v", f)
	}
	var text bytes.Buffer
	if err := render.WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(l, "WRITE HOTSPOTS OVER TIME") && !strings.Contains(l, want) {
			t.Errorf("the text's hotspot section does not say %q: %s", want, l)
		}
	}
}

// A key that begins with a date (20240106 + a random suffix, 2024-01-06#id: the day's orders
// numbered after their date) sorts by its dates first: every new day's rows land at the end of
// the key space, as a date key's do. Read shuffled with nothing to tell the write order, it is
// judged incremental by what it holds, not passed because the suffix spreads the shuffle.
func TestDatePrefixedKeyIsIncremental(t *testing.T) {
	yml := `
version: 1
source:
  name: orders
  columns:
    k: text
    v: text
target:
  table: orders
  primary_key: "[k]"
regions:
  count: 16
`
	const n = 50000
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, form := range [][2]string{{"20060102", "%05d"}, {"2006-01-02", "#%d"}} {
		src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
			k := int64(i*7919) % n // a shuffle of the creation order
			at := start.Add(time.Duration(k) * 20 * time.Minute)
			return []pipeline.Value{pipeline.Text(at.Format(form[0]) + fmt.Sprintf(form[1], (k*104729)%100000)), pipeline.Text("x")}
		}}}
		rep := runReport(t, yml, src, nil)
		f := findingOf(rep, "incremental_key_column")
		if f == nil || f.Severity != model.SevWarning || !strings.Contains(f.Message, "first key column k") || !strings.Contains(f.Message, "begins with dates") {
			t.Errorf("%s: a shuffled date-prefixed key is not judged incremental: %+v", form, f)
		}
	}
	// digits that are no dates (a random 13-digit id) stay a spread key
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Text(fmt.Sprintf("%013d", (int64(i)*2654435761)%10000000000000)), pipeline.Text("x")}
	}}}
	if f := findingOf(runReport(t, yml, src, nil), "incremental_key_column"); f != nil && f.Severity == model.SevWarning {
		t.Errorf("random digits judged incremental: %s", f.Message)
	}
}

// An auto-increment id that steps by more than one (MySQL's auto_increment_increment on a
// multi-primary setup, one of several writers' interleaved sequences: 7, 17, 27, ...) is as much
// a sequence as a dense one: every new row lands at the end of the key space. Read shuffled with
// no write order, its values fill every step of their range, and it is judged incremental.
func TestSteppedAutoIncrementIsIncremental(t *testing.T) {
	yml := `
version: 1
source:
  name: orders
  columns:
    id: bigint
    v: text
target:
  table: orders
  primary_key: "[id]"
regions:
  count: 16
`
	const n = 50000
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(7 + 10*(int64(i*7919)%n)), pipeline.Text("x")}
	}}}
	rep := runReport(t, yml, src, nil)
	f := findingOf(rep, "incremental_key_column")
	if f == nil || f.Severity != model.SevWarning || !strings.Contains(f.Message, "in steps of 10") {
		t.Errorf("a shuffled auto-increment id in steps of 10 is not judged incremental: %+v", f)
	}
	// ids of another table, repeating (a user's many orders), stay a spread key
	src = &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(10 * ((int64(i) * 2654435761) % 5000)), pipeline.Text("x")}
	}}}
	if f := findingOf(runReport(t, yml, src, nil), "incremental_key_column"); f != nil && f.Severity == model.SevWarning {
		t.Errorf("repeating ids judged incremental: %s", f.Message)
	}
}

// Snowflake ids (Twitter's layout, which MyBatis-Plus, Hutool and Meituan's Leaf make: a
// millisecond time in the high bits, then worker and sequence bits; Sonyflake's, in 10 ms units)
// grow with the time their rows are created: every new row lands at the end of the key space.
// They are sparse, so no sequence shows, and read shuffled with no write order they were judged
// a spread key. Judged by the time their high bits hold, as BIGINTs and as the text JSON carries
// them in; random positive BIGINTs stay a spread key.
func TestSnowflakeIdsAreIncremental(t *testing.T) {
	mappingOfID := func(typ string) string {
		return "version: 1\nsource: {name: orders, columns: {id: " + typ + ", v: text}}\ntarget: {table: orders, primary_key: '[id]'}\nregions: {count: 16}\n"
	}
	const n = 50000
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	twitter := func(k int64) int64 { // k: the creation order
		ms := start + k*97 - 1288834974657
		return ms<<22 | (k*7%1024)<<12 | k%4096
	}
	sony := func(k int64) int64 {
		units := (start + k*97 - 1409529600000) / 10
		return units<<24 | (k%256)<<16 | k*13%65536
	}
	for _, c := range []struct {
		name, typ string // name: the layout the finding names ("": either)
		val       func(k int64) pipeline.Value
	}{
		{"Twitter's layout", "bigint", func(k int64) pipeline.Value { return pipeline.Int(twitter(k)) }},
		{"Twitter's layout", "text", func(k int64) pipeline.Value { return pipeline.Text(strconv.FormatInt(twitter(k), 10)) }},
		{"", "bigint", func(k int64) pipeline.Value { return pipeline.Int(sony(k)) }}, // Twitter's layout reads them too
	} {
		yml := mappingOfID(c.typ)
		src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
			return []pipeline.Value{c.val(int64(i*7919) % n), pipeline.Text("x")} // a shuffle of the creation order
		}}}
		f := findingOf(runReport(t, yml, src, nil), "incremental_key_column")
		if f == nil || f.Severity != model.SevWarning || !strings.Contains(f.Message, "snowflake ids") || !strings.Contains(f.Message, c.name) {
			t.Errorf("%q ids as %s read shuffled are not judged incremental: %+v", c.name, c.typ, f)
		}
	}
	yml := mappingOfID("bigint")
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(uint64(i+1) * 0x9E3779B97F4A7C15 >> 1)), pipeline.Text("x")}
	}}}
	if f := findingOf(runReport(t, yml, src, nil), "incremental_key_column"); f != nil && f.Severity == model.SevWarning {
		t.Errorf("random positive BIGINTs judged incremental: %s", f.Message)
	}
	// 16-digit card numbers (4000000000000000 up) read as Twitter's layout fall within days of its epoch
	src = &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(4e15 + int64(uint64(i+1)*0x9E3779B97F4A7C15%1e15)), pipeline.Text("x")}
	}}}
	if f := findingOf(runReport(t, yml, src, nil), "incremental_key_column"); f != nil && f.Severity == model.SevWarning {
		t.Errorf("card numbers judged incremental: %s", f.Message)
	}
}

// A time first key column stored DESC (newest first) is as hot as an ascending one, but its new
// rows land at the start of the key space, in the first region: the findings say where, so the
// region to look at is the one they name.
func TestDescIncrementalFirstColumnLandsAtTheStart(t *testing.T) {
	yml := `
version: 1
source:
  name: events
  columns:
    ts: timestamp
    h: text
target:
  table: events
  primary_key: "[ts DESC][h]"
regions:
  count: 16
`
	const n = 50000
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(1704067200000 + int64(i)*1000), pipeline.Text(fmt.Sprintf("h%d", i%7))}
	}}}
	rep := runReport(t, yml, src, nil)
	for _, rule := range []string{"incremental_key_column", "first_column_monotonic", "write_hotspot"} {
		f := findingOf(rep, rule)
		if f == nil {
			t.Errorf("%s: no finding", rule)
			continue
		}
		if strings.Contains(f.Message, "end of the key space") || strings.Contains(f.Message, "last range") ||
			!(strings.Contains(f.Message, "start of the key space") || strings.Contains(f.Message, "first range")) {
			t.Errorf("%s says the new rows of a DESC time column land at the end: %s", rule, f.Message)
		}
	}
}

// Version-1 UUIDs held as text (a timeuuid exported to CSV or sent as JSON, declared text) are
// timeuuids all the same: their text begins with the low bits of their time, so the rows written
// in the same seconds sort side by side. Judged by what the column holds, as a timeuuid column
// is, whatever order the rows are read in; random (version-4) UUIDs stay a spread key.
func TestTextTimeUUIDKeyIsIncremental(t *testing.T) {
	yml := `
version: 1
source:
  name: events
  columns:
    id: text
    v: text
target:
  table: events
  primary_key: "[id]"
regions:
  count: 16
`
	const n = 50000
	const gregorian = 122192928000000000 // 100 ns intervals from 1582-10-15 to 1970-01-01
	uuidText := func(t uint64, version uint64, node uint64) string {
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", t&0xffffffff, (t>>32)&0xffff, (t>>48)&0x0fff|version<<12, 0x8000|node&0x3fff, node)
	}
	src := &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		k := uint64(i*7919) % n // a shuffle of the creation order
		return []pipeline.Value{pipeline.Text(uuidText(gregorian+17040672000000000+k*100000, 1, 0x123456789abc)), pipeline.Text("x")}
	}}}
	f := findingOf(runReport(t, yml, src, nil), "incremental_key_column")
	if f == nil || f.Severity != model.SevWarning || !strings.Contains(f.Message, "version-1 UUID") {
		t.Errorf("text holding timeuuids is not judged incremental: %+v", f)
	}
	src = &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
		h := uint64(i+1) * 0x9e3779b97f4a7c15
		return []pipeline.Value{pipeline.Text(uuidText(h, 4, h>>7)), pipeline.Text("x")}
	}}}
	if f := findingOf(runReport(t, yml, src, nil), "incremental_key_column"); f != nil && f.Severity == model.SevWarning {
		t.Errorf("random UUIDs judged incremental: %s", f.Message)
	}
}

// --sample keeps the verdicts of the whole input: an auto-increment id read in a shuffled order
// (nothing tells the write order) is a sequence by its dense values, and a sample of it, one row
// in k or spread over the input, holds values as far apart as k rows: judged against the rows of
// the input the sample stands for, not against its own, they are as dense, and the key as
// incremental as the whole input's.
func TestSampledSequenceIsIncremental(t *testing.T) {
	yml := `
version: 1
source:
  name: orders
  columns:
    id: bigint
    v: text
target:
  table: orders
  primary_key: "[id]"
regions:
  count: 16
`
	const n = 100000
	src := func() *samplingSource {
		return &samplingSource{memSource{n: n, make: func(i int) []pipeline.Value {
			return []pipeline.Value{pipeline.Int(int64(i*7919)%n + 1), pipeline.Text("x")}
		}}}
	}
	for _, s := range []model.Sample{{}, {Fraction: 0.1}, {Rows: 2000}} {
		rep := runReport(t, yml, src(), func(c *Config) { c.Sample = s })
		if rep.WriteOrder.Evidence != model.OrderArrival {
			t.Fatalf("%+v: write order %+v, want arrival order", s, rep.WriteOrder)
		}
		if f := findingOf(rep, "incremental_key_column"); f == nil || f.Severity != model.SevWarning || !strings.Contains(f.Message, "sequence") {
			t.Errorf("sample %+v (%d of %d rows analysed): the shuffled sequence id is not judged incremental: %+v", s, rep.Totals.RowsAnalysed, rep.Totals.RowsRead, f)
		}
		for _, a := range rep.Alternatives {
			if a.IsMapping && (a.Grade != "poor" || !a.Incremental) {
				t.Errorf("sample %+v: the mapping's design grades %s (incremental first %v)", s, a.Grade, a.Incremental)
			}
		}
	}
}
