package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A row a table target refuses before sending it (a NaN or infinite DOUBLE has no SQL literal:
// migrate rejects it, target_refused) is a reject to verify too, not a missing row. Before,
// verify said "rows rejected 0 (migrate rejects them too)" and DIFFERENT: 1 missing, a row no
// repair could write.
func TestVerifySQLTargetCountsRowsItRefusesAsRejected(t *testing.T) {
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", `version: 1
source:
  name: readings
  columns: {id: bigint, v: double}
target:
  table: readings
  primary_key: "[id]"
`)
	src := "file:" + writeFile(t, dir, "in.csv", "id,v\n1,1.5\n2,NaN\n3,2.5\n4,Infinity\n")
	srv, conns := sqlServer(t)
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	if code, out, errs := runCLI(t, "migrate", "-m", mapping, "--source", src, "--out", srv.URI(""),
		"--sql-conns", conns, "--state", filepath.Join(t.TempDir(), "state"), "--progress", "never"); code != 1 || !strings.Contains(out, "target_refused  2") {
		t.Fatalf("migrate: exit %d, want 1 with 2 rows refused\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "verify", "-m", mapping, "--source", src, "--target", srv.URI(""), "--progress", "never")
	if code != 0 || !strings.Contains(out, "rows rejected  2") {
		t.Errorf("verify: exit %d, want 0 with the 2 rows the target refuses rejected\n%s%s", code, out, errs)
	}
}
