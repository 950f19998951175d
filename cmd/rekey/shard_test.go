package main

import (
	"fmt"
	"os"
	"path/filepath"
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
	export := filepath.Join(dir, "export")
	if err := os.Mkdir(export, 0o755); err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for i, rows := range []int64{900, 300, 250, 200, 120} { // unequal files: balanced by size
		ordersCSV(t, export, fmt.Sprintf("part-%d.csv", i), rows, int64(i+1))
		total += rows
	}
	for _, c := range []struct {
		name, source string
		shards       int
		rows         int64
	}{
		{"files", "file:" + export, 3, total},
		{"gen", "gen:orders?rows=5000", 2, 5000},
	} {
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
