package cassandratest

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

func TestOpenRequiresRealPeerWhenAsked(t *testing.T) {
	t.Setenv(HostsEnv, "")
	t.Setenv(RequireEnv, "1")
	tb := &fatalTB{TB: t}
	if c := Open(tb); c != nil || !strings.Contains(tb.msg, HostsEnv+" is not set") {
		t.Fatalf("Open with %s=1 and no %s: cluster %v, failure %q; want no cluster and a failure naming %s", RequireEnv, HostsEnv, c, tb.msg, HostsEnv)
	}

	t.Setenv(RequireEnv, "")
	tb = &fatalTB{TB: t}
	if c := Open(tb); c == nil || c.Server == nil || tb.msg != "" {
		t.Fatalf("Open without %s: cluster %v, failure %q; want the test server", RequireEnv, c, tb.msg)
	}
}
