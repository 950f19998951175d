package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// A handful of rows whose first key column never repeats says nothing about how many values the
// column takes, how they skew or how they fill the regions: first_column_cardinality,
// first_column_skew, region_balance and empty_regions say they did not judge, and the one
// warning, few_rows, says the rows were too few (the verdict does not read OK on them). Before, 1 and 3 rows of a hash-prefixed key (the design
// that spreads) read "only 3 distinct values for 16 regions: 13 regions can never get data
// (enumerated values)", "skewed first column ... enumerated data", "unbalanced regions" and
// "13 of 16 regions get no rows": five warnings, all of them about the row count.
func TestFewDistinctRowsAreNotJudgedAsEnumerated(t *testing.T) {
	yml := fmt.Sprintf(eventsYAML, "[md5(id).substr(0,4) + id AS pk][ts]")
	for _, rows := range []int{1, 3, 15} {
		rep := runReport(t, yml, events(rows), nil)
		// the one warning is that the rows were too few: the verdict never reads OK on them
		for _, f := range rep.Findings {
			if f.Severity != model.SevInfo && f.Rule != "few_rows" {
				t.Errorf("%d rows: %s %s: %s", rows, f.Severity, f.Rule, f.Message)
			}
		}
		wantSeverity(t, rep, "few_rows", model.SevWarning)
		for _, rule := range []string{"first_column_cardinality", "first_column_skew", "region_balance", "incremental_key_column"} {
			f := findingOf(rep, rule)
			if f == nil && rule == "incremental_key_column" && rows == 1 {
				continue // one row has no order to judge: no finding at all
			}
			if f == nil || !f.NotJudged || !strings.Contains(f.Message, "not judged") {
				t.Errorf("%d rows: %s: %+v; want it not judged", rows, rule, f)
			}
		}
	}
	// values that repeat are evidence however few the rows: 30 rows of 3 kinds still warn
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[kind][id]"), events(30), nil)
	wantSeverity(t, rep, "first_column_cardinality", model.SevWarning)
	wantSeverity(t, rep, "first_column_skew", model.SevWarning)
	if f := findingOf(rep, "few_rows"); f != nil {
		t.Errorf("values that repeat: %s", f.Message)
	}
}
