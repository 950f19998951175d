package pipeline

import "testing"

// SpreadIndexes takes one position in each of n equal stretches, ascending, all of them when n
// covers the rows, and its positions within the stretches vary (not a stride).
func TestSpreadIndexes(t *testing.T) {
	idx := SpreadIndexes(100_000, 20_000)
	if len(idx) != 20_000 {
		t.Fatalf("%d positions, want 20,000", len(idx))
	}
	offsets := map[int64]int{}
	for k, i := range idx {
		if i < int64(k)*5 || i >= int64(k+1)*5 {
			t.Fatalf("position %d = %d, outside its stretch [%d, %d)", k, i, k*5, k*5+5)
		}
		offsets[i%5]++
	}
	for o := range int64(5) {
		if n := offsets[o]; n < 3_500 || n > 4_500 {
			t.Errorf("%d of 20,000 positions at offset %d of their stretch, want about 4,000: %v", n, o, offsets)
		}
	}
	all := SpreadIndexes(7, 10)
	for k, i := range all {
		if i != int64(k) || len(all) != 7 {
			t.Fatalf("a sample of 10 of 7 rows is %v, want every row", all)
		}
	}
	if SpreadIndexes(0, 5) != nil || SpreadIndexes(5, 0) != nil {
		t.Fatal("a sample of nothing has positions")
	}
}
