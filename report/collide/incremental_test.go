package collide

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// With no write order, or an inferred one, an integer key column is judged a sequence only when
// its values are unique: a foreign key drawn from another table's ids (userid in an orders
// table, each user with many orders) fills its range densely too, but repeats.
func TestIncrementalColumnSequenceValuesAreUnique(t *testing.T) {
	const n, analysed = 1000, 50000
	wo := make([]int64, n)
	for i := range wo {
		wo[i] = int64((i * 7919) % n) // unrelated to the values
	}
	judge := func(vals []pipeline.Value, wo []int64) bool {
		seen := map[int64]bool{}
		for _, v := range vals {
			seen[v.Num] = true
		}
		_, inc, _ := IncrementalColumn(pipeline.TypeBigint, vals, int64(len(seen)), wo, analysed, "", true)
		return inc
	}
	seq := make([]pipeline.Value, n)  // one row in 50 of the ids 1..50000
	pool := make([]pipeline.Value, n) // 10 orders each of 5,000 users
	for i := range seq {
		seq[i] = pipeline.Int(int64(1 + i*analysed/n))
		pool[i] = pipeline.Int(int64(1 + (i*7919)%5000))
	}
	for _, order := range []struct {
		name string
		wo   []int64
	}{{"arrival order", nil}, {"an inferred order", wo}} {
		if !judge(seq, order.wo) {
			t.Errorf("%s: a dense sequence of unique ids is not incremental", order.name)
		}
		if judge(pool, order.wo) {
			t.Errorf("%s: ids of 5,000 users over 50,000 rows are judged a sequence", order.name)
		}
	}
}
