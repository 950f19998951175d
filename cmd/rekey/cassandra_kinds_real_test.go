package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// TestCassandraKindsCopiedAndReplicated writes, with CQL on the real node, a table per kind of
// column that is not a plain value (a static column, collections frozen and not, a tuple, a
// user-defined type, a counter), copies each with migrate into a SQL table and replicates the
// tables the real Debezium connector publishes with replicate into another, and compares what
// both wrote with what Cassandra holds (docs/sources.md, "Counters, static columns, collections,
// tuples, UDTs").
func TestCassandraKindsCopiedAndReplicated(t *testing.T) {
	cas, kc := realConnector(t)
	ks, exec := connectorKeyspace(t, cas, "kinds")
	exec(`CREATE TYPE ` + ks + `.addr (street text, zip int)`)
	for _, tb := range []struct{ name, def string }{
		{"st", `(p int, c int, s text static, v text, PRIMARY KEY (p, c))`},
		{"col", `(p int PRIMARY KEY, l list<text>, st set<int>, m map<text, int>, fl frozen<list<int>>, fm frozen<map<text, int>>, tp tuple<int, text>)`},
		{"cnt", `(p int PRIMARY KEY, n counter)`},
	} {
		connectorTable(t, exec, ks, tb.name, tb.def)
	}
	// a table with a user-defined type: the connector does not take it ("Unknown type": its
	// schema listener adds tables, not types)
	exec(`CREATE TABLE ` + ks + `.udt (p int PRIMARY KEY, fu frozen<addr>, u addr) WITH cdc = true`)
	wait.For(t, connectorLogged("Error happened while adding table "+ks+".udt"), "the connector to refuse table "+ks+".udt")

	exec(`INSERT INTO ` + ks + `.st (p, c, s, v) VALUES (1, 1, 'S1', 'a')`)
	exec(`INSERT INTO ` + ks + `.st (p, c, v) VALUES (1, 2, 'b')`)
	exec(`UPDATE ` + ks + `.st SET s = 'S2' WHERE p = 1`)
	exec(`INSERT INTO ` + ks + `.st (p, c, s, v) VALUES (2, 9, 'T', 'z')`)
	exec(`INSERT INTO ` + ks + `.st (p, s) VALUES (3, 'alone')`)
	exec(`INSERT INTO ` + ks + `.col (p, l, st, m, fl, fm, tp) VALUES (1, ['a', 'b'], {3, 1}, {'k': 1, 'j': 2}, [3, 1, 2], {'x': 1}, (7, 't'))`)
	exec(`INSERT INTO ` + ks + `.col (p, l, st, m, fl, fm, tp) VALUES (2, ['a'], {1}, {'k': 1}, [1], {'x': 1}, (1, 'u'))`)
	exec(`INSERT INTO ` + ks + `.col (p, l, fl, tp) VALUES (3, [], [], (5, null))`)
	exec(`UPDATE ` + ks + `.col SET l = l + ['c'], st = st + {9}, m['q'] = 4 WHERE p = 1`)
	exec(`UPDATE ` + ks + `.col SET fl = [9], tp = (8, 'w') WHERE p = 2`)
	data, _ := os.ReadFile(os.Getenv(debeziumLogEnv))
	countersSkipped := strings.Count(string(data), "unsupported partition type COUNTER")
	exec(`UPDATE ` + ks + `.cnt SET n = n + 5 WHERE p = 1`)
	exec(`UPDATE ` + ks + `.cnt SET n = n - 7 WHERE p = 2`)
	exec(`UPDATE ` + ks + `.cnt SET n = n + 2 WHERE p = 1`)
	exec(`INSERT INTO ` + ks + `.udt (p, fu, u) VALUES (1, {street: 'Main', zip: 5}, {street: 'Side', zip: 7})`)

	// the counter updates reach the connector, which skips them: no topic, no events
	wait.For(t, func() bool {
		data, _ := os.ReadFile(os.Getenv(debeziumLogEnv))
		return strings.Count(string(data), "unsupported partition type COUNTER") >= countersSkipped+3
	}, "the connector to skip the counter updates")

	srv, conns := sqlServer(t)
	db := srv.DB(t)
	dir := t.TempDir()
	mappings := map[string]string{
		"st":  "version: 1\nsource:\n  name: KS.st\n  columns:\n    p: int\n    c: int\n    s: text\n    v: text\ntarget:\n  table: T\n  primary_key: \"[p][c]\"\n",
		"col": "version: 1\nsource:\n  name: KS.col\n  columns:\n    p: int\n    l: list<text>\n    st: set<int>\n    m: map<text, int>\n    fl: frozen<list<int>>\n    fm: frozen<map<text, int>>\n    tp: tuple<int, text>\ntarget:\n  table: T\n  primary_key: \"[p]\"\n",
		"cnt": "version: 1\nsource:\n  name: KS.cnt\n  columns:\n    p: int\n    n: counter\ntarget:\n  table: T\n  primary_key: \"[p]\"\n",
		// a user-defined type has no name in source.columns: the columns come from the table
		"udt": "version: 1\nsource:\n  name: KS.udt\ntarget:\n  table: T\n  primary_key: \"[p]\"\n",
	}
	mapping := func(name, table string) string {
		m := strings.ReplaceAll(mappings[name], "KS", ks)
		return writeFile(t, dir, table+".yaml", strings.Replace(m, "table: T", "table: "+table, 1))
	}
	// the copies: what Cassandra holds, every kind as the table's docs say
	copies := map[string][]string{
		// the static cell on every row of its partition, with its last value
		"st": {"1 1 S2 a", "1 2 S2 b", "2 9 T z"},
		// collections and tuples as JSON text: lists in order, sets sorted, maps by key
		// (an empty frozen list is a value, an empty non-frozen one none; a tuple's null element null)
		"col": {`1 ["a","b","c"] [1,3,9] {"j":2,"k":1,"q":4} [3,1,2] {"x":1} [7,"t"]`, `2 ["a"] [1] {"k":1} [9] {"x":1} [8,"w"]`, `3 NULL NULL NULL [] NULL [5,null]`},
		// a counter's value as a BIGINT
		"cnt": {"1 7", "2 -7"},
		// a user-defined type as a JSON object, frozen or not
		"udt": {`1 {"street":"Main","zip":5} {"street":"Side","zip":7}`},
	}
	for _, name := range []string{"st", "col", "cnt", "udt"} {
		m := mapping(name, "copy_"+name)
		if name == "udt" { // ddl needs source.columns; the table is made by hand
			srv.Exec(t, "CREATE TABLE copy_udt (p int NOT NULL PRIMARY KEY, fu longtext, u longtext)")
		} else {
			srv.Exec(t, mustRun(t, "ddl", "-m", m, "--dialect", srv.DDLDialect()))
		}
		// a catch-up (since=) dates rows by their cells' write times: a counter has one, a
		// non-frozen UDT many (it is left out of the dating, as a non-frozen collection is)
		code, out, errs := runCLI(t, "migrate", "-m", m, "--source", cas.URI(ks, name, "since=2020-01-01T00:00:00Z"), "--out", srv.URI(""), "--sql-conns", conns,
			"--state", filepath.Join(dir, "state-"+name), "--progress", "never")
		// the partition with the static cell alone reads as one row whose clustering column is
		// null: no key, rejected
		if wantCode := map[bool]int{true: 1}[name == "st"]; code != wantCode || name == "st" && !strings.Contains(out, "null_key     1") {
			t.Errorf("migrate %s: exit %d, want %d\n%s%s", name, code, wantCode, out, errs)
		}
		if got := dumpTable(t, db, "SELECT * FROM copy_"+name+" ORDER BY 1, 2"); strings.Join(got, "\n") != strings.Join(copies[name], "\n") {
			t.Errorf("copy of %s:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(copies[name], "\n"))
		}
		if code, out, errs := runCLI(t, "verify", "-m", m, "--source", cas.URI(ks, name, ""), "--target", srv.URI(""), "--progress", "never"); code != 0 || !strings.Contains(out, "EQUAL") {
			t.Errorf("verify of the copy of %s: exit %d\n%s%s", name, code, out, errs)
		}
	}

	// WRITETIME() of a non-frozen UDT is one time per field: refused as a column, naming it
	code, out, errs := runCLI(t, "migrate", "-m", mapping("udt", "copy_udt"), "--source", cas.URI(ks, "udt", "writetime=u"), "--out", filepath.Join(dir, "udt-wt"), "--progress", "never")
	if code != 2 || !strings.Contains(errs, "writetime=u: writetime() is not defined on the non-frozen user-defined type addr") {
		t.Errorf("writetime= of a non-frozen UDT: exit %d\n%s%s", code, out, errs)
	}

	// the replications of the tables the connector publishes, each into a table of its own
	repl := map[string][]string{
		// no event carries a static cell (and a static-only write makes no event): never written
		"st": {"1 1 NULL a", "1 2 NULL b", "2 9 NULL z"},
		// the INSERTs and the UPDATE of a frozen list and a tuple are applied; the UPDATE of the
		// non-frozen collections of p=1 is rejected, so p=1 keeps what its INSERT wrote
		"col": {`1 ["a","b"] [1,3] {"j":2,"k":1} [3,1,2] {"x":1} [7,"t"]`, `2 ["a"] [1] {"k":1} [9] {"x":1} [8,"w"]`, `3 NULL NULL NULL [] NULL [5,null]`},
	}
	for _, name := range []string{"st", "col"} {
		m := mapping(name, "repl_"+name)
		srv.Exec(t, mustRun(t, "ddl", "-m", m, "--dialect", srv.DDLDialect()))
		topic := os.Getenv(debeziumPrefixEnv) + "." + ks + "." + name
		code, out := replicateAll(t, kc, topic, m, srv.URI(""), conns, filepath.Join(dir, "repl-"+name))
		wantCode, rejected := 0, "rejected        0"
		if name == "col" {
			wantCode, rejected = 1, "rejected        1"
		}
		if code != wantCode || !strings.Contains(out, rejected) {
			t.Errorf("replicate %s: exit %d, want %d and %q\n%s", name, code, wantCode, rejected, out)
		}
		if name == "col" && !strings.Contains(out, "collection_update") {
			t.Errorf("replicate col: the warning does not name the reject's code:\n%s", out)
		}
		if got := dumpTable(t, db, "SELECT * FROM repl_"+name+" ORDER BY 1, 2"); strings.Join(got, "\n") != strings.Join(repl[name], "\n") {
			t.Errorf("replication of %s:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(repl[name], "\n"))
		}
		// verify finds the rows the replication could not write; its repair file, migrated,
		// writes them, and the table then equals the copy
		repair := filepath.Join(dir, "repair-"+name+".jsonl")
		code, out, errs := runCLI(t, "verify", "-m", m, "--source", cas.URI(ks, name, ""), "--target", srv.URI(""), "--repair", repair, "--progress", "never")
		if wantDiffer := map[string]string{"st": "differ         3", "col": "differ         1"}[name]; code == 0 || !strings.Contains(out, wantDiffer) {
			t.Errorf("verify of the replication of %s: exit %d, want %q\n%s%s", name, code, wantDiffer, out, errs)
		}
		mustRun(t, "migrate", "-m", m, "--source", "file:"+repair, "--out", srv.URI(""), "--sql-conns", conns, "--state", filepath.Join(dir, "repair-state-"+name), "--overwrite", "--progress", "never")
		if got := dumpTable(t, db, "SELECT * FROM repl_"+name+" ORDER BY 1, 2"); strings.Join(got, "\n") != strings.Join(copies[name], "\n") {
			t.Errorf("replication of %s repaired:\n%s\nwant the copy\n%s", name, strings.Join(got, "\n"), strings.Join(copies[name], "\n"))
		}
	}
	// a counter column in a replication's mapping is refused when it starts (exit 2)
	code, out, errs = runCLI(t, "replicate", "-m", mapping("cnt", "repl_cnt"), "--source", "kafka://"+strings.Join(kc.Brokers, ",")+"/"+
		os.Getenv(debeziumPrefixEnv)+"."+ks+".cnt?group=g&format=debezium", "--out", srv.URI(""), "--state", filepath.Join(dir, "repl-cnt"), "--progress", "never")
	if code != 2 || !strings.Contains(out+errs, "is a Cassandra counter") {
		t.Errorf("replicate of a counter table: exit %d\n%s%s", code, out, errs)
	}
}

// replicateAll runs replicate from topic into the table at out until it has committed every
// event the topic holds, then stops it (SIGTERM): its exit code and output.
func replicateAll(t *testing.T, kc *kafkatest.Cluster, topic, mapping, out, conns, state string) (int, string) {
	t.Helper()
	var end int64
	wait.For(t, func() bool { end, _ = distinctEvents(t, kc.Brokers[0], topic); return end > 0 }, "the connector's events in "+topic)
	group := kc.Group("kinds-" + filepath.Base(state))
	sigs := make(chan os.Signal)
	done := make(chan int, 1)
	var output string
	go func() {
		code, o, e := cliRun{signals: sigs}.run(t, "replicate", "-m", mapping,
			"--source", "kafka://"+strings.Join(kc.Brokers, ",")+"/"+topic+"?group="+group+"&format=debezium",
			"--out", out, "--sql-conns", conns, "--state", state, "--progress", "never")
		output = o + e
		done <- code
	}()
	exited := false
	var code int
	wait.For(t, func() bool {
		select {
		case code = <-done:
			exited = true
			return true
		default:
		}
		return kc.Committed(t, group, topic, 1)[0] >= end
	}, "replicate to commit every event of "+topic)
	if exited {
		return code, output
	}
	interrupt(t, sigs, syscall.SIGTERM)
	return <-done, output
}
