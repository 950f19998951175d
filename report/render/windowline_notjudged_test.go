package render

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// With fewer windows than write_hotspot needs, the page's busiest-share line says its hot
// factor was not judged, as the text's section and the page's own hot-factor tile do; it gave
// the figure ("(1.0x)") as a judged one.
func TestHTMLWindowLineSaysNotJudged(t *testing.T) {
	rep := &model.Report{
		Totals:         model.Totals{RowsRead: 3, RowsAnalysed: 3, RowsOK: 3},
		Mapping:        model.MappingInfo{Table: "t"},
		Plan:           model.PlanInfo{Regions: 1, Asked: 1},
		Hotspot:        model.Hotspot{Windows: 1, RowsPerWindow: 256, EvenShare: 1, MeanTopShare: 1, MaxTopShare: 1, HotFactor: 1},
		Regions:        []model.Region{{Index: 0, Rows: 3}},
		HotspotWindows: []model.Window{{Rows: 3, Counts: []int64{3}, TopShare: 1}},
	}
	text, page := textOf(t, rep), pageOf(t, rep)
	const want = "not judged: fewer than 3 windows (write_hotspot)"
	if !strings.Contains(text, want) {
		t.Fatalf("the text does not say %q", want)
	}
	line := page[strings.Index(page, "Writes in arrival order"):]
	if line = line[:strings.Index(line, "</div>")]; !strings.Contains(line, want) {
		t.Errorf("the window line's intro does not say %q: %s", want, line)
	}
}
