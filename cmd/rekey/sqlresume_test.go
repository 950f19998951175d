package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/output/outputtest"
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

// A migration into a SQL table, its process SIGKILLed mid-run: the checkpoint it left counts no
// row the table does not hold, and --resume ends with every row in the table and counted once.
func TestMigrateIntoSQLKilledThenResumed(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	srv, conns := sqlServer(t)
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	const rows = 40000
	args := []string{"migrate", "-m", mapping, "--source", fmt.Sprintf("gen:orders?rows=%d&seed=5", rows), "--out", srv.URI(""),
		"--sql-conns", conns, "--state", state, "--progress", "never", "--checkpoint-interval", "1ms"}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer // the child writes it while the test may read it
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), rekeyProcessEnv+"=1")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	checkpointed := func() int64 {
		cp, err := outputtest.Checkpoint(state)
		if err != nil || cp == nil {
			return 0
		}
		return cp.RowsWritten
	}
	wait.For(t, func() bool {
		select {
		case <-exited:
			t.Fatalf("rekey ended (%v) before a checkpoint of written rows\n%s", cmd.ProcessState, log.String())
		default:
		}
		// the first checkpoint of written rows: a tenth of them took longer than the wait on a
		// busy machine with go-mysql-server
		return checkpointed() > 0
	}, "a checkpoint of written rows")
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	cp, err := outputtest.Checkpoint(state)
	if err != nil || cp == nil || cp.Complete {
		t.Fatalf("the killed run's checkpoint: %+v, %v", cp, err)
	}
	db := srv.DB(t)
	var n int64
	if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < cp.RowsWritten {
		t.Fatalf("the killed run's checkpoint counts %d rows written, the table holds %d", cp.RowsWritten, n)
	}
	code, stdout, stderr := runCLI(t, append(args, "--resume")...)
	if code != 0 {
		t.Fatalf("--resume: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		t.Fatal(err)
	}
	cp, err = outputtest.Checkpoint(state)
	if err != nil || cp == nil || !cp.Complete || cp.RowsIn != rows || cp.RowsWritten != rows || n != rows {
		t.Fatalf("after the kill and --resume: %d rows in the table; checkpoint %+v (%v), want %d rows in, written, complete", n, cp, err, rows)
	}
}
