package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// A source that gives a key again in a later batch (a topic of rows, a file with repeated keys)
// leaves that key's last row in the table, as verify expects: the workers write batches at
// once, and a batch's statements overtook those of the batch before it on a connection, leaving
// the older row (a tenth of the keys here).
func TestMigrateIntoATableKeepsTheLastRowOfAKey(t *testing.T) {
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("userid,orderid,channel,ts,status,location,amount\n")
	// key k's rows are 4096 rows apart: in consecutive batches of the file source
	const B, groups, rounds = 4096, 20, 2
	for g := 0; g < groups; g++ {
		for r := 0; r < rounds; r++ {
			for k := 0; k < B; k++ {
				fmt.Fprintf(&sb, "u%d_%d,1,taobao,1700000000000,PAID,Hangzhou,%d\n", g, k, r)
			}
		}
	}
	csv := writeFile(t, dir, "orders.csv", sb.String())
	orders, err := os.ReadFile(filepath.Join("..", "..", "mappings", "orders.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mapping := writeFile(t, dir, "orders.yaml", string(orders))
	srv := mysqltest.MariaDB(t) // go-mysql-server takes minutes for these rows
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	code, stdout, errs := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+csv, "--out", srv.URI(""), "--progress", "never",
		"--workers", "4", "--sql-conns", "4", "--state", filepath.Join(dir, "state"))
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, errs)
	}
	rows, err := srv.DB(t).Query("SELECT pk1, amount FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n, bad := 0, 0
	for rows.Next() {
		var pk, amount string
		if err := rows.Scan(&pk, &amount); err != nil {
			t.Fatal(err)
		}
		n++
		if amount != fmt.Sprintf("%d.00", rounds-1) {
			bad++
			if bad < 5 {
				t.Errorf("%s: amount %s, want the last row's %d.00", pk, amount, rounds-1)
			}
		}
	}
	if n != groups*B || bad > 0 {
		t.Errorf("%d rows, %d of them not the key's last row; want %d, all the last", n, bad, groups*B)
	}
}
