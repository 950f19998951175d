package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

func TestMain(m *testing.M) { os.Exit(mysqltest.Run(m)) }

// sqlServers are the servers the SQL tests run against: go-mysql-server always (through one
// connection: its memory tables lose concurrent writes), MariaDB when installed.
func sqlServers(t *testing.T) map[string]func(*testing.T) (*mysqltest.Server, string) {
	m := map[string]func(*testing.T) (*mysqltest.Server, string){
		"gms": func(t *testing.T) (*mysqltest.Server, string) { return mysqltest.GMS(t), "1" },
	}
	if mysqltest.MariaDBAvailable() {
		m["mariadb"] = func(t *testing.T) (*mysqltest.Server, string) { return mysqltest.MariaDB(t), "4" }
	}
	return m
}

// migrate --out mysql://: every row lands in the table, the checkpoint and rejects live in
// --state, a second run without --resume is refused, --resume of a complete run does nothing,
// and a table that differs from the mapping is refused before anything is written.
func TestMigrateIntoSQLTable(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			state := filepath.Join(t.TempDir(), "state")
			ddl := mustRun(t, "ddl", "-m", mapping, "--dialect", "mysql")
			srv.Exec(t, ddl)
			args := []string{"migrate", "-m", mapping, "--source", "gen:orders?rows=5000&seed=3", "--out", srv.URI(""),
				"--sql-conns", conns, "--state", state, "--progress", "never"}
			out := mustRun(t, args...)
			if !strings.Contains(out, "rows written") || !strings.Contains(out, "statements") {
				t.Errorf("summary:\n%s", out)
			}
			var n int
			db := srv.DB(t)
			if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil || n != 5000 {
				t.Fatalf("%d rows in the table (%v), want 5000", n, err)
			}
			var pk1 string
			var amount string
			if err := db.QueryRow("SELECT pk1, amount FROM orders ORDER BY pk1 LIMIT 1").Scan(&pk1, &amount); err != nil || len(pk1) < 5 || !strings.Contains(amount, ".") {
				t.Errorf("a row: %q %q %v", pk1, amount, err)
			}
			if _, err := os.Stat(filepath.Join(state, "checkpoint.json")); err != nil {
				t.Errorf("no checkpoint in --state: %v", err)
			}
			code, _, errs := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(errs, "--resume") {
				t.Errorf("second run: exit %d: %s", code, errs)
			}
			code, stdout, errs := runCLI(t, append(args, "--resume")...)
			if code != 0 || !strings.Contains(stdout, "nothing to resume") {
				t.Errorf("--resume of a complete run: exit %d: %s%s", code, stdout, errs)
			}
			// a table that differs: refused with exit 2, naming the difference
			srv.Exec(t, "DROP TABLE orders", strings.Replace(ddl, "`amount` decimal(18,2)", "`amount` double", 1))
			code, _, errs = runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", srv.URI(""),
				"--sql-conns", conns, "--state", filepath.Join(t.TempDir(), "s2"), "--progress", "never")
			if code != exitUsage || !strings.Contains(errs, "column amount: DECIMAL(18,2) in the mapping, double in the table") {
				t.Errorf("mismatched table: exit %d: %s", code, errs)
			}
			if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil || n != 0 {
				t.Errorf("%d rows written into the mismatched table (%v)", n, err)
			}
		})
	}
}

// A password in the URI is refused without being shown; the password comes from the dialect's
// environment variable.
func TestSQLTargetPassword(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	code, _, errs := runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", "mysql://u:hunter2@127.0.0.1:1/db", "--progress", "never")
	if code != exitUsage || strings.Contains(errs, "hunter2") || !strings.Contains(errs, sqlsink.MySQLPasswordEnv) {
		t.Errorf("exit %d: %s", code, errs)
	}
}
