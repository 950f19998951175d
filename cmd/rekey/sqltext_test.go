package main

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// Split keys are quantiles of the data's first key column: ddl.sql must not let a value run
// SQL, whatever the escape rules of the client that applies it. Rows whose first column was
// m\'); DROP TABLE canary; --  gave
//
//	WITH (SPLITKEYS='m\''); DROP TABLE canary; -- ');
//
// and the client, backslash escapes on, ran the DROP. MariaDB refuses Lindorm's WITH (...)
// clause, so the client runs with --force, going on past it as it would past a statement
// Lindorm accepted.
func TestDDLRunsNoSQLFromSplitKeys(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB")
	}
	client, err := exec.LookPath("mysql")
	if err != nil {
		t.Skip("needs the mysql client")
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", `version: 1
source:
  name: t.ev
  columns:
    name: text
    v: int
target:
  table: ev
  primary_key: "[name]"
`)
	var rows strings.Builder
	rows.WriteString("name,v\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&rows, "%c%d,%d\n", 'a'+i%26, i, i)
		fmt.Fprintf(&rows, "\"m\\'); DROP TABLE canary; -- %d\",%d\n", i, i)
		fmt.Fprintf(&rows, "\"q,'); DROP TABLE canary; -- %d\",%d\n", i, i)
	}
	in := writeFile(t, dir, "rows.csv", rows.String())
	ddl := mustRun(t, "ddl", "-m", mapping, "--source", "file:"+in, "--regions", "8")
	if !strings.Contains(ddl, "SPLITKEYS='") {
		t.Fatalf("no SPLITKEYS in\n%s", ddl)
	}
	path := writeFile(t, dir, "ddl.sql", ddl)
	for _, mode := range []string{"", "NO_BACKSLASH_ESCAPES"} {
		t.Run("sql_mode="+mode, func(t *testing.T) {
			srv := mysqltest.MariaDB(t)
			srv.Exec(t, "CREATE TABLE canary (x int)")
			host, port, _ := net.SplitHostPort(srv.Addr)
			cmd := exec.Command(client, "--no-defaults", "--force", "-h", host, "-P", port, "-u", srv.User, "-D", srv.Database,
				"--init-command=SET SESSION sql_mode='"+mode+"'", "-e", "source "+filepath.ToSlash(path))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.Run() // the CREATE TABLE is Lindorm's: MariaDB refuses it
			var n int
			if err := srv.DB(t).QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'canary'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("ddl.sql dropped table canary:\n%s\nthe client said:\n%s", ddl, out.String())
			}
		})
	}
}
