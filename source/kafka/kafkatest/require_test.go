package kafkatest

import (
	"fmt"
	"strings"
	"testing"
)

// fatalTB records a Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestStartRequiresRealBrokerWhenAsked(t *testing.T) {
	t.Setenv("KAFKA_BROKERS", "")
	t.Setenv(RequireEnv, "1")
	tb := &fatalTB{TB: t}
	if c := Start(tb); c != nil || !strings.Contains(tb.msg, "KAFKA_BROKERS is not set") {
		t.Fatalf("Start with %s=1 and no KAFKA_BROKERS: cluster %v, failure %q; want no cluster and a failure naming KAFKA_BROKERS", RequireEnv, c, tb.msg)
	}

	t.Setenv(RequireEnv, "")
	tb = &fatalTB{TB: t}
	if c := Start(tb); c == nil || c.Fake == nil || tb.msg != "" {
		t.Fatalf("Start without %s: cluster %v, failure %q; want kfake", RequireEnv, c, tb.msg)
	}
}
