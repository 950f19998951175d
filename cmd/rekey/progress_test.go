package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// Issue 11.3: with no terminal (Kubernetes, nohup, CI) progress is a plain line per interval:
// no carriage returns, no colour codes, and the figures a person watching a log needs.
func TestPlainProgressLines(t *testing.T) {
	var c pipeline.Counters
	c.RowsIn.Store(1_200_000)
	c.RowsWritten.Store(1_199_990)
	c.RowsRejected.Store(10)
	f := progressFigures{what: "migrating", counters: &c, bytes: func() int64 { return 64 << 20 }, total: 6_000_000}
	line := plainLine(f, 5*time.Second)
	want := "migrating: 1,200,000 rows read, 1,199,990 written, 10 rejected, 240,000 rows/s, 64.0 MiB written, elapsed 5s, ETA 20s (of ~6,000,000)"
	if line != want {
		t.Fatalf("got  %q\nwant %q", line, want)
	}
	if strings.ContainsAny(line, "\r\x1b") {
		t.Fatal("control characters in a plain progress line")
	}
	f.total = -1
	if line := plainLine(f, 5*time.Second); strings.Contains(line, "ETA") {
		t.Fatalf("an ETA without a known total: %s", line)
	}
}

func TestProgressModes(t *testing.T) {
	for _, c := range []struct {
		mode string
		tty  bool
		want string
	}{{"auto", true, "bar"}, {"auto", false, "plain"}, {"always", false, "bar"}, {"never", true, "never"}, {"plain", true, "plain"}} {
		if got, err := progressMode(c.mode, c.tty); err != nil || got != c.want {
			t.Errorf("%s (tty %v): %s %v, want %s", c.mode, c.tty, got, err, c.want)
		}
	}
	if _, err := progressMode("fancy", true); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

// A migrate run without a terminal prints plain progress lines on stderr and no colour codes.
func TestMigrateWithoutTerminalHasNoControlCodes(t *testing.T) {
	dir := t.TempDir()
	_, _, stderr := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=200000",
		"--out", dir+"/out", "--progress-interval", "50ms", "--log-level", "info")
	if !strings.Contains(stderr, "migrating: ") || !strings.Contains(stderr, "rows read") {
		t.Fatalf("no plain progress line:\n%s", stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") {
		t.Fatalf("control characters on a non-terminal stderr:\n%q", stderr)
	}
}
