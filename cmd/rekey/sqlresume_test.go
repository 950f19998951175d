package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// --resume continues a run into the table it wrote: with the same --state, a resume whose --out
// names another table (?table=, another database or server) is refused, naming both, instead of
// claiming that table complete, or writing into it only the rows after the checkpoint.
func TestMigrateIntoSQLResumeIntoAnotherTableIsRefused(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	srv := mysqltest.GMS(t)
	ddl := mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect())
	srv.Exec(t, ddl, strings.Replace(ddl, "`orders`", "`orders_b`", 1))
	state := filepath.Join(t.TempDir(), "state")
	args := func(table string) []string {
		return []string{"migrate", "-m", mapping, "--source", "gen:orders?rows=500&seed=3", "--out", srv.URI("table=" + table),
			"--sql-conns", "1", "--state", state, "--progress", "never"}
	}
	mustRun(t, args("orders")...)
	code, stdout, errs := runCLI(t, append(args("orders_b"), "--resume")...)
	var n int
	if err := srv.DB(t).QueryRow("SELECT COUNT(*) FROM orders_b").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if code != exitUsage || !strings.Contains(errs, "table orders then") || !strings.Contains(errs, "table orders_b now") {
		t.Fatalf("--resume into another table with the same --state: exit %d, %d rows there\n%s%s", code, n, stdout, errs)
	}
	// the same table still resumes (here: a complete run, nothing to do)
	if code, stdout, errs := runCLI(t, append(args("orders"), "--resume")...); code != 0 || !strings.Contains(stdout, "nothing to resume") {
		t.Fatalf("--resume into the same table: exit %d\n%s%s", code, stdout, errs)
	}
}
