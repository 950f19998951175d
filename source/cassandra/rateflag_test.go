package cassandra

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/source"
)

// --rate and the URI's rate= are one setting: given both with different values, the source is
// refused naming both (the flag used to win without a word); the same value, or either alone,
// is taken.
func TestRateFlagAndURIRateMustAgree(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, c := range []struct {
		uri     string
		flag    float64
		want    float64
		refused bool
	}{
		{"cassandra://127.0.0.1:9042/ks/t?rate=100", 50, 0, true},
		{"cassandra://127.0.0.1:9042/ks/t?rate=100", 100, 100, false},
		{"cassandra://127.0.0.1:9042/ks/t?rate=100", 0, 100, false},
		{"cassandra://127.0.0.1:9042/ks/t", 50, 50, false},
	} {
		cfg, err := CommandConfig(c.uri, "", source.Input{Flags: &Flags{rate: c.flag}, Getenv: getenv})
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), "--rate 50") || !strings.Contains(err.Error(), "rate=100")):
			t.Errorf("%s --rate %g: %v, want refused naming both rates", c.uri, c.flag, err)
		case !c.refused && err != nil:
			t.Errorf("%s --rate %g: %v", c.uri, c.flag, err)
		case !c.refused && cfg.Rate != c.want:
			t.Errorf("%s --rate %g: rate %g, want %g", c.uri, c.flag, cfg.Rate, c.want)
		}
	}
}
