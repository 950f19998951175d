package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// Exit code 1 means "completed, but some rows were rejected" (migrate) and "warnings" (report
// --strict): automation takes such a run as done. Only those two outcomes may give it, only the
// two functions that decide them return those outcomes, every outcome is built by its
// constructor, and the process exits in main only, so that no error path can reach 1 by
// accident.
func TestOnlyCompletedRunsExitOne(t *testing.T) {
	t.Parallel()
	commands := []string{""}
	visitCommands(newRootCmd(&invocation{}), func(c *cobra.Command) { commands = append(commands, c.Name()) })
	for o := outcomeFailed; o <= outcomeTargetDiffers; o++ {
		for _, c := range commands {
			if code := commandExitCode(c, o); code == 1 && o != outcomeRejects && o != outcomeReportWarnings {
				t.Errorf("%s: outcome %d exits 1, which means a completed run", c, o)
			}
		}
	}
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// the outcomes that exit 1, and the only functions that may return them
	mayExitOne := map[string][]string{
		"completedWithRejects": {"rejectedExit", "rejectedTablesExit", "rejectedMessages"}, // migrate completed with rejected rows (into one table or several), replicate stopped with rejected messages
		"reportWarnings":       {"runReport"},                                              // report --strict found warnings
	}
	constructors := map[string]bool{"usageError": true, "runFailed": true, "interrupted": true, "completedWithRejects": true,
		"reportWarnings": true, "reportErrors": true, "targetDiffers": true}
	calls := 0
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Exit" && isIdent(sel.X, "os") && fd.Name.Name != "main" {
						t.Errorf("%s: os.Exit in %s: return an error from the command, main exits", fset.Position(n.Pos()), fd.Name.Name)
					}
					id, ok := n.Fun.(*ast.Ident)
					if !ok || !constructors[id.Name] {
						return true
					}
					calls++
					if only, ok := mayExitOne[id.Name]; ok && !slices.Contains(only, fd.Name.Name) {
						t.Errorf("%s: %s in %s exits 1, which means a completed run: a failure is runFailed, invalid use usageError", fset.Position(n.Pos()), id.Name, fd.Name.Name)
					}
				case *ast.CompositeLit:
					if isIdent(n.Type, "outcomeError") && !constructors[fd.Name.Name] {
						t.Errorf("%s: build outcome errors with their constructors (usageError, runFailed, ...)", fset.Position(n.Pos()))
					}
				}
				return true
			})
		}
	}
	if calls < 50 {
		t.Fatalf("found only %d outcome errors: is the test reading the command's files?", calls)
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// One failure of each kind per command, run through the command line: a failed run exits 3, a
// use the command refuses exits 2 (verify: 3, its 2 means "different"), never 1.
func TestFailuresExitThreeInvalidUseTwo(t *testing.T) {
	t.Parallel()
	mapping, err := filepath.Abs("../../mappings/orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 100, 1)
	regular := writeFile(t, dir, "regular", "a file, not a folder\n")
	run := filepath.Join(dir, "run")
	if code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+src, "--out", run, "--progress", "never"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, stdout, stderr)
	}
	underFile := filepath.Join(regular, "out")
	missing := filepath.Join(dir, "no-such-folder", "file")
	// a replication whose plan (fixed at its first start) has 4 regions
	replication := filepath.Join(dir, "replication")
	splits := []pipeline.Value{pipeline.Text("4"), pipeline.Text("8"), pipeline.Text("c")}
	state, err := json.Marshal(replicate.State{Version: 1, Plan: pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "hex_prefix"}, Splits: splits})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(replication, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, replication, output.ReplicateStateFile, string(state))
	for _, c := range []struct {
		name string
		args []string
		want int
		says string // the error names what failed
	}{
		{"unknown command", []string{"migrat"}, exitUsage, "unknown command"},
		{"help: unknown topic", []string{"help", "migrat"}, exitUsage, `unknown help topic "migrat"`},
		{"help: a command", []string{"help", "migrate"}, 0, ""},

		{"migrate: unknown flag", []string{"migrate", "--bogus"}, exitUsage, "--bogus"},
		{"migrate: an argument", []string{"migrate", "x", "-m", mapping}, exitUsage, `unknown command "x"`},
		{"migrate: --out under a regular file", []string{"migrate", "-m", mapping, "--source", "file:" + src, "--out", underFile, "--progress", "never"}, exitFailed, underFile},
		{"migrate: --out where no folder can be made", []string{"migrate", "-m", mapping, "--source", "file:" + src, "--out", "/proc/rekey-out", "--progress", "never"}, exitFailed, "/proc/rekey-out"},

		{"check: unknown flag", []string{"check", "--bogus"}, exitUsage, "--bogus"},
		{"check: no mapping", []string{"check"}, exitUsage, "--mapping is required"},
		{"ddl: unknown dialect", []string{"ddl", "-m", mapping, "--dialect", "pg"}, exitUsage, "--dialect"},
		{"ddl: an argument", []string{"ddl", "x"}, exitUsage, `unknown command "x"`},

		{"gen: no name", []string{"gen"}, exitUsage, "accepts 1 arg"},
		{"gen: unknown data set", []string{"gen", "nosuch"}, exitUsage, "nosuch"},
		{"gen: negative --rows", []string{"gen", "orders", "--rows", "-5"}, exitUsage, "--rows -5"},
		{"gen: --out in a missing folder", []string{"gen", "orders", "--rows", "10", "--out", missing}, exitFailed, missing},

		{"report: unknown flag", []string{"report", "--bogus"}, exitUsage, "--bogus"},
		{"report: --json in a missing folder", []string{"report", "-m", mapping, "--source", "file:" + src, "--json", missing, "-q", "--progress", "never"}, exitFailed, missing},

		{"verify: unknown flag", []string{"verify", "--bogus"}, exitVerifyFailed, "--bogus"},
		{"verify: a missing target", []string{"verify", "-m", mapping, "--source", "file:" + src, "--target", missing, "--progress", "never"}, exitVerifyFailed, missing},

		{"merge: no input and no shards", []string{"merge", "--out", filepath.Join(dir, "merged")}, exitUsage, "holds no shards"},
		{"merge: an input that does not exist", []string{"merge", filepath.Join(dir, "no-such-run"), run, "--out", filepath.Join(dir, "merged2")}, exitUsage, "no-such-run holds nothing (no such folder, or an empty one)"},
		{"merge: --out under a regular file", []string{"merge", run, "--out", underFile}, exitFailed, underFile},

		{"replicate: unknown flag", []string{"replicate", "--bogus"}, exitUsage, "--bogus"},
		{"replicate: --out under a regular file", []string{"replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/t?group=g", "--out", underFile}, exitFailed, underFile},
		{"replicate: --out where no folder can be made", []string{"replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/t?group=g", "--out", "/proc/rekey-out"}, exitFailed, "/proc/rekey-out"},
		{"replicate: no group", []string{"replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/t", "--out", filepath.Join(dir, "live")}, exitUsage, "group"},
		{"replicate: --regions other than the output's plan", []string{"replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/t?group=g", "--out", replication, "--regions", "8"}, exitUsage, "--regions 8 does not apply"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != c.want || !strings.Contains(stderr, c.says) {
				t.Errorf("rekey %s: exit %d, want %d with stderr naming %q\n%s%s", strings.Join(c.args, " "), code, c.want, c.says, stdout, stderr)
			}
		})
	}
}

// The object store stops once the run has taken the output's lock, before its first checkpoint:
// the run fails with exit 3, not 1 as a completed run with rejects.
func TestMigrateObjectStoreStoppedAfterLockExitsThree(t *testing.T) {
	t.Parallel()
	srv := startVersitygw(t)
	var stopOnce sync.Once
	proxy := srv.Proxy(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if s3test.Op(r) == "PutObject" && strings.HasSuffix(r.URL.Path, "/"+output.LockFile) {
				stopOnce.Do(srv.Stop)
			}
		})
	})
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 1000, 1)
	code, stdout, stderr := runCLIWithEnv(t, srv.Env, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+src,
		"--out", proxy.URIFor("run"), "--progress", "never")
	if code != exitFailed || !strings.Contains(stderr, "run") {
		t.Fatalf("exit %d, want 3 (the run failed)\n%s%s", code, stdout, stderr)
	}
	stopped := false
	stopOnce.Do(func() { stopped = true })
	if stopped {
		t.Fatal("the run never took the lock: the fault was not injected")
	}
	t.Log(stderr)
}

// With --log-format json the line that says why rekey stopped is a JSON log line too, carrying
// the exit code, so a log pipeline reading rekey's JSON does not get one plain line at the end.
func TestFinalErrorIsJSONWithJSONLogs(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10",
		"--out", filepath.Join(t.TempDir(), "out"), "--regions", "0", "--log-format", "json")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var last struct {
		Level    string `json:"level"`
		Msg      string `json:"msg"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("the last line is not JSON (%v):\n%s", err, stderr)
	}
	if code != exitUsage || last.Level != "error" || last.ExitCode != exitUsage || !strings.Contains(last.Msg, "--regions 0") {
		t.Fatalf("exit %d, last line %+v", code, last)
	}
}

// A broker refusing the SASL password is fatal, named as such, exit 3: replicate retried the
// group join for ever after one warning, migrate said "metadata of topic st: unexpected EOF".
func TestKafkaWrongPasswordFailsNamed(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("SASL users are set up in kfake only")
	}
	t.Parallel()
	c := kafkatest.Start(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "right"), kfake.SeedTopics(1, "st"))
	env := map[string]string{kafka.PasswordEnv: "wrong"}
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	dir := t.TempDir()
	for _, args := range [][]string{
		{"migrate", "-m", mapping, "--source", "kafka://" + c.Brokers[0] + "/st?sasl=plain&user=admin", "--out", filepath.Join(dir, "migrate"), "--progress", "never"},
		{"replicate", "-m", mapping, "--source", "kafka://" + c.Brokers[0] + "/st?group=g&sasl=plain&user=admin", "--out", filepath.Join(dir, "replicate"), "--progress", "never"},
	} {
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, stdout, stderr := runCLIWithEnv(t, env, args...)
			done <- result{code, stdout, stderr}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(time.Minute): // replicate retried for ever
			t.Fatalf("%s with a wrong password still running after a minute", args[0])
		}
		want := "authentication failed for user admin at broker " + c.Brokers[0] + ": check " + kafka.PasswordEnv
		if r.code != exitFailed || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "run the same command") {
			t.Errorf("%s: exit %d, want 3 and %q\n%s%s", args[0], r.code, want, r.stdout, r.stderr)
		}
	}
}

// A session timeout the broker does not take ends replicate at once, exit 3, naming
// --session-timeout and never saying to run the same command (it fails again): the refused joins
// were retried until the join limit, whose error blamed a killed member and said to restart.
func TestReplicateSessionTimeoutRefusedFailsNamed(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("the broker's minimum session timeout is set in kfake only")
	}
	t.Parallel()
	c := kafkatest.Start(t, kfake.GroupMinSessionTimeout(6*time.Second), kfake.SeedTopics(1, "st"))
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	code, stdout, stderr := runCLIWithEnv(t, nil, "replicate", "-m", mapping, "--source", "kafka://"+c.Brokers[0]+"/st?group=g",
		"--out", filepath.Join(t.TempDir(), "replicate"), "--progress", "never", "--session-timeout", "3s")
	if code != exitFailed || !strings.Contains(stderr, "refuses --session-timeout 3s") || strings.Contains(stderr, "run the same command") {
		t.Errorf("exit %d, want 3, the session timeout named and no advice to run the same command\n%s%s", code, stdout, stderr)
	}
}

// A source that cannot be reached when the command starts (a node restarting, a broker not up
// yet) is a failure of the run, exit 3, which a Kubernetes Job retries, never invalid use (2,
// which fails the Job's index for good); the error says to run the command again. replicate
// says so at once instead of retrying its group join for the 2 minutes of its join limit.
func TestUnreachableSourceExitsThree(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String() // nothing listens there once closed: connection refused
	ln.Close()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	dir := t.TempDir()
	env := map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
	folder := filepath.Join(dir, "folder") // a migration's output, for verify
	mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", folder, "--progress", "never")
	for _, c := range []struct {
		name string
		args []string
		next string // what the error says to do
	}{
		{"migrate: kafka", []string{"migrate", "-m", mapping, "--source", "kafka://" + refused + "/orders", "--out", filepath.Join(dir, "k"), "--progress", "never"}, "run the same command again"},
		{"migrate: cassandra", []string{"migrate", "-m", mapping, "--source", "cassandra://" + refused + "/shop/orders", "--out", filepath.Join(dir, "c"), "--progress", "never"}, "run the same command again"},
		{"migrate: s3 files", []string{"migrate", "-m", mapping, "--source", "s3://bucket/orders/*.csv?region=us-east-1&endpoint=http://" + refused, "--out", filepath.Join(dir, "s"), "--progress", "never"}, "run the same command again"},
		{"report: kafka", []string{"report", "-m", mapping, "--source", "kafka://" + refused + "/orders", "-q", "--progress", "never"}, "run the same command again"},
		{"check: cassandra", []string{"check", "-m", mapping, "--source", "cassandra://" + refused + "/shop/orders"}, "run the same command again"},
		{"replicate: kafka", []string{"replicate", "-m", mapping, "--source", "kafka://" + refused + "/orders?group=g", "--out", filepath.Join(dir, "r"), "--progress", "never"}, "run the same command to continue"},
		{"replicate --mark-start: kafka", []string{"replicate", "--source", "kafka://" + refused + "/orders?group=g", "--mark-start"}, "run the same command again"},
		{"verify: kafka", []string{"verify", "-m", mapping, "--source", "kafka://" + refused + "/orders", "--target", folder, "--progress", "never"}, "run the same command again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, stdout, stderr := runCLIWithEnv(t, env, c.args...)
				done <- result{code, stdout, stderr}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute): // replicate's join limit is 2 minutes
				t.Fatalf("rekey %s still running after a minute against a refusing server", c.args[0])
			}
			if r.code != exitFailed || !strings.Contains(r.stderr, "connection refused") || !strings.Contains(r.stderr, c.next) {
				t.Errorf("exit %d, want 3, the refused connection and %q\n%s%s", r.code, c.next, r.stdout, r.stderr)
			}
		})
	}
}

// A refused merge leaves --out as it found it: before, taking --out's lock came first, so a
// merge refused for its inputs (or for no shards in --out) created --out and a .rekey.lock in it.
func TestRefusedMergeCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=10", "--out", run, "--progress", "never")
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		out  string
		says string
	}{
		{[]string{"merge", "--out", filepath.Join(dir, "merged")}, filepath.Join(dir, "merged"), "holds no shards"},
		{[]string{"merge", filepath.Join(dir, "no-such-run"), run, "--out", filepath.Join(dir, "merged2")}, filepath.Join(dir, "merged2"), "holds nothing"},
		{[]string{"merge", run, run, "--out", filepath.Join(dir, "new", "merged3")}, filepath.Join(dir, "new"), "given twice"},
		{[]string{"merge", filepath.Join(dir, "no-such-run"), run, "--out", empty}, filepath.Join(empty, output.LockFile), "holds nothing"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.says) {
			t.Errorf("rekey %s: exit %d, want 2 naming %q\n%s%s", strings.Join(c.args, " "), code, c.says, stdout, stderr)
		}
		if _, err := os.Lstat(c.out); err == nil {
			t.Errorf("rekey %s: refused, but it created %s", strings.Join(c.args, " "), c.out)
		}
	}
}

// A migration refused for its region plan leaves --out as it found it: before, the plan came
// after the output's lock, so a refused run created --out and a .rekey.lock in it.
func TestMigrateRefusedPlanCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var in strings.Builder
	in.WriteString("ts,hostname,log-event,level,latency_ms,message\n2024-05-01T10:00:00Z,h1,e1,INFO,3,m\n")
	out := filepath.Join(dir, "out")
	// a quantile plan needs a sample, which stdin cannot give before it is read
	code, stdout, stderr := runCLIWithStdin(t, strings.NewReader(in.String()), "migrate", "-m", "../../mappings/logs_latest.yaml",
		"--source", "file:-?format=csv", "--out", out, "--progress", "never")
	if code != exitUsage || !strings.Contains(stderr, "cannot be sampled before it is read") {
		t.Fatalf("exit %d, want 2 refusing the plan\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("refused, but it created %s", out)
	}
}

// A second Ctrl-C aborts a migration at once: it is an interruption (130, as replicate's), whose
// checkpoint --resume (or, for several tables, --overwrite) continues from, not a failed run.
// Before, migrate printed "Migration failed", exited 3 (which a Kubernetes Job retries as a
// failure) and said "migration failed: context canceled ... once the cause is fixed".
func TestMigrateSecondCtrlCAbortsWith130(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		args   []string
		resume []string // what finishes the aborted run
	}{
		{"into files", []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=400000&seed=5"}, []string{"--resume"}},
		{"several tables", []string{"migrate", "-m", "../../" + transactionMappings[0], "-m", "../../" + transactionMappings[1],
			"--source", "gen:transactions?rows=400000&seed=5"}, []string{"--overwrite"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			args := append(c.args, "--out", out, "--progress", "never", "--checkpoint-interval", "100ms", "--max-file-size", "1MiB")
			sigs := make(chan os.Signal)
			twice := func() { interrupt(t, sigs, syscall.SIGINT); interrupt(t, sigs, syscall.SIGINT) }
			code, stdout, stderr := cliRun{signals: sigs, wrapOut: atCheckpoint(midRun, twice)}.run(t, args...)
			if code != exitInterrupted || strings.Contains(stdout+stderr, "failed") || !strings.Contains(stderr, c.resume[0]) {
				t.Fatalf("aborted by a second Ctrl-C: exit %d, want %d, an interruption that says to run again with %s\n%s%s", code, exitInterrupted, c.resume[0], stdout, stderr)
			}
			if code, stdout, stderr := runCLI(t, append(args, c.resume...)...); code != 0 {
				t.Fatalf("%s after the abort: exit %d\n%s%s", c.resume[0], code, stdout, stderr)
			}
		})
	}
}

// A bucket that does not answer is a failed run (3: run again once it answers), as it is to
// migrate's --out: merge of inputs there says so. Before, merge exited 2, as invalid use, which a
// Kubernetes Job does not retry, and its error said nothing of what to do.
func TestMergeInputThatDoesNotAnswerExitsThree(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AWS_ACCESS_KEY_ID": "rekey", "AWS_SECRET_ACCESS_KEY": "rekey-secret"}
	dead := func(prefix string) string {
		return "s3://rekey-test/" + prefix + "?endpoint=http://127.0.0.1:1&path_style=true&region=us-east-1"
	}
	args := []string{"merge", dead("shard-0"), dead("shard-1"), "--out", filepath.Join(t.TempDir(), "merged")}
	code, stdout, stderr := runCLIWithEnv(t, env, args...)
	if code != exitFailed || !strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "run the same command again once it answers") {
		t.Errorf("merge: exit %d, want %d (a failed run, to run again once the bucket answers)\n%s%s", code, exitFailed, stdout, stderr)
	}
}

// A replication whose output cannot be written when it starts (a full disk at any of the files
// it writes first) fails (exit 3, as the docs say of a failed replication), naming the file, and
// says to run again once the cause is fixed. Before, it exited 2, as invalid use.
func TestReplicateOutputWriteFailedAtStartExitsThree(t *testing.T) {
	t.Parallel()
	for _, name := range []string{output.ReplicateStateFile, output.DDLFile, output.BulkloadFile, output.ManifestFile} {
		out := filepath.Join(t.TempDir(), "live")
		fail := func(st store.Store) store.Store { return &failPutLocal{Local: st.(*store.Local), name: name} }
		code, stdout, stderr := cliRun{wrapOut: fail}.run(t, "replicate", "-m", "../../mappings/orders.yaml",
			"--source", "kafka://127.0.0.1:1/t?group=g", "--out", out, "--progress", "never")
		if code != exitFailed || !strings.Contains(stderr, "disk full") || !strings.Contains(stderr, name) || !strings.Contains(stderr, "run the same command again") {
			t.Errorf("%s not written: exit %d, want %d, naming the file and to run again\n%s%s", name, code, exitFailed, stdout, stderr)
		}
	}
}

// An --out that cannot be opened (a bucket that does not answer) fails the run (3) saying what to
// do next, in every command that writes one. Before, migrate, replicate and merge printed the
// store's error alone ("... dial tcp 127.0.0.1:1: connect: connection refused").
func TestOutThatCannotBeOpenedSaysToRunAgain(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AWS_ACCESS_KEY_ID": "rekey", "AWS_SECRET_ACCESS_KEY": "rekey-secret"}
	dead := "s3://rekey-test/out?endpoint=http://127.0.0.1:1&path_style=true&region=us-east-1"
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 10, 1)
	for _, args := range [][]string{
		{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--out", dead, "--progress", "never"},
		{"replicate", "-m", "../../mappings/orders.yaml", "--source", "kafka://127.0.0.1:1/t?group=g", "--out", dead, "--progress", "never"},
		{"merge", "--out", dead},
	} {
		code, stdout, stderr := runCLIWithEnv(t, env, args...)
		if code != exitFailed || !strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "run the same command again") {
			t.Errorf("rekey %s: exit %d, want %d, saying to run the same command again once the cause is fixed\n%s%s", args[0], code, exitFailed, stdout, stderr)
		}
	}
}

// A replication that fails says so in its summary's title, and that its rows written count the
// open rolls it discarded, which the next run writes again. Before, a replication whose first
// roll failed to commit printed "Replication summary ... rows written 5 ... rolls 0", as a
// finished one prints it, above the error.
func TestReplicateFailedSummarySaysFailed(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "failsum", 1)
	var msgs []kafkago.Message
	for i := range 5 {
		msgs = append(msgs, kafkago.Message{Key: fmt.Appendf(nil, `{"userid":"u%d","orderid":%d}`, i, i),
			Value: fmt.Appendf(nil, `{"userid":"u%d","orderid":%d,"status":"s","amount":"1.00"}`, i, i)})
	}
	c.Produce(t, topic, msgs...)
	var stdout, stderr lockedBuffer
	inv := &invocation{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: os.Getenv,
		replicateHooks: replicate.Hooks{Commit: func(s replicate.CommitStep, _ int, _, _ int64) error {
			if s == replicate.StepFinished {
				return errors.New("injected: the disk failed")
			}
			return nil
		}}}
	code := inv.run(context.Background(), []string{"replicate", "-m", "../../mappings/orders.yaml",
		"--source", "kafka://" + strings.Join(c.Brokers, ",") + "/" + topic + "?group=" + c.Group("failsum") + "&format=json",
		"--out", filepath.Join(t.TempDir(), "live"), "--roll-interval", "100ms", "--progress", "never"})
	out := stdout.String()
	if code != exitFailed || strings.Contains(out, "Replication summary") || !strings.Contains(out, "Replication failed") || !strings.Contains(out, "discarded") {
		t.Errorf("exit %d, want %d and a summary that says the replication failed and discarded its open rolls:\n%s%s", code, exitFailed, out, stderr.String())
	}
}

// A merge input whose data file is not the size its manifest lists (cut short by an incomplete
// copy) is refused before anything is placed, naming the file and both sizes. Before, merge
// exited 0, "rows written 2000", with the cut file in the merged output: the bulk load would fail
// on it or lose its rows.
func TestMergeRefusesADamagedDataFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var inputs []string
	for seed := range 2 {
		in := filepath.Join(dir, fmt.Sprintf("run-%d", seed))
		mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", fmt.Sprintf("gen:orders?rows=1000&seed=%d", seed+1), "--out", in, "--progress", "never")
		inputs = append(inputs, in)
	}
	files, err := filepath.Glob(filepath.Join(inputs[0], "data", "region-0000", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data file in %s: %v", inputs[0], err)
	}
	if err := os.Truncate(files[0], 100); err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(dir, "merged")
	code, stdout, stderr := runCLI(t, "merge", inputs[0], inputs[1], "--out", merged)
	rel, _ := filepath.Rel(inputs[0], files[0])
	if code != exitUsage || !strings.Contains(stderr, rel) || !strings.Contains(stderr, "100 bytes") {
		t.Errorf("merge of an input with a cut data file: exit %d, want %d naming %s and its size\n%s%s", code, exitUsage, rel, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(merged, output.ManifestFile)); err == nil {
		t.Error("the merge wrote a manifest over a damaged input")
	}
}

// A mistyped command gets cobra's suggestion as a list a user reads: the suggested command on a
// line of its own, indented. Before, the final error line escaped the indentation's tab and
// printed `Did you mean this?` followed by a literal `\tmigrate`.
func TestUnknownCommandSuggestionIsReadable(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, "migrat")
	if code != exitUsage || !strings.Contains(stderr, "Did you mean this?\n\tmigrate\n") || strings.Contains(stderr, `\t`) {
		t.Errorf("rekey migrat: exit %d, want %d with the suggestion \"\\tmigrate\" on its own line:\n%s", code, exitUsage, stderr)
	}
}

// A flag cobra refuses (a typo, a missing value) names the help that lists the command's flags.
// Before, the error was cobra's alone, `rekey: unknown flag: --sorce`, with no next step.
func TestFlagErrorNamesTheCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"migrate", "--sorce", "file:orders.csv"},
		{"report", "--sample"},
		{"verify", "-m"},
		{"check", "--bogus"},
	} {
		code, _, stderr := runCLI(t, args...)
		want := "run 'rekey " + args[0] + " --help' for its flags"
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("rekey %s: exit %d, want stderr saying %q:\n%s", strings.Join(args, " "), code, want, stderr)
		}
	}
}

// Ctrl-C stops report and verify with exit 130 and says so once. Before, each printed "report
// interrupted" (or "verify interrupted") twice: when the signal came and as its error.
func TestReportVerifyInterruptSaidOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	src := ordersCSV(t, dir, "orders.csv", 200, 1)
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", mapping, "--source", "file:"+src, "--out", out, "--progress", "never")
	for _, tc := range []struct {
		args []string
		said string
	}{
		{[]string{"report", "-m", mapping, "--source", "gen:orders?rows=1000000000", "--progress", "never"}, "report interrupted"},
		{[]string{"verify", "-m", mapping, "--source", "gen:orders?rows=1000000000", "--target", out, "--progress", "never"}, "verify interrupted"},
	} {
		sigs := make(chan os.Signal, 1)
		sigs <- os.Interrupt // Ctrl-C as soon as the command listens
		code, stdout, errs := cliRun{signals: sigs}.run(t, tc.args...)
		if code != exitInterrupted || strings.Count(errs, tc.said) != 1 {
			t.Errorf("rekey %s, Ctrl-C: exit %d, want %d saying %q once\n%s%s", tc.args[0], code, exitInterrupted, tc.said, stdout, errs)
		}
	}
}

// A file a command writes at its end (--json, --html, --stats-json) whose folder does not exist is
// failed before the run (exit 3), naming the folder. Before, the run went to its end
// first: report analysed every row, then failed; migrate wrote and committed the whole output,
// manifest.json included, then exited 3, "open /missing/.rekey-tmp-s.json".
func TestOutputFileInMissingFolderRefusedFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	src := ordersCSV(t, dir, "orders.csv", 200, 1)
	folder := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", mapping, "--source", "file:"+src, "--out", folder, "--progress", "never")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"report", "-m", mapping, "--source", "file:" + src, "--progress", "never", "--html", filepath.Join(missing, "r.html")}, exitFailed},
		{[]string{"report", "-m", mapping, "--source", "file:" + src, "--progress", "never", "--json", filepath.Join(missing, "r.json")}, exitFailed},
		{[]string{"verify", "-m", mapping, "--source", "file:" + src, "--target", folder, "--progress", "never", "--json", filepath.Join(missing, "v.json")}, exitVerifyFailed},
		{[]string{"verify", "-m", mapping, "--source", "file:" + src, "--target", folder, "--progress", "never", "--repair", filepath.Join(missing, "r.jsonl")}, exitVerifyFailed},
		{[]string{"migrate", "-m", mapping, "--source", "file:" + src, "--out", filepath.Join(dir, "new"), "--progress", "never", "--stats-json", filepath.Join(missing, "s.json")}, exitFailed},
		{[]string{"gen", "orders", "--rows", "10", "--out", filepath.Join(missing, "g.csv")}, exitFailed},
	} {
		code, stdout, errs := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, missing+" does not exist") || strings.Contains(stdout, "VERDICT") || strings.Contains(stdout, "Migration summary") {
			t.Errorf("rekey %s: exit %d, want %d refusing before the run, naming %s\n%s%s", tc.args[0], code, tc.code, missing, stdout, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("the refused migrate wrote its --out")
	}
}
