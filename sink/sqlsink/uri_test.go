package sqlsink

import (
	"strings"
	"testing"
)

// A SQL target is picked by its URI's scheme, one per dialect; another scheme is no SQL target,
// and ParseURI names the ones there are.
func TestURISchemePicksTheDialect(t *testing.T) {
	for uri, want := range map[string]*Dialect{"lindorm://u@h/db": Lindorm, "mysql://u@h:3306/db": MySQL} {
		if !IsURI(uri) {
			t.Errorf("IsURI(%q) = false", uri)
		}
		tg, err := ParseURI(uri, func(string) string { return "" })
		if err != nil || tg.Dialect != want {
			t.Errorf("ParseURI(%q): %v, %v", uri, tg, err)
		}
	}
	for _, uri := range []string{"postgres://u@h/db", "out/lindorm://x", "mysql:", "s3://b/p"} {
		if IsURI(uri) {
			t.Errorf("IsURI(%q) = true", uri)
		}
	}
	if _, err := ParseURI("postgres://u@h/db", nil); err == nil || !strings.Contains(err.Error(), "unknown SQL target postgres:// (want lindorm:// or mysql://)") {
		t.Errorf("ParseURI of postgres://: %v", err)
	}
}
