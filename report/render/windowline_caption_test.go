package render

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// The busiest-share line's caption names the order its windows follow, as its title and the
// text do: in arrival order it said "windows in write order", an order the report did not know.
func TestHTMLWindowLineCaptionNamesOrder(t *testing.T) {
	rep := &model.Report{
		Totals:  model.Totals{RowsRead: 120, RowsAnalysed: 120, RowsOK: 120},
		Mapping: model.MappingInfo{Table: "t"},
		Plan:    model.PlanInfo{Regions: 2, Asked: 2},
		Hotspot: model.Hotspot{Windows: 3, RowsPerWindow: 40, EvenShare: 0.5},
		Regions: []model.Region{{Index: 0, Rows: 60}, {Index: 1, Rows: 60}},
	}
	for w := range 3 {
		rep.HotspotWindows = append(rep.HotspotWindows, model.Window{Index: w, FirstRow: int64(w * 40), Rows: 40, Counts: []int64{20, 20}, TopShare: 0.5})
	}
	page := pageOf(t, rep)
	line := page[strings.Index(page, `id="window-line"`):]
	line = line[:strings.Index(line, "</svg>")]
	if strings.Contains(line, "write order") || !strings.Contains(line, "windows in arrival order →") {
		t.Errorf("the window line's captions do not name arrival order:\n%s", line)
	}
}
