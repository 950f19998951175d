package render

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// The axes that count rows (rows per region, rows in arrival order under the heatmap) are
// labelled in whole rows: a report of a few rows labelled them 0, 0.5, 1, 1.5 ...
func TestHTMLRowAxesInWholeRows(t *testing.T) {
	rep := &model.Report{
		Totals:         model.Totals{RowsRead: 3, RowsAnalysed: 3, RowsOK: 3},
		Mapping:        model.MappingInfo{Table: "t"},
		Plan:           model.PlanInfo{Regions: 2, Asked: 2},
		Hotspot:        model.Hotspot{Windows: 1, RowsPerWindow: 256, EvenShare: 0.5},
		Regions:        []model.Region{{Index: 0, Rows: 2}, {Index: 1, Rows: 1}},
		HotspotWindows: []model.Window{{Rows: 3, Counts: []int64{2, 1}, TopShare: 2.0 / 3}},
	}
	page := pageOf(t, rep)
	for _, id := range []string{"regions-chart", "heatmap"} {
		svg := page[strings.Index(page, `id="`+id+`"`):]
		svg = svg[:strings.Index(svg, "</svg>")]
		for _, m := range regexp.MustCompile(`<text class="tick"[^>]*>([0-9.]+)</text>`).FindAllStringSubmatch(svg, -1) {
			if strings.Contains(m[1], ".") {
				t.Errorf("%s: a row axis labelled %q", id, m[1])
			}
		}
	}
}
