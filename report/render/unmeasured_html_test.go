package render

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// When no row passed the mapping, the page says the key figures were not measured, as the text
// does: its zeros (no overwritten rows, 0 distinct keys, key bytes 0, an even max/mean) would
// read as a uniqueness check that passed and a key that was measured. Before, the page printed
// "0 rows would be silently overwritten ... Exact count over every row" for a run that checked
// nothing.
func TestHTMLUnmeasuredWhenNoRowAccepted(t *testing.T) {
	for name, tot := range map[string]model.Totals{
		"all rejected": {RowsRead: 2, RowsAnalysed: 2, RowsRejected: 2, RejectCodes: map[string]int64{"encoding": 2}},
		"no rows":      {},
	} {
		rep := &model.Report{Totals: tot, Mapping: model.MappingInfo{Table: "t"}, FirstColumn: model.FirstColumn{Name: "id", Type: "VARCHAR"}}
		rep.Uniqueness.Exact = true
		page := pageOf(t, rep)
		why := unmeasured(rep)
		for _, claim := range []string{"silently overwritten", "Exact count over every row", "0 / 0.0 / 0 / 0", ">0% / 0%<", "max/mean 0.00"} {
			if strings.Contains(page, claim) {
				t.Errorf("%s: the page claims a measurement (%q) of no row", name, claim)
			}
		}
		if n := strings.Count(strings.ToLower(page), "not measured: "+why); n < 4 {
			t.Errorf("%s: the page says %q %d times, want the uniqueness, key bytes, first column and regions", name, "not measured: "+why, n)
		}
	}
}
