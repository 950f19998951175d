package render

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// A verdict with no warning says which rules had too little data to judge, wherever it is
// printed (the text's VERDICT line, --quiet's line, the page's header), as rekey check names
// them: "OK: 0 errors, 0 warnings, 13 notes" read as every rule passed when write_hotspot had
// not been judged.
func TestVerdictNamesRulesNotJudged(t *testing.T) {
	rep := &model.Report{
		Totals:  model.Totals{RowsRead: 500, RowsAnalysed: 500, RowsOK: 500},
		Mapping: model.MappingInfo{Table: "t"},
		Verdict: model.Verdict{Infos: 2},
		Findings: []model.Finding{
			{Rule: "write_hotspot", Severity: model.SevInfo, Message: "write hotspot not judged: ...", NotJudged: true},
			{Rule: "region_balance", Severity: model.SevInfo, Message: "balanced regions"},
		},
	}
	const want = "not judged: write_hotspot"
	if line := VerdictLine(rep); !strings.Contains(line, want) {
		t.Errorf("verdict line %q does not say %q", line, want)
	}
	text, page := textOf(t, rep), pageOf(t, rep)
	if !strings.Contains(text, "VERDICT  OK: 0 errors, 0 warnings, 2 notes -> exit 0 ("+want+")") {
		t.Errorf("the text's verdict does not name the rule not judged:\n%s", text[:300])
	}
	header := page[strings.Index(page, `class="verdict"`):]
	if header = header[:strings.Index(header, "</header>")]; !strings.Contains(header, want) {
		t.Errorf("the page's verdict does not name the rule not judged: %s", header)
	}
}
