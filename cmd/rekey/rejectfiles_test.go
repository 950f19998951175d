package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// A run without rejects writes no rejects file and no replay file (not an empty rejects.jsonl
// nor a header-only rejected-rows.csv), in a folder and in a bucket; resume, verify and merge
// work without them. A run with one reject writes both, the replay file under the input's header.
func TestCleanRunWritesNoRejectsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	const header = "userid,orderid,channel,ts,status,location,amount\n"
	var clean, dirty strings.Builder
	clean.WriteString(header)
	dirty.WriteString(header)
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&clean, "u%d,%d,taobao,1700000000000,PAID,Hangzhou,%d.25\n", i, i, i%100)
		orderid := fmt.Sprint(i)
		if i == 50 {
			orderid = "o50"
		}
		fmt.Fprintf(&dirty, "u%d,%s,taobao,1700000000000,PAID,Hangzhou,%d.25\n", i, orderid, i%100)
	}
	cleanCSV := writeFile(t, dir, "clean.csv", clean.String())
	dirtyCSV := writeFile(t, dir, "dirty.csv", dirty.String())
	noRejects := func(out string) {
		t.Helper()
		for _, name := range []string{output.RejectsFile, "rejected-rows.csv", output.RejectsPartsDir, output.ReplayPartsDir} {
			if _, err := os.Stat(filepath.Join(out, name)); err == nil {
				t.Errorf("%s holds %s after a run without rejects", out, name)
			}
		}
	}

	out := filepath.Join(dir, "clean")
	migrate := []string{"migrate", "-m", mapping, "--source", "file:" + cleanCSV, "--out", out, "--progress", "never"}
	mustRun(t, migrate...)
	noRejects(out)
	if text := mustRun(t, append(migrate, "--resume")...); !strings.Contains(text, "nothing to resume") {
		t.Errorf("--resume of the complete run:\n%s", text)
	}
	if text := mustRun(t, "verify", "-m", mapping, "--source", "file:"+cleanCSV, "--target", out, "--progress", "never"); !strings.Contains(text, "EQUAL") {
		t.Errorf("verify of the run:\n%s", text)
	}
	var shards []string
	for i := range 2 {
		shard := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=200", "--shard", fmt.Sprintf("%d/2", i), "--regions", "4", "--out", shard, "--progress", "never")
		noRejects(shard)
		shards = append(shards, shard)
	}
	merged := filepath.Join(dir, "merged")
	mustRun(t, "merge", shards[0], shards[1], "--out", merged)
	noRejects(merged)

	withReject := filepath.Join(dir, "dirty")
	if code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+dirtyCSV, "--out", withReject, "--progress", "never"); code != 1 {
		t.Fatalf("one bad row: exit %d\n%s%s", code, stdout, stderr)
	}
	if lines := readLines(t, filepath.Join(withReject, output.RejectsFile)); len(lines) != 1 {
		t.Errorf("rejects.jsonl: %d lines, want 1", len(lines))
	}
	if replay := readLines(t, filepath.Join(withReject, "rejected-rows.csv")); len(replay) != 2 || replay[0]+"\n" != header || !strings.HasPrefix(replay[1], "u50,o50,") {
		t.Errorf("rejected-rows.csv: %q, want the header and the bad row", replay)
	}

	if testing.Short() {
		return
	}
	srv := startVersitygw(t)
	code, stdout, stderr := runCLIWithEnv(t, srv.Env, "migrate", "-m", mapping, "--source", "file:"+cleanCSV, "--out", srv.URIFor("clean"), "--progress", "never")
	if code != 0 {
		t.Fatalf("into a bucket: exit %d\n%s%s", code, stdout, stderr)
	}
	noRejects(filepath.Join(srv.Dir, s3test.Bucket, "clean"))
}
