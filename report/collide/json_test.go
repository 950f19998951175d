package collide

import "testing"

// A collection in the key is stored as its JSON text: an array of numbers or booleans (a
// list<int>, a set<bigint>, a tuple) is JSON as much as an array of strings.
func TestLooksJSON(t *testing.T) {
	for s, want := range map[string]bool{
		`["a","b"]`: true, `[{"a":1}]`: true, `{"a":1}`: true, `[]`: true, `{}`: true,
		`[1,2,3]`: true, `[0, 0, 3]`: true, `[-1.5,2e3]`: true, `[true,false]`: true, `[null,1]`: true,
		`[tag]`: false, `[1] and [2]`: false, `[2024-01-01]`: false, `abc`: false, `[`: false, `x]`: false,
	} {
		if got := looksJSON(s); got != want {
			t.Errorf("looksJSON(%q) = %v, want %v", s, got, want)
		}
	}
}
