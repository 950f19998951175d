package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCDCBlobsAsTheConnectorWritesThem replicates a blob column from the events the real Debezium
// connector publishes into MariaDB and verifies the table against Cassandra. Kafka Connect's JSON
// converter writes a blob as base64, and some base64 texts begin with "0x": the bytes d3 1d 35 are
// "0x01", which read as hex would be the one byte 01 (and "0xZZ..." no blob at all).
func TestCDCBlobsAsTheConnectorWritesThem(t *testing.T) {
	cas, kc := realConnector(t)
	ks, exec := connectorKeyspace(t, cas, "blobs")
	connectorTable(t, exec, ks, "bl", `(p int PRIMARY KEY, b blob)`)
	for p, b := range []string{
		"0xd31d35",   // base64 "0x01": hex digits after the 0x
		"0xd31d3542", // base64 "0x01Qg==": not hex after the 0x
		"0xd31c6baf", // base64 "0xxrrw==": neither
		"0x00ff10",   // an ordinary blob
		"0x",         // the empty blob
		"0x" + strings.Repeat("ab", 40),
	} {
		exec(`INSERT INTO `+ks+`.bl (p, b) VALUES (?, `+b+`)`, p)
	}
	exec(`INSERT INTO ` + ks + `.bl (p) VALUES (99)`) // a null blob

	srv, conns := sqlServer(t)
	dir := t.TempDir()
	m := writeFile(t, dir, "bl.yaml", "version: 1\nsource:\n  name: "+ks+".bl\n  columns:\n    p: int\n    b: blob\ntarget:\n  table: repl_bl\n  primary_key: \"[p]\"\n")
	srv.Exec(t, mustRun(t, "ddl", "-m", m, "--dialect", srv.DDLDialect()))
	topic := os.Getenv(debeziumPrefixEnv) + "." + ks + ".bl"
	if code, out := replicateAll(t, kc, topic, m, srv.URI(""), conns, filepath.Join(dir, "repl-bl")); code != 0 || !strings.Contains(out, "rejected        0") {
		t.Fatalf("replicate: exit %d, want 0 and nothing rejected\n%s", code, out)
	}
	if code, out, errs := runCLI(t, "verify", "-m", m, "--source", cas.URI(ks, "bl", ""), "--target", srv.URI(""), "--progress", "never"); code != 0 || !strings.Contains(out, "EQUAL") {
		t.Errorf("verify of the replication against Cassandra: exit %d\n%s%s", code, out, errs)
	}
}
