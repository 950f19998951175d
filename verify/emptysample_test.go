package verify

import (
	"strings"
	"testing"
)

// A sample that picks none of the source's keys says so, and what to give instead: "the source
// gave no key to look for" read as an empty source when it had rows (--sample 1% of 3 rows).
// An empty source still says the source gave none.
func TestVerdictOfASampleThatPickedNoKey(t *testing.T) {
	picked := Verdict(&Result{Sample: "1%", RowsRead: 3})
	if !strings.HasPrefix(picked, "NOT VERIFIED: 0 keys checked") || strings.Contains(picked, "the source gave no key") ||
		!strings.Contains(picked, "--sample 1%") || !strings.Contains(picked, "3 rows") {
		t.Errorf("a sample of no key among 3 rows: %q", picked)
	}
	empty := Verdict(&Result{Sample: "1%"})
	if !strings.Contains(empty, "the source gave no key to look for") {
		t.Errorf("an empty source: %q", empty)
	}
	if all := Verdict(&Result{Sample: "all"}); !strings.Contains(all, "the source gave no key to look for") {
		t.Errorf("an empty source, no sample: %q", all)
	}
}
