package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/report"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
)

// A `rekey migrate` process reading Cassandra (the real node in the real-peer tier) is SIGKILLed
// while it writes, twice; `--resume` carries on from its last checkpoint and the output holds
// every row of the table exactly once, its manifest counting each once.
func TestMigrateSIGKILLedThenResumed(t *testing.T) {
	c := cassandratest.Open(t)
	const n = 60000
	seedShop(t, c, n)
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", hashMapping)
	out := filepath.Join(dir, "out")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "rekey.log")
	logTail := func() string {
		data, _ := os.ReadFile(logPath)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		return "--- rekey's output (end) ---\n" + string(data)
	}
	// rate=: the run takes some seconds, so that the kills land while it reads and writes
	args := []string{"migrate", "-m", m, "--source", c.URI("shop", "orders", "splits=32&page_size=500&rate=15000"),
		"--out", out, "--checkpoint-interval", "50ms", "--progress", "never"}
	run := func(resume bool) *exec.Cmd {
		log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		a := args
		if resume {
			a = append(append([]string{}, args...), "--resume")
		}
		fmt.Fprintf(log, "=== %s\n", strings.Join(a, " "))
		cmd := exec.Command(exe, a...)
		cmd.Env = append(os.Environ(), rekeyProcessEnv+"=1")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		return cmd
	}
	// rowsIn is the row count of the output's last checkpoint (0 without one)
	rowsIn := func() int64 {
		data, err := os.ReadFile(filepath.Join(out, output.CheckpointFile))
		if err != nil {
			return 0
		}
		cp, err := output.ParseCheckpoint(data)
		if err != nil {
			return 0 // being replaced
		}
		return cp.RowsIn
	}
	for i, at := range []int64{n / 5, n / 2} {
		before := rowsIn()
		cmd := run(i > 0)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		wait.For(t, func() bool {
			select {
			case <-exited:
				t.Fatalf("rekey ended (%v) before the kill at %d rows\n%s", cmd.ProcessState, at, logTail())
			default:
			}
			return rowsIn() >= at
		}, fmt.Sprintf("a checkpoint past %d rows", at))
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("rekey ended with %v before the SIGKILL\n%s", cmd.ProcessState, logTail())
		}
		if got := rowsIn(); got <= before || got >= n {
			t.Fatalf("kill %d: checkpoint at %d rows (before the run %d), want part of the %d", i+1, got, before, n)
		}
		if _, err := os.Stat(filepath.Join(out, output.ManifestFile)); err == nil {
			t.Fatal("a killed run left a manifest.json")
		}
	}
	cmd := run(true)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the resumed run: %v\n%s", err, logTail())
		}
	case <-time.After(wait.Timeout):
		t.Fatalf("the resumed run did not end within %s\n%s", wait.Timeout, logTail())
	}
	rows, man := outputRows(t, out)
	if len(rows) != n || man.RowsIn != n || man.RowsWritten != n || man.RowsRejected != 0 {
		t.Fatalf("after two kills and a resume: %d rows, manifest in %d written %d rejected %d, want %d", len(rows), man.RowsIn, man.RowsWritten, man.RowsRejected, n)
	}
	// every order once: rows are "rREGION|pk1|orderid|..."
	seen := map[string]bool{}
	for _, r := range rows {
		f := strings.SplitN(r, "|", 4)
		key := f[1] + "|" + f[2]
		if seen[key] {
			t.Fatalf("row %s written twice", key)
		}
		seen[key] = true
	}
}

// A table of a million rows (cassandratest.BigRows) on the real node: `rekey report` reads all of
// it, `rekey migrate` writes every row, the manifest's files holding them all. Skipped with
// -short and on the in-process test server.
func TestMigrateAndReportLargeRealTable(t *testing.T) {
	if testing.Short() {
		t.Skip("loads, reports and migrates a large table; runs in the real-peer tier (without -short)")
	}
	c := cassandratest.Open(t)
	c.Session(t) // the real node
	n := int64(cassandratest.BigRows(t))
	start := time.Now()
	if err := c.LoadBig("big", "rows", int(n)); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d rows in %s", n, time.Since(start).Round(time.Millisecond))
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", "version: 1\nsource:\n  name: big.rows\ntarget:\n  table: rows\n  primary_key: \"[md5(v).substr(0,4) AS h][p][c]\"\nregions:\n  count: 8\n")
	uri := c.URI("big", "rows", "page_size=5000")

	start = time.Now()
	code, out := reportCLI(t, "report", "-m", m, "--source", uri, "--json", filepath.Join(dir, "r.json"))
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	var rep report.Report
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Source.Sampled || rep.Totals.RowsRead != n || rep.Totals.RowsOK != n {
		t.Fatalf("report: sampled %v, %d rows read, %d ok, want all %d", rep.Source.Sampled, rep.Totals.RowsRead, rep.Totals.RowsOK, n)
	}
	t.Logf("report: %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	outDir := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", m, "--source", uri, "--out", outDir, "--progress", "never")
	man, err := outputtest.Manifest(outDir)
	if err != nil {
		t.Fatal(err)
	}
	var inFiles int64
	for _, r := range man.Regions {
		for _, f := range r.Files {
			inFiles += f.Rows
		}
	}
	if man.RowsIn != n || man.RowsWritten != n || inFiles != n {
		t.Fatalf("migrate: manifest in %d written %d, its files %d rows, want %d", man.RowsIn, man.RowsWritten, inFiles, n)
	}
	t.Logf("migrate: %s", time.Since(start).Round(time.Millisecond))
}
