package realpeers

import (
	"fmt"
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

func TestMissingFailsOnlyWhenRequired(t *testing.T) {
	const env = "REKEY_TEST_PEER"
	for _, c := range []struct {
		peer, require string
		missing       bool
		fails         bool
	}{
		{"127.0.0.1:9042", "1", false, false},
		{"127.0.0.1:9042", "", false, false},
		{"", "", true, false},
		{"", "1", true, true},
		{"", "0", true, false},
	} {
		t.Setenv(env, c.peer)
		t.Setenv(RequireEnv, c.require)
		tb := &fatalTB{TB: t}
		missing := Missing(tb, env)
		if missing != c.missing || (tb.msg != "") != c.fails {
			t.Errorf("%s=%q %s=%q: missing %v, failure %q; want missing %v, a failure %v", env, c.peer, RequireEnv, c.require, missing, tb.msg, c.missing, c.fails)
		}
	}
}
