package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/sink/sqlsink"
)

// ownerOnlyLines reads a file's lines, checking it is the owner's only.
func ownerOnlyLines(t *testing.T, path string) []string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	return readLines(t, path)
}

// outputRowsByKey reads every row of a migrate --out folder's Parquet files, by their key
// columns joined with "/".
func outputRowsByKey(t *testing.T, out string, schema pipeline.TargetSchema) map[string][]pipeline.Value {
	t.Helper()
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]pipeline.Value{}
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			pf, err := sinktest.ReadParquet(filepath.Join(out, filepath.FromSlash(fe.Path)), schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range pf.Values {
				rows[strings.Join(sinktest.CanonRow(schema, row)[:schema.KeyLen], "/")] = row
			}
		}
	}
	return rows
}

// verify --repair of a folder target with a row deleted, a value changed and a row added: exit
// 2, the repair file holds the source rows of the two keys, the extra key is listed apart, and
// the summary says how to use them. The repair file migrated into a new folder holds exactly the
// rows the first migration wrote for those keys (verify of it against the repair file: EQUAL):
// bulk loaded after the first folder, with its later writerConfig.timestamp, it overwrites the
// changed row and adds the deleted one.
func TestVerifyRepairFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "parquet")
	mapping := "../../mappings/orders.yaml"
	schema := compileFile(t, mapping).Target()
	original := outputRowsByKey(t, out, schema)

	file := fileWithRows(t, out, 4)
	rows := sinktestRows(t, file, schema)
	key := func(vals []pipeline.Value) string { return strings.Join(sinktest.CanonRow(schema, vals)[:2], "/") }
	deleted, changed := key(rows[0]), key(rows[1])
	extra := append([]pipeline.Value(nil), rows[2]...)
	extra[1] = pipeline.Int(-42) // an orderid no source row has
	rows[1] = append([]pipeline.Value(nil), rows[1]...)
	rows[1][schema.Index("status")] = pipeline.Text("TAMPERED")
	rewriteParquet(t, file, schema, append(rows[1:], extra))

	repair := filepath.Join(dir, "repair.jsonl")
	code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", "file:"+csvPath, "--target", out, "--progress", "never", "--repair", repair)
	if code != exitDifferent || !strings.Contains(stdout, "DIFFERENT: 1 missing, 1 differ, 1 extra") ||
		!strings.Contains(stdout, "2 source rows of the 2 keys missing or differing written to "+repair) ||
		!strings.Contains(stdout, "rekey migrate -m "+mapping+" --source file:"+repair+" --out NEW_FOLDER") ||
		!strings.Contains(stdout, "1 keys of target rows the source does not produce listed in "+repair+".extra-keys") {
		t.Fatalf("verify --repair: exit %d\n%s%s", code, stdout, stderr)
	}
	if lines := ownerOnlyLines(t, repair); len(lines) != 2 {
		t.Fatalf("repair file: %q, want the 2 source rows", lines)
	}
	if lines := ownerOnlyLines(t, repair+".extra-keys"); len(lines) != 1 || lines[0] != `{"pk1":"`+extra[0].Str+`","orderid":"-42"}` {
		t.Fatalf("extra keys: %q", lines)
	}
	if _, err := os.Stat(atomicfile.TempPath(repair)); !os.IsNotExist(err) {
		t.Errorf("temporary repair file left: %v", err)
	}

	repairOut := filepath.Join(dir, "repair-out")
	mustRun(t, "migrate", "-m", mapping, "--source", "file:"+repair, "--out", repairOut, "--progress", "never")
	code, stdout, stderr = runCLI(t, "verify", "-m", mapping, "--source", "file:"+repair, "--target", repairOut, "--progress", "never")
	if code != 0 || !strings.Contains(stdout, "EQUAL: the target holds all 2 keys checked and nothing else") {
		t.Fatalf("verify of the repair folder: exit %d\n%s%s", code, stdout, stderr)
	}
	got := outputRowsByKey(t, repairOut, schema)
	if len(got) != 2 {
		t.Fatalf("repair folder holds %d rows, want 2", len(got))
	}
	for _, k := range []string{deleted, changed} {
		if g, w := sinktest.CanonRow(schema, got[k]), sinktest.CanonRow(schema, original[k]); got[k] == nil || !slices.Equal(g, w) {
			t.Errorf("repair row %s: %v, the first migration wrote %v", k, got[k], original[k])
		}
	}
}

// verify --repair of a table with a row deleted and a value changed: exit 2, the repair file
// holds the 2 source rows, and the command the summary prints, run as printed after a migration
// that kept its state in the table's default state folder, migrates it into the same table
// (upserts) and makes verify EQUAL. The printed command used to reuse that folder, which holds
// the migration, and was refused.
func TestVerifyRepairSQLTable(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			src := "gen:orders?rows=3000&seed=5"
			target, err := sqlsink.ParseURI(srv.URI(""), os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			defaultState := filepath.Join(".rekey-state", target.StateKey("orders"))
			t.Cleanup(func() {
				os.RemoveAll(defaultState)
				os.Remove(filepath.Dir(defaultState)) // when no other run keeps its state there
			})
			mustRun(t, "migrate", "-m", mapping, "--source", src, "--out", srv.URI(""), "--sql-conns", conns, "--progress", "never")
			if _, err := os.Stat(filepath.Join(defaultState, "checkpoint.json")); err != nil {
				t.Fatalf("the migration kept no checkpoint in the default state folder: %v", err)
			}
			deleteOneChangeOne(t, srv.DB(t))
			repair := filepath.Join(t.TempDir(), "repair.jsonl")
			verifyArgs := []string{"verify", "-m", mapping, "--source", src, "--target", srv.URI(""), "--progress", "never"}
			code, stdout, errs := runCLI(t, append(verifyArgs, "--repair", repair)...)
			if code != exitDifferent || !strings.Contains(stdout, "DIFFERENT: 1 missing, 1 differ") {
				t.Fatalf("verify --repair of a tampered table: exit %d\n%s%s", code, stdout, errs)
			}
			printed := firstLine(stdout, "rekey migrate")
			args := shellWords(strings.TrimSpace(printed))
			if len(args) < 2 || args[0] != "rekey" || !slices.Contains(args, "file:"+repair) || !slices.Contains(args, srv.URI("")) {
				t.Fatalf("the repair command printed: %q\n%s", printed, stdout)
			}
			if name == "gms" { // its memory tables lose concurrent writes (sqlServers): MariaDB runs it as printed
				args = append(args, "--sql-conns", conns)
			}
			if code, out, errs := runCLI(t, args[1:]...); code != 0 {
				t.Fatalf("the repair command as printed (%s): exit %d\n%s%s", printed, code, out, errs)
			}
			if lines := ownerOnlyLines(t, repair); len(lines) != 2 {
				t.Fatalf("repair file: %q, want the 2 source rows", lines)
			}
			if _, err := os.Stat(repair + ".extra-keys"); !os.IsNotExist(err) {
				t.Errorf("an extra-keys file for a table read by key: %v", err)
			}
			code, stdout, errs = runCLI(t, append(verifyArgs, "--repair", repair+".again.jsonl")...)
			if code != 0 || !strings.Contains(stdout, "EQUAL: the target holds all 3000 keys checked") {
				t.Fatalf("verify after the repair: exit %d\n%s%s", code, stdout, errs)
			}
			if _, err := os.Stat(repair + ".again.jsonl"); !os.IsNotExist(err) {
				t.Errorf("a repair file written with nothing to repair: %v", err)
			}
		})
	}
}

// The repair file reads back as the very values the source gave, whatever the type: every row of
// a JSON Lines source of blobs, decimals with trailing zeros, timestamps before 1970 and in
// seconds, floats, dates, sets, empty texts and nulls goes missing from the target, and the
// repair file migrated into a new folder writes the same rows as the first migration.
func TestVerifyRepairFileKeepsTypes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", `version: 1
source:
  name: things
  columns: {id: bigint, b: blob, d: decimal, ts: timestamp, f: float, day: date, tags: set<text>, t: text, n: text}
target:
  table: things
  primary_key: "[id]"
`)
	var in strings.Builder
	vals := []string{
		`"b":"0x00ff10","d":1.50,"ts":"1969-12-31T23:59:59.999Z","f":0.1,"day":"1900-02-28","tags":["b","a"],"t":"","n":null`,
		`"b":"0x","d":-0.000001,"ts":1700000000123,"f":-3.4e38,"day":"2024-02-29","tags":[],"t":"null","n":"\"q\"\n\\é"`,
		`"b":null,"d":null,"ts":null,"f":null,"day":null,"tags":null,"t":null,"n":""`,
		`"b":"0x0102","d":12345678901234567890.123,"ts":"2024-01-02T03:04:05+08:00","f":1e-40,"day":"0001-01-01","tags":["x"],"t":" ","n":"0x01"`,
	}
	for i := range 40 {
		fmt.Fprintf(&in, `{"id":%d,%s}`+"\n", i, vals[i%len(vals)])
	}
	src := "file:" + writeFile(t, dir, "in.jsonl", in.String())
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", mapping, "--source", src, "--out", out, "--progress", "never")
	schema := compileFile(t, mapping).Target()
	original := outputRowsByKey(t, out, schema)
	if len(original) != 40 {
		t.Fatalf("the first migration wrote %d rows, want 40", len(original))
	}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			rewriteParquet(t, filepath.Join(out, filepath.FromSlash(fe.Path)), schema, nil) // every row gone
		}
	}
	repair := filepath.Join(dir, "repair.jsonl")
	code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", src, "--target", out, "--progress", "never", "--repair", repair)
	if code != exitDifferent || !strings.Contains(stdout, "40 source rows of the 40 keys missing or differing") {
		t.Fatalf("verify --repair: exit %d\n%s%s", code, stdout, stderr)
	}
	repairOut := filepath.Join(dir, "repair-out")
	mustRun(t, "migrate", "-m", mapping, "--source", "file:"+repair, "--out", repairOut, "--progress", "never")
	got := outputRowsByKey(t, repairOut, schema)
	if len(got) != len(original) {
		t.Fatalf("the repair folder holds %d rows, want %d", len(got), len(original))
	}
	for k, want := range original {
		if g, w := sinktest.CanonRow(schema, got[k]), sinktest.CanonRow(schema, want); got[k] == nil || !slices.Equal(g, w) {
			t.Errorf("row %s: repair %q, first migration %q", k, g, w)
		}
	}
}

// A copy of a data file beside it is extra rows of keys the source has: no migrate removes them,
// so verify --repair writes no file and says what to remove instead.
func TestVerifyRepairOfACopiedDataFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "parquet")
	file := fileWithRows(t, out, 1)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows := len(sinktestRows(t, file, compileFile(t, "../../mappings/orders.yaml").Target()))
	writeFile(t, filepath.Dir(file), "part-copy.parquet", string(data))
	repair := filepath.Join(dir, "repair.jsonl")
	code, stdout, stderr := runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "file:"+csvPath, "--target", out, "--progress", "never", "--repair", repair)
	if code != exitDifferent || !strings.Contains(stdout, "no file written: no key is missing or differs") ||
		!strings.Contains(stdout, fmt.Sprintf("%d extra target rows repeat keys the source has", rows)) {
		t.Fatalf("verify --repair with a copied data file: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(repair); !os.IsNotExist(err) {
		t.Errorf("a repair file with nothing a migrate can repair: %v", err)
	}
}

// sinktestRows reads a Parquet data file's rows.
func sinktestRows(t *testing.T, file string, schema pipeline.TargetSchema) [][]pipeline.Value {
	t.Helper()
	pf, err := sinktest.ReadParquet(file, schema)
	if err != nil {
		t.Fatal(err)
	}
	return pf.Values
}

// verify --repair writes its files only when there is something to repair: a file an earlier
// run left at those paths is removed when this run has nothing for it, and the summary says so.
// Before, an EQUAL run left the earlier repair rows and extra keys in place, and a user could
// apply rows and delete keys this run no longer finds wrong.
func TestVerifyRepairRemovesAnEarlierRunsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "parquet")
	mapping := "../../mappings/orders.yaml"
	repair := filepath.Join(dir, "repair.jsonl")
	for _, p := range []string{repair, repair + ".extra-keys"} {
		if err := os.WriteFile(p, []byte(`{"stale":"an earlier run's"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", "file:"+csvPath, "--target", out, "--progress", "never", "--repair", repair)
	if code != 0 {
		t.Fatalf("verify --repair of an equal target: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, p := range []string{repair, repair + ".extra-keys"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s of an earlier run is still there after a run with nothing to repair (%v)\n%s", p, err, stdout)
		}
	}
	if !strings.Contains(stdout, "removed "+repair+" and "+repair+".extra-keys, an earlier run's") {
		t.Errorf("the summary does not say the earlier run's files were removed\n%s", stdout)
	}

	// a sampled run did not check the keys outside its sample: an earlier run's files stay
	if err := os.WriteFile(repair, []byte(`{"stale":"an earlier run's"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "verify", "-m", mapping, "--source", "file:"+csvPath, "--target", out, "--progress", "never", "--repair", repair, "--sample", "10%")
	if _, err := os.Stat(repair); code != 0 || err != nil {
		t.Errorf("a sampled verify --repair: exit %d, the earlier run's file: %v\n%s%s", code, err, stdout, stderr)
	}
	os.Remove(repair)

	// rows to repair, no extra key: the earlier extra keys go
	if err := os.WriteFile(repair+".extra-keys", []byte(`{"stale":"an earlier run's"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	schema := compileFile(t, mapping).Target()
	file := fileWithRows(t, out, 2)
	rows := sinktestRows(t, file, schema)
	rewriteParquet(t, file, schema, rows[1:])
	code, stdout, stderr = runCLI(t, "verify", "-m", mapping, "--source", "file:"+csvPath, "--target", out, "--progress", "never", "--repair", repair)
	if code != exitDifferent || len(ownerOnlyLines(t, repair)) != 1 {
		t.Fatalf("verify --repair of a target missing a row: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(repair + ".extra-keys"); !os.IsNotExist(err) {
		t.Errorf("the earlier run's extra keys are still there after a run that found none (%v)\n%s", err, stdout)
	}
}

// --repair naming a file the source reads is refused (exit 3) before anything is written: the
// repair file replaces the one at its path, or removes it when there is nothing to repair. Before,
// verify of a repair's migrate against the repair file itself (--source file:repair.jsonl ...
// --repair repair.jsonl) found it EQUAL and removed repair.jsonl, "an earlier run's".
func TestVerifyRepairIntoItsOwnSourceRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	src := ordersCSV(t, dir, "orders.csv", 200, 1)
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", mapping, "--source", "file:"+src, "--out", out, "--progress", "never")
	repair := filepath.Join(dir, "repair.jsonl")
	rows := `{"userid":"u1","orderid":1,"channel":"taobao","ts":"2024-01-02T00:00:00Z","status":"PAID","location":"x","amount":"1.25"}` + "\n"
	writeFile(t, dir, "repair.jsonl", rows)
	repaired := filepath.Join(dir, "repaired")
	mustRun(t, "migrate", "-m", mapping, "--source", "file:"+repair, "--out", repaired, "--progress", "never")
	code, stdout, errs := runCLI(t, "verify", "-m", mapping, "--source", "file:"+repair, "--target", repaired, "--repair", repair, "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(errs, "--repair") || !strings.Contains(errs, "name another file") {
		t.Errorf("--repair naming the source: exit %d, want %d refusing it\n%s%s", code, exitVerifyFailed, stdout, errs)
	}
	if got, err := os.ReadFile(repair); err != nil || string(got) != rows {
		t.Errorf("the source %s is gone or changed (%v)", repair, err)
	}
}
