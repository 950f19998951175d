package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// TestTooManyRejectsSaysWhatWorks: after "too many rejected rows" the error said to fix the
// cause and run with --resume, and the fixed mapping was then refused as "another job". It now
// says what works: start over with --overwrite or a new --out after a fix, or --resume with a
// higher --max-rejects to keep the rows rejected; each of them is run here as written, into
// files and into a SQL table.
func TestTooManyRejectsSaysWhatWorks(t *testing.T) {
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("userid,orderid,channel,ts,status,location,amount\n")
	for i := 0; i < 200; i++ {
		orderid := fmt.Sprint(i)
		if i%10 == 0 {
			orderid = fmt.Sprintf("o%d", i) // not a bigint: rejected by the first mapping
		}
		fmt.Fprintf(&sb, "u%d,%s,taobao,1700000000000,PAID,Hangzhou,%d.25\n", i, orderid, i%100)
	}
	csv := writeFile(t, dir, "orders.csv", sb.String())
	orders, err := os.ReadFile(filepath.Join("..", "..", "mappings", "orders.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mapping := writeFile(t, dir, "orders.yaml", string(orders))
	fixed := writeFile(t, dir, "fixed.yaml", strings.Replace(string(orders), "orderid: bigint", "orderid: text", 1))
	migrate := func(m, out string, more ...string) (int, string) {
		args := []string{"migrate", "-m", m, "--source", "file:" + csv, "--out", out, "--progress", "never"}
		if !slices.Contains(more, "--max-rejects") { // a flag is given once
			args = append(args, "--max-rejects", "5")
		}
		args = append(args, more...)
		code, stdout, errs := runCLI(t, args...)
		return code, stdout + errs
	}

	out := filepath.Join(dir, "out")
	code, msg := migrate(mapping, out)
	if code != exitFailed || !strings.Contains(msg, "too many rejected rows") {
		t.Fatalf("20 bad rows of 200 with --max-rejects 5: exit %d\n%s", code, msg)
	}
	for _, want := range []string{"start over with --overwrite", "or into a new --out", "--resume and a higher --max-rejects"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "once the cause is fixed, run the same command with --resume") {
		t.Errorf("the error still advises --resume after a fix, which is refused:\n%s", msg)
	}
	// why: --resume with the fixed mapping is another job
	if code, msg := migrate(fixed, out, "--resume"); code != 2 || !strings.Contains(msg, "another job") {
		t.Fatalf("--resume with the fixed mapping: exit %d\n%s", code, msg)
	}
	// what works: --overwrite with the fixed mapping, or a new --out
	if code, msg := migrate(fixed, out, "--overwrite"); code != 0 || !strings.Contains(msg, "200") {
		t.Fatalf("--overwrite with the fixed mapping: exit %d\n%s", code, msg)
	}
	if code, msg := migrate(fixed, filepath.Join(dir, "new")); code != 0 {
		t.Fatalf("a new --out with the fixed mapping: exit %d\n%s", code, msg)
	}
	// and keeping the rejects: --resume with a higher --max-rejects finishes (exit 1: rows rejected)
	kept := filepath.Join(dir, "kept")
	if code, msg := migrate(mapping, kept); code != exitFailed {
		t.Fatalf("exit %d\n%s", code, msg)
	}
	if code, msg := migrate(mapping, kept, "--resume", "--max-rejects", "-1"); code != 1 || !strings.Contains(msg, "rows rejected") {
		t.Fatalf("--resume --max-rejects -1: exit %d\n%s", code, msg)
	}
	if rows, m := outputRows(t, kept); len(rows) != 180 || m.RowsRejected != 20 {
		t.Fatalf("kept: %d rows written, %d rejected; want 180 and 20", len(rows), m.RowsRejected)
	}

	// into a SQL table (go-mysql-server): the same advice, with --state in place of --out
	srv := mysqltest.GMS(t)
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", "mysql"))
	state := filepath.Join(dir, "state")
	sqlArgs := []string{"--sql-conns", "1", "--state", state}
	code, msg = migrate(mapping, srv.URI(""), sqlArgs...)
	if code != exitFailed || !strings.Contains(msg, "too many rejected rows") || !strings.Contains(msg, "start over with --overwrite") ||
		!strings.Contains(msg, "--resume and a higher --max-rejects") {
		t.Fatalf("into a table, 20 bad rows of 200 with --max-rejects 5: exit %d\n%s", code, msg)
	}
	if code, msg := migrate(mapping, srv.URI(""), append(sqlArgs, "--resume", "--max-rejects", "-1")...); code != 1 {
		t.Fatalf("into a table, --resume --max-rejects -1: exit %d\n%s", code, msg)
	}
	var n int
	if err := srv.DB(t).QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil || n != 180 {
		t.Fatalf("%d rows in the table (%v), want 180", n, err)
	}
}

// A run of a file source that rejected rows names, in its summary, the file holding those rows as
// they were read, and how to run them again once fixed; the command it names reads exactly them.
// Before, the summary named rejects.jsonl alone: rejected-rows.csv, which docs/operations.md
// says to migrate again, appeared in the output unannounced.
func TestSummaryNamesTheRejectedRowsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csv := writeFile(t, dir, "orders.csv", "userid,orderid,channel,ts,status,location,amount\n"+
		"u1,1,taobao,1700000000000,PAID,Hangzhou,1.25\n"+
		"u2,2,taobao,yesterday,PAID,Hangzhou,2.25\n"+
		"u3,3,taobao,1700000000000,PAID,Hangzhou,3.25\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+csv, "--out", out, "--progress", "never", "--max-rejects", "-1")
	if code != exitRejects {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	replay := filepath.Join(out, "rejected-rows.csv")
	if !strings.Contains(stdout, "rejected rows  "+replay) || !strings.Contains(stdout, "into another --out with --source file:"+replay) {
		t.Fatalf("the summary does not name %s and how to run it again:\n%s", replay, stdout)
	}
	data, err := os.ReadFile(replay)
	if err != nil || !strings.Contains(string(data), "u2,2,taobao,yesterday") || strings.Count(string(data), "\n") != 2 {
		t.Errorf("%s: %q, %v", replay, data, err)
	}
}

// The rejected rows a run names (OUT/rejected-rows.csv), fixed and given as --source with the
// same --out, are refused (exit 2) before anything is removed, saying to move the file out of
// --out: --overwrite replaces every file rekey wrote there, the source among them. Before, the
// run removed the previous output and the fixed file with it, then failed "no such file": the
// rows written and the fix were both gone. With one --mapping and with several.
func TestSourceInsideOutRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	examples := filepath.Join("..", "..", "docs", "examples", "transactions.csv")
	seller := filepath.Join("..", "..", "mappings", "transactions_by_seller.yaml")
	buyer := filepath.Join("..", "..", "mappings", "transactions_by_buyer.yaml")
	for _, tc := range []struct {
		name     string
		mappings []string
		rejected string // where the run leaves its rejected rows, under out
	}{
		{"one table", []string{seller}, "rejected-rows.csv"},
		{"two tables", []string{seller, buyer}, filepath.Join("transactions_by_seller", "rejected-rows.csv")},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		args := []string{"migrate", "--source", "file:" + examples, "--out", out, "--progress", "never"}
		for _, m := range tc.mappings {
			args = append(args, "-m", m)
		}
		if code, stdout, errs := runCLI(t, args...); code != exitRejects {
			t.Fatalf("%s: the example's migrate: exit %d\n%s%s", tc.name, code, stdout, errs)
		}
		rejected := filepath.Join(out, tc.rejected)
		fixed := strings.Replace(readText(t, rejected), "yesterday", "2024-01-02T00:00:00Z", 1)
		if err := os.WriteFile(rejected, []byte(fixed), 0o600); err != nil {
			t.Fatal(err)
		}
		args = []string{"migrate", "--source", "file:" + rejected, "--out", out, "--overwrite", "--progress", "never"}
		for _, m := range tc.mappings {
			args = append(args, "-m", m)
		}
		code, stdout, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, "inside --out") || !strings.Contains(errs, "move it out") {
			t.Errorf("%s: --source inside --out with --overwrite: exit %d, want 2 saying to move it out\n%s%s", tc.name, code, stdout, errs)
		}
		if got, err := os.ReadFile(rejected); err != nil || string(got) != fixed {
			t.Errorf("%s: the fixed rejected rows are gone or changed (%v)", tc.name, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(rejected), "manifest.json")); err != nil {
			t.Errorf("%s: the previous output is gone: %v", tc.name, err)
		}
	}
	// an --out naming the source file itself is no folder holding it: refused as no folder
	code, _, errs := runCLI(t, "migrate", "-m", seller, "--source", "file:"+examples, "--out", examples, "--progress", "never")
	if code == 0 || strings.Contains(errs, "inside --out") || !strings.Contains(errs, "not a directory") {
		t.Errorf("--out naming the source file: exit %d\n%s", code, errs)
	}
}

// Into a SQL table the rejected rows are in the state folder: given as --source, fixed, with the
// same table and state folder, they are refused (exit 2) before --overwrite removes the state
// folder's files, the source among them.
func TestSourceInsideStateFolderRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csv := writeFile(t, dir, "orders.csv", "userid,orderid,channel,ts,status,location,amount\n"+
		"u1,1,taobao,1700000000000,PAID,Hangzhou,1.25\n"+
		"u2,2,taobao,yesterday,PAID,Hangzhou,2.25\n")
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	srv := mysqltest.GMS(t)
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", "mysql"))
	state := filepath.Join(dir, "state")
	args := []string{"migrate", "-m", mapping, "--out", srv.URI(""), "--sql-conns", "1", "--state", state, "--progress", "never", "--max-rejects", "-1"}
	if code, stdout, errs := runCLI(t, append(args, "--source", "file:"+csv)...); code != exitRejects {
		t.Fatalf("exit %d\n%s%s", code, stdout, errs)
	}
	rejected := filepath.Join(state, "rejected-rows.csv")
	fixed := strings.Replace(readText(t, rejected), "yesterday", "1700000000000", 1)
	if err := os.WriteFile(rejected, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := runCLI(t, append(args, "--source", "file:"+rejected, "--overwrite")...)
	if code != exitUsage || !strings.Contains(errs, "inside the state folder") || !strings.Contains(errs, "move") {
		t.Errorf("--source inside the state folder with --overwrite: exit %d, want 2 saying to move it out\n%s%s", code, stdout, errs)
	}
	if got, err := os.ReadFile(rejected); err != nil || string(got) != fixed {
		t.Errorf("the fixed rejected rows are gone or changed (%v)", err)
	}
}

// A run of a file source into a SQL table that rejected rows names, in its summary, the file in
// its state folder that holds those rows as they were read, and how to run them again once fixed:
// out of the state folder (a source inside it is refused), into the same table with another
// --state. Done as it says, the fixed row lands in the table. Before, the summary named
// rejects.jsonl alone and rejected-rows.csv appeared in the state folder unannounced.
func TestSQLSummaryNamesTheRejectedRowsFile(t *testing.T) {
	srv := mysqltest.GMS(t)
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	dir := t.TempDir()
	csv := writeFile(t, dir, "orders.csv", "userid,orderid,channel,ts,status,location,amount\n"+
		"u1,1,taobao,1700000000000,PAID,Hangzhou,1.25\n"+
		"u2,2,taobao,yesterday,PAID,Hangzhou,2.25\n"+
		"u3,3,taobao,1700000000000,PAID,Hangzhou,3.25\n")
	state := filepath.Join(dir, "state")
	code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+csv, "--out", srv.URI(""), "--sql-conns", "1",
		"--state", state, "--progress", "never", "--max-rejects", "-1")
	if code != exitRejects {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	replay := filepath.Join(state, "rejected-rows.csv")
	if !strings.Contains(stdout, "rejected rows  "+replay+" (as read: once fixed, move it out of the state folder and migrate it into the table with another --state)") {
		t.Fatalf("the summary does not name %s and how to run it again:\n%s", replay, stdout)
	}
	data, err := os.ReadFile(replay)
	if err != nil {
		t.Fatal(err)
	}
	fixed := writeFile(t, dir, "fixed.csv", strings.Replace(string(data), "yesterday", "1700000000000", 1))
	mustRun(t, "migrate", "-m", mapping, "--source", "file:"+fixed, "--out", srv.URI(""), "--sql-conns", "1",
		"--state", filepath.Join(dir, "state2"), "--progress", "never")
	var n int
	if err := srv.DB(t).QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows in the table (%v), want 3", n, err)
	}
}
