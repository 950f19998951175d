package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
)

// What an output holds of its input's rows (the rejects, the replay file) and the checkpoint
// (it names the source) are the owner's only (0600); the data and the files beside it are 0644
// (before the umask): through migrate and a merge of its shards (TestMigrateIntoSQLTable checks
// a --state folder's checkpoint).
func TestOutputFileModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(probe)
	if err != nil {
		t.Fatal(err)
	}
	umask := 0o666 &^ fi.Mode().Perm()
	export := filepath.Join(dir, "export")
	if err := os.Mkdir(export, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a.csv", "b.csv"} {
		p := ordersCSV(t, export, name, 200, int64(i+1))
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("u1,notanumber,taobao,1700000000000,PAID,X,1.00\n") // one reject per file
		f.Close()
	}
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	var shards []string
	for i, shard := range []string{"0/2", "1/2"} {
		out := filepath.Join(dir, "shard-"+string(rune('0'+i)))
		if code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+export, "--shard", shard, "--out", out, "--progress", "never"); code != exitRejects {
			t.Fatalf("migrate: exit %d, want %d (rejects)\n%s%s", code, exitRejects, stdout, stderr)
		}
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged")
	if code, stdout, stderr := runCLI(t, append([]string{"merge"}, append(shards, "--out", merged)...)...); code != 0 && code != exitRejects {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	private := func(out, name string) bool {
		rel, _ := filepath.Rel(out, name)
		base := filepath.Base(name)
		return base == output.CheckpointFile || base == output.RejectsFile || strings.HasPrefix(base, output.ReplayPrefix) ||
			strings.HasPrefix(filepath.ToSlash(rel), output.ReplayPartsDir+"/")
	}
	seen := map[string]int{}
	for _, out := range append(shards, merged) {
		err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() == output.LockFile {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			want := os.FileMode(0o644) &^ umask
			if private(out, p) {
				want = 0o600
				seen[strings.TrimPrefix(filepath.Base(p), "part-0000")]++
			}
			if got := info.Mode().Perm(); got != want {
				t.Errorf("%s: mode %v, want %v", p, got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// every shard has its checkpoint, rejects and replay file; the merge its rejects and the
	// shards' replay files (rejected-rows/part-00000.csv, part-00001.csv)
	if seen[output.CheckpointFile] != 2 || seen[output.RejectsFile] != 3 || seen[output.ReplayPrefix+"csv"] != 2 || seen["0.csv"] != 1 || seen["1.csv"] != 1 {
		t.Fatalf("private files seen: %v", seen)
	}
}
