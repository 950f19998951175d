package cqlvalue

import "testing"

func TestFoldIndex(t *testing.T) {
	f := NewFoldIndex([]string{"userid", "Amount", "amount", "Größe"})
	for member, want := range map[string]int{
		"userId": 0, "USERID": 0, "userid": 0, // the exact name too: callers look it up first
		"AMOUNT": -1,                         // two columns share it ignoring case
		"GRÖSSE": -1, "größe": 3, "GRÖẞE": 3, // non-ASCII folds as strings.ToLower does
		"user": -1, "": -1,
	} {
		if got := f.Column(member); got != want {
			t.Errorf("Column(%q) = %d, want %d", member, got, want)
		}
	}
	var seen FoldSeen
	seen.Mark(3)
	seen.Mark(MaxFolded + 1) // beyond the tracked columns: not recorded
	if !seen.Has(3) || seen.Has(2) || seen.Has(MaxFolded+1) {
		t.Errorf("FoldSeen: %v", seen)
	}
}
