package render

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// The heatmap's legend fits in its picture and its labels stay apart whatever the number of key
// ranges: with few regions (a plot under 200 pixels high) its caption, "share of a column's
// rows", was drawn below the picture's bottom edge and cut off, and with one or two its five
// share labels were squeezed into the plot's height, drawn over each other.
func TestHTMLHeatmapLegendInsidePicture(t *testing.T) {
	for _, regions := range []int{1, 4, 8, 16} {
		rep := &model.Report{
			Totals:  model.Totals{RowsRead: 100, RowsAnalysed: 100, RowsOK: 100},
			Mapping: model.MappingInfo{Table: "t"},
			Plan:    model.PlanInfo{Regions: regions, Asked: regions},
			Hotspot: model.Hotspot{Windows: 3, RowsPerWindow: 40},
		}
		for i := range regions {
			rep.Regions = append(rep.Regions, model.Region{Index: i, Rows: 100 / int64(regions)})
		}
		for w := range 3 {
			counts := make([]int64, regions)
			counts[0] = 40
			rep.HotspotWindows = append(rep.HotspotWindows, model.Window{Index: w, FirstRow: int64(w * 40), Rows: 40, Counts: counts, TopShare: 1})
		}
		page := pageOf(t, rep)
		i := strings.Index(page, `id="heatmap"`)
		if i < 0 {
			t.Fatalf("%d regions: no heatmap", regions)
		}
		svg := page[i:]
		svg = svg[:strings.Index(svg, "</svg>")]
		height, _ := strconv.ParseFloat(regexp.MustCompile(`height="([0-9.]+)"`).FindStringSubmatch(svg)[1], 64)
		last := -100.0
		for _, m := range regexp.MustCompile(`<text[^>]* y="([0-9.]+)"[^>]*>([^<]*)<`).FindAllStringSubmatch(svg, -1) {
			y, _ := strconv.ParseFloat(m[1], 64)
			if y > height {
				t.Errorf("%d regions: %q drawn at y=%s, below the picture's height %g", regions, m[2], m[1], height)
			}
			if strings.HasSuffix(m[2], "%") { // the legend's share labels, top to bottom
				if y-last < 10 {
					t.Errorf("%d regions: legend label %q at y=%s overlaps the one above at y=%g", regions, m[2], m[1], last)
				}
				last = y
			}
		}
	}
}
