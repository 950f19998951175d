package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rekey/rekey/output/outputtest"
)

// Files and generators read in shards: each shard of a directory reads whole files (balanced by
// size), each shard of gen: its rows; merge of all the shards equals one run (verify EQUAL against
// the whole source), and merge refuses a shard missing or given twice. --shard is refused where a
// source cannot shard (Kafka; one CSV file, whose quoted fields may span lines, for more shards
// than files: shard_bytes_test.go splits files that can be), before anything is written,
// and merge refuses two full runs of one source (what --shard once silently made of a file).
func TestShardsOfFilesAndGenMergeIntoOneRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	for _, c := range shardCases(t, dir) {
		var outs []string
		for i := range c.shards {
			out := filepath.Join(dir, fmt.Sprintf("%s-shard-%d", c.name, i))
			mustRun(t, "migrate", "-m", mapping, "--source", c.source, "--shard", fmt.Sprintf("%d/%d", i, c.shards), "--regions", "4", "--out", out, "--progress", "never")
			outs = append(outs, out)
		}
		if code, _, errs := runCLI(t, "merge", outs[0], outs[0], "--out", filepath.Join(dir, c.name+"-twice")); code != 2 {
			t.Errorf("%s: merge of one shard twice: exit %d, %s", c.name, code, errs)
		}
		if code, _, errs := runCLI(t, append([]string{"merge"}, append(outs[1:], "--out", filepath.Join(dir, c.name+"-short"))...)...); code != 2 || !strings.Contains(errs, "shard 0/") {
			t.Errorf("%s: merge without shard 0: exit %d, %s", c.name, code, errs)
		}
		merged := filepath.Join(dir, c.name+"-all")
		mustRun(t, append([]string{"merge"}, append(outs, "--out", merged)...)...)
		m, err := outputtest.Manifest(merged)
		if err != nil {
			t.Fatal(err)
		}
		if m.RowsIn != c.rows || m.RowsWritten != c.rows {
			t.Errorf("%s: merged %d rows in, %d written; the source holds %d", c.name, m.RowsIn, m.RowsWritten, c.rows)
		}
		if code, stdout, errs := runCLI(t, "verify", "-m", mapping, "--source", c.source, "--target", merged, "--progress", "never"); code != 0 || !strings.Contains(stdout, "EQUAL") {
			t.Errorf("%s: verify of the merged shards against the whole source: exit %d\n%s%s", c.name, code, stdout, errs)
		}
	}

	csv := bigOrdersCSV(t, dir, 50)
	for _, c := range []struct{ source, want string }{
		{"kafka://127.0.0.1:1/orders?format=json", "a Kafka topic is not read in shards"},
		{"file:" + csv, "1 file(s) for 2 shards"},
	} {
		out := filepath.Join(dir, "refused-"+strings.NewReplacer("/", "_", ":", "_", "?", "_").Replace(c.source))
		code, _, errs := runCLI(t, "migrate", "-m", mapping, "--source", c.source, "--shard", "0/2", "--out", out, "--progress", "never")
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("--source %s --shard 0/2: exit %d, want 2 saying %q: %s", c.source, code, c.want, errs)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("--source %s --shard 0/2: the refused run made %s (%v)", c.source, out, err)
		}
	}
	// two full runs of one file are not merged into a double count
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, out := range []string{a, b} {
		mustRun(t, "migrate", "-m", mapping, "--source", "file:"+csv, "--out", out, "--progress", "never")
	}
	code, stdout, errs := runCLI(t, "merge", a, b, "--out", filepath.Join(dir, "merged"))
	if code != 2 || !strings.Contains(errs, "read the same source") {
		t.Fatalf("merge of two runs of one file: exit %d\n%s%s", code, stdout, errs)
	}
}

// The other Cassandra-only flags (--rate, credentials, TLS) were ignored for any other source: a
// --rate meant to protect a cluster did nothing on a file. They are refused, naming the flags.
func TestCassandraFlagsRefusedForOtherSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csv := bigOrdersCSV(t, dir, 20)
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "-m", mapping, "--source", "file:" + csv, "--out", filepath.Join(dir, "o1"), "--rate", "100", "--progress", "never"}, "--rate: Cassandra sources only"},
		{[]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", filepath.Join(dir, "o2"), "--cassandra-tls", "--cassandra-user", "u", "--progress", "never"}, "--cassandra-tls, --cassandra-user: Cassandra sources only"},
		{[]string{"report", "-m", mapping, "--source", "file:" + csv, "--rate", "5", "--progress", "never"}, "--rate: Cassandra sources only"},
		{[]string{"check", "-m", mapping, "--cassandra-ca", "ca.pem"}, "and no --source is not one"},
		// --max-record-size bounds a file's records; a generator or a table has none to bound
		{[]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", filepath.Join(dir, "o3"), "--max-record-size", "1MiB", "--progress", "never"}, "--max-record-size: file sources only"},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, %s", strings.Join(c.args, " "), code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o1")); !os.IsNotExist(err) {
		t.Errorf("the refused run made its --out (%v)", err)
	}
	code, _, errs := runCLI(t, "verify", "-m", mapping, "--source", "file:"+csv, "--target", filepath.Join(dir, "o1"), "--rate", "5")
	if code != exitVerifyFailed || !strings.Contains(errs, "--rate: Cassandra sources only") {
		t.Errorf("verify --rate with a file: exit %d, %s", code, errs)
	}
}

// The N shards of a migration write one --out together (--shared-out): each puts its data files
// straight into data/ under names of its own and keeps its checkpoint, rejects and manifest in
// shards/<i>-of-<N>/. merge --out with no inputs then writes only metadata: the data files stay
// the very files the shards wrote (same inodes), the manifest lists them all with the totals
// summed, verify finds the whole source, and run again it writes the same manifest. It refuses
// to finish before every shard is complete, and --files (nothing is placed).
func TestShardsWriteOneOutTogether(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	for _, c := range shardCases(t, dir) {
		out := filepath.Join(dir, c.name)
		for i := range c.shards {
			shard := fmt.Sprintf("%d/%d", i, c.shards)
			code, stdout, errs := runCLI(t, "migrate", "-m", mapping, "--source", c.source, "--shard", shard, "--shared-out", "--regions", "4", "--out", out, "--progress", "never")
			if code != 0 || !strings.Contains(stdout, "rekey merge --out "+out) {
				t.Fatalf("%s: shard %s: exit %d\n%s%s", c.name, shard, code, stdout, errs)
			}
			if i == 0 {
				if code, _, errs := runCLI(t, "merge", "--out", out); code != 2 || !strings.Contains(errs, fmt.Sprintf("shard 1/%d", c.shards)) || !strings.Contains(errs, "missing") {
					t.Errorf("%s: finishing before every shard ran: exit %d, %s", c.name, code, errs)
				}
			}
		}
		data := map[string]os.FileInfo{}
		filepath.WalkDir(filepath.Join(out, "data"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data[p], _ = os.Stat(p)
			}
			return err
		})
		if code, _, errs := runCLI(t, "merge", "--out", out, "--files", "copy"); code != 2 || !strings.Contains(errs, "--files applies to merging outputs") {
			t.Errorf("%s: merge --out with --files and no inputs: exit %d, %s", c.name, code, errs)
		}
		if fin := mustRun(t, "merge", "--out", out); strings.Contains(fin, "rejected rows:") {
			t.Errorf("%s: the finishing step points at rejected rows where none were rejected:\n%s", c.name, fin) // gen rows are all valid
		}
		m, err := outputtest.Manifest(out)
		if err != nil {
			t.Fatal(err)
		}
		if m.RowsIn != c.rows || m.RowsWritten != c.rows || m.Files != len(data) {
			t.Errorf("%s: finished with %d rows in, %d written, %d files; the source holds %d rows, data/ %d files", c.name, m.RowsIn, m.RowsWritten, m.Files, c.rows, len(data))
		}
		for _, r := range m.Regions {
			for _, f := range r.Files {
				before, ok := data[filepath.Join(out, filepath.FromSlash(f.Path))]
				now, err := os.Stat(filepath.Join(out, filepath.FromSlash(f.Path)))
				if !ok || err != nil || !os.SameFile(before, now) {
					t.Errorf("%s: the manifest lists %s, not a file a shard wrote there (%v)", c.name, f.Path, err)
				}
			}
		}
		if code, stdout, errs := runCLI(t, "verify", "-m", mapping, "--source", c.source, "--target", out, "--progress", "never"); code != 0 || !strings.Contains(stdout, "EQUAL") {
			t.Errorf("%s: verify of the finished shards against the whole source: exit %d\n%s%s", c.name, code, stdout, errs)
		}
		mustRun(t, "merge", "--out", out)
		again, err := outputtest.Manifest(out)
		if err != nil {
			t.Fatal(err)
		}
		if again.RowsIn != m.RowsIn || !reflect.DeepEqual(again.Regions, m.Regions) {
			t.Errorf("%s: finished twice, the manifests differ", c.name)
		}
	}
	// --shared-out is refused where it does not apply, and a whole-table run in a shared output
	code, _, errs := runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--shared-out", "--out", filepath.Join(dir, "whole"), "--progress", "never")
	if code != 2 || !strings.Contains(errs, "--shared-out needs --shard") {
		t.Errorf("--shared-out without --shard: exit %d, %s", code, errs)
	}
	code, _, errs = runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", filepath.Join(dir, "gen"), "--overwrite", "--progress", "never")
	if code != 2 || !strings.Contains(errs, "holds the shards of a migration") {
		t.Errorf("a whole-table run --overwrite into the shards' output: exit %d, %s", code, errs)
	}
}

// shardCase is a source read in shards: a folder of files, or gen: rows.
type shardCase struct {
	name, source string
	shards       int
	rows         int64
}

// shardCases are the sources read in shards: an export of unequal files in dir, and gen:.
func shardCases(t *testing.T, dir string) []shardCase {
	export, total := ordersExport(t, dir)
	return []shardCase{{"files", "file:" + export, 3, total}, {"gen", "gen:orders?rows=5000", 2, 5000}}
}

// ordersExport writes an export of 5 orders CSV files of unequal sizes (shards are balanced by
// size) into dir/export, and returns the folder and its row count.
func ordersExport(t *testing.T, dir string) (string, int64) {
	export := filepath.Join(dir, "export")
	if err := os.Mkdir(export, 0o755); err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for i, rows := range []int64{900, 300, 250, 200, 120} {
		ordersCSV(t, export, fmt.Sprintf("part-%d.csv", i), rows, int64(i+1))
		total += rows
	}
	return export, total
}
