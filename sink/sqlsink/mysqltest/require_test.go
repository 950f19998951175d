package mysqltest

import (
	"fmt"
	"strings"
	"testing"
)

// recordTB records a Fatalf or a Skip instead of ending the test.
type recordTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordTB) Helper() {}
func (r *recordTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}
func (r *recordTB) Skip(args ...any) { r.skip = fmt.Sprint(args...) }

func TestMariaDBRequiredWhenAsked(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no mariadbd
	t.Setenv("REKEY_MYSQL_DSN", "")
	for _, start := range []func(testing.TB, ...string) *Server{MariaDB, OwnMariaDB} {
		t.Setenv(RequireEnv, "1")
		tb := &recordTB{TB: t}
		if s := start(tb); s != nil || !strings.Contains(tb.fatal, "mariadbd is not on PATH") || tb.skip != "" {
			t.Errorf("%s=1, no MariaDB: server %v, failure %q, skip %q; want a failure naming mariadbd", RequireEnv, s, tb.fatal, tb.skip)
		}
		t.Setenv(RequireEnv, "")
		tb = &recordTB{TB: t}
		if s := start(tb); s != nil || tb.fatal != "" || !strings.Contains(tb.skip, "mariadbd is not on PATH") {
			t.Errorf("no MariaDB: server %v, failure %q, skip %q; want a skip", s, tb.fatal, tb.skip)
		}
	}
}
