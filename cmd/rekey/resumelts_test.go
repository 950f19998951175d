package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --resume of a run that finished writes nothing, so a bulkload job's flag given with it
// (--lts-source, --lts-target, --namespace, --lts-driver-spec, --lts-instances) would change
// nothing: it is refused (exit 2) naming the flag and bulkload.json, which keeps what the finished
// run wrote. Before, the run said "nothing to resume" and bulkload.json kept the old src.
func TestResumeOfAFinishedRunRefusesJobFlags(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	migrate := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=300", "--regions", "2", "--out", out, "--progress", "never"}
	mustRun(t, migrate...)
	before, err := os.ReadFile(filepath.Join(out, "bulkload.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, append(migrate, "--resume", "--lts-source", "ld-oss-new")...)
	if code != 2 || !strings.Contains(stderr, "--lts-source") || !strings.Contains(stderr, "bulkload.json") {
		t.Errorf("--resume --lts-source of a finished run: exit %d, want 2 naming the flag and bulkload.json\n%s%s", code, stdout, stderr)
	}
	after, err := os.ReadFile(filepath.Join(out, "bulkload.json"))
	if err != nil || string(after) != string(before) {
		t.Errorf("bulkload.json changed by a refused run (%v)", err)
	}
	if text := mustRun(t, append(migrate, "--resume")...); !strings.Contains(text, "nothing to resume") {
		t.Errorf("--resume alone of the finished run:\n%s", text)
	}
}
