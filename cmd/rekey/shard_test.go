package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShardRefusedForSourcesThatCannotShard: --shard was ignored for file sources, so every
// shard read the whole file and merge combined full copies (rows in 4000020 from 2,000,010
// rows). Only Cassandra sources read a share of their input: --shard with file:, gen: or
// kafka:// exits 2 before anything is read or written, --help says where it applies, and merge
// refuses two outputs that read the same source.
func TestShardRefusedForSourcesThatCannotShard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csv := bigOrdersCSV(t, dir, 50)
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	for _, src := range []string{"file:" + csv, csv, "gen:orders?rows=100", "kafka://127.0.0.1:1/orders?format=json"} {
		out := filepath.Join(dir, "shard-of-"+strings.NewReplacer("/", "_", ":", "_", "?", "_").Replace(src))
		code, _, errs := runCLI(t, "migrate", "-m", mapping, "--source", src, "--shard", "0/2", "--out", out, "--progress", "never")
		if code != 2 || !strings.Contains(errs, "--shard 0/2: only a Cassandra source") {
			t.Errorf("--source %s --shard 0/2: exit %d, %s", src, code, errs)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("--source %s --shard 0/2: the refused run made %s (%v)", src, out, err)
		}
	}
	if help := mustRun(t, "migrate", "--help"); !strings.Contains(help, "Cassandra sources only") {
		t.Errorf("migrate --help does not say which sources --shard applies to:\n%s", help)
	}
	// two full runs of one file (what two "shards" of it were) are not merged into a double count
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
