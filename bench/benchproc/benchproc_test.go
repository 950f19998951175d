package benchproc

import (
	"strings"
	"testing"
)

// client_golang writes large counters in exponent form: the wait must read them as numbers
// (it looked for "rekey_messages_in_total 2000000" and timed out on "2e+06").
func TestMetricValueReadsExponentForm(t *testing.T) {
	body := "# TYPE rekey_messages_in_total counter\nrekey_messages_in_total 2e+06\nrekey_messages_in_total_other 5\n"
	if v, ok := MetricValue(body, "rekey_messages_in_total"); !ok || v != 2_000_000 {
		t.Fatalf("got %v %v, want 2000000", v, ok)
	}
	if _, ok := MetricValue(body, "rekey_rows_total"); ok {
		t.Fatal("found a metric that is not there")
	}
}

// A bench's extra arguments replace its defaults' flags of the same name, which rekey would
// refuse given twice with different values (the kafka case's --roll-interval 500ms beside its
// default 1m).
func TestWithArgsReplacesTheDefaultsExtraGivesAgain(t *testing.T) {
	base := []string{"replicate", "-m", "m.yaml", "--roll-size", "64MiB", "--roll-interval", "1m", "--overwrite", "--progress", "never"}
	got := strings.Join(WithArgs(base, []string{"--roll-interval", "500ms", "--overwrite=false"}), " ")
	want := "replicate -m m.yaml --roll-size 64MiB --progress never --roll-interval 500ms --overwrite=false"
	if got != want {
		t.Errorf("WithArgs: %s\nwant       %s", got, want)
	}
}
