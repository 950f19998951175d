package report

import (
	"os"
	"testing"

	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/source/gen"
	"github.com/rekey/rekey/transform"
)

// The region plans' samples do not line up with a key that cycles with the row number: with
// 100,000 generated transactions the 20,000-row plan samples (the source's, and the advisor's of
// its subsample) are one row in five, and had they been every 5th row, the reversed order numbers
// they saw would all start with 0 or 5, the regions would be placed on two digits and the
// reverse design, which spreads evenly, would grade poor.
func TestPlanSampleDoesNotLineUpWithReversedSequentialKey(t *testing.T) {
	yml, err := os.ReadFile("../mappings/transactions_by_order.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range []int64{100_000} {
		src, err := gen.New(gen.Config{Name: "transactions", Rows: rows, Seed: 1, Workers: 1}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		rep := guideReport(t, string(yml), src, []transform.Query{{Equal: []string{"order_number"}}})
		if d := rep.Distribution; d.RowsMaxMean > 1.2 {
			t.Errorf("%d rows: the region plan from the source's sample gives rows max/mean %.2f; want an even spread", rows, d.RowsMaxMean)
		}
		a := mappingAlt(rep)
		if a.Grade != "good" || a.RowsMaxMean > 1.2 {
			t.Errorf("%d rows: the reversed order number grades %s, rows max/mean %.2f; want good, an even spread", rows, a.Grade, a.RowsMaxMean)
		}
	}
}

// --sample 20% analyses one row in five, and not every 5th: the reversed order numbers of every
// 5th row would start with 0 or 5 only and fill two of the regions an even plan places.
func TestSampledFractionDoesNotLineUpWithReversedSequentialKey(t *testing.T) {
	yml, err := os.ReadFile("../mappings/transactions_by_order.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := gen.New(gen.Config{Name: "transactions", Rows: 100_000, Seed: 1, Workers: 1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := runReport(t, string(yml), src, func(c *Config) { c.Sample = model.Sample{Fraction: 0.2} })
	if n := rep.Totals.RowsAnalysed; n < 19_000 || n > 21_000 {
		t.Errorf("--sample 20%% of 100,000 rows analysed %d", n)
	}
	if d := rep.Distribution; d.RowsMaxMean > 1.2 {
		t.Errorf("--sample 20%%: the analysed rows give regions max/mean %.2f; want an even spread (sample %q)", d.RowsMaxMean, rep.Source.Sample)
	}
}
