package main

import (
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
