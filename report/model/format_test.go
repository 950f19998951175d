package model

import "testing"

// A share short of all never prints as 100.0%, as a share above none never prints as 0%:
// 9,999 rejected rows of 10,000 read "(100.0%) would not be migrated", as if every row were.
func TestPctShortOfAll(t *testing.T) {
	for x, want := range map[float64]string{
		0:              "0%",
		0.0004:         "<0.1%",
		0.5:            "50.0%",
		0.994:          "99.4%",
		0.9994:         "99.9%",
		0.9995:         ">99.9%",
		9999.0 / 10000: ">99.9%",
		0.999999:       ">99.9%",
		1:              "100.0%",
	} {
		if got := Pct(x); got != want {
			t.Errorf("Pct(%v) = %q, want %q", x, got, want)
		}
	}
}
