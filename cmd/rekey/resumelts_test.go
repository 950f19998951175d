package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
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

// A resume not given the bulkload job's flags writes the job the run began with: the first
// attempt's --namespace and --lts-* are kept in its checkpoint. A flag given again with the
// resume takes its place. Before, the resume wrote bulkload.json with the default namespace and
// placeholders for the data sources: a job that loads into another namespace than the run was
// started for.
func TestResumeKeepsTheJobTheRunBeganWith(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	migrate := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=300", "--regions", "2", "--out", out, "--progress", "never"}
	mustRun(t, append(migrate, "--namespace", "prod", "--lts-source", "ld-oss", "--lts-target", "ld-table", "--lts-instances", "3")...)
	job := func() map[string]any {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(out, "bulkload.json"))
		if err != nil {
			t.Fatal(err)
		}
		var j map[string]any
		if err := json.Unmarshal(data, &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	want := job()
	killedAfterTheLastCheckpoint := func() {
		for _, f := range []string{output.ManifestFile, "ddl.sql", "bulkload.json"} {
			if err := os.Remove(filepath.Join(out, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	killedAfterTheLastCheckpoint()
	mustRun(t, append(migrate, "--resume")...)
	if got := job(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the resume's bulkload.json:\n%v\nthe run's first attempt wrote:\n%v", got, want)
	}
	killedAfterTheLastCheckpoint()
	mustRun(t, append(migrate, "--resume", "--lts-target", "ld-table-2")...)
	got := job()
	if got["dst"] != "ld-table-2" || got["src"] != "ld-oss" || !strings.Contains(fmt.Sprint(got["writerConfig"]), "prod") {
		t.Errorf("a resume given --lts-target: %v, want dst ld-table-2 and the rest as the run began", got)
	}
}
