package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/kafka/cdcdemo"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// Debezium's relational connectors: a whole row in "after", a delete with "before" and a
// tombstone after it.
func relationalEvent(op, id, name, email string, visits int) kafkago.Message {
	row := fmt.Sprintf(`{"id":%q,"name":%q,"email":%q,"visits":%d}`, id, name, email, visits)
	v := `{"before":null,"after":` + row + `,"op":"` + op + `","ts_ms":1}`
	if op == "d" {
		v = `{"before":` + row + `,"after":null,"op":"d","ts_ms":1}`
	}
	return kafkago.Message{Key: []byte(`{"id":"` + id + `"}`), Value: []byte(v)}
}

func relationalTombstone(id string) kafkago.Message {
	return kafkago.Message{Key: []byte(`{"id":"` + id + `"}`)}
}

// relationalStream inserts n users, updates every third one twice and deletes every fifth one
// (then inserts u0 again): the same keys change several times, deletes included.
func relationalStream(n int) []kafkago.Message {
	var msgs []kafkago.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, relationalEvent("c", fmt.Sprintf("u%d", i), "name", fmt.Sprintf("u%d@x.org", i), i))
	}
	for i := 0; i < n; i += 3 {
		msgs = append(msgs, relationalEvent("u", fmt.Sprintf("u%d", i), "renamed", "", 100+i), relationalEvent("u", fmt.Sprintf("u%d", i), "again", "x", 200+i))
	}
	for i := 0; i < n; i += 5 {
		id := fmt.Sprintf("u%d", i)
		msgs = append(msgs, relationalEvent("d", id, "again", "x", 200+i), relationalTombstone(id))
	}
	return append(msgs, relationalEvent("c", "u0", "back", "b", 7))
}

// verifyTopic runs verify of the topic (format=debezium, params added) against target.
func verifyTopic(t *testing.T, c *kafkatest.Cluster, topic, mapping, params, target string, extra ...string) (int, string) {
	t.Helper()
	src := "kafka://" + strings.Join(c.Brokers, ",") + "/" + topic + "?format=debezium" + params
	args := append([]string{"verify", "-m", mapping, "--source", src, "--target", target, "--progress", "never"}, extra...)
	code, out, errOut := runCLI(t, args...)
	return code, out + errOut
}

// A replicate output folder (upserts in rolls, deletes in .sql files) is verified against the
// topic up to the offsets its manifest records: EQUAL, and the summary says up to where. Before,
// verify read the topic as a window of rows (deletes rejected, every message up to the end) and
// the output's upserts without its deletes: the keys deleted showed as extra, and messages
// produced after replicate stopped as missing or differing.
func TestVerifyReplicateOutputUpToItsManifest(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	out := filepath.Join(t.TempDir(), "out")
	msgs := relationalStream(30)
	c, topic, output, rejects := replicateTopic(t, mapping, msgs, "--out", out, "--roll-interval", "200ms")
	if len(rejects) != 0 {
		t.Fatalf("replicate rejected %q:\n%s", rejects, output)
	}
	// changes after replicate stopped: not in the output, not verified
	c.Produce(t, topic, relationalEvent("c", "late1", "late", "l", 1), relationalEvent("u", "u1", "late", "l", 2), relationalEvent("d", "u2", "", "", 0))

	code, got := verifyTopic(t, c, topic, mapping, "", out)
	if code != 0 || !strings.Contains(got, "EQUAL") {
		t.Fatalf("verify exit %d, want EQUAL:\n%s", code, got)
	}
	if want := fmt.Sprintf("%s/0 < %d (the next offsets %s/manifest.json records)", topic, len(msgs), out); !strings.Contains(got, want) {
		t.Errorf("the summary does not say %q:\n%s", want, got)
	}
	// 30 users, 6 of them deleted, u0 inserted again
	if !strings.Contains(got, "keys checked      25") {
		t.Errorf("keys checked:\n%s", got)
	}
	// the manifest says up to where: a consumer group's committed offsets would be ignored
	if code, got := verifyTopic(t, c, topic, mapping, "&group=cdc", out); code != exitVerifyFailed ||
		!strings.Contains(got, "group= does not apply when verifying a replicate output") {
		t.Errorf("verify of a replicate output with group=: exit %d, want 3 refusing group=:\n%s", code, got)
	}

	// tamper: one value changed, one row's key changed (a row deleted, another added)
	m := readReplication(t, out)
	first := filepath.Join(out, filepath.FromSlash(m.Replication.Segments[0].Data.Path))
	schema := pipeline.TargetSchema{Table: "users", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "id", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "name", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "email", Type: pipeline.TypeVarchar, KeyPos: -1}, {Name: "visits", Type: pipeline.TypeInteger, KeyPos: -1}}}
	pf, err := sinktest.ReadParquet(first, schema)
	if err != nil {
		t.Fatal(err)
	}
	rows := pf.Values
	for i, r := range rows {
		switch r[0].Str {
		case "u1":
			rows[i][2] = pipeline.Text("changed@x.org")
		case "u4":
			rows[i][0] = pipeline.Text("intruder")
		}
	}
	rewriteParquet(t, first, schema, rows)
	code, got = verifyTopic(t, c, topic, mapping, "", out)
	if code != exitDifferent || !strings.Contains(got, "DIFFERENT: 1 missing, 1 differ, 1 extra (of 25 keys checked)") {
		t.Fatalf("verify exit %d, want 1 missing, 1 differ, 1 extra:\n%s", code, got)
	}
	for _, want := range []string{"key id=u4", "key id=u1", "email: source u1@x.org, target changed@x.org", "key id=intruder"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}

	// a window of the topic is not where replicate stopped: refused, with why
	code, got = verifyTopic(t, c, topic, mapping, "&max=10", out)
	if code != exitVerifyFailed || !strings.Contains(got, "max= does not apply when verifying a replication") {
		t.Errorf("verify with max= exit %d:\n%s", code, got)
	}
	code, got = verifyTopic(t, c, topic, mapping, "", out, "--repair", filepath.Join(t.TempDir(), "r.jsonl"))
	if code != exitVerifyFailed || !strings.Contains(got, "run replicate again") {
		t.Errorf("verify --repair exit %d:\n%s", code, got)
	}
}

// A delete file's statement removed from the output: the key it deleted is an extra row.
func TestVerifyReplicateOutputReadsItsDeletes(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	out := filepath.Join(t.TempDir(), "out")
	msgs := []kafkago.Message{
		relationalEvent("c", "a", "A", "a@x", 1), relationalEvent("c", "b", "B", "b@x", 2),
		relationalEvent("d", "a", "A", "a@x", 1), relationalTombstone("a"),
	}
	c, topic, _, _ := replicateTopic(t, mapping, msgs, "--out", out, "--roll-interval", "200ms")
	if code, got := verifyTopic(t, c, topic, mapping, "", out); code != 0 {
		t.Fatalf("verify exit %d, want EQUAL:\n%s", code, got)
	}
	m := readReplication(t, out)
	var sqlFile string
	for _, s := range m.Replication.Segments {
		if s.Deletes != nil {
			sqlFile = filepath.Join(out, filepath.FromSlash(s.Deletes.Path))
		}
	}
	data, err := os.ReadFile(sqlFile)
	if err != nil {
		t.Fatal(err)
	}
	kept := strings.ReplaceAll(string(data), "DELETE FROM users WHERE id = 'a';\n", "")
	if kept == string(data) {
		t.Fatalf("no DELETE of a in:\n%s", data)
	}
	if err := os.WriteFile(sqlFile, []byte(kept), 0o644); err != nil {
		t.Fatal(err)
	}
	code, got := verifyTopic(t, c, topic, mapping, "", out)
	if code != exitDifferent || !strings.Contains(got, "DIFFERENT: 1 extra") || !strings.Contains(got, "key id=a") {
		t.Errorf("verify exit %d, want the deleted key a extra:\n%s", code, got)
	}
}

// usersWholeThenPartial are the connector's events of two rows inserted whole, then an UPDATE of
// one column of the first and a DELETE of one cell of the second.
func usersWholeThenPartial() []kafkago.Message {
	return []kafkago.Message{
		cassandraEvent("i", `"id":`+cell(`"u1"`), `"name":`+cell(`"Ann"`), `"email":`+cell(`"ann@x.org"`), `"visits":`+cell(`1`)),
		cassandraEvent("i", `"id":`+cell(`"u2"`), `"name":`+cell(`"Bob"`), `"email":`+cell(`"bob@x.org"`), `"visits":`+cell(`5`)),
		cassandraEvent("u", `"id":`+cell(`"u1"`), `"visits":`+cell(`2`)),
		wrapped(cassandraEvent("u", `"id":`+cell(`"u2"`), `"email":`+deletedCell())),
	}
}

// A table replicate writes, verified against the topic up to the consumer group's committed
// offsets: Debezium's Cassandra connector's events (partial updates, a cell delete, a row
// delete) applied as replicate applies them. Then the table is tampered with.
func TestVerifyReplicatedTableUpToTheGroupsOffsets(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	msgs := append(usersWholeThenPartial(),
		cassandraEvent("i", `"id":`+cell(`"u3"`), `"name":`+cell(`"Cy"`), `"visits":`+cell(`3`)),
		cassandraEvent("i", `"id":`+cell(`"u4"`), `"name":`+cell(`"Di"`), `"visits":`+cell(`4`)),
		cassandraEvent("d", `"id":`+cell(`"u4"`)),
		cassandraEvent("u", `"id":`+cell(`"u5"`), `"visits":`+cell(`9`)), // an update of a row that did not exist
		// a cell delete of a row that does not exist, and a row losing its every cell: Cassandra
		// holds neither row, and a table of NULLs would show both
		cassandraEvent("u", `"id":`+cell(`"u6"`), `"email":`+deletedCell()),
		cassandraEvent("u", `"id":`+cell(`"u7"`), `"name":`+cell(`"Ed"`)),
		cassandraEvent("u", `"id":`+cell(`"u7"`), `"name":`+deletedCell()),
	)
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			c, topic, output, rejects := replicateTopic(t, mapping, msgs, "--out", srv.URI(""), "--sql-conns", conns)
			if len(rejects) != 0 {
				t.Fatalf("replicate rejected %q:\n%s", rejects, output)
			}
			c.Produce(t, topic, cassandraEvent("u", `"id":`+cell(`"u1"`), `"visits":`+cell(`99`)))
			code, got := verifyTopic(t, c, topic, mapping, "&group=cdc", srv.URI(""))
			if code != 0 || !strings.Contains(got, "EQUAL: the target holds all 4 keys checked") {
				t.Fatalf("verify exit %d, want EQUAL:\n%s", code, got)
			}
			if want := fmt.Sprintf("%s/0 < %d (the committed offsets of consumer group cdc)", topic, len(msgs)); !strings.Contains(got, want) {
				t.Errorf("the summary does not say %q:\n%s", want, got)
			}
			if rows := dumpTable(t, srv.DB(t), "SELECT id FROM users WHERE id IN ('u6', 'u7')"); len(rows) != 0 {
				t.Errorf("rows of NULLs left by cell deletes: %q", rows)
			}
			srv.Exec(t, "UPDATE users SET name = 'Zed' WHERE id = 'u1'", "DELETE FROM users WHERE id = 'u3'",
				"INSERT INTO users (id, name, visits) VALUES ('u4', 'Ghost', 1)")
			code, got = verifyTopic(t, c, topic, mapping, "&group=cdc", srv.URI(""))
			if code != exitDifferent || !strings.Contains(got, "DIFFERENT: 1 missing, 1 differ, 1 extra") {
				t.Fatalf("verify exit %d, want 1 missing, 1 differ, 1 extra:\n%s", code, got)
			}
			for _, want := range []string{"name: source Ann, target Zed", "key id=u3", "key id=u4"} {
				if !strings.Contains(got, want) {
					t.Errorf("no %q in:\n%s", want, got)
				}
			}
		})
	}
}

// A data file under data/ that a replicate output's manifest does not list (a copy of one of its
// files) is read as the bulk load reads it: its rows are target rows, the file is named, and the
// result is DIFFERENT. verify used to panic on it (index out of range).
func TestVerifyReplicateOutputWithAnUnlistedFile(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	out := filepath.Join(t.TempDir(), "out")
	msgs := relationalStream(30)
	c, topic, _, _ := replicateTopic(t, mapping, msgs, "--out", out, "--roll-interval", "200ms")
	m := readReplication(t, out)
	first := filepath.Join(out, filepath.FromSlash(m.Replication.Segments[0].Data.Path))
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(first), "copy.parquet", string(data))
	code, got := verifyTopic(t, c, topic, mapping, "", out)
	if code != exitDifferent || !strings.Contains(got, "1 data file not as listed") ||
		!strings.Contains(got, "copy.parquet") || !strings.Contains(got, "not listed") || strings.Contains(got, "panic") {
		t.Fatalf("verify exit %d, want DIFFERENT naming the unlisted file:\n%s", code, got)
	}
}

// usersTable creates ks.users in a Cassandra test server holding rows ("id name email visits").
func usersTable(t *testing.T, rows []string) *cassandratest.Cluster {
	t.Helper()
	cas := cassandratest.Open(t)
	if err := cas.CreateTable("ks", "users", []cqltest.Column{{Name: "id", Type: "text"}, {Name: "name", Type: "text"},
		{Name: "email", Type: "text"}, {Name: "visits", Type: "int"}}, []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cas.InsertMany("ks", "users", len(rows), func(i int, r map[string]any) error {
		f := strings.Fields(rows[i])
		r["id"], r["name"], r["email"] = f[0], f[1], f[2]
		n, err := strconv.Atoi(f[3])
		r["visits"] = int32(n)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return cas
}

// relationalRows is the table relationalStream(n) leaves: "id name email visits" per row.
func relationalRows(n int) []string {
	var rows []string
	for i := 0; i < n; i++ {
		switch {
		case i == 0:
			rows = append(rows, "u0 back b 7")
		case i%5 == 0:
		case i%3 == 0:
			rows = append(rows, fmt.Sprintf("u%d again x %d", i, 200+i))
		default:
			rows = append(rows, fmt.Sprintf("u%d name u%d@x.org %d", i, i, i))
		}
	}
	return rows
}

// A replicate output folder verified against the table the changes come from (a cut-over
// compares the two): EQUAL when the folder holds the table, and the rows the table has but the
// folder not, or the other way round, are missing and extra. verify used to fail with "temp file
// damaged" against any source but kafka://.
func TestVerifyReplicateOutputAgainstATable(t *testing.T) {
	// the columns in the table's order (Cassandra's: the key, then the others by name), which a
	// mapping compiled against the table takes
	mapping := writeFile(t, t.TempDir(), "users.yaml", strings.Replace(usersMapping, "    name: text\n    email: text\n", "    email: text\n    name: text\n", 1))
	out := filepath.Join(t.TempDir(), "out")
	replicateEvents(t, mapping, relationalStream(30), "--out", out, "--roll-interval", "200ms")
	rows := relationalRows(30)
	verifyTable := func(rows []string) (int, string) {
		cas := usersTable(t, rows)
		code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", cas.URI("ks", "users", ""), "--target", out, "--progress", "never")
		return code, stdout + stderr
	}
	if code, got := verifyTable(rows); code != 0 || !strings.Contains(got, "EQUAL: the target holds all 25 keys checked and nothing else") {
		t.Fatalf("verify exit %d, want EQUAL:\n%s", code, got)
	}
	// a row deleted in the table since, another inserted
	changed := append([]string{"new1 n n@x 1"}, rows[1:]...)
	code, got := verifyTable(changed)
	if code != exitDifferent || !strings.Contains(got, "DIFFERENT: 1 missing, 1 extra (of 25 keys checked)") ||
		!strings.Contains(got, "key id=new1") || !strings.Contains(got, "key id=u0") || !strings.Contains(got, "not the rows the source held before them") {
		t.Fatalf("verify exit %d, want new1 missing and u0 extra:\n%s", code, got)
	}
}

// Debezium's Cassandra events replicated into a folder: the changes that set some columns are
// rejected there (bulk-load files hold whole rows), and verify compares the folder with what the
// topic's changes make of the table, those changes included: the keys they changed differ or
// are missing, and a note says why. verify used to leave them out as replicate did and say EQUAL.
func TestVerifyReplicateOutputOfPartialUpdates(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	out := filepath.Join(t.TempDir(), "out")
	msgs := append(usersWholeThenPartial(),
		cassandraEvent("i", `"id":`+cell(`"u3"`), `"name":`+cell(`"Cy"`), `"visits":`+cell(`3`)),
		cassandraEvent("i", `"id":`+cell(`"u4"`), `"name":`+cell(`"Di"`), `"email":`+cell(`"di@x.org"`), `"visits":`+cell(`4`)),
		cassandraEvent("d", `"id":`+cell(`"u4"`)),
	)
	c, topic, output, rejects := replicateTopic(t, mapping, msgs, "--out", out, "--roll-interval", "100ms")
	if len(rejects) != 3 {
		t.Fatalf("replicate rejected %d messages, want the 3 partial ones:\n%s", len(rejects), strings.Join(rejects, "\n"))
	}
	// replicate says so after its summary, and what to do (replicateTopic checks it exits 1)
	if !strings.Contains(output, "warning: 3 messages rejected by this process (partial_update 3)") ||
		!strings.Contains(output, "replicate Debezium's Cassandra events into the table instead (--out mysql://... or lindorm://...)") {
		t.Errorf("replicate's output does not warn of the changes it rejected:\n%s", output)
	}
	code, got := verifyTopic(t, c, topic, mapping, "", out)
	if code != exitDifferent || !strings.Contains(got, "DIFFERENT: 1 missing, 2 differ (of 3 keys checked)") ||
		!strings.Contains(got, "visits: source 2, target 1") || !strings.Contains(got, "key id=u3") ||
		!strings.Contains(got, "3 changes of the topic cannot be written to bulk-load files (partial_update 3)") ||
		!strings.Contains(got, "replicate rejected 3 messages of "+out) {
		t.Fatalf("verify exit %d, want u1 and u2 differing, u3 missing, and why:\n%s", code, got)
	}
}

// A range delete the table's key cannot express is rejected by replicate into a table too:
// verify cannot apply it either, says so, and does not call the table EQUAL.
func TestVerifyReplicatedTableWithChangesNeitherCanApply(t *testing.T) {
	msgs := []kafkago.Message{
		tbRow(1, 1, 1, 1, 1), tbRow(1, 1, 2, 3, 2), tbRow(1, 2, 0, 0, 4),
		cassandraEvent("r", `"a":`+cell("1"), `"_range_start":`+rangeBound("INCL_START_BOUND", "b", "1"),
			`"_range_end":`+rangeBound("INCL_END_BOUND", "b", "1", "c", "2")),
	}
	mapping := writeFile(t, t.TempDir(), "tb.yaml", rangeMappingHead+`  primary_key: "[b][a][c][d]"`+"\n")
	srv := mysqltest.GMS(t)
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
	c, topic, _, rejects := replicateTopic(t, mapping, msgs, "--out", srv.URI(""), "--sql-conns", "1")
	if len(rejects) != 1 || !strings.Contains(rejects[0], `"code":"range_tombstone"`) {
		t.Fatalf("rejects %q, want the range delete", rejects)
	}
	code, got := verifyTopic(t, c, topic, mapping, "&group=cdc", srv.URI(""))
	if code != exitDifferent || strings.Contains(got, "EQUAL") || !strings.Contains(got, "DIFFERENT: 1 source changes not applied (range_tombstone 1) (of 3 keys checked)") ||
		!regexp.MustCompile(`changes skipped +1 \(range_tombstone 1\): neither replicate nor verify can apply them`).MatchString(got) {
		t.Fatalf("verify exit %d, want the range delete named and no EQUAL:\n%s", code, got)
	}
}

// The connector's events of a table changing (inserts of some or all columns, updates, cell,
// row, partition and range deletes) replicated into a folder: replicate rejects the ones files
// cannot hold, warns and exits 1; verify of the folder against the topic and against the
// Cassandra table itself find the same differences (the changes applied as the table applies
// them), where verify used to say EQUAL against the topic and fail against the table.
func TestVerifyCassandraChangesInAFolderAsTheTableHoldsThem(t *testing.T) {
	cas := cassandratest.Open(t)
	if cas.Real() {
		t.Skip("the application's writes go through the test server's Go API")
	}
	if err := cdcdemo.CreateTable(cas.Server); err != nil {
		t.Fatal(err)
	}
	w := cdcdemo.NewWriter(cas.Server, 1, 11)
	kc := kafkatest.Start(t)
	topic := kc.CreateTopic(t, "cdc", 1)
	tw := kc.Writer(topic)
	defer tw.Close()
	w.Capture(tw)
	if err := w.Step(context.Background(), 600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "ev.yaml", cdcdemo.Mapping)
	out := filepath.Join(dir, "out")
	src := "kafka://" + strings.Join(kc.Brokers, ",") + "/" + topic + "?format=debezium"
	// replicateFrom checks it exits 1 with a warning
	output, _ := replicateFrom(t, kc, topic, w.Ends()[0], mapping, "--out", out, "--roll-interval", "200ms")
	if !regexp.MustCompile(`warning: \d+ messages rejected by this process \(partial_update \d+, range_tombstone \d+\)`).MatchString(output) {
		t.Fatalf("replicate does not warn of the rejects by code:\n%s", output)
	}
	verdicts := map[string]string{}
	for _, s := range []string{src, cas.URI("ks", "ev", "")} {
		code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", s, "--target", out, "--progress", "never")
		if code != exitDifferent || !strings.Contains(stdout, "DIFFERENT: ") {
			t.Fatalf("verify --source %s: exit %d, want DIFFERENT\n%s%s", s, code, stdout, stderr)
		}
		verdicts[s] = firstLine(stdout, "DIFFERENT: ")
	}
	if a, b := verdicts[src], verdicts[cas.URI("ks", "ev", "")]; a != b || !strings.Contains(a, fmt.Sprintf("(of %d keys checked)", len(w.Rows()))) {
		t.Fatalf("against the topic: %s\nagainst the table (%d rows): %s", a, len(w.Rows()), b)
	}
}

// A whole row whose every non-key column is null holds nothing: replicate into a folder writes
// it as the key's delete (a bulk load of the row would leave the key's earlier cells in place,
// and a wide table keeps no row of NULLs), and verify expects no row for it.
func TestReplicateRowOfNullsIntoAFolderIsADelete(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	out := filepath.Join(t.TempDir(), "out")
	nulls := func(op, id string) kafkago.Message {
		return kafkago.Message{Key: []byte(`{"id":"` + id + `"}`),
			Value: []byte(`{"before":null,"after":{"id":"` + id + `","name":null,"email":null,"visits":null},"op":"` + op + `","ts_ms":1}`)}
	}
	msgs := []kafkago.Message{
		relationalEvent("c", "u1", "Ann", "ann@x.org", 1),
		relationalEvent("c", "u2", "Bob", "bob@x.org", 2),
		nulls("u", "u1"), // its values all set to NULL
		nulls("c", "u3"), // a row of NULLs
	}
	c, topic, output, rejects := replicateTopic(t, mapping, msgs, "--out", out, "--roll-interval", "100ms")
	if len(rejects) != 0 {
		t.Fatalf("replicate rejected %q:\n%s", rejects, output)
	}
	if !regexp.MustCompile(`deletes +2\b`).MatchString(output) {
		t.Errorf("replicate's summary does not count the 2 rows of NULLs as deletes:\n%s", output)
	}
	code, got := verifyTopic(t, c, topic, mapping, "", out)
	if code != 0 || !strings.Contains(got, "EQUAL: the target holds all 1 keys checked") {
		t.Fatalf("verify exit %d, want EQUAL of u2 alone:\n%s", code, got)
	}
}

// A replication killed after its manifest listed a roll and before the roll's files had their
// final names (the partition's next owner renames them): verify says so and what to do, rather
// than asking whether the output was moved or cleaned up.
func TestVerifyReplicateOutputKilledWhileItsRollWasRenamed(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	out := filepath.Join(t.TempDir(), "out")
	msgs := relationalStream(10)
	c, topic, output, rejects := replicateTopic(t, mapping, msgs, "--out", out, "--roll-interval", "200ms")
	if len(rejects) != 0 {
		t.Fatalf("replicate rejected %q:\n%s", rejects, output)
	}
	// the state a kill between the manifest and the renames leaves
	var m map[string]any
	data, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	repl := readReplication(t, out)
	seg := repl.Replication.Segments[len(repl.Replication.Segments)-1]
	temp := path.Dir(seg.Data.Path) + "/.rekey-tmp-" + strings.TrimSuffix(path.Base(seg.Data.Path), ".parquet") + "-aaaaaaaa.parquet"
	if err := os.Rename(filepath.Join(out, filepath.FromSlash(seg.Data.Path)), filepath.Join(out, filepath.FromSlash(temp))); err != nil {
		t.Fatal(err)
	}
	parts := m["replication"].(map[string]any)["partitions"].([]any)
	parts[0].(map[string]any)["staged"] = []map[string]string{{"temporary": temp, "name": seg.Data.Path}}
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "manifest.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	code, got := verifyTopic(t, c, topic, mapping, "", out)
	if code != exitVerifyFailed || !strings.Contains(got, "still under its temporary name") || !strings.Contains(got, "run rekey replicate again") {
		t.Errorf("verify exit %d, want it to name the unfinished commit:\n%s", code, got)
	}
}
