package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
)

// A key that writes one region at a time fills several regions within each window when there
// are fewer windows than it takes to show it (every row in one window: the quantile regions'
// own balance), so the write_hotspot rule says it did not judge the spread instead of "writes
// spread over time". Before, 200 rows of an incremental [ts][id] in one window of 256 read
// "writes spread over time ... 1.0x" beside the incremental_key_column warning, while 20,000 of
// the same rows gave the write_hotspot warning; 1,200 rows (two windows of 512, each spanning
// eight of the 16 regions) read 2.0x, "spread", too.
func TestWriteHotspotOnTooFewWindowsIsNotJudged(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[ts][id]")
	for _, rows := range []int{200, 1200} {
		rep := runReport(t, yml, events(rows), nil)
		f := wantSeverity(t, rep, "write_hotspot", model.SevInfo)
		if !strings.Contains(f.Message, "not judged") {
			t.Errorf("%d rows in %d windows: write_hotspot says %q; want it not judged", rows, rep.Hotspot.Windows, f.Message)
		}
	}
	// enough rows: the same key is judged, and warned about
	rep := runReport(t, yml, events(20000), nil)
	wantSeverity(t, rep, "write_hotspot", model.SevWarning)
}

// A first key column of one value has no order: first_column_monotonic says it was not judged
// (first_column_cardinality warns about the value). Before, it said the column "is not
// monotonic (100.0% of rows >= the previous, 100.0% <=)".
func TestMonotonicOfOneValueIsNotJudged(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[kind][id]")
	src := events(3000)
	gen := src.make
	src.make = func(i int) []pipeline.Value {
		v := gen(i)
		v[2] = pipeline.Text("click")
		return v
	}
	rep := runReport(t, yml, src, nil)
	f := wantSeverity(t, rep, "first_column_monotonic", model.SevInfo)
	if !strings.Contains(f.Message, "not judged") || strings.Contains(f.Message, "is not monotonic") {
		t.Errorf("first_column_monotonic over one value says %q; want it not judged", f.Message)
	}
}

// One row written again and again is a single-row hotspot however few rows the report reads:
// when the windows are too short to hold the writes the rule warns at (3), it says it did not
// judge. Before, 100 writes of one key (windows of 2 writes) read "key ... takes 2 writes of a
// window of 2 (100.0%, under a region's share of 6.2%): no single-row hotspot".
func TestSingleRowHotspotOnShortWindowsIsNotJudged(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[id][ts]")
	for _, c := range []struct {
		rows int
		sev  string
	}{{100, model.SevInfo}, {300, model.SevWarning}} {
		src := events(c.rows)
		gen := src.make
		src.make = func(i int) []pipeline.Value {
			v := gen(i)
			v[0], v[1] = pipeline.Int(1704067200000), pipeline.Int(7) // one row, updated
			return v
		}
		rep := runReport(t, yml, src, nil)
		f := wantSeverity(t, rep, "single_row_hotspot", c.sev)
		if c.sev == model.SevInfo && (!strings.Contains(f.Message, "not judged") || strings.Contains(f.Message, "no single-row hotspot")) {
			t.Errorf("%d writes of one row: single_row_hotspot says %q; want it not judged", c.rows, f.Message)
		}
	}
}

// Two rows always rank-correlate with their write order (rho +1 or -1): a key column is not
// called incremental on a rank correlation over fewer than MinRhoRows rows, and the report says
// the correlation was not judged. Before, a hash prefix over 2 rows was "incremental: it rises
// (or falls) with the write order (rank correlation 1.00)", a warning whose fix hashed the hash.
func TestIncrementalOnTooFewRowsIsNotJudged(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]")
	rep := runReport(t, yml, events(2), nil)
	for _, f := range rep.Findings {
		if f.Rule == "incremental_key_column" && strings.Contains(f.Message, "rank correlation") && !f.NotJudged {
			t.Errorf("2 rows: %s %s: %s", f.Severity, f.Rule, f.Message)
		}
	}
	var judged bool
	for _, f := range rep.Findings {
		judged = judged || f.Rule == "incremental_key_column" && f.NotJudged
	}
	if !judged {
		t.Errorf("2 rows: no incremental_key_column finding says the rank correlation was not judged: %+v", rep.Findings)
	}
}

// A first key column's direction over a handful of rows is chance (two rows are always
// monotonic): first_column_monotonic says it was not judged under collide.MinRhoRows rows. Before,
// 2 rows of a hash prefix were "monotonic: 100.0% of rows come with a value <= the previous one",
// a warning.
func TestMonotonicOnTooFewRowsIsNotJudged(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]")
	rep := runReport(t, yml, events(2), nil)
	f := findingOf(rep, "first_column_monotonic")
	if f == nil || !f.NotJudged || f.Severity != model.SevInfo {
		t.Errorf("2 rows: first_column_monotonic %+v; want it not judged", f)
	}
}

// Nor is a lopsided spread over fewer than 3 windows a write hotspot over time: one window of
// every row shows only how the rows fall into regions (region_balance's finding). Before, 20
// rows of a hash prefix over 16 regions, one window, read "write hotspot: ... continuous writes
// in this order would load one region at a time".
func TestWriteHotspotOnTooFewWindowsIsNotJudgedEitherWay(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS h][ts]"), events(20), nil)
	if f := findingOf(rep, "write_hotspot"); f == nil || !f.NotJudged || f.Severity != model.SevInfo {
		t.Errorf("20 rows in %d window(s), hot factor %.1f: write_hotspot %+v; want it not judged", rep.Hotspot.Windows, rep.Hotspot.HotFactor, f)
	}
}

// A key written twice in a short window takes more than a region's share of it without being a
// hotspot (the rule warns at 3 writes): the note says so, not that its share is under a region's.
// Before, 2 writes of a window of 3 read "(66.7%, under a region's share of 6.2%)".
func TestSingleRowTwiceInAShortWindowSaysWhyNotHot(t *testing.T) {
	src := events(160)
	gen := src.make
	src.make = func(i int) []pipeline.Value {
		if i == 31 {
			i = 30 // the row of 30 again, next to it
		}
		return gen(i)
	}
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[id][ts]"), src, nil)
	f := wantSeverity(t, rep, "single_row_hotspot", model.SevInfo)
	if strings.Contains(f.Message, "under a region's share") || !strings.Contains(f.Message, "no single-row hotspot") {
		t.Errorf("single_row_hotspot: %s", f.Message)
	}
}

// Over 2 regions a hot factor is at most 2 (every write in one region), under the 2.5 the rule
// warns at: there the rule warns once the busiest region takes three quarters of the way from an
// even share to all of it (87.5%). Before, an incremental key over 2 regions read "writes spread
// over time ... takes 99.x% on average (even: 50.0%, 2.0x)"; a hash prefix stays a note.
func TestWriteHotspotOverTwoRegions(t *testing.T) {
	two := func(key string) string {
		return strings.Replace(fmt.Sprintf(eventsYAML, key), "count: 16", "count: 2", 1)
	}
	rep := runReport(t, two("[ts][id]"), events(20000), nil)
	if rep.Plan.Regions != 2 {
		t.Fatalf("plan of %d regions, want 2", rep.Plan.Regions)
	}
	wantSeverity(t, rep, "write_hotspot", model.SevWarning)
	rep = runReport(t, two("[md5(id).substr(0,4) + id AS h][ts]"), events(20000), nil)
	wantSeverity(t, rep, "write_hotspot", model.SevInfo)
}

// The write hot factor of too few windows is a figure the write_hotspot rule does not judge: the
// HTML page's tile and the text's hotspot section say "not judged" beside it, as the finding does,
// rather than show 2.0x as a passing figure (the tile unflagged, as a spread key's).
func TestWriteHotFactorOfTooFewWindowsIsShownNotJudged(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(1200), nil)
	if rep.Hotspot.Windows >= 3 {
		t.Fatalf("%d windows, want fewer than 3", rep.Hotspot.Windows)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	i := strings.Index(h, "write hot factor")
	if i < 0 {
		t.Fatal("no write hot factor tile")
	}
	tile := h[max(0, i-200):i]
	if !strings.Contains(tile, "not judged") || strings.Contains(tile, fmt.Sprintf("%.1fx", rep.Hotspot.HotFactor)) {
		t.Errorf("the hot factor tile of %d windows shows %q, want not judged", rep.Hotspot.Windows, tile)
	}
	var text bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(line, "WRITE HOTSPOTS OVER TIME") && !strings.Contains(line, "not judged") {
			t.Errorf("the text's hotspot section does not say its figure is not judged: %s", line)
		}
	}
}

// The distinct values of the first key column a sample shows are the sample's: a value that
// appears in few rows may be missing from it. first_column_cardinality says so, as uniqueness
// does ("on the sample"), rather than give the sample's count as the column's.
func TestFirstColumnCardinalityOfASampleSaysSo(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[payload][id]")
	src := events(20000)
	gen := src.make
	src.make = func(i int) []pipeline.Value {
		v := gen(i)
		v[3] = pipeline.Text(fmt.Sprintf("p%d", i%40)) // 40 values, every one in many rows
		return v
	}
	rep := runReport(t, yml, src, func(c *Config) { c.Sample = model.Sample{Fraction: 0.1} })
	f := wantSeverity(t, rep, "first_column_cardinality", model.SevWarning)
	if !strings.Contains(f.Message, "on the sample") {
		t.Errorf("first_column_cardinality of a sample does not say it counts the sample: %s", f.Message)
	}
}
