package render

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// When the first column's top values are Space-Saving estimates (more distinct values than its
// counters), the page says so above them, as the text does; it printed the estimates' row
// counts as if they had been counted.
func TestHTMLTopValuesSayEstimates(t *testing.T) {
	for _, exact := range []bool{true, false} {
		rep := &model.Report{
			Totals:      model.Totals{RowsRead: 1000, RowsAnalysed: 1000, RowsOK: 1000},
			Mapping:     model.MappingInfo{Table: "t"},
			FirstColumn: model.FirstColumn{Name: "id", Type: "VARCHAR", Distinct: 900, TopExact: exact, Top: []model.TopValue{{Value: "a", Rows: 40, RowsMin: 30, Share: 0.03, ShareMax: 0.04}}},
		}
		page := pageOf(t, rep)
		if says := strings.Contains(page, "Space-Saving estimates"); says == exact {
			t.Errorf("exact %v: the page says the top values are estimates: %v", exact, says)
		}
	}
}
