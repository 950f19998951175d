package render

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// The rows-per-region legend says what each bar colour means: the first colour is any region up
// to 1.25x the mean, an almost empty one too. It said "within 25% of the mean", so a region
// holding a tenth of the mean was drawn in the colour of a balanced one.
func TestHTMLRegionLegendMatchesColours(t *testing.T) {
	rep := &model.Report{
		Totals:  model.Totals{RowsRead: 310, RowsAnalysed: 310, RowsOK: 310},
		Mapping: model.MappingInfo{Table: "t"},
		Plan:    model.PlanInfo{Regions: 4, Asked: 4},
		Regions: []model.Region{{Index: 0, Rows: 100}, {Index: 1, Rows: 10}, {Index: 2, Rows: 100}, {Index: 3, Rows: 100}},
	}
	page := pageOf(t, rep)
	if barColor(10/77.5) != "#4c78a8" {
		t.Fatalf("the fixture needs the almost empty region in the first colour")
	}
	if strings.Contains(page, "within 25% of the mean") || !strings.Contains(page, "#4c78a8\"></span>up to 1.25x the mean") {
		t.Errorf("the legend does not say the first colour is any region up to 1.25x the mean:\n%s", page[strings.Index(page, `class="legend"`):][:400])
	}
}
