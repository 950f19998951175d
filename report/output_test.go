package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/report/render"
)

// A report with everything in it: warnings, collisions, rejects, alternatives.
func fullReport(t *testing.T) *model.Report {
	t.Helper()
	return runReport(t, fmt.Sprintf(eventsYAML, "[kind][ts % 1000 AS t]"), events(60000), func(c *Config) { c.Nodes = 2 })
}

func TestJSONSchema(t *testing.T) {
	rep := fullReport(t)
	var buf bytes.Buffer
	if err := render.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	type field struct {
		path string
		kind string // string, number, bool, array, object
	}
	get := func(path string) (any, bool) {
		var cur any = doc
		for _, p := range strings.Split(path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[p]; !ok {
				return nil, false
			}
		}
		return cur, true
	}
	kindOf := func(v any) string {
		switch v.(type) {
		case string:
			return "string"
		case float64:
			return "number"
		case bool:
			return "bool"
		case []any:
			return "array"
		case map[string]any:
			return "object"
		case nil:
			return "null"
		}
		return "?"
	}
	required := []field{
		{"schema", "string"}, {"generator", "string"},
		{"mapping.table", "string"}, {"mapping.primary_key", "string"}, {"mapping.key_columns", "array"},
		{"source.uri", "string"}, {"source.sampled", "bool"}, {"source.scale", "number"},
		{"totals.rows_read", "number"}, {"totals.rows_rejected", "number"}, {"totals.reject_codes", "object"},
		{"totals.reject_examples", "array"}, {"totals.estimated_target_bytes", "number"}, {"totals.rows_per_sec", "number"},
		{"verdict.errors", "number"}, {"verdict.warnings", "number"}, {"verdict.exit_code", "number"},
		{"findings", "array"},
		{"key.columns", "number"}, {"key.p99_bytes", "number"}, {"key.max_bytes", "number"}, {"key.fixed_length", "bool"}, {"key.over_limit", "number"},
		{"uniqueness.collision_rows", "number"}, {"uniqueness.colliding_keys", "number"}, {"uniqueness.duplicate_rows", "number"},
		{"uniqueness.examples", "array"}, {"uniqueness.exact", "bool"},
		{"first_column.name", "string"}, {"first_column.distinct", "number"}, {"first_column.top", "array"},
		{"first_column.monotonic_up", "number"}, {"first_column.common_prefix", "string"},
		{"plan.regions", "number"}, {"plan.strategy", "string"}, {"plan.split_keys", "array"},
		{"regions", "array"}, {"distribution.rows_max_mean", "number"}, {"distribution.cv", "number"},
		{"hotspot.mean_top_share", "number"}, {"hotspot.hot_factor", "number"}, {"hotspot_windows", "array"},
		{"alternatives", "array"}, {"recommendation.bulkload.regions", "number"}, {"recommendation.bulkload.split_keys", "array"},
		{"recommendation.api.regions", "number"}, {"recommendation.region_size", "number"},
	}
	for _, f := range required {
		v, ok := get(f.path)
		if !ok {
			t.Errorf("missing %s", f.path)
			continue
		}
		if k := kindOf(v); k != f.kind {
			t.Errorf("%s is %s, want %s", f.path, k, f.kind)
		}
	}
	if doc["schema"] != model.SchemaVersion {
		t.Errorf("schema %v", doc["schema"])
	}
	// findings: rule, severity, message, evidence of numbers
	sev := map[string]bool{"error": true, "warning": true, "info": true}
	fs := doc["findings"].([]any)
	if len(fs) == 0 {
		t.Fatal("no findings")
	}
	rank := map[string]int{"error": 0, "warning": 1, "info": 2}
	last := 0
	for _, x := range fs {
		f := x.(map[string]any)
		if _, ok := f["rule"].(string); !ok {
			t.Errorf("finding without rule: %v", f)
		}
		s, _ := f["severity"].(string)
		if !sev[s] {
			t.Errorf("severity %q", s)
		}
		if rank[s] < last {
			t.Errorf("findings not worst first")
		}
		last = rank[s]
		if _, ok := f["message"].(string); !ok {
			t.Errorf("finding without message: %v", f)
		}
		ev, ok := f["evidence"].(map[string]any)
		if !ok {
			t.Errorf("evidence %v", f["evidence"])
		}
		for k, v := range ev {
			if _, ok := v.(float64); !ok {
				t.Errorf("evidence %s = %v is not a number", k, v)
			}
		}
	}
	n := int(doc["plan"].(map[string]any)["regions"].(float64))
	regions := doc["regions"].([]any)
	if len(regions) != n {
		t.Errorf("%d regions for a plan of %d", len(regions), n)
	}
	var total float64
	for i, x := range regions {
		r := x.(map[string]any)
		if r["index"].(float64) != float64(i) {
			t.Errorf("region %d index %v", i, r["index"])
		}
		total += r["rows"].(float64)
		if _, ok := r["bytes"].(float64); !ok {
			t.Errorf("region bytes %v", r["bytes"])
		}
	}
	if total != doc["totals"].(map[string]any)["rows_ok"].(float64) {
		t.Errorf("regions hold %v rows, totals say %v", total, doc["totals"].(map[string]any)["rows_ok"])
	}
	var wrows float64
	for _, x := range doc["hotspot_windows"].([]any) {
		w := x.(map[string]any)
		counts := w["counts"].([]any)
		if len(counts) != n {
			t.Errorf("window with %d counts for %d regions", len(counts), n)
		}
		var sum float64
		for _, c := range counts {
			sum += c.(float64)
		}
		if sum != w["rows"].(float64) {
			t.Errorf("window counts sum %v != rows %v", sum, w["rows"])
		}
		wrows += sum
	}
	if wrows != total {
		t.Errorf("windows hold %v rows, regions %v", wrows, total)
	}
	alts := doc["alternatives"].([]any)
	mine := 0
	for i, x := range alts {
		a := x.(map[string]any)
		if a["rank"].(float64) != float64(i+1) {
			t.Errorf("alternative %d rank %v", i, a["rank"])
		}
		for _, k := range []string{"id", "name", "primary_key", "grade", "trade_off"} {
			if _, ok := a[k].(string); !ok {
				t.Errorf("alternative %v lacks %s", a["id"], k)
			}
		}
		if _, ok := a["reads"].(map[string]any)["get"].(float64); !ok {
			t.Errorf("alternative reads %v", a["reads"])
		}
		if a["is_mapping"] == true {
			mine++
		}
	}
	if mine != 1 || len(alts) < 4 {
		t.Errorf("%d alternatives, %d marked as the mapping", len(alts), mine)
	}
}

// Every JSON field of the report is documented in README.md.
func TestJSONFieldsAreDocumented(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(tp reflect.Type, path string) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice || tp.Kind() == reflect.Map {
			tp = tp.Elem()
		}
		if tp.Kind() != reflect.Struct || seen[tp] {
			return
		}
		seen[tp] = true
		for i := 0; i < tp.NumField(); i++ {
			f := tp.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			// `name`, or the last part of a dotted path: `hotspot.hot_factor`, `regions[].rows`
			if !regexp.MustCompile("`(?:[a-z_]+(?:\\[\\])?\\.)*" + regexp.QuoteMeta(name) + "`").Match(readme) {
				t.Errorf("README.md does not document %s%s", path, name)
			}
			walk(f.Type, path+name+".")
		}
	}
	walk(reflect.TypeOf(model.Report{}), "")
}

type xmlNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xmlNode  `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n *xmlNode) walk(f func(*xmlNode)) {
	f(n)
	for i := range n.Nodes {
		n.Nodes[i].walk(f)
	}
}

func (n *xmlNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func parseXHTML(t *testing.T, data []byte) *xmlNode {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	var root xmlNode
	if err := d.Decode(&root); err != nil {
		t.Fatalf("the HTML is not well-formed XML: %v", err)
	}
	// nothing after the root element but white space
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after </html>: %v", err)
		}
		if cd, ok := tok.(xml.CharData); !ok || len(bytes.TrimSpace(cd)) > 0 {
			t.Fatalf("content after </html>: %v", tok)
		}
	}
	return &root
}

func TestHTMLChartsAndWellFormedness(t *testing.T) {
	rep := fullReport(t)
	var buf bytes.Buffer
	if err := render.WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for _, bad := range []string{"http://", "https://", "<script", "@import", "url("} {
		for _, m := range regexp.MustCompile(regexp.QuoteMeta(bad)+`[^"]*`).FindAll(data, -1) {
			if !strings.HasPrefix(string(m), "http://www.w3.org/") { // XML namespaces are names, not fetched
				t.Errorf("the page refers to something outside itself: %s", m)
			}
		}
	}
	root := parseXHTML(t, data)
	if root.XMLName.Local != "html" {
		t.Fatalf("root element %s", root.XMLName.Local)
	}
	classes := map[string]int{}
	var svgs, findings int
	root.walk(func(n *xmlNode) {
		if n.XMLName.Local == "rect" {
			classes[n.attr("class")]++
		}
		if n.XMLName.Local == "svg" {
			svgs++
		}
		if n.XMLName.Local == "tr" && n.attr("class") == "finding" {
			findings++
		}
	})
	regions, windows := rep.Plan.Regions, len(rep.HotspotWindows)
	if classes["bar"] != regions {
		t.Errorf("%d bars for %d regions", classes["bar"], regions)
	}
	if th := rep.TimeHeatmap; th == nil || len(th.Bins) == 0 || classes["cell"] != len(th.Bins)*len(th.Rows) {
		t.Errorf("%d heatmap cells for the time heatmap %+v", classes["cell"], th)
	}
	if windows == 0 {
		t.Error("no windows")
	}
	var mini int
	for _, a := range rep.Alternatives {
		mini += len(a.RegionRows)
	}
	if classes["mini-bar"] != mini {
		t.Errorf("%d small bars, want %d (each alternative's regions)", classes["mini-bar"], mini)
	}
	if findings != len(rep.Findings) {
		t.Errorf("%d finding rows for %d findings", findings, len(rep.Findings))
	}
	if svgs < 3+len(rep.Alternatives) {
		t.Errorf("%d svg elements", svgs)
	}
	// text is escaped: a mapping value with markup stays text
	rep.Mapping.Table = `<b>&"x'</b>`
	buf.Reset()
	if err := render.WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	parseXHTML(t, buf.Bytes())
	if bytes.Contains(buf.Bytes(), []byte("<b>&")) {
		t.Error("markup in a value was not escaped")
	}
}

// Many regions: the heatmap groups them into at most maxHeatRows rows.
func TestHTMLGroupsManyRegions(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h]"), events(20000), func(c *Config) { c.Regions = 300 })
	var buf bytes.Buffer
	if err := render.WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	root := parseXHTML(t, buf.Bytes())
	cells, bars := 0, 0
	root.walk(func(n *xmlNode) {
		if n.XMLName.Local == "rect" && n.attr("class") == "cell" {
			cells++
		}
		if n.XMLName.Local == "rect" && n.attr("class") == "bar" {
			bars++
		}
	})
	group := (300 + collide.MaxHeatRows - 1) / collide.MaxHeatRows
	th := rep.TimeHeatmap
	if bars != 300 || th == nil || th.RegionsPerRow != group || len(th.Rows) != (300+group-1)/group || cells != len(th.Bins)*len(th.Rows) {
		t.Errorf("%d bars, %d cells (time heatmap %d bins x %d rows)", bars, cells, len(th.Bins), len(th.Rows))
	}
}

// The HTML heatmap shows key ranges (the region's start key) on the region axis, and time on the
// other axis when the mapping has a timestamp column.
func TestHTMLHeatmapKeyRangesAndTime(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(40000), nil)
	var buf bytes.Buffer
	if err := render.WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	root := parseXHTML(t, buf.Bytes())
	var heat *xmlNode
	root.walk(func(n *xmlNode) {
		if n.XMLName.Local == "svg" && n.attr("id") == "heatmap" {
			heat = n
		}
	})
	if heat == nil {
		t.Fatal("no heatmap")
	}
	var keys, ticks []string
	heat.walk(func(n *xmlNode) {
		if n.XMLName.Local == "text" && n.attr("class") == "tick key" {
			keys = append(keys, n.Text)
		}
		if n.XMLName.Local == "text" && n.attr("class") == "tick" {
			ticks = append(ticks, n.Text)
		}
	})
	// the region axis: each row's start key, in key order
	if len(keys) != 16 || keys[0] != "-inf" || keys[1] != rep.Regions[1].Start || keys[15] != rep.Regions[15].Start || keys[1] == "1" {
		t.Errorf("key range labels %q", keys)
	}
	// the time axis: times of ts, not row counts
	if len(ticks) < 3 || !strings.HasPrefix(ticks[0], "2024-01-01 00:0") || !regexp.MustCompile(`^\d\d:\d\d`).MatchString(ticks[1]) {
		t.Errorf("time ticks %q", ticks)
	}
	// the page says which order its time axis is
	if !bytes.Contains(buf.Bytes(), []byte("Write heatmap: key ranges × write order (ts)")) || !bytes.Contains(buf.Bytes(), []byte("The time axis is the write order: column ts (timestamp), inferred")) {
		t.Error("heading")
	}
	th := rep.TimeHeatmap
	if th == nil || th.Column != "ts" || len(th.Rows) != 16 || th.RegionsPerRow != 1 {
		t.Fatalf("time heatmap %+v", th)
	}
	var rows int64
	last := 0
	for i, b := range th.Bins {
		rows += b.Rows
		if i > 0 && b.StartMillis != th.Bins[i-1].StartMillis+th.BinMillis {
			t.Fatalf("bins not contiguous at %d", i)
		}
		top := 0
		for r, c := range b.Counts {
			if c > b.Counts[top] {
				top = r
			}
		}
		// monotonic timestamps in a [ts] key: time slices walk down the key ranges
		if b.Rows > 0 && top < last {
			t.Errorf("bin %d: busiest key range %d after %d", i, top, last)
		}
		last = top
	}
	if rows != rep.Totals.RowsOK || th.Bins[0].StartMillis > 1704067200000 || th.Bins[len(th.Bins)-1].StartMillis+th.BinMillis <= 1704067200000+39999*7 {
		t.Errorf("bins hold %d rows of %d, from %d", rows, rep.Totals.RowsOK, th.Bins[0].StartMillis)
	}
}

// Without a timestamp column the heatmap stays in arrival order, its rows still labelled by key.
func TestHTMLHeatmapArrivalOrder(t *testing.T) {
	src := &memSource{n: 3000, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("wechat"), pipeline.Text(fmt.Sprint(i))}
	}}
	rep := runReport(t, fmt.Sprintf(ordersYAML, "[id]"), src, nil)
	if rep.TimeHeatmap != nil {
		t.Fatalf("time heatmap without a timestamp: %+v", rep.TimeHeatmap)
	}
	var buf bytes.Buffer
	if err := render.WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("Write heatmap: key ranges × arrival order")) ||
		!bytes.Contains(buf.Bytes(), []byte(`text-anchor="end">-inf</text>`)) {
		t.Errorf("arrival heatmap missing")
	}
}

// On a sample, the rows per region are the sample's accepted rows, not the rows read: the
// REGIONS section (text and page) says so, so that its figures add up to what TOTALS lists.
func TestSampledRegionsSayTheyAreTheSamples(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]"), events(20000), func(c *Config) { c.Sample = model.Sample{Fraction: 0.5} })
	var sum int64
	for _, r := range rep.Regions {
		sum += r.Rows
	}
	if sum != rep.Totals.RowsOK || sum == rep.Totals.RowsRead {
		t.Fatalf("regions hold %d rows: accepted %d, read %d", sum, rep.Totals.RowsOK, rep.Totals.RowsRead)
	}
	want := fmt.Sprintf("rows of the sample: its %s accepted rows of %s read", model.Count(sum), model.Count(rep.Totals.RowsRead))
	var text, page bytes.Buffer
	if err := render.WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := render.WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(l, "REGIONS") && !strings.Contains(l, want) {
			t.Errorf("the text's REGIONS line does not say %q: %s", want, l)
		}
	}
	if !strings.Contains(page.String(), want) {
		t.Errorf("the page's rows per region do not say %q", want)
	}
}

// The page's header names the write order the report judged in and why better evidence was not
// used, as the text's header does: a declared column that gave way is not left to the text alone.
func TestHTMLHeaderNamesTheWriteOrder(t *testing.T) {
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
	src := &samplingSource{memSource{n: 5000, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(i*7919) % 5000), pipeline.Null, pipeline.Text("x")}
	}}}
	rep := runReport(t, yml, src, func(c *Config) {
		c.Order = model.OrderHints{Column: "created_at", ColumnOrigin: "source.write_order"}
	})
	if len(rep.WriteOrder.Notes) == 0 {
		t.Fatalf("no write-order note: %+v", rep.WriteOrder)
	}
	var page bytes.Buffer
	if err := render.WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{rep.WriteOrder.Description}, rep.WriteOrder.Notes...) {
		if !strings.Contains(page.String(), html.EscapeString(want)) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// A verdict on part of the input says so wherever it is printed (VerdictLine): the HTML page's
// verdict too, and its rows-overwritten tile, a count over the sample only, as the text's
// uniqueness line says "(on the sample)". Before, the page's verdict and tiles read as the whole
// input's, the sample named only in the header's source line.
func TestHTMLVerdictOfASampleSaysSo(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]"), events(20000), func(c *Config) { c.Sample = model.Sample{Fraction: 0.1} })
	var page bytes.Buffer
	if err := WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	i := strings.Index(h, `<div class="verdict">`)
	if i < 0 {
		t.Fatal("no verdict block")
	}
	verdict := h[i:min(len(h), i+300)]
	if !strings.Contains(verdict, "on a sample") {
		t.Errorf("the page's verdict of a sample does not say so: %s", verdict)
	}
	if !strings.Contains(h, "rows overwritten (on the sample)") {
		t.Errorf("the rows overwritten tile of a sample does not say it counts the sample")
	}
}
