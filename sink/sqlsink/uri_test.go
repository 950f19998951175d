package sqlsink

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/sqlsink/lindormsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqltargets"
)

// A SQL target is picked by its URI's scheme, one per dialect; another scheme is no SQL target,
// and ParseURI names the ones there are.
func TestURISchemePicksTheDialect(t *testing.T) {
	for uri, want := range map[string]*Dialect{"lindorm://u@h/db": lindormsql.Dialect, "mysql://u@h:3306/db": mysqlsql.Dialect} {
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
	_, err := ParseURI("postgres://u@h/db", nil)
	if err == nil || !strings.Contains(err.Error(), "unknown SQL target postgres:// (want "+sqltargets.Join(sqltargets.Schemes(), "or")+")") {
		t.Errorf("ParseURI of postgres://: %v", err)
	}
}

// Cell write times go only where a write can set a cell's timestamp (Lindorm): elsewhere
// UseCellWriteTimes refuses, naming the target's dialect, and leaves the target as it was.
func TestCellWriteTimesNeedADialectWithCellTimestamps(t *testing.T) {
	env := func(string) string { return "" }
	lt, err := ParseURI("lindorm://u@h/db", env)
	if err != nil {
		t.Fatal(err)
	}
	if err := lt.UseCellWriteTimes(); err != nil || !lt.CellTimestamps {
		t.Fatalf("lindorm: %v, cell timestamps %v", err, lt.CellTimestamps)
	}
	mt, err := ParseURI("mysql://u@h/db", env)
	if err != nil {
		t.Fatal(err)
	}
	if err := mt.UseCellWriteTimes(); err == nil || !strings.Contains(err.Error(), "a mysql row has none") || mt.CellTimestamps {
		t.Fatalf("mysql: %v, cell timestamps %v", err, mt.CellTimestamps)
	}
	if _, err := ParseURI("mysql://u@h/db?write_time=true", env); err == nil {
		t.Fatal("mysql:// took write_time=true")
	}
}
