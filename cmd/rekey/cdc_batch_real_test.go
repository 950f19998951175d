package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCDCRangeDeleteBatchedWithANewerWrite: a BATCH that deletes a clustering range and writes a
// row in it at a newer timestamp (USING TIMESTAMP, the idiom that replaces a partition's rows)
// leaves the row in Cassandra, but Debezium's Cassandra connector publishes the row first and
// the range delete after it (written at one timestamp, the delete wins, and the connector
// publishes it alone).
// replicate into a table without cell timestamps rejects the first range delete, code
// range_after_newer_write, instead of removing the row with it, and applies the second; verify
// against Cassandra says EQUAL, and verify against the topic counts the change it skipped.
func TestCDCRangeDeleteBatchedWithANewerWrite(t *testing.T) {
	cas, kc := realConnector(t)
	ks, exec := connectorKeyspace(t, cas, "bat")
	connectorTable(t, exec, ks, "ev", `(a int, b int, x text, PRIMARY KEY (a, b))`)
	topic := os.Getenv(debeziumPrefixEnv) + "." + ks + ".ev"

	for a := 1; a <= 2; a++ {
		exec(fmt.Sprintf(`INSERT INTO %s.ev (a, b, x) VALUES (%d, 1, 'kept') USING TIMESTAMP 1000`, ks, a))
	}
	// the row written 1 µs after the delete stays; the one written with it does not
	exec(`BEGIN BATCH DELETE FROM ` + ks + `.ev USING TIMESTAMP 2000 WHERE a = 1 AND b > 1; ` +
		`INSERT INTO ` + ks + `.ev (a, b, x) VALUES (1, 5, 'newer') USING TIMESTAMP 2001; APPLY BATCH`)
	exec(`BEGIN BATCH DELETE FROM ` + ks + `.ev USING TIMESTAMP 2000 WHERE a = 2 AND b > 1; ` +
		`INSERT INTO ` + ks + `.ev (a, b, x) VALUES (2, 5, 'shadowed') USING TIMESTAMP 2000; APPLY BATCH`)
	waitForMutations(t, kc, topic, 4)

	srv, conns := sqlServer(t)
	dir := t.TempDir()
	mapping := writeFile(t, dir, "ev.yaml", fmt.Sprintf(`version: 1
source:
  name: %s.ev
  columns: {a: int, b: int, x: text}
target:
  table: ev
  primary_key: "[a][b]"
`, ks))
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	code, out := replicateAll(t, kc, topic, mapping, srv.URI(""), conns, filepath.Join(dir, "state"))
	if code != 1 || !strings.Contains(out, "rejected        1") || !strings.Contains(out, "range_after_newer_write") {
		t.Errorf("replicate: exit %d, want 1 and one reject, range_after_newer_write\n%s", code, out)
	}
	if got, want := strings.Join(dumpTable(t, srv.DB(t), "SELECT a, b, x FROM ev ORDER BY a, b"), " | "), "1 1 kept | 1 5 newer | 2 1 kept"; got != want {
		t.Errorf("the table holds %s, want %s", got, want)
	}
	code, vout, errs := runCLI(t, "verify", "-m", mapping, "--source", cas.URI(ks, "ev", ""), "--target", srv.URI(""), "--progress", "never")
	if code != 0 || !strings.Contains(vout+errs, "EQUAL") {
		t.Errorf("verify against Cassandra: exit %d\n%s%s", code, vout, errs)
	}
	// verify of the replication against the topic cannot apply the rejected delete either: the
	// table is not shown to hold what the changes did
	group := kc.Group("kinds-state")
	code, vout, errs = runCLI(t, "verify", "-m", mapping, "--source", "kafka://"+strings.Join(kc.Brokers, ",")+"/"+topic+"?group="+group+"&format=debezium",
		"--target", srv.URI(""), "--progress", "never")
	if code == 0 || !strings.Contains(vout+errs, "DIFFERENT") || !strings.Contains(vout+errs, "range_after_newer_write") {
		t.Errorf("verify against the topic: exit %d, want DIFFERENT naming range_after_newer_write\n%s%s", code, vout, errs)
	}
}
