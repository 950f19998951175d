package main

import (
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/transform"
)

// rekeyProcessEnv makes the test binary run as the rekey command (os.Args[1:] its arguments):
// tests that SIGKILL rekey run it as a process of its own (see startRekeyProcess).
const rekeyProcessEnv = "REKEY_TEST_RUN_AS_REKEY"

func TestMain(m *testing.M) {
	if os.Getenv(rekeyProcessEnv) == "1" {
		inv := &invocation{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
			replicateHooks: processHooks(os.Getenv)}
		os.Exit(inv.run(context.Background(), os.Args[1:]))
	}
	os.Exit(mysqltest.Run(m))
}

// sqlServers are the servers the SQL tests run against: go-mysql-server always (through one
// connection: its memory tables lose concurrent writes), MariaDB when installed.
func sqlServers(t *testing.T) map[string]func(*testing.T) (*mysqltest.Server, string) {
	m := map[string]func(*testing.T) (*mysqltest.Server, string){
		"gms": func(t *testing.T) (*mysqltest.Server, string) { return mysqltest.GMS(t), "1" },
	}
	if mysqltest.MariaDBAvailable() {
		m["mariadb"] = func(t *testing.T) (*mysqltest.Server, string) { return mysqltest.MariaDB(t), "4" }
	}
	return m
}

// sqlServer is the best server the SQL tests have: MariaDB when installed, else go-mysql-server;
// and the --sql-conns it takes.
func sqlServer(t *testing.T) (*mysqltest.Server, string) {
	if mysqltest.MariaDBAvailable() {
		return mysqltest.MariaDB(t), "4"
	}
	return mysqltest.GMS(t), "1"
}

// migrate --out mysql://: every row lands in the table, the checkpoint and rejects live in
// --state, a second run without --resume is refused, --resume of a complete run does nothing,
// and a table that differs from the mapping is refused before anything is written.
func TestMigrateIntoSQLTable(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			state := filepath.Join(t.TempDir(), "state")
			ddl := mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect())
			srv.Exec(t, ddl)
			args := []string{"migrate", "-m", mapping, "--source", "gen:orders?rows=5000&seed=3", "--out", srv.URI(""),
				"--sql-conns", conns, "--state", state, "--progress", "never"}
			out := mustRun(t, args...)
			if !strings.Contains(out, "rows written") || !strings.Contains(out, "statements") || !strings.Contains(out, "  state ") {
				t.Errorf("summary:\n%s", out)
			}
			// a table has no files or regions: the summary does not show them
			for _, line := range []string{"  regions ", "  files ", "  bytes "} {
				if strings.Contains(out, line) {
					t.Errorf("the summary of a SQL target shows %q:\n%s", line, out)
				}
			}
			var n int
			db := srv.DB(t)
			if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil || n != 5000 {
				t.Fatalf("%d rows in the table (%v), want 5000", n, err)
			}
			var pk1 string
			var amount string
			if err := db.QueryRow("SELECT pk1, amount FROM orders ORDER BY pk1 LIMIT 1").Scan(&pk1, &amount); err != nil || len(pk1) < 5 || !strings.Contains(amount, ".") {
				t.Errorf("a row: %q %q %v", pk1, amount, err)
			}
			if fi, err := os.Stat(filepath.Join(state, "checkpoint.json")); err != nil {
				t.Errorf("no checkpoint in --state: %v", err)
			} else if fi.Mode().Perm() != 0o600 {
				t.Errorf("the checkpoint in --state has mode %v, want 0600 (it names the source)", fi.Mode().Perm())
			}
			code, _, errs := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(errs, "--resume") {
				t.Errorf("second run: exit %d: %s", code, errs)
			}
			code, stdout, errs := runCLI(t, append(args, "--resume")...)
			if code != 0 || !strings.Contains(stdout, "nothing to resume") {
				t.Errorf("--resume of a complete run: exit %d: %s%s", code, stdout, errs)
			}
			// a table that differs: refused with exit 2, naming the difference
			srv.Exec(t, "DROP TABLE orders", strings.Replace(ddl, "`amount` decimal(18,2)", "`amount` double", 1))
			code, _, errs = runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", srv.URI(""),
				"--sql-conns", conns, "--state", filepath.Join(t.TempDir(), "s2"), "--progress", "never")
			if code != exitUsage || !strings.Contains(errs, "column amount: DECIMAL(18,2) in the mapping, double in the table") {
				t.Errorf("mismatched table: exit %d: %s", code, errs)
			}
			if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil || n != 0 {
				t.Errorf("%d rows written into the mismatched table (%v)", n, err)
			}
		})
	}
}

// A password in the URI is refused without being shown; the password comes from the dialect's
// environment variable.
func TestSQLTargetPassword(t *testing.T) {
	t.Parallel()
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	code, _, errs := runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", "mysql://u:hunter2@127.0.0.1:1/db", "--progress", "never")
	if code != exitUsage || strings.Contains(errs, "hunter2") || !strings.Contains(errs, mysqlsql.PasswordEnv) {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// A SQL URI refused is named by the flag that gave it: verify's --target, never --out, which
// verify does not have. Before, verify said "--target mysql://...: --out mysql://...: a password
// in the URI ...".
func TestSQLURIRefusedNamesItsFlag(t *testing.T) {
	t.Parallel()
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	for _, uri := range []string{"mysql://u:hunter2@127.0.0.1:1/db", "mysql://127.0.0.1:1/db"} {
		code, _, errs := runCLI(t, "verify", "-m", mapping, "--source", "gen:orders?rows=10", "--target", uri, "--progress", "never")
		if code != exitVerifyFailed || strings.Contains(errs, "--out") || !strings.Contains(errs, "--target mysql://") || strings.Contains(errs, "hunter2") {
			t.Errorf("verify --target %s: exit %d, want %d naming --target alone: %s", uri, code, exitVerifyFailed, errs)
		}
		code, _, errs = runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", uri, "--progress", "never")
		if code != exitUsage || !strings.Contains(errs, "--out mysql://") || strings.Contains(errs, "hunter2") {
			t.Errorf("migrate --out %s: exit %d, want %d naming --out: %s", uri, code, exitUsage, errs)
		}
	}
}

// sqlOrderMessages are n JSON changes of mappings/orders.yaml over 2 partitions (by key): 150
// keys updated again and again, every 7th message a tombstone (a delete), message 5 poison. want
// is the latest state per key (pk1/orderid -> status), as an independent reading of the messages.
func sqlOrderMessages(n int) (msgs []kafkago.Message, want map[string]string) {
	want = map[string]string{}
	for i := 0; i < n; i++ {
		id := i % 150
		user := fmt.Sprintf("user%03d", id%40)
		sum := md5.Sum([]byte(user))
		k := hex.EncodeToString(sum[:])[:4] + user + "/" + fmt.Sprint(id)
		m := kafkago.Message{Partition: id % 2, Key: []byte(fmt.Sprintf(`{"userid":"%s","orderid":%d}`, user, id))}
		switch {
		case i == 5:
			m.Value = []byte(`{"userid":`)
		case i%7 == 3:
			delete(want, k)
		default:
			status := fmt.Sprintf("s%d", i)
			m.Value = []byte(fmt.Sprintf(`{"userid":"%s","orderid":%d,"channel":"jd","ts":"2024-05-01T10:00:00.123Z","status":"%s","location":"hz","amount":"1.50"}`, user, id, status))
			want[k] = status
		}
		msgs = append(msgs, m)
	}
	return msgs, want
}

func tableState(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query("SELECT pk1, orderid, status FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var pk1, status string
		var id int64
		if err := rows.Scan(&pk1, &id, &status); err != nil {
			t.Fatal(err)
		}
		got[pk1+"/"+fmt.Sprint(id)] = status
	}
	return got
}

// replicate --out mysql://: the table ends as the latest change of every key, deleted keys
// absent; the poison message is in the state folder's rejects; offsets are committed; the SQL
// statement metrics are served.
func TestReplicateIntoSQLTable(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			c := kafkatest.Start(t)
			topic := c.CreateTopic(t, "sql-orders", 2)
			msgs, want := sqlOrderMessages(3000)
			c.Produce(t, topic, msgs...)
			var ends [2]int64
			for _, m := range msgs {
				ends[m.Partition]++
			}
			state := filepath.Join(t.TempDir(), "state")
			done := make(chan int, 1)
			var out string
			sigs := make(chan os.Signal)
			live := &lockedBuffer{}
			go func() {
				code, o, e := cliRun{signals: sigs, stderr: live}.run(t, "replicate", "-m", mapping, "--source", "kafka://"+strings.Join(c.Brokers, ",")+"/"+topic+"?group=sql&format=json",
					"--out", srv.URI(""), "--sql-conns", conns, "--state", state, "--metrics-addr", "127.0.0.1:0", "--log-level", "info", "--progress", "never", "--session-timeout", "3s")
				out = o + e
				done <- code
			}()
			wait.For(t, func() bool {
				committed := c.Committed(t, "sql", topic, 2)
				return committed[0] == ends[0] && committed[1] == ends[1]
			}, fmt.Sprintf("replicate to commit the offsets %v", ends))
			addr := servedMetricsAddr(live.String()) // logged (--log-level info) before it consumed
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, m := range []string{`rekey_sql_statements_total{kind="upsert",result="ok"}`, `rekey_sql_statements_total{kind="delete",result="ok"}`, "rekey_sql_retries_total ", "rekey_sql_statement_seconds_bucket", "rekey_messages_rejected_total 1"} {
				if !strings.Contains(string(body), m) {
					t.Errorf("/metrics lacks %s", m)
				}
			}
			interrupt(t, sigs, syscall.SIGTERM)
			select {
			case code := <-done:
				if code != exitRejects || !strings.Contains(out, "warning: 1 messages rejected by this process") {
					t.Fatalf("replicate exit %d, want 1 and a warning for the message rejected:\n%s", code, out)
				}
				for _, line := range []string{"  rolls ", "  files ", "  regions ", "open rolls"} {
					if strings.Contains(out, line) {
						t.Errorf("replicate into a SQL table shows %q:\n%s", line, out)
					}
				}
			case <-time.After(30 * time.Second):
				t.Fatal("replicate did not stop on SIGTERM")
			}
			got := tableState(t, srv.DB(t))
			if len(got) != len(want) {
				t.Errorf("%d rows in the table, want %d", len(got), len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("key %s: status %q, want %q", k, got[k], v)
				}
			}
			rej, _ := filepath.Glob(filepath.Join(state, "rejects", "p0001-*.jsonl"))
			if len(rej) != 1 {
				t.Fatalf("rejects files %v, want one for partition 1 (message 5)", rej)
			}
			data, _ := os.ReadFile(rej[0])
			if !strings.Contains(string(data), `"offset":2`) || strings.Count(string(data), "\n") != 1 {
				t.Errorf("rejects: %s", data)
			}
		})
	}
}

// verify --target mysql://: a migrated table is equal to its source (exit 0); a row deleted and a
// value changed in the table are found (exit 2), through verify's SQL lookups and the table check.
func TestVerifySQLTarget(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			src := "gen:orders?rows=3000&seed=5"
			mustRun(t, "migrate", "-m", mapping, "--source", src, "--out", srv.URI(""),
				"--sql-conns", conns, "--state", filepath.Join(t.TempDir(), "state"), "--progress", "never")
			verifyArgs := []string{"verify", "-m", mapping, "--source", src, "--target", srv.URI(""), "--progress", "never"}
			code, stdout, errs := runCLI(t, verifyArgs...)
			if code != 0 {
				t.Fatalf("verify of a migrated table: exit %d\n%s%s", code, stdout, errs)
			}
			deleteOneChangeOne(t, srv.DB(t))
			code, stdout, errs = runCLI(t, verifyArgs...)
			if code != exitDifferent || !strings.Contains(stdout, "1 missing") || !strings.Contains(stdout, "1 differ") || !strings.Contains(stdout, "status") {
				t.Errorf("verify of a tampered table: exit %d\n%s%s", code, stdout, errs)
			}
		})
	}
}

// deleteOneChangeOne deletes the first row of the orders table and changes the status of
// another: one key missing, one differing.
func deleteOneChangeOne(t *testing.T, db *sql.DB) {
	t.Helper()
	var pk1 string
	var id int64
	if err := db.QueryRow("SELECT pk1, orderid FROM orders ORDER BY pk1, orderid LIMIT 1").Scan(&pk1, &id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM orders WHERE pk1 = ? AND orderid = ?", pk1, id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE orders SET status = 'tampered' WHERE pk1 = (SELECT MAX(pk1) FROM (SELECT pk1 FROM orders) x) LIMIT 1"); err != nil {
		t.Fatal(err)
	}
}

// verify --target mysql:// of migrated FLOAT values: equal (exit 0), where the text protocol's
// 6-digit FLOAT made verify report 1,931 of 2,000 rows different; a value changed by one bit in
// the table is still found (exit 2).
func TestVerifySQLTargetFloats(t *testing.T) {
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", `version: 1
source:
  name: readings
  columns: {id: bigint, v: float}
target:
  table: readings
  primary_key: "[id]"
`)
	rng := rand.New(rand.NewPCG(7, 8))
	var in strings.Builder
	in.WriteString("id,v\n")
	for i := 0; i < 2000; i++ {
		// every digit of a float32 and some beyond: the source value is rounded to FLOAT
		fmt.Fprintf(&in, "%d,%s\n", i, strconv.FormatFloat((rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(20)-10)), 'g', 12, 64))
	}
	src := "file:" + writeFile(t, dir, "in.csv", in.String())
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			mustRun(t, "migrate", "-m", mapping, "--source", src, "--out", srv.URI(""),
				"--sql-conns", conns, "--state", filepath.Join(t.TempDir(), "state"), "--progress", "never")
			verifyArgs := []string{"verify", "-m", mapping, "--source", src, "--target", srv.URI(""), "--progress", "never"}
			if code, stdout, errs := runCLI(t, verifyArgs...); code != 0 {
				t.Fatalf("verify of migrated FLOAT values: exit %d\n%s%s", code, stdout, errs)
			}
			db := srv.DB(t)
			var v float32
			if err := db.QueryRow("SELECT v + 0e0 FROM readings WHERE id = 17").Scan(&v); err != nil {
				t.Fatal(err)
			}
			next := math.Nextafter32(v, float32(math.Inf(1)))
			if _, err := db.Exec("UPDATE readings SET v = " + strconv.FormatFloat(float64(next), 'g', -1, 32) + " WHERE id = 17"); err != nil {
				t.Fatal(err)
			}
			code, stdout, errs := runCLI(t, verifyArgs...)
			if code != exitDifferent || !strings.Contains(stdout, "1 differ") {
				t.Errorf("verify of a FLOAT one bit away: exit %d\n%s%s", code, stdout, errs)
			}
		})
	}
}

// Keys that differ only by trailing spaces stay three rows in the table rekey ddl prints (before,
// its utf8mb4_bin is PAD SPACE on MariaDB: 3 rows written, 1 stored, exit 0), and migrate refuses
// (exit 2) a table whose key collation is PAD SPACE, naming the ALTER TABLE that fixes it.
func TestMigrateKeysDifferingByTrailingSpaces(t *testing.T) {
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", `version: 1
source:
  name: tags
  columns: {tag: text, n: bigint}
target:
  table: tags
  primary_key: "[tag]"
`)
	src := "file:" + writeFile(t, dir, "in.csv", "tag,n\na,1\n\"a \",2\n\"a  \",3\n")
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			args := []string{"migrate", "-m", mapping, "--source", src, "--out", srv.URI(""), "--sql-conns", conns, "--progress", "never"}
			srv.Exec(t, "CREATE TABLE tags (tag varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, n bigint)")
			code, _, errs := runCLI(t, append(args, "--state", filepath.Join(t.TempDir(), "state"))...)
			if code != exitUsage || !strings.Contains(errs, "PAD SPACE") || !strings.Contains(errs, "ALTER TABLE `tags` MODIFY `tag` varchar(20)") ||
				!strings.Contains(errs, "rekey ddl -m MAPPING --dialect "+srv.DDLDialect()+" prints") {
				t.Errorf("migrate into a PAD SPACE key: exit %d\n%s", code, errs)
			}
			srv.Exec(t, "DROP TABLE tags", mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			mustRun(t, append(args, "--state", filepath.Join(t.TempDir(), "state"))...)
			var n int
			if err := srv.DB(t).QueryRow("SELECT COUNT(*) FROM tags").Scan(&n); err != nil || n != 3 {
				t.Errorf("%d rows (%v), want 3: 'a', 'a ', 'a  '", n, err)
			}
		})
	}
}

// A replication into a table whose state folder holds another topic's replication (the default
// --state is the table's, the same for two topics) is refused as invalid use, exit 2, naming
// --state, before it connects to anything; it failed with exit 3, as a failure of the run.
func TestReplicateIntoSQLRefusesAnotherTopicsState(t *testing.T) {
	state := t.TempDir()
	writeFile(t, state, "offsets.json", `{"topic": "orders-eu", "group": "g", "next_offsets": {"0": 12}}`)
	code, stdout, stderr := runCLI(t, "replicate", "-m", "../../mappings/orders.yaml", "--source", "kafka://127.0.0.1:1/orders-us?group=g",
		"--progress", "never", "--out", "mysql://root@127.0.0.1:1/shop", "--state", state)
	if code != 2 || !strings.Contains(stderr, "orders-eu") || !strings.Contains(stderr, "--state") {
		t.Errorf("exit %d, want 2 naming the other topic and --state\n%s%s", code, stdout, stderr)
	}
}

// A replication into a table whose mapping's source columns the topic's format cannot read (a
// Cassandra counter from Debezium's connector, which publishes no events of counter tables) is
// refused before anything is read: exit 2, as into a folder, saying what to do.
func TestReplicateIntoSQLRefusesColumnsTheFormatCannotRead(t *testing.T) {
	srv := mysqltest.GMS(t)
	dir := t.TempDir()
	mapping := writeFile(t, dir, "cnt.yaml", "version: 1\nsource:\n  name: ks.cnt\n  columns:\n    p: int\n    n: counter\ntarget:\n  table: cnt\n  primary_key: \"[p]\"\n")
	for _, out := range [][]string{{srv.URI(""), "--state", filepath.Join(dir, "state")}, {filepath.Join(dir, "out")}} {
		code, stdout, stderr := runCLI(t, append([]string{"replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/ks.cnt?group=g&format=debezium",
			"--progress", "never", "--out"}, out...)...)
		if code != 2 || !strings.Contains(stderr, `column "n" is a Cassandra counter`) || !strings.Contains(stderr, "migrate") {
			t.Errorf("--out %s: exit %d, want 2 naming the counter\n%s%s", out, code, stdout, stderr)
		}
	}
}

// The progress line of a migration into a table counts its statements, as its summary and
// replicate's status line into a table do. Before, it gave the bytes of its statements as "written",
// a figure the summary and --stats-json (bytes 0) of a table never show.
func TestSQLProgressCountsStatements(t *testing.T) {
	srv := mysqltest.GMS(t)
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=3000", "--out", srv.URI(""), "--sql-conns", "1",
		"--state", filepath.Join(t.TempDir(), "state"), "--progress", "plain", "--progress-interval", "1h")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var statements int64
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "  statements ") {
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "  statements ")), "%d", &statements)
		}
	}
	last := lastLine(stderr, "migrating: ")
	if statements == 0 || !strings.Contains(last, fmt.Sprintf(", %s statements, ", groupDigits(statements))) || strings.Contains(last, "B written") {
		t.Fatalf("the last progress line %q, want the summary's %d statements and no bytes\n%s", last, statements, stdout)
	}
}

// The log line a migration into a table starts with names --out under "out", as a migration into
// files and a replication (into files or a table) do. Before, it named it "target", so a search
// of the logs for a run's out found every run but those.
func TestSQLMigrationStartLogNamesOut(t *testing.T) {
	srv := mysqltest.GMS(t)
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", srv.URI(""), "--sql-conns", "1",
		"--state", filepath.Join(t.TempDir(), "state"), "--progress", "never", "--log-format", "json", "--log-level", "info")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, l := range strings.Split(stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != "migration into a SQL table starting" {
			continue
		}
		if m["out"] != srv.URI("") || m["target"] != nil || m["table"] != "orders" {
			t.Fatalf("the start log's fields: %v, want out %s", m, srv.URI(""))
		}
		return
	}
	t.Fatalf("no start log line:\n%s", stderr)
}

// The summary of a migration into a table lines up every figure, the table's and its statements'
// among them, also when a label is wider than usual (a resumed run's "(this attempt)"). Before,
// "target" and "statements" were printed at a column of their own:
//
//	rows/s (this attempt)   40000
//	state                   .rekey-state/...
//	target         mysql://...
//	statements (this attempt) 7 (...)
func TestSQLSummaryLinesUp(t *testing.T) {
	srv := mysqltest.GMS(t)
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	m, err := transform.Load(mapping)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	target, err := sqlsink.ParseURI(srv.URI(""), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := sqlsink.Open(context.Background(), sqlsink.Config{Target: target, Schema: prog.Target(), Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, resumed := range []bool{false, true} {
		var b strings.Builder
		res := pipeline.Result{RowsIn: 1_200, RowsWritten: 1_200, RowsInThisRun: 200, Resumed: resumed, Duration: time.Second}
		printSQLSummary(&b, "Migration summary", res, w, nil, sqlDest{table: target.Redacted + " table orders", state: ".rekey-state/x"}, time.Time{})
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")[1:]
		col := -1
		for _, l := range lines {
			i := strings.Index(l[2:], "  ")
			for i >= 0 && i+2 < len(l)-2 && l[2+i+2] == ' ' {
				i++
			}
			if col == -1 {
				col = i
			}
			if i != col {
				t.Fatalf("resumed %v: the figures do not line up:\n%s", resumed, b.String())
			}
		}
	}
}
