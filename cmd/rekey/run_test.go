package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A run writes only to the streams it is given: its logs to stderr (JSON lines with
// --log-format json), its summary to stdout, and reads the environment through getenv, so
// that runs in one process share nothing.
func TestRunUsesItsOwnStreamsAndEnvironment(t *testing.T) {
	t.Parallel()
	var stdout, stderr lockedBuffer
	var mu sync.Mutex
	asked := map[string]bool{}
	getenv := func(k string) string { mu.Lock(); defer mu.Unlock(); asked[k] = true; return "" }
	out := filepath.Join(t.TempDir(), "out")
	code := run(context.Background(), []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=100",
		"--out", out, "--progress", "never", "--log-level", "info", "--log-format", "json"}, strings.NewReader(""), &stdout, &stderr, getenv)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for _, l := range lines {
		var entry struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if err := json.Unmarshal([]byte(l), &entry); err != nil || entry.Level == "" {
			t.Fatalf("stderr holds a line that is not a JSON log line (%v): %q", err, l)
		}
	}
	if len(lines) < 2 {
		t.Fatalf("no info logs on the run's stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "100") || strings.Contains(stdout.String(), `"level"`) {
		t.Fatalf("stdout does not hold the summary alone:\n%s", stdout.String())
	}
	if !asked["GOMEMLIMIT"] {
		t.Fatalf("the run did not read GOMEMLIMIT through getenv (asked %v)", asked)
	}
}
