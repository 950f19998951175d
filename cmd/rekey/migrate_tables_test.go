package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/store"
)

var transactionMappings = []string{
	"mappings/transactions_by_seller.yaml", "mappings/transactions_by_buyer.yaml", "mappings/transactions_by_order.yaml",
}

// Several --mapping fill one output per table from one read of the source: docs/outputs.md's
// worked example runs as written (its --out in a temporary folder) and prints the lines the page
// shows; each output holds exactly what migrating its mapping alone gives (data files, rejects,
// DDL), and the summary checks that every table accounts for every row read.
func TestMigrateSeveralTablesFromOneRead(t *testing.T) {
	dir := t.TempDir()
	section := docSection(t, "docs/outputs.md", "## One read, several tables: repeat `--mapping`")
	block := strings.Split(section, "\n```\n")[1]
	lines := strings.Split(block, "\n")
	cmd, ok := strings.CutPrefix(lines[0], "$ rekey ")
	if !ok {
		t.Fatalf("the worked example does not start with $ rekey: %q", lines[0])
	}
	args := shellWords(cmd)
	for i := range args {
		if args[i] == "--out" {
			args[i+1] = filepath.Join(dir, "all")
		}
	}
	t.Chdir("../..")
	code, stdout, stderr := runCLI(t, append(args, "--workers", "2", "--progress", "never")...)
	if code != 1 { // the example holds one row no table can take
		t.Fatalf("exit %d, want 1 (completed with rejects)\n%s\n%s", code, stdout, stderr)
	}
	at := 0
	for _, seg := range strings.Split(strings.Join(lines[1:], "\n"), "\n...\n") {
		i := strings.Index(stdout[at:], seg)
		if i < 0 {
			t.Fatalf("the page shows lines the command does not print (after byte %d):\n%s\n\nit prints:\n%s", at, seg, stdout)
		}
		at += i + len(seg)
	}
	src := "file:docs/examples/transactions.csv"
	for _, m := range transactionMappings {
		table := strings.TrimSuffix(filepath.Base(m), ".yaml")
		alone := filepath.Join(dir, "alone", table)
		if code, out, errOut := runCLI(t, "migrate", "-m", m, "--source", src, "--out", alone, "--workers", "1", "--progress", "never"); code != 1 {
			t.Fatalf("%s alone: exit %d\n%s\n%s", table, code, out, errOut)
		}
		together := filepath.Join(dir, "all", table)
		for _, f := range []string{"data/region-0000/part-00000.parquet", "rejects.jsonl", "ddl.sql"} {
			a, err := os.ReadFile(filepath.Join(alone, f))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(together, f))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s/%s differs between the run of its mapping alone and the run of all three", table, f)
			}
		}
		if _, err := os.Stat(filepath.Join(together, "manifest.json")); err != nil {
			t.Errorf("%s: no manifest.json: %v", table, err)
		}
	}
}

// What a run of several mappings cannot do is refused before anything is read, saying why.
func TestMigrateSeveralTablesRefusals(t *testing.T) {
	dir := t.TempDir()
	t.Chdir("../..")
	base := []string{"migrate", "-m", transactionMappings[0], "-m", transactionMappings[1], "--source", "file:docs/examples/transactions.csv", "--progress", "never"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", filepath.Join(dir, "a"), "--resume"}, "cannot --resume"},
		{[]string{"--out", "mysql://root@127.0.0.1:3306/shop"}, "run one migrate per mapping"},
		{[]string{"--out", filepath.Join(dir, "b"), "--stats-json", filepath.Join(dir, "s.json")}, "--stats-json"},
		{[]string{"--out", filepath.Join(dir, "c"), "-m", transactionMappings[0]}, "both fill table transactions_by_seller"},
		{[]string{"--out", filepath.Join(dir, "d"), "-m", "mappings/orders.yaml"}, "same source.columns"},
	} {
		code, _, stderr := runCLI(t, append(append([]string{}, base...), c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}

// The progress of a run filling several tables counts the rows read: each table writes and
// rejects its own rows, so one table's figures are not the run's. Before, the line showed the
// first table's, "0 rejected" while the second rejected a row.
func TestSeveralTablesProgressShowsNoOneTablesFigures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	src := writeFile(t, dir, "rows.csv", "id,code,v\n1,x,a\n2,,b\n3,y,c\n") // row 2 has no code: by_code rejects it
	code, stdout, stderr := runCLI(t, "migrate", "-m", a, "-m", b, "--source", "file:"+src, "--out", filepath.Join(dir, "out"), "--progress", "plain")
	if code != exitRejects || !strings.Contains(stdout, "table by_code  2 written + 1 rejected = 3 rows read: ok") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "migrating 2 tables: 3 rows,") || strings.Contains(stderr, "written, 0 rejected") {
		t.Fatalf("progress of two tables:\n%s", stderr)
	}
}

// A run of several tables refused for one table's region plan leaves --out as it found it:
// before, the tables before it had locked their outputs, creating --out/<table>/.rekey.lock.
func TestMigrateTablesRefusedPlanCreatesNothing(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	var in strings.Builder
	if code := run(context.Background(), []string{"gen", "transactions", "--rows", "20"}, strings.NewReader(""), &in, io.Discard, os.Getenv); code != 0 {
		t.Fatalf("gen: exit %d", code)
	}
	// transactions_by_order's quantile plan needs a sample, which stdin cannot give before it is read
	args := []string{"migrate", "--source", "file:-?format=csv", "--out", out, "--progress", "never"}
	for _, m := range transactionMappings {
		args = append(args, "-m", filepath.Join("..", "..", m))
	}
	code, stdout, stderr := runCLIWithStdin(t, strings.NewReader(in.String()), args...)
	if code != exitUsage || !strings.Contains(stderr, "cannot be sampled before it is read") {
		t.Fatalf("exit %d, want 2 refusing the plan\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("refused, but it created %s", out)
	}
}

// Several --mapping with problems are all reported at once, each under its file, before the
// source is read (exit 2). Before, only the first file's problems were, and the next showed
// only once that one was fixed.
func TestMigrateSeveralTablesReportsEveryMappingsProblems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	head := "version: 1\nsource:\n  columns: {id: bigint, v: text}\n"
	a := writeFile(t, dir, "a.yaml", head+"target:\n  table: a\n  primary_key: \"[id]\"\n  colums: {}\n")
	ok := writeFile(t, dir, "ok.yaml", head+"target:\n  table: ok\n  primary_key: \"[id]\"\n")
	b := writeFile(t, dir, "b.yaml", head+"target:\n  table: b\n  primary_key: \"[md6(v)]\"\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "migrate", "-m", a, "-m", ok, "-m", b, "--source", "file:"+filepath.Join(dir, "none.csv"), "--out", out, "--progress", "never")
	if code != 2 || !strings.Contains(stderr, a+": target.colums: unknown field") || !strings.Contains(stderr, b+": target.primary_key[0]: unknown function \"md6\"") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output created: %v", err)
	}
}

// A --source that names no table reads the one each mapping's source.name names: mappings naming
// different tables are refused, since the one read gives one table's rows. Before, the run read the
// last mapping's table into every output: the first table's files held the other table's rows.
func TestMigrateTablesRefusesMappingsOfDifferentSourceTables(t *testing.T) {
	cas := cassandratest.Open(t)
	cols := []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}}
	for _, name := range []string{"y2023", "y2024"} {
		if err := cas.CreateTable("mt", name, cols, []string{"id"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := cas.InsertMany("mt", name, 3, func(i int, row map[string]any) error {
			row["id"], row["v"] = i, name
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", "version: 1\nsource:\n  name: mt.y2023\ntarget:\n  table: events_2023\n  primary_key: \"[id]\"\n")
	b := writeFile(t, dir, "b.yaml", "version: 1\nsource:\n  name: mt.y2024\ntarget:\n  table: events_2024\n  primary_key: \"[id]\"\n")
	host := strings.TrimSuffix(cas.URI("mt", "y2023", ""), "/mt/y2023")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "migrate", "-m", a, "-m", b, "--source", host, "--out", out, "--progress", "never")
	if code != exitUsage || !strings.Contains(stderr, "mt.y2023") || !strings.Contains(stderr, "mt.y2024") {
		t.Fatalf("exit %d, want 2 naming both tables\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("refused, but it created %s", out)
	}
}

// The one read of the source reads the cells' write times for target.write_time or not, for every
// mapping: mappings that differ in it are refused. Before, a Cassandra source was read as the last
// mapping asked: a first mapping with target.write_time got no cell times, and its files went to
// one slice stamped with the run's start instead of the cells' write times, and the run said ok.
func TestMigrateTablesRefusesMixedWriteTime(t *testing.T) {
	cas := cassandratest.Open(t)
	seedSliceRows(t, cas, 20)
	dir := t.TempDir()
	timed := writeFile(t, dir, "timed.yaml", sliceMapping)
	plain := writeFile(t, dir, "plain.yaml", strings.Replace(strings.Replace(sliceMapping, "  write_time: true\n", "", 1), "table: slices", "table: plain", 1))
	out := filepath.Join(dir, "out")
	for _, order := range [][]string{{timed, plain}, {plain, timed}} {
		code, stdout, stderr := runCLI(t, "migrate", "-m", order[0], "-m", order[1], "--source", cas.URI("wt", "slices", ""), "--out", out, "--regions", "1", "--progress", "never")
		if code != exitUsage || !strings.Contains(stderr, "target.write_time") || !strings.Contains(stderr, timed) || !strings.Contains(stderr, plain) {
			t.Fatalf("%v: exit %d, want 2 naming target.write_time and both mappings\n%s%s", order, code, stdout, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("refused, but it created %s", out)
		}
	}
}

// A run of several tables refused for an output that already holds files leaves the new outputs
// of the other tables as it found them (absent): before, the tables listed before it had locked
// theirs, creating --out/<table>/ and its .rekey.lock.
func TestMigrateTablesRefusedOutputCreatesNoOther(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	src := "file:" + writeFile(t, dir, "rows.csv", "id,code,v\n1,x,a\n2,y,b\n")
	out := filepath.Join(dir, "out")
	if code, stdout, stderr := runCLI(t, "migrate", "-m", b, "--source", src, "--out", filepath.Join(out, "by_code"), "--progress", "never"); code != 0 {
		t.Fatalf("by_code alone: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, "migrate", "-m", a, "-m", b, "--source", src, "--out", out, "--progress", "never")
	if code != exitUsage || !strings.Contains(stderr, "by_code already holds files") {
		t.Fatalf("exit %d, want 2 refusing by_code's output\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Lstat(filepath.Join(out, "by_id")); !os.IsNotExist(err) {
		t.Errorf("refused, but it created %s: %v", filepath.Join(out, "by_id"), err)
	}
}

// A run of several tables into outputs that already hold files says what such a run can do:
// --overwrite or a new --out. Before, it said to pass --resume, which several --mapping refuse.
func TestMigrateTablesOutputHoldingFilesSaysOverwrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	src := "file:" + writeFile(t, dir, "rows.csv", "id,code,v\n1,x,a\n2,y,b\n")
	args := []string{"migrate", "-m", a, "-m", b, "--source", src, "--out", filepath.Join(dir, "out"), "--progress", "never"}
	if code, stdout, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, args...)
	if code != exitUsage || !strings.Contains(stderr, "already holds files") || !strings.Contains(stderr, "--overwrite") || strings.Contains(stderr, "pass --resume") {
		t.Fatalf("again: exit %d, want 2 saying --overwrite and not --resume\n%s%s", code, stdout, stderr)
	}
}

// A run of several tables stopped by one table's rejects names that table, where its rejects are
// and what to do. Before, the error gave the count and "see rejects.jsonl" of no table (every
// table has one), and said only to start over once the cause is fixed.
func TestMigrateTablesTooManyRejectsNamesTheTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	var rows strings.Builder
	rows.WriteString("id,code,v\n")
	for i := range 20 {
		code := "c"
		if i%2 == 0 {
			code = "" // by_code rejects it
		}
		fmt.Fprintf(&rows, "%d,%s,v\n", i, code)
	}
	src := "file:" + writeFile(t, dir, "rows.csv", rows.String())
	code, stdout, stderr := runCLI(t, "migrate", "-m", a, "-m", b, "--source", src, "--out", filepath.Join(dir, "out"), "--max-rejects", "3", "--progress", "never")
	if code != exitFailed || !strings.Contains(stderr, "table by_code") || !strings.Contains(stderr, "by_code/rejects.jsonl") ||
		strings.Contains(stderr, "table by_id") || !strings.Contains(stderr, "--overwrite and a higher --max-rejects") {
		t.Fatalf("exit %d, want 3 naming table by_code, its rejects and what to do\n%s%s", code, stdout, stderr)
	}
}

// A run of several tables whose final files cannot be written for one table still finishes the
// others, and says how to write the failed table's final files: a --resume of that table alone,
// which reads nothing more. Before, the tables after it were left without final files, the
// summary stopped at the failed table, and the error said to read the source again with --overwrite.
func TestMigrateTablesOneTablesFinalFilesFailed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	src := "file:" + writeFile(t, dir, "rows.csv", "id,code,v\n1,x,a\n2,y,b\n")
	out := filepath.Join(dir, "out")
	fail := func(st store.Store) store.Store {
		if l := st.(*store.Local); filepath.Base(l.Path()) == "by_id" {
			return &failPutLocal{Local: l, name: output.ManifestFile}
		}
		return st
	}
	code, stdout, stderr := cliRun{wrapOut: fail}.run(t, "migrate", "-m", a, "-m", b, "--source", src, "--out", out, "--progress", "never")
	if code != exitFailed || !strings.Contains(stderr, "table by_id") || !strings.Contains(stderr, "disk full") {
		t.Fatalf("exit %d, want 3 naming table by_id and its error\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "by_code", output.ManifestFile)); err != nil {
		t.Errorf("table by_code, after the failed one, is not finished: %v\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "Table by_code") || !strings.Contains(stdout, "table by_code  2 written + 0 rejected = 2 rows read: ok") {
		t.Errorf("the summary does not show table by_code:\n%s", stdout)
	}
	resume := []string{"migrate", "-m", a, "--source", src, "--out", filepath.Join(out, "by_id"), "--progress", "never", "--resume"}
	if !strings.Contains(stderr, "--mapping "+a+", with --out "+filepath.Join(out, "by_id")+" and --resume") {
		t.Fatalf("the error does not say to resume table by_id alone (%s):\n%s", strings.Join(resume, " "), stderr)
	}
	if code, stdout, stderr := runCLI(t, resume...); code != 0 || !regexp.MustCompile(`rows written +2\n`).MatchString(stdout) {
		t.Fatalf("the resume of by_id: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "by_id", output.ManifestFile)); err != nil {
		t.Error(err)
	}
}

// failDataFiles fails the creation of every data file: an output whose disk is full.
type failDataFiles struct{ *store.Local }

func (s *failDataFiles) Create(ctx context.Context, name string) (store.Writer, error) {
	if strings.HasPrefix(name, output.DataDir+"/") {
		return nil, errors.New("disk full")
	}
	return s.Local.Create(ctx, name)
}

// A run of several tables failed by one table's output names that table: every table writes the
// same data/region-0000/part-00000.parquet under its own folder. Before, the error named the file
// alone.
func TestMigrateTablesSinkFailureNamesTheTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	src := "file:" + writeFile(t, dir, "rows.csv", "id,code,v\n1,x,a\n2,y,b\n")
	fail := func(st store.Store) store.Store {
		if l := st.(*store.Local); filepath.Base(l.Path()) == "by_code" {
			return &failDataFiles{l}
		}
		return st
	}
	code, stdout, stderr := cliRun{wrapOut: fail}.run(t, "migrate", "-m", a, "-m", b, "--source", src, "--out", filepath.Join(dir, "out"), "--progress", "never")
	if code != exitFailed || !strings.Contains(stderr, "table by_code: ") || !strings.Contains(stderr, "disk full") {
		t.Fatalf("exit %d, want 3 naming table by_code and its error\n%s%s", code, stdout, stderr)
	}
}

// --stats-json, refused with several --mapping, says where each figure it would hold is: each
// table's counts in its manifest.json, the run's time, rows/s and peak memory in the summary
// printed. Before, it sent to manifest.json alone, which holds none of those three.
func TestMigrateTablesStatsJSONRefusalSaysWhereTheFiguresAre(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	src := "file:" + writeFile(t, dir, "rows.csv", "id,code,v\n1,x,a\n")
	code, stdout, stderr := runCLI(t, "migrate", "-m", a, "-m", b, "--source", src, "--out", filepath.Join(dir, "out"), "--stats-json", filepath.Join(dir, "s.json"), "--progress", "never")
	if code != exitUsage || !strings.Contains(stderr, "manifest.json") || !strings.Contains(stderr, "rows/s and peak memory in the summary") {
		t.Fatalf("exit %d, want 2 saying where the figures are\n%s%s", code, stdout, stderr)
	}
}

// A run of several tables from stdin, interrupted, says that stdin cannot be read again: save
// the input to a file and migrate it with --overwrite. Before, it said to run the same command
// with --overwrite, as if the rows already read could be read again.
func TestMigrateTablesFromStdinInterruptedSaysSaveTheInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cols := "version: 1\nsource:\n  name: ks.t\n  columns:\n    id: int\n    code: text\n    v: text\n"
	a := writeFile(t, dir, "a.yaml", cols+"target:\n  table: by_id\n  primary_key: \"[id]\"\nregions:\n  count: 1\n")
	b := writeFile(t, dir, "b.yaml", cols+"target:\n  table: by_code\n  primary_key: \"[code][id]\"\nregions:\n  count: 1\n")
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() { // rows until the test ends
		if _, err := io.WriteString(pw, "id,code,v\n"); err != nil {
			return
		}
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(pw, "%d,c%d,v\n", i, i%7); err != nil {
				return
			}
		}
	}()
	sigs := make(chan os.Signal)
	code, stdout, stderr := cliRun{stdin: pr, signals: sigs, wrapOut: atCheckpoint(midRun, func() { interrupt(t, sigs, syscall.SIGINT) })}.run(t,
		"migrate", "-m", a, "-m", b, "--source", "file:-?format=csv", "--out", filepath.Join(dir, "out"), "--progress", "never", "--checkpoint-interval", "10ms")
	if code != exitInterrupted || !strings.Contains(stderr, "stdin cannot be read again") {
		t.Fatalf("exit %d, want 130 saying stdin cannot be read again\n%s%s", code, stdout, stderr)
	}
}

// A local --out whose name holds a '?' (a folder, not a URI with a query) gets each table's
// output inside it. Before, the name was cut at the '?' as a bucket URI's query: the outputs went
// to out/by_id?x and out/by_code?x, beside --out out?x instead of in it.
func TestMigrateTablesLocalOutWithQuestionMark(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	src := "file:" + writeFile(t, dir, "rows.csv", "id,code,v\n1,x,a\n")
	out := filepath.Join(dir, "out?x")
	if code, stdout, stderr := runCLI(t, "migrate", "-m", a, "-m", b, "--source", src, "--out", out, "--progress", "never"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, table := range []string{"by_id", "by_code"} {
		if _, err := os.Stat(filepath.Join(out, table, output.ManifestFile)); err != nil {
			t.Errorf("table %s is not in --out %s: %v", table, out, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("it wrote beside --out, in %s: %v", filepath.Join(dir, "out"), err)
	}
}

// A run of several tables into an --out that is itself a migration's output (a run of one
// mapping there) is refused before anything is written: the tables' outputs would be made
// inside another output. Before, they were, beside its data/ and manifest.json.
func TestMigrateTablesRefusesAnOutputAsTheirFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := byIDAndByCode(t, dir)
	src := "file:" + writeFile(t, dir, "rows.csv", "id,code,v\n1,x,a\n")
	out := filepath.Join(dir, "out")
	if code, stdout, stderr := runCLI(t, "migrate", "-m", a, "--source", src, "--out", out, "--progress", "never"); code != 0 {
		t.Fatalf("one mapping: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, extra := range [][]string{nil, {"--overwrite"}} {
		args := append([]string{"migrate", "-m", a, "-m", b, "--source", src, "--out", out, "--progress", "never"}, extra...)
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, out) || !strings.Contains(stderr, output.CheckpointFile) {
			t.Fatalf("%v: exit %d, want 2 saying %s is a migration's output\n%s%s", extra, code, out, stdout, stderr)
		}
		for _, table := range []string{"by_id", "by_code"} {
			if _, err := os.Lstat(filepath.Join(out, table)); !os.IsNotExist(err) {
				t.Errorf("%v: refused, but it created %s: %v", extra, filepath.Join(out, table), err)
			}
		}
	}
}

// byIDAndByCode writes two mappings of one source (id, code, v) into dir: by_id keyed [id],
// by_code keyed [code][id].
func byIDAndByCode(t *testing.T, dir string) (byID, byCode string) {
	t.Helper()
	cols := "version: 1\nsource:\n  name: ks.t\n  columns:\n    id: int\n    code: text\n    v: text\n"
	return writeFile(t, dir, "a.yaml", cols+"target:\n  table: by_id\n  primary_key: \"[id]\"\n"),
		writeFile(t, dir, "b.yaml", cols+"target:\n  table: by_code\n  primary_key: \"[code][id]\"\n")
}
