package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No silent clamps: before, --regions 0 quietly used the mapping's count and --regions 100000
// quietly became 65,536 regions; both are errors now (exit 2) that say what to do.
func TestRegionsFlagIsNeverClampedSilently(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ regions, want string }{
		{"0", "want at least 1 region"},
		{"100000", "at most 65536 regions"},
	} {
		for _, cmd := range []string{"ddl", "check"} {
			code, _, errs := runCLI(t, cmd, "-m", "../../mappings/orders.yaml", "--regions", c.regions)
			if code != 2 || !strings.Contains(errs, c.want) {
				t.Errorf("%s --regions %s: exit %d: %s", cmd, c.regions, code, errs)
			}
		}
	}
}

// Before, `--shard` read "--shard rekey merge" in --help (pflag takes a backquoted word in a usage
// string as the value's name), and check/ddl listed scan flags that do nothing there.
func TestHelpListsOnlyFlagsThatApply(t *testing.T) {
	t.Parallel()
	_, out, _ := runCLI(t, "migrate", "--help")
	if !strings.Contains(out, "--shard string") {
		t.Fatalf("migrate --help: %s", out)
	}
	for _, cmd := range []string{"check", "ddl"} {
		_, out, _ := runCLI(t, cmd, "--help")
		if strings.Contains(out, "--shard") || strings.Contains(out, "--rate") {
			t.Errorf("%s --help lists --shard or --rate:\n%s", cmd, out)
		}
	}
}

// Exit codes as DSBulk's. A wrong mapping (every row rejected) hits the default reject limit within
// the first thousand rows: exit 3, and the summary says the run failed and claims no rows that were
// never committed.
func TestDefaultRejectLimitFailsSystematicRejects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("userid,orderid,channel,ts,status,location,amount\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "u%d,%d,taobao,not-a-time,PAID,X,1.00\n", i, i)
	}
	src := writeFile(t, dir, "bad.csv", b.String())
	code, stdout, stderr := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+src, "--out", dir+"/out", "--progress", "never")
	if code != exitFailed || !strings.Contains(stderr, "more than --max-rejects 1% allows") {
		t.Fatalf("exit %d, want 3:\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "Migration failed") || !strings.Contains(stdout, "rows written   0") {
		t.Fatalf("the summary of a failed run:\n%s", stdout)
	}
	code, _, stderr = runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+src, "--out", dir+"/out2", "--progress", "never", "--max-rejects", "-1")
	if code != exitRejects {
		t.Fatalf("--max-rejects -1: exit %d, want 1: %s", code, stderr)
	}
}

// Before, `--out mysql://...` created a local folder named "mysql:"; every command with an --out
// refuses a URI it does not write to, and creates nothing. (migrate and replicate write to mysql://
// and lindorm://: postgres:// stands for any other scheme.)
func TestOutRefusesUnknownSchemes(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"migrate", "-m", mapping, "--source", "gen:orders?rows=10"},
		{"replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/t?group=g"},
		{"merge", "a", "b"},
	} {
		code, _, errs := runCLI(t, append(args, "--out", "postgres://u@h:5432/db")...)
		if code != exitUsage || !strings.Contains(errs, "does not write to postgres://") {
			t.Errorf("%s --out postgres://: exit %d: %s", args[0], code, errs)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("created %s", entries[0].Name())
	}
}

// verify --help names the password variable of each SQL target it reads.
func TestVerifyHelpNamesBothPasswordVariables(t *testing.T) {
	out := mustRun(t, "verify", "--help")
	for _, v := range []string{"REKEY_LINDORM_PASSWORD", "REKEY_MYSQL_PASSWORD"} {
		if !strings.Contains(out, v) {
			t.Errorf("verify --help does not name %s:\n%s", v, out)
		}
	}
}

// rekey ddl --dialect mysql|mariadb has no split keys: --regions and --source, which shape them,
// are refused instead of ignored.
func TestDDLForMySQLRefusesSplitKeyFlags(t *testing.T) {
	t.Parallel()
	for _, extra := range [][]string{{"--regions", "8"}, {"--source", "gen:orders?rows=10"}} {
		args := append([]string{"ddl", "-m", "../../mappings/orders.yaml", "--dialect", "mariadb"}, extra...)
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, extra[0]+" shapes Lindorm's split keys") {
			t.Errorf("%s: exit %d, %s", strings.Join(args, " "), code, errs)
		}
	}
}

// The flags of bulk-load files (--format, --sort, --regions, the LTS job's names, replicate's
// rolls) do nothing for a SQL table, and a SQL table's (--sql-conns, --state) nothing for files:
// given for the other kind of --out, each is refused (exit 2, naming it) before anything is
// opened, instead of ignored.
func TestOutputFlagsOfTheOtherOutputAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// port 1 answers nothing: a refusal must come before any connection
	table, topic := "mysql://root@127.0.0.1:1/shop", "kafka://127.0.0.1:1/orders?group=g"
	migrate := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--progress", "never"}
	replicate := []string{"replicate", "-m", "../../mappings/orders.yaml", "--source", topic, "--progress", "never"}
	for _, c := range []struct {
		args []string
		flag []string
	}{
		{append(migrate, "--out", table), []string{"--format", "csv"}},
		{append(migrate, "--out", table), []string{"--sort"}},
		{append(migrate, "--out", table), []string{"--max-file-size", "1MiB"}},
		{append(migrate, "--out", table), []string{"--regions", "4"}},
		{append(migrate, "--out", table), []string{"--namespace", "shop"}},
		{append(migrate, "--out", table), []string{"--lts-source", "oss-src"}},
		{append(migrate, "--out", dir+"/files"), []string{"--sql-conns", "8"}},
		{append(migrate, "--out", dir+"/files"), []string{"--state", dir + "/state"}},
		{[]string{"migrate", "-m", "../../mappings/transactions_by_buyer.yaml", "-m", "../../mappings/transactions_by_seller.yaml", "--source", "gen:transactions?rows=10",
			"--out", dir + "/tables"}, []string{"--sql-conns", "8"}},
		{append(replicate, "--out", table), []string{"--roll-interval", "5s"}},
		{append(replicate, "--out", table), []string{"--format", "csv"}},
		{append(replicate, "--out", table), []string{"--lts-target", "ld"}},
		{append(replicate, "--out", dir+"/live"), []string{"--sql-conns", "8"}},
	} {
		args := append(append([]string{}, c.args...), c.flag...)
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, c.flag[0]+" applies to") {
			t.Errorf("rekey %s: exit %d, want 2 refusing %s:\n%s", strings.Join(args, " "), code, c.flag[0], errs)
		}
	}
	for _, name := range []string{"files", "state", "tables", "live"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("a refused run created %s", name)
		}
	}
}

// --progress-interval 0 (or less) is refused, not quietly replaced by 10s.
func TestProgressIntervalIsNeverReplacedSilently(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--out", out},
		{"report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "-q"},
		{"replicate", "-m", "../../mappings/orders.yaml", "--source", "kafka://127.0.0.1:1/t?group=g", "--out", out},
	} {
		args = append(args, "--progress", "plain", "--progress-interval", "0s")
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, "--progress-interval 0s") {
			t.Errorf("rekey %s: exit %d, want 2 refusing --progress-interval:\n%s", strings.Join(args, " "), code, errs)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run created its --out")
	}
}

// Before, migrate and report took --memory 0 and ran with no budget at all (no heap limit, the
// sink's own default for the rows' buffers), saying nothing; replicate and verify refused it.
// Every command with a --memory now refuses a budget that is not positive (exit 2), before it
// reads a row or writes a file.
func TestMemoryFlagMustBePositive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := writeFile(t, dir, "in.csv", "userid,orderid,channel,ts,status,location,amount\nu1,1,taobao,2026-01-01T00:00:00Z,PAID,X,1.00\n")
	for _, args := range [][]string{
		{"migrate", "--source", "file:" + src, "--out", dir + "/out"},
		{"migrate", "--source", "file:" + src, "--out", "mysql://root@127.0.0.1:1/db"},
		{"report", "--source", "file:" + src},
	} {
		args = append(args, "-m", "../../mappings/orders.yaml", "--progress", "never", "--memory", "0")
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "--memory must be positive") {
			t.Errorf("%s: exit %d, want 2 refusing --memory 0:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	if _, err := os.Stat(dir + "/out"); !os.IsNotExist(err) {
		t.Errorf("a refused --memory 0 made the output: %v", err)
	}
}

// --progress-interval paces the plain progress lines only: with --progress never (no lines) or
// bar (redrawn on its own clock) it would do nothing, so it is refused (exit 2) before anything
// is opened.
func TestProgressIntervalWithoutPlainLinesIsRefused(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--out", out},
		{"report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "-q"},
		{"verify", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--target", out},
		{"replicate", "-m", "../../mappings/orders.yaml", "--source", "kafka://127.0.0.1:1/t?group=g", "--out", out},
	} {
		for _, mode := range []string{"never", "bar"} {
			args := append(append([]string{}, args...), "--progress", mode, "--progress-interval", "1m")
			code, _, errs := runCLI(t, args...)
			want := exitUsage
			if args[0] == "verify" {
				want = exitVerifyFailed
			}
			if code != want || !strings.Contains(errs, "--progress-interval 1m0s") || !strings.Contains(errs, "--progress "+mode) {
				t.Errorf("rekey %s: exit %d, want %d refusing --progress-interval:\n%s", strings.Join(args, " "), code, want, errs)
			}
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run created its --out")
	}
}

// replicate reads from the group's committed offsets (a new group from the topic's first): a
// start= of any value, like max=, would be ignored, so it is refused before any broker is
// dialled. Before, start=earliest was accepted, and a group with committed offsets did not start
// at the earliest message.
func TestReplicateRefusesWindowParameters(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	for _, param := range []string{"start=earliest", "start=latest", "max=10"} {
		args := []string{"replicate", "-m", "../../mappings/orders.yaml", "--source", "kafka://127.0.0.1:1/t?group=g&" + param, "--out", out}
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, "bound the window of report and migrate") {
			t.Errorf("rekey %s: exit %d, want 2 refusing %s:\n%s", strings.Join(args, " "), code, param, errs)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run created its --out")
	}
	// the --mark-start it offers runs as written: the brokers, topic and parameters of --source
	// without start= and max= (it named kafka://HOST:PORT/t, to retype)
	for src, want := range map[string]string{
		"kafka://127.0.0.1:1/t?group=g&start=latest":                       "rekey replicate --source 'kafka://127.0.0.1:1/t?group=g' --mark-start",
		"kafka://b1:9092,b2:9092/t?start=latest&max=5&group=g&format=json": "rekey replicate --source 'kafka://b1:9092,b2:9092/t?group=g&format=json' --mark-start",
	} {
		code, _, errs := runCLI(t, "replicate", "-m", "../../mappings/orders.yaml", "--source", src, "--out", out)
		if code != exitUsage || !strings.Contains(errs, want) {
			t.Errorf("--source %s: exit %d, want 2 offering %s:\n%s", src, code, want, errs)
		}
	}
}

// --time-slice 0 is refused (exit 2), not quietly taken as "no --time-slice": the default 24h
// slices for a mapping with target.write_time, nothing at all for one without it or for a SQL
// table, where a --time-slice of any other width is refused.
func TestTimeSliceZeroIsNeverReplacedSilently(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", strings.Replace(writeTimeMapping, "  name: wt.cells\n", "  name: in\n  columns:\n    id: int\n    a: text\n", 1))
	in := writeFile(t, dir, "in.jsonl", `{"id":1,"a":"x","_rekey_write_times":{"a":1700000000123}}`+"\n")
	for _, args := range [][]string{
		{"migrate", "-m", mapping, "--source", "file:" + in, "--out", filepath.Join(dir, "slices")},
		{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--out", filepath.Join(dir, "plain")},
		{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--out", "mysql://root@127.0.0.1:1/shop"},
	} {
		args = append(args, "--time-slice", "0", "--progress", "never")
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, "--time-slice 0s") {
			t.Errorf("rekey %s: exit %d, want 2 refusing --time-slice 0:\n%s", strings.Join(args, " "), code, errs)
		}
	}
	for _, name := range []string{"slices", "plain"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("a refused run created %s", name)
		}
	}
}

// --checkpoint-interval 0 or less is refused (exit 2), into files and into a table. Before, it was
// taken silently as "checkpoint only at the end": a run killed after hours had nothing to resume
// from and read its whole input again.
func TestCheckpointIntervalMustBePositive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, out := range []string{filepath.Join(dir, "out"), "mysql://root@127.0.0.1:1/shop"} {
		for _, every := range []string{"0", "-1s"} {
			args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--out", out,
				"--progress", "never", "--checkpoint-interval", every}
			code, stdout, stderr := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(stderr, "--checkpoint-interval") {
				t.Errorf("rekey %s: exit %d, want 2 refusing --checkpoint-interval %s:\n%s%s", strings.Join(args, " "), code, every, stdout, stderr)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a refused run created its --out")
	}
}

// --max-file-size 0 and --workers 0 are refused (exit 2), not quietly replaced by the defaults
// (256MiB files, a worker per CPU).
func TestSizeAndWorkerFlagsOfZeroAreRefused(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	migrate := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--out", out, "--progress", "never"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(append([]string{}, migrate...), "--max-file-size", "0"), "--max-file-size 0"},
		{append(append([]string{}, migrate...), "--workers", "0"), "--workers 0"},
		{[]string{"report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "-q", "--workers", "0"}, "--workers 0"},
		{[]string{"verify", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--target", out, "--workers", "-2"}, "--workers -2"},
	} {
		want := exitUsage
		if c.args[0] == "verify" {
			want = exitVerifyFailed
		}
		code, _, errs := runCLI(t, c.args...)
		if code != want || !strings.Contains(errs, c.want) {
			t.Errorf("rekey %s: exit %d, want %d refusing %s:\n%s", strings.Join(c.args, " "), code, want, c.want, errs)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run created its --out")
	}
}

// A --log-level or --log-format rekey does not know is refused by every command, before it does
// anything. Before, gen and ddl --dialect mariadb ran with the default logs (exit 0), and merge
// answered about its inputs first.
func TestLogFlagsRefusedByEveryCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, flag := range []string{"--log-level", "--log-format"} {
		for _, args := range [][]string{
			{"gen", "orders", "--rows", "1", "--out", filepath.Join(dir, "gen.csv")},
			{"ddl", "-m", "../../mappings/orders.yaml", "--dialect", "mariadb"},
			{"merge", "--out", filepath.Join(dir, "merged")},
		} {
			args = append(args, flag, "bogus")
			code, stdout, stderr := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(stderr, flag+` "bogus"`) {
				t.Errorf("rekey %s: exit %d, want 2 refusing %s:\n%s%s", strings.Join(args, " "), code, flag, stdout, stderr)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "gen.csv")); err == nil {
		t.Error("a refused gen wrote its --out")
	}
}

// A flag that takes one value, given twice with different values, is refused (exit 2) naming the
// flag and both values, in every command. Before, the last one silently won: `migrate --regions 4
// ... --regions 8` wrote 8 regions, `--format csv --format parquet` Parquet files, and a script
// that appended a flag to a command line that already had it changed the run without a word.
// A flag given twice with the same value is accepted (so is migrate's -m, which repeats).
func TestFlagGivenTwiceWithDifferentValuesIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := "../../mappings/orders.yaml"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", filepath.Join(dir, "a"), "--progress", "never", "--regions", "4", "--regions", "8"}, "--regions"},
		{[]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", filepath.Join(dir, "b"), "--progress", "never", "--format=csv", "--format", "parquet"}, "--format"},
		{[]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", filepath.Join(dir, "c"), "--out", filepath.Join(dir, "d"), "--progress", "never"}, "--out"},
		{[]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", filepath.Join(dir, "e"), "--progress", "never", "--sort", "--sort=false"}, "--sort"},
		{[]string{"report", "-m", mapping, "--source", "gen:orders?rows=10", "--source", "gen:orders?rows=20", "-q"}, "--source"},
		{[]string{"check", "-m", mapping, "--regions", "4", "--regions=16"}, "--regions"},
		{[]string{"ddl", "-m", mapping, "--log-level", "info", "--log-level", "debug"}, "--log-level"},
		{[]string{"gen", "orders", "--rows", "1", "--rows", "2", "--out", filepath.Join(dir, "gen.csv")}, "--rows"},
		{[]string{"verify", "-m", mapping, "--source", "gen:orders?rows=10", "--target", filepath.Join(dir, "a"), "--workers", "1", "--workers", "2"}, "--workers"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		want := exitUsage
		if c.args[0] == "verify" {
			want = exitVerifyFailed
		}
		if code != want || !strings.Contains(stderr, c.want+" given twice") {
			t.Errorf("rekey %s: exit %d, want %d refusing %s given twice:\n%s%s", strings.Join(c.args, " "), code, want, c.want, stdout, stderr)
		}
	}
	// the same value twice changes nothing
	mustRun(t, "check", "-m", mapping, "--regions", "4", "--regions", "4")
	mustRun(t, "ddl", "-m", mapping, "-m", mapping)
}
