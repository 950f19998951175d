package render

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// A design's card on the page gives the hot factor its grade and the text's advisor table use:
// over regions bounded by the full key. Before, the card gave the pre-split plan's (1.3x next
// to a poor grade) while the text and the advisor finding on the same page said 5.3x.
func TestHTMLDesignHotFactorAsText(t *testing.T) {
	rep := &model.Report{
		Totals:  model.Totals{RowsRead: 100, RowsAnalysed: 100, RowsOK: 100},
		Mapping: model.MappingInfo{Table: "t"},
		Alternatives: []model.Alternative{{
			ID: "code_id", Rank: 1, Name: "the mapping with code(id)", Grade: "poor", Regions: 2, Rows: 100,
			HotFactor: 1.3, SplitHotFactor: 5.3, OverwrittenExact: true,
		}},
	}
	text, page := textOf(t, rep), pageOf(t, rep)
	if !strings.Contains(text, "5.3x") {
		t.Fatalf("the text's advisor table has no 5.3x:\n%s", text)
	}
	if card := page[strings.Index(page, `data-id="code_id"`):]; !strings.Contains(card, "<th>hot factor</th><td>5.3x</td>") {
		t.Errorf("the design's card does not give the text's hot factor 5.3x:\n%.600s", card)
	}
}
