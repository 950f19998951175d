package report

import (
	"fmt"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
)

// The distinct-count estimate of sequential integers and of their text is within the sketch's
// error (HyperLogLog at precision 16: 0.4%; allow 1.5%).
func TestDistinctEstimate(t *testing.T) {
	for _, text := range []bool{false, true} {
		p, _ := compile(t, fmt.Sprintf(eventsYAML, "[id]"))
		a := collide.NewAcc(collide.NewDesign(p, pipeline.RegionPlan{}))
		const n = 1000000
		for i := 0; i < n; i++ {
			v := pipeline.Int(int64(i) * 7)
			if text {
				v = pipeline.Text(fmt.Sprint(i))
			}
			a.Hll.InsertHash(collide.HashValue(v, 0))
		}
		est := float64(a.Hll.Estimate())
		if est < n*0.985 || est > n*1.015 {
			t.Errorf("text %v: estimate %.0f for %d distinct values", text, est, n)
		}
	}
}
