package main

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/cdcdemo"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// Events of Debezium's Cassandra connector (debezium-connector-cassandra), written as its JSON
// converter writes them: Record.buildValue gives {"ts_ms", "op", "source", "after"}; "after"
// holds one cell per column the mutation wrote, CellData.record {"value", "deletion_ts", "set":
// true} (CassandraSchemaFactory.java), absent for the columns it did not touch; ops are i, u, d
// and r (Record.Operation). A cell deleted (DELETE email FROM ...) is a tombstone cell: value
// null (Cassandra4CommitLogReadHandlerImpl.populateRegularColumns).
// cassandraSource is an event's source: each event a mutation of its own, at the next position
// of the commit log (the connector's events of one segment come in position order).
func cassandraSource() string {
	return `{"version":"2.7.0.Final","connector":"cassandra","name":"test_connector","ts_ms":1700000000000,"snapshot":"false","db":"NULL","cluster":"Test Cluster","file":"CommitLog-7-1.log","pos":` +
		strconv.FormatInt(commitLogPos.Add(100), 10) + `,"keyspace":"ks","table":"users"}`
}

var commitLogPos atomic.Int64

var cell, deletedCell, rangeBound = cdcdemo.Cell, cdcdemo.DeletedCell, cdcdemo.RangeBound

func cassandraEvent(op string, cells ...string) kafkago.Message {
	after := "{" + strings.Join(cells, ",") + "}"
	key := ""
	for _, c := range cells {
		if strings.HasPrefix(c, `"id":`) {
			key = `{"id":` + strings.TrimSuffix(strings.TrimPrefix(c, `"id":{"value":`), `,"deletion_ts":null,"set":true}`) + `}`
		}
	}
	return kafkago.Message{Key: []byte(key), Value: []byte(`{"ts_ms":1700000000000,"op":"` + op + `","source":` + cassandraSource() + `,"after":` + after + `}`)}
}

// wrapped is m as the JSON converter writes it with schemas.enable: {"schema": .., "payload": ..}.
func wrapped(m kafkago.Message) kafkago.Message {
	m.Value = []byte(`{"schema":{"type":"struct","optional":false,"name":"test_connector.ks.users.Envelope","version":1},"payload":` + string(m.Value) + `}`)
	return m
}

const usersMapping = `version: 1
source:
  name: ks.users
  columns:
    id: text
    name: text
    email: text
    visits: int
target:
  table: users
  primary_key: "[id]"
`

// replicateInto runs replicate from a one-partition topic holding msgs into srv until every
// message is committed, stops it, and returns its output and its rejects lines.
func replicateInto(t *testing.T, srv *mysqltest.Server, conns, mapping string, msgs []kafkago.Message) (string, []string) {
	t.Helper()
	return replicateEvents(t, mapping, msgs, "--out", srv.URI(""), "--sql-conns", conns)
}

// replicateEvents runs replicate of msgs with the output flags out and returns its output and
// its rejects lines (of the state folder or of the output folder).
func replicateEvents(t *testing.T, mapping string, msgs []kafkago.Message, out ...string) (string, []string) {
	t.Helper()
	_, _, output, rejects := replicateTopic(t, mapping, msgs, out...)
	return output, rejects
}

// replicateTopic is replicateEvents, also returning the cluster and the topic (consumer group
// "cdc") it replicated.
func replicateTopic(t *testing.T, mapping string, msgs []kafkago.Message, out ...string) (*kafkatest.Cluster, string, string, []string) {
	t.Helper()
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "cdc", 1)
	c.Produce(t, topic, msgs...)
	output, rejects := replicateFrom(t, c, topic, int64(len(msgs)), mapping, out...)
	return c, topic, output, rejects
}

// replicateFrom runs replicate of the one-partition topic of c (consumer group "cdc") with the
// output flags out until it committed the offset end, stops it, and returns its output and its
// rejects lines.
func replicateFrom(t *testing.T, c *kafkatest.Cluster, topic string, end int64, mapping string, out ...string) (string, []string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	done := make(chan int, 1)
	var output string
	args := append([]string{"replicate", "-m", mapping, "--source", "kafka://" + strings.Join(c.Brokers, ",") + "/" + topic + "?group=cdc&format=debezium",
		"--progress", "never", "--session-timeout", "3s"}, out...)
	if strings.Contains(out[1], "://") {
		args = append(args, "--state", state)
	} else {
		state = out[1]
	}
	sigs := make(chan os.Signal)
	go func() {
		code, o, e := cliRun{signals: sigs}.run(t, args...)
		output = o + e
		done <- code
	}()
	wait.For(t, func() bool { return c.Committed(t, "cdc", topic, 1)[0] == end },
		fmt.Sprintf("replicate to commit the offset %d", end))
	interrupt(t, sigs, syscall.SIGTERM)
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("replicate did not stop on SIGTERM")
	}
	var rejects []string
	files, _ := filepath.Glob(filepath.Join(state, "rejects", "*.jsonl"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rejects = append(rejects, strings.Split(strings.TrimSpace(string(data)), "\n")...)
	}
	// stopped cleanly: 0, or 1 with a warning when messages were rejected
	if want := 0; len(rejects) > 0 {
		if want = exitRejects; code != want || !strings.Contains(output, fmt.Sprintf("warning: %d messages rejected by this process", len(rejects))) {
			t.Fatalf("replicate rejected %d messages: exit %d, want %d and a warning:\n%s", len(rejects), code, want, output)
		}
	} else if code != want {
		t.Fatalf("replicate exit %d:\n%s", code, output)
	}
	return output, rejects
}

// dumpTable returns the table's rows, "col col ..." each (NULL for null), sorted.
func dumpTable(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var got []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = "NULL"
			if v.Valid {
				parts[i] = v.String
			}
		}
		got = append(got, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	return got
}

// A Cassandra UPDATE that sets one column, and a DELETE of one cell, change those columns only:
// the other columns of the row keep their values (they used to be nulled, silently).
func TestReplicateCassandraPartialUpdates(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			msgs := []kafkago.Message{
				cassandraEvent("i", `"id":`+cell(`"u1"`), `"name":`+cell(`"Ann"`), `"email":`+cell(`"ann@x.org"`), `"visits":`+cell(`1`)),
				cassandraEvent("i", `"id":`+cell(`"u2"`), `"name":`+cell(`"Bob"`), `"email":`+cell(`"bob@x.org"`), `"visits":`+cell(`5`)),
				cassandraEvent("u", `"id":`+cell(`"u1"`), `"visits":`+cell(`2`)),             // UPDATE users SET visits = 2 WHERE id = 'u1'
				wrapped(cassandraEvent("u", `"id":`+cell(`"u2"`), `"email":`+deletedCell())), // DELETE email FROM users WHERE id = 'u2'
			}
			_, rejects := replicateInto(t, srv, conns, mapping, msgs)
			if len(rejects) != 0 {
				t.Errorf("rejects: %v", rejects)
			}
			got := dumpTable(t, srv.DB(t), "SELECT id, name, email, visits FROM users")
			want := []string{"u1 Ann ann@x.org 2", "u2 Bob NULL 5"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("table %q, want %q", got, want)
			}
		})
	}
}

// Bulk-load files hold whole rows: a Cassandra event that sets some columns is rejected there
// (partial_update, pointing to a SQL target) instead of being written as a row whose other
// columns are null; an INSERT naming every column is a row.
func TestReplicateCassandraPartialUpdateIntoFilesIsRejected(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "users.yaml", usersMapping)
	out := filepath.Join(t.TempDir(), "out")
	msgs := []kafkago.Message{
		cassandraEvent("i", `"id":`+cell(`"u1"`), `"name":`+cell(`"Ann"`), `"email":`+cell(`"ann@x.org"`), `"visits":`+cell(`1`)),
		cassandraEvent("u", `"id":`+cell(`"u1"`), `"visits":`+cell(`2`)),
		cassandraEvent("i", `"id":`+cell(`"u2"`), `"name":`+cell(`"Bob"`)),
	}
	_, rejects := replicateEvents(t, mapping, msgs, "--out", out, "--roll-interval", "100ms")
	if len(rejects) != 2 {
		t.Fatalf("rejects %q, want the two partial events", rejects)
	}
	for i, off := range []string{`"offset":1`, `"offset":2`} {
		if !strings.Contains(rejects[i], `"code":"partial_update"`) || !strings.Contains(rejects[i], off) || !strings.Contains(rejects[i], "--out mysql://") {
			t.Errorf("reject %d: %s", i, rejects[i])
		}
	}
	manifest, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), `"rows_written": 1`) {
		t.Errorf("manifest:\n%s", manifest)
	}
}

// The table of the connector's RangeTombstoneCommitLogProcessingTest: CREATE TABLE ks.tb (a int,
// b int, c int, d int, e int, PRIMARY KEY (a, b, c, d)).
const rangeMappingHead = `version: 1
source:
  name: ks.tb
  columns:
    a: int
    b: int
    c: int
    d: int
    e: int
target:
  table: tb
`

func tbRow(a, b, c, d, e int) kafkago.Message {
	return cassandraEvent("i", `"a":`+cell(fmt.Sprint(a)), `"b":`+cell(fmt.Sprint(b)), `"c":`+cell(fmt.Sprint(c)), `"d":`+cell(fmt.Sprint(d)), `"e":`+cell(fmt.Sprint(e)))
}

// A Cassandra range tombstone (DELETE FROM ks.tb WHERE a = 1 AND b = 1 AND c <= 2, the
// connector's RangeTombstoneCommitLogProcessingTest: start INCL_START_BOUND b=1, end
// INCL_END_BOUND b=1, c=2) deletes the rows of that range in a table whose key is the source key
// in order, with or without a hash prefix of the partition key, as a delete of a whole partition
// does (DELETE FROM ks.tb WHERE a = 2); with a key that does not make them one range they are
// rejected (range_tombstone), and nothing is deleted. The range used to be upserted as a row (a
// Debezium "r" read) and the partition delete taken for a row delete, both rejected as null_key.
func TestReplicateCassandraRangeTombstone(t *testing.T) {
	msgs := []kafkago.Message{
		tbRow(1, 1, 1, 1, 1), tbRow(1, 1, 2, 3, 2), tbRow(1, 1, 3, 0, 3), tbRow(1, 2, 0, 0, 4), tbRow(2, 1, 1, 1, 5), tbRow(1, 0, 9, 9, 6),
		cassandraEvent("r", `"a":`+cell("1"), `"_range_start":`+rangeBound("INCL_START_BOUND", "b", "1"),
			`"_range_end":`+rangeBound("INCL_END_BOUND", "b", "1", "c", "2")),
		// DELETE FROM ks.tb WHERE a = 2: Cassandra4CommitLogReadHandlerImpl.handlePartitionDeletion
		// sends a d of the partition cells, the clustering and regular cells null
		cassandraEvent("d", `"a":`+cell("2"), `"b":`+deletedCell(), `"c":`+deletedCell(), `"d":`+deletedCell(), `"e":`+deletedCell()),
	}
	all := []string{"1 0 9 9 6", "1 1 1 1 1", "1 1 2 3 2", "1 1 3 0 3", "1 2 0 0 4", "2 1 1 1 5"}
	left := []string{"1 0 9 9 6", "1 1 3 0 3", "1 2 0 0 4"}
	for _, tc := range []struct {
		key    string
		want   []string
		reject string
	}{
		{`"[a][b][c][d]"`, left, ""},
		{`"[md5(a).substr(0,4) + a AS pk][b][c][d]"`, left, ""},
		{`"[b][a][c][d]"`, all, "range_tombstone"},
	} {
		mapping := writeFile(t, t.TempDir(), "tb.yaml", rangeMappingHead+"  primary_key: "+tc.key+"\n")
		for name, start := range sqlServers(t) {
			t.Run(tc.key+"/"+name, func(t *testing.T) {
				srv, conns := start(t)
				srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
				_, rejects := replicateInto(t, srv, conns, mapping, msgs)
				switch {
				case tc.reject == "" && len(rejects) != 0:
					t.Errorf("rejects: %v", rejects)
				case tc.reject != "" && (len(rejects) != 2 || !strings.Contains(rejects[0], `"code":"`+tc.reject+`"`) || !strings.Contains(rejects[1], `"code":"`+tc.reject+`"`)):
					t.Errorf("rejects %v, want two %s", rejects, tc.reject)
				}
				got := dumpTable(t, srv.DB(t), "SELECT a, b, c, d, e FROM tb")
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("table %q, want %q", got, tc.want)
				}
			})
		}
	}
}

// inRange tells whether the clustering (b, c) is within a bound: vals a prefix of it, after
// (start) or before (end) it.
func inRange(bc [2]int, vals []int, incl, start bool) bool {
	for i, v := range vals {
		if bc[i] != v {
			return (bc[i] > v) == start
		}
	}
	return incl
}

// A long stream of the connector's events of every op (inserts of some or all columns, updates
// of some columns, cell deletes, row deletes, range tombstones with open, inclusive and exclusive
// bounds of one or two columns) leaves the table as Cassandra holds it. Updates go to rows an
// INSERT created: a row that only UPDATEs wrote disappears in Cassandra with its last cell, which
// a table row does not (README).
func TestReplicateCassandraMixedStream(t *testing.T) {
	mapping := writeFile(t, t.TempDir(), "ev.yaml", cdcdemo.Mapping)
	rng := rand.New(rand.NewPCG(7, 9))
	model := cdcdemo.Model{} // Cassandra applying the same mutations
	var msgs []kafkago.Message
	keyCells := func(k [3]int) []string {
		return []string{`"a":` + cell(fmt.Sprint(k[0])), `"b":` + cell(fmt.Sprint(k[1])), `"c":` + cell(fmt.Sprint(k[2]))}
	}
	// regular cells of a write, applied to the row's model
	writeCells := func(row map[string]string, all bool) []string {
		var cells []string
		for _, col := range []string{"x", "y"} {
			if !all && rng.IntN(2) == 0 {
				continue
			}
			lit, val := "NULL", deletedCell()
			if rng.IntN(4) != 0 {
				if col == "x" {
					lit = fmt.Sprint("s", rng.IntN(100))
					val = cell(`"` + lit + `"`)
				} else {
					lit = fmt.Sprint(rng.IntN(100))
					val = cell(lit)
				}
			}
			row[col] = lit
			cells = append(cells, `"`+col+`":`+val)
		}
		return cells
	}
	bound := func() ([]int, string) {
		switch rng.IntN(3) {
		case 0:
			return nil, ""
		case 1:
			b := rng.IntN(4)
			return []int{b}, fmt.Sprint(b)
		}
		b, c := rng.IntN(4), rng.IntN(3)
		return []int{b, c}, fmt.Sprint(b, " ", c)
	}
	boundJSON := func(kind string, incl bool, vals []int) string {
		method := "EXCL_" + kind + "_BOUND"
		if incl {
			method = "INCL_" + kind + "_BOUND"
		}
		var kv []string
		for i, v := range vals {
			kv = append(kv, []string{"b", "c"}[i], fmt.Sprint(v))
		}
		return rangeBound(method, kv...)
	}
	for len(msgs) < 400 {
		k := [3]int{1 + rng.IntN(3), rng.IntN(4), rng.IntN(3)}
		switch r := rng.IntN(20); {
		case r < 6: // INSERT INTO ev (a, b, c[, x][, y]) VALUES (...)
			row := model[k]
			if row == nil {
				row = map[string]string{"x": "NULL", "y": "NULL"}
				model[k] = row
			}
			msgs = append(msgs, cassandraEvent("i", append(keyCells(k), writeCells(row, rng.IntN(2) == 0)...)...))
		case r < 14: // UPDATE ev SET x = .., y = null WHERE ... of an inserted row
			row := model[k]
			if row == nil {
				continue
			}
			cells := writeCells(row, false)
			if len(cells) == 0 {
				continue
			}
			msgs = append(msgs, cassandraEvent("u", append(keyCells(k), cells...)...))
		case r < 17: // DELETE FROM ev WHERE a = .. AND b = .. AND c = ..: the regular cells as tombstones
			delete(model, k)
			msgs = append(msgs, cassandraEvent("d", append(keyCells(k), `"x":`+deletedCell(), `"y":`+deletedCell())...))
		default: // DELETE FROM ev WHERE a = .. AND (b, c) >= (..) AND (b, c) < (..)
			start, _ := bound()
			end, _ := bound()
			// an open bound is Cassandra's BOTTOM or TOP: inclusive, no values
			si, ei := len(start) == 0 || rng.IntN(2) == 0, len(end) == 0 || rng.IntN(2) == 0
			for row := range model {
				if row[0] == k[0] && inRange([2]int{row[1], row[2]}, start, si, true) && inRange([2]int{row[1], row[2]}, end, ei, false) {
					delete(model, row)
				}
			}
			msgs = append(msgs, cassandraEvent("r", `"a":`+cell(fmt.Sprint(k[0])),
				`"_range_start":`+boundJSON("START", si, start), `"_range_end":`+boundJSON("END", ei, end)))
		}
	}
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			_, rejects := replicateInto(t, srv, conns, mapping, msgs)
			if len(rejects) != 0 {
				t.Errorf("rejects: %v", rejects)
			}
			got := dumpTable(t, srv.DB(t), "SELECT a, b, c, x, y FROM ev")
			want := model.Rows()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("table (%d rows):\n%s\nCassandra (%d rows):\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
			}
		})
	}
}
