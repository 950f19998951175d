package render

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// The advisor's heading gives the regions it judged every design over (the plan's asked count)
// and, when a design's first column had too few values to place them all, the range placed:
// it gave the first-ranked design's placed count as every design's ("2 regions each" over
// designs of 2, 16 and 1 regions).
func TestAdvisorHeadingRegions(t *testing.T) {
	rep := &model.Report{
		Totals:  model.Totals{RowsRead: 3, RowsAnalysed: 3, RowsOK: 3},
		Mapping: model.MappingInfo{Table: "t"},
		Plan:    model.PlanInfo{Regions: 1, Asked: 16},
		Alternatives: []model.Alternative{
			{ID: "a", Rank: 1, Name: "code", Regions: 2, Rows: 3},
			{ID: "b", Rank: 2, Name: "hash prefix", Regions: 16, Rows: 3},
			{ID: "c", Rank: 3, Name: "the mapping", Regions: 1, Rows: 3, IsMapping: true},
			{ID: "d", Rank: 4, Name: "salt", Error: "key-only"},
		},
	}
	text, page := textOf(t, rep), pageOf(t, rep)
	const want = "16 regions each asked (1 to 16 placed"
	if !strings.Contains(text, want) || strings.Contains(text, "2 regions each") {
		t.Errorf("the text's advisor heading does not say %q:\n%s", want, text[strings.Index(text, "ADVISOR"):][:300])
	}
	if !strings.Contains(page, want) || strings.Contains(page, "each over 2 regions") {
		t.Errorf("the page's advisor intro does not say %q", want)
	}
}
