package elemindex

import "testing"

// Of finds every element of a slice, and nothing outside it: a copy, a neighbour past the
// length within the capacity, an element of another slice.
func TestOf(t *testing.T) {
	type rec [3]int64 // a record of several words
	backing := make([]rec, 5)
	s := backing[1:4]
	for i := range s {
		if got, ok := Of(s, &s[i]); !ok || got != i {
			t.Errorf("element %d: %d %v", i, got, ok)
		}
	}
	c := s[1]
	for name, p := range map[string]*rec{"a copy": &c, "below": &backing[0], "past the length": &backing[4], "nil": nil} {
		if i, ok := Of(s, p); ok {
			t.Errorf("%s: found at %d", name, i)
		}
	}
	if _, ok := Of(nil, &c); ok {
		t.Error("found in an empty slice")
	}
}
