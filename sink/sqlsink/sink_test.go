package sqlsink

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/lindormsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// testSchema has every type rekey writes, a two-column key.
func TestMain(m *testing.M) { os.Exit(mysqltest.Run(m)) }

func testSchema() pipeline.TargetSchema {
	return pipeline.TargetSchema{Table: "orders", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "pk", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "id", Type: pipeline.TypeBigint, KeyPos: 1},
		{Name: "name", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "qty", Type: pipeline.TypeInteger, KeyPos: -1},
		{Name: "small", Type: pipeline.TypeSmallint, KeyPos: -1},
		{Name: "tiny", Type: pipeline.TypeTinyint, KeyPos: -1},
		{Name: "ok", Type: pipeline.TypeBoolean, KeyPos: -1},
		{Name: "ratio", Type: pipeline.TypeDouble, KeyPos: -1},
		{Name: "f", Type: pipeline.TypeFloat, KeyPos: -1},
		{Name: "price", Type: pipeline.TypeDecimal, Precision: 12, Scale: 3, KeyPos: -1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
		{Name: "day", Type: pipeline.TypeDate, KeyPos: -1},
		{Name: "blob", Type: pipeline.TypeVarbinary, KeyPos: -1},
		{Name: "doc", Type: pipeline.TypeJSON, KeyPos: -1},
	}}
}

func testRow(i int) []pipeline.Value {
	return []pipeline.Value{
		pipeline.Text(fmt.Sprintf("k%03d", i%7)), pipeline.Int(int64(i)),
		pipeline.Text(fmt.Sprintf("it's \\ \"n%d\"\n", i)), pipeline.Int(int64(i * 10)), pipeline.Int(-3), pipeline.Int(7),
		pipeline.Bool(i%2 == 0), pipeline.Float(1.5 + float64(i)), pipeline.Float(0.25),
		pipeline.Decimal(fmt.Sprintf("%d.5", i)), pipeline.Int(1700000000123 + int64(i)), pipeline.Int(19000 + int64(i)),
		pipeline.Bytes(string([]byte{0, 1, '\'', 0xff, byte(i)})), pipeline.Text(`{"a":1}`),
	}
}

// servers returns the servers a test runs against: go-mysql-server always, MariaDB when present.
func servers(t *testing.T) map[string]func(t *testing.T) *mysqltest.Server {
	m := map[string]func(t *testing.T) *mysqltest.Server{
		"gms": func(t *testing.T) *mysqltest.Server { return mysqltest.GMS(t) },
	}
	if mysqltest.MariaDBAvailable() {
		m["mariadb"] = func(t *testing.T) *mysqltest.Server { return mysqltest.MariaDB(t) }
	}
	return m
}

func noEnv(string) string { return "" }

func openWriter(t testing.TB, srv *mysqltest.Server, schema pipeline.TargetSchema, conns int) *Writer {
	t.Helper()
	tgt, err := ParseURI(srv.URI(""), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Kind == "gms" {
		conns = 1 // go-mysql-server's memory tables lose concurrent writes of several connections
	}
	w, err := Open(context.Background(), Config{Target: tgt, Schema: schema, Conns: conns, BackoffMin: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestStatementsPerDialect(t *testing.T) {
	s := pipeline.TargetSchema{Table: "order", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "pk", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: 1},
		{Name: "v", Type: pipeline.TypeVarbinary, KeyPos: -1}}}
	row := []pipeline.Value{pipeline.Text("a'b"), pipeline.Int(1700000000123), pipeline.Bytes("\x01\xff")}
	for _, tc := range []struct {
		d                *Dialect
		upsert, del, get string
	}{
		{lindormsql.Dialect,
			"UPSERT INTO `order` (pk, ts, v) VALUES ('a\\'b','2023-11-14 22:13:20.123',X'01ff')",
			"DELETE FROM `order` WHERE pk='a\\'b' AND ts='2023-11-14 22:13:20.123'",
			"SELECT pk, ts, v FROM `order` WHERE (pk='a\\'b' AND ts='2023-11-14 22:13:20.123')"},
		{mysqlsql.Dialect,
			"INSERT INTO `order` (`pk`, `ts`, `v`) VALUES ('a\\'b','2023-11-14 22:13:20.123',X'01ff') ON DUPLICATE KEY UPDATE `v`=VALUES(`v`)",
			"DELETE FROM `order` WHERE (`pk`, `ts`) IN (('a\\'b','2023-11-14 22:13:20.123'))",
			"SELECT `pk`, `ts`, `v` FROM `order` WHERE (`pk`, `ts`) IN (('a\\'b','2023-11-14 22:13:20.123'))"},
	} {
		st := newStatements(tc.d, s)
		tup, rerr := st.appendRow(nil, row)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if got := string(st.upsert(nil, &st.full, [][]byte{tup})); got != tc.upsert {
			t.Errorf("%s upsert:\n got %s\nwant %s", tc.d.Name, got, tc.upsert)
		}
		var key []byte
		if tc.d.BatchDeletes {
			key, _ = st.appendKeyTuple(nil, row)
		} else {
			key, _ = st.appendKeyEq(nil, row)
		}
		if got := st.deletes([][]byte{key})[0]; got != tc.del {
			t.Errorf("%s delete:\n got %s\nwant %s", tc.d.Name, got, tc.del)
		}
		if got := st.lookup([][]byte{key}); got != tc.get {
			t.Errorf("%s lookup:\n got %s\nwant %s", tc.d.Name, got, tc.get)
		}
	}
}

func TestWriteReadsBackEveryType(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			srv.Exec(t, mysqlsql.DDL(testSchema(), mysqlsql.KeyCollations[srv.DDLDialect()]))
			w := openWriter(t, srv, testSchema(), 3)
			var rows []pipeline.Row
			for i := 0; i < 50; i++ {
				rows = append(rows, pipeline.Row{Values: testRow(i)})
			}
			if err := w.Write(context.Background(), rows); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := readAll(t, srv.DB(t), testSchema())
			if len(got) != 50 {
				t.Fatalf("%d rows in the table, want 50", len(got))
			}
			for i := 0; i < 50; i++ {
				want := testRow(i)
				k := keyString(want[:2])
				if g, ok := got[k]; !ok {
					t.Fatalf("row %d missing", i)
				} else if d := diffRow(testSchema(), want, g); d != "" {
					t.Errorf("row %d: %s", i, d)
				}
			}
			if w.Stats.Upserts.Load() != 50 || w.Stats.Statements.Load() < 1 {
				t.Errorf("stats: %d upserts, %d statements", w.Stats.Upserts.Load(), w.Stats.Statements.Load())
			}
		})
	}
}

// readAll reads a table through the lookup's decoding, keyed by keyString of the key values.
func readAll(t *testing.T, db *sql.DB, schema pipeline.TargetSchema) map[string][]pipeline.Value {
	t.Helper()
	st := newStatements(mysqlsql.Dialect, schema)
	rows, err := db.Query(strings.TrimSuffix(st.selectHead, " WHERE "))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]pipeline.Value{}
	for rows.Next() {
		vals, err := scanRow(rows, schema)
		if err != nil {
			t.Fatal(err)
		}
		out[keyString(vals[:schema.KeyLen])] = vals
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func diffRow(schema pipeline.TargetSchema, want, got []pipeline.Value) string {
	var d []string
	for i, c := range schema.Columns {
		w := want[i]
		if c.Type == pipeline.TypeDecimal && !w.IsNull() {
			w = pipeline.Decimal(w.Str + "00") // the column's scale is 3
		}
		if c.Type == pipeline.TypeJSON && !w.IsNull() { // servers may reformat JSON
			var a, b bytes.Buffer
			json.Compact(&a, []byte(w.Str))
			json.Compact(&b, []byte(got[i].Str))
			w, got[i] = pipeline.Text(a.String()), pipeline.Text(b.String())
		}
		if c.Type == pipeline.TypeFloat && !w.IsNull() {
			w = pipeline.Float(float64(float32(w.Float())))
		}
		if !w.Equal(got[i]) {
			d = append(d, fmt.Sprintf("%s: want %v %q, got %v %q", c.Name, w.Kind, w.String(), got[i].Kind, got[i].String()))
		}
	}
	return strings.Join(d, "; ")
}

func TestCheckTableRefusesAnotherTable(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			tgt, _ := ParseURI(srv.URI(""), noEnv)
			open := func(s pipeline.TargetSchema) error {
				w, err := Open(context.Background(), Config{Target: tgt, Schema: s})
				if err == nil {
					w.Close()
				}
				return err
			}
			err := open(testSchema())
			if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("missing table: %v", err)
			}
			srv.Exec(t, "CREATE TABLE orders (id bigint NOT NULL, pk varchar(20) COLLATE utf8mb4_bin NOT NULL, name varchar(10), qty bigint, ts datetime, extra int, PRIMARY KEY (id, pk))")
			err = open(testSchema())
			if !errors.Is(err, ErrTableMismatch) {
				t.Fatalf("want ErrTableMismatch, got %v", err)
			}
			for _, want := range []string{
				"column qty: INTEGER in the mapping, bigint",
				"column ts: TIMESTAMP in the mapping, datetime in the table (milliseconds would be lost",
				"column price (DECIMAL(12,3)) is missing from the table",
				"column extra (int",
				"primary key: (pk, id) in the mapping, (id, pk) in the table",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
			if strings.Contains(err.Error(), "column name:") {
				t.Errorf("varchar(10) holds a VARCHAR: %v", err)
			}
		})
	}
}

// A case-insensitive key collation would let keys "A" and "a" overwrite each other: refused.
func TestCheckTableRefusesCaseInsensitiveKey(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB (go-mysql-server's default collation is binary)")
	}
	srv := mysqltest.MariaDB(t)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}}}
	srv.Exec(t, "CREATE TABLE t (k varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY)")
	tgt, _ := ParseURI(srv.URI(""), noEnv)
	_, err := Open(context.Background(), Config{Target: tgt, Schema: s})
	if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "utf8mb4_general_ci") {
		t.Fatalf("want a refusal naming the collation, got %v", err)
	}
}

// Keys that differ only by trailing spaces ('a', 'a ', 'a  ') are three rows in Lindorm and in
// the bulk-load files; a PAD SPACE key collation (utf8mb4_bin on MariaDB and MySQL) stored them
// as one, and a CHAR key drops the spaces. The table check refuses both, saying which ALTER
// makes the column compare byte by byte; after that ALTER, and in the table rekey ddl prints,
// the three keys are three rows.
func TestKeysDifferingByTrailingSpacesStayApart(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			noPad := mysqlsql.KeyCollations[srv.DDLDialect()]
			s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
			tgt, _ := ParseURI(srv.URI(""), noEnv)
			open := func(s pipeline.TargetSchema) error {
				w, err := Open(context.Background(), Config{Target: tgt, Schema: s})
				if err == nil {
					w.Close()
				}
				return err
			}
			srv.Exec(t, "CREATE TABLE c (k char(10) CHARACTER SET utf8mb4 COLLATE "+noPad+" NOT NULL PRIMARY KEY, v bigint)")
			cs := s
			cs.Table = "c"
			if err := open(cs); !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "char drops trailing spaces") ||
				!strings.Contains(err.Error(), "ALTER TABLE `c` MODIFY `k` varchar(10) CHARACTER SET utf8mb4 COLLATE "+noPad+" NOT NULL") {
				t.Errorf("a CHAR key: want a refusal, got %v", err)
			}

			srv.Exec(t, "CREATE TABLE t (k varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, v bigint)")
			err := open(s)
			fix := "ALTER TABLE `t` MODIFY `k` varchar(10) CHARACTER SET utf8mb4 COLLATE " + noPad + " NOT NULL"
			if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "utf8mb4_bin is PAD SPACE") || !strings.Contains(err.Error(), fix) {
				t.Errorf("a PAD SPACE key: want a refusal naming the collation and %q, got %v", fix, err)
			}
			srv.Exec(t, fix)

			ddl := s
			ddl.Table = "d"
			srv.Exec(t, mysqlsql.DDL(ddl, noPad))
			for _, s := range []pipeline.TargetSchema{s, ddl} {
				w := openWriter(t, srv, s, 1)
				keys := []string{"a", "a ", "a  "}
				var rows []pipeline.Row
				for i, k := range keys {
					rows = append(rows, pipeline.Row{Values: []pipeline.Value{pipeline.Text(k), pipeline.Int(int64(i))}})
				}
				if err := w.Write(context.Background(), rows); err != nil {
					t.Fatal(err)
				}
				got := readAll(t, srv.DB(t), s)
				if len(got) != len(keys) {
					t.Errorf("table %s: %d rows, want %d: %v", s.Table, len(got), len(keys), got)
				}
			}
		})
	}
}

// A row the server refuses (a value too long for its column) is found by bisecting its
// statement and rejected with its index; every other row of the statement is written.
func TestRefusedRowIsRejectedOthersWritten(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			w := kvWriter(t, srv, "varchar(5)")
			err := w.Write(context.Background(), kvRows(40, func(i int) string {
				if i == 13 || i == 31 {
					return "far too long"
				}
				return "ok"
			}))
			var rr *pipeline.RowRejects
			if !errors.As(err, &rr) {
				t.Fatalf("want RowRejects, got %v", err)
			}
			var idx []int
			for _, r := range rr.Rows {
				idx = append(idx, r.Index)
				if r.Err.Code != CodeTargetRefused || r.Err.Field != "v" {
					t.Errorf("reject %+v: want code %s, field v", r.Err, CodeTargetRefused)
				}
			}
			if fmt.Sprint(idx) != "[13 31]" {
				t.Errorf("rejected rows %v, want [13 31]", idx)
			}
			if n := countRows(t, srv); n != 38 {
				t.Errorf("%d rows written, want 38", n)
			}
		})
	}
}

// A JSON value that Go reads but MySQL 8 refuses in a JSON column, nested deeper than its 100
// levels (3157), or with an object key or a value too long for it (3151, 3150), is a reject of
// its row, and the rows around it are written. Before, the server's refusal stopped the run as an
// unknown error. The server's refusal is played by a proxy: go-mysql-server and MariaDB (whose
// JSON is a longtext checked by JSON_VALID) do not refuse these.
func TestJSONValueMySQLRefusesIsRejected(t *testing.T) {
	deep := strings.Repeat("[", 101) + strings.Repeat("]", 101)
	for code, msg := range map[uint16]string{
		3157: "The JSON document exceeds the maximum depth of 100.",
		3151: "The JSON object contains a key name that is too long.",
		3150: "The JSON value is too big to be stored in a JSON column.",
	} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := mysqltest.GMS(t)
			s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "j", Type: pipeline.TypeJSON, KeyPos: -1}}}
			srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
			p := newFaultProxy(t, srv.Addr, nil, func(b []byte) ([]byte, bool) {
				if bytes.Contains(b, []byte("INSERT INTO")) && bytes.Contains(b, []byte(deep)) {
					return errPacket(1, code, "22032", msg), false
				}
				return nil, false
			})
			tgt := targetVia(t, p.l, srv.Database)
			w, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, BackoffMin: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var rows []pipeline.Row
			for i := 0; i < 10; i++ {
				j := `{"a":1}`
				if i == 4 {
					j = deep
				}
				rows = append(rows, pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(j)}})
			}
			err = w.Write(context.Background(), rows)
			var rr *pipeline.RowRejects
			if !errors.As(err, &rr) {
				t.Fatalf("want the row rejected, got %v", err)
			}
			if len(rr.Rows) != 1 || rr.Rows[0].Index != 4 || rr.Rows[0].Err.Code != CodeTargetRefused || !strings.Contains(rr.Rows[0].Err.Message, msg) {
				t.Errorf("rejects %+v: want row 4 alone, code %s, with the server's error", rr.Rows, CodeTargetRefused)
			}
			if n := countRows(t, srv); n != 9 {
				t.Errorf("%d rows written, want 9", n)
			}
		})
	}
}

// A row that breaks a CHECK constraint of the table is refused by the server (MySQL's 3819,
// MariaDB's 4025): it is a reject of its row, found by splitting its statement, naming the
// server's error, and the rows around it are written. Before, MySQL's refusal stopped the run as
// an unknown error, where MariaDB's rejected the row.
func TestRowBreakingACheckConstraintIsRejected(t *testing.T) {
	srv := mysqltest.GMS(t)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	srv.Exec(t, "CREATE TABLE t (k bigint NOT NULL PRIMARY KEY, v bigint, CONSTRAINT v_positive CHECK (v >= 0))")
	w := openWriter(t, srv, s, 1)
	var rows []pipeline.Row
	for i := 0; i < 10; i++ {
		v := int64(i)
		if i == 6 {
			v = -6
		}
		rows = append(rows, pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Int(v)}})
	}
	err := w.Write(context.Background(), rows)
	var rr *pipeline.RowRejects
	if !errors.As(err, &rr) {
		t.Fatalf("want the row rejected, got %v", err)
	}
	if len(rr.Rows) != 1 || rr.Rows[0].Index != 6 || rr.Rows[0].Err.Code != CodeTargetRefused || !strings.Contains(rr.Rows[0].Err.Message, "v_positive") {
		t.Errorf("rejects %+v: want row 6 alone, code %s, naming the constraint", rr.Rows, CodeTargetRefused)
	}
	if n := countRows(t, srv); n != 9 {
		t.Errorf("%d rows written, want 9", n)
	}
}

// kvWriter creates the table t (k bigint primary key, v of type vType) and opens a writer of it.
func kvWriter(t *testing.T, srv *mysqltest.Server, vType string) *Writer {
	t.Helper()
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1}}}
	srv.Exec(t, "CREATE TABLE t (k bigint NOT NULL PRIMARY KEY, v "+vType+")")
	return openWriter(t, srv, s, 1)
}

// kvRows is n rows of kvWriter's table: k = i, v = value(i).
func kvRows(n int, value func(i int) string) []pipeline.Row {
	rows := make([]pipeline.Row, n)
	for i := range rows {
		rows[i] = pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(value(i))}}
	}
	return rows
}

func countRows(t *testing.T, srv *mysqltest.Server) int {
	t.Helper()
	var n int
	if err := srv.DB(t).QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A row whose statement is larger than the server's max_allowed_packet is a reject naming the
// setting, as a value too long for its column is, and the rows around it are written: the
// driver's "packet for query is too large" used to stop the run, and every retry of it.
func TestRowOverMaxAllowedPacketIsRejected(t *testing.T) {
	srv := mysqltest.MariaDB(t, "--max-allowed-packet=1M") // MariaDB's default is 16 MiB
	w := kvWriter(t, srv, "longtext")
	err := w.Write(context.Background(), kvRows(10, func(i int) string {
		if i == 4 {
			return strings.Repeat("x", 1536<<10)
		}
		return strings.Repeat("x", 1000)
	}))
	var rr *pipeline.RowRejects
	if !errors.As(err, &rr) {
		t.Fatalf("want the row rejected, got %v", err)
	}
	if len(rr.Rows) != 1 || rr.Rows[0].Index != 4 || rr.Rows[0].Err.Code != CodeTargetRefused ||
		!strings.Contains(rr.Rows[0].Err.Message, "max_allowed_packet") {
		t.Fatalf("rejects %+v: want row 4 alone, code %s, naming max_allowed_packet", rr.Rows, CodeTargetRefused)
	}
	t.Log(rr.Rows[0].Err.Message)
	if n := countRows(t, srv); n != 9 {
		t.Errorf("%d rows written, want 9", n)
	}
}

// Changes of one key apply in order, even spread over several connections: an upsert, its
// delete, a new upsert and a delete of another key, over many keys at once.
func TestApplyKeepsOrderPerKey(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			s := pipeline.TargetSchema{Table: "t", KeyLen: 2, Columns: []pipeline.Column{
				{Name: "a", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "b", Type: pipeline.TypeInteger, KeyPos: 1},
				{Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
			srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
			w := openWriter(t, srv, s, 4)
			var ops []Op
			want := map[string]int64{}
			for round := 0; round < 5; round++ {
				for k := 0; k < 200; k++ {
					key := []pipeline.Value{pipeline.Text(fmt.Sprint("k", k)), pipeline.Int(int64(k % 3))}
					v := int64(round*1000 + k)
					ops = append(ops, Op{Values: append(key[:2:2], pipeline.Int(v))})
					id := keyString(key)
					want[id] = v
					if (k+round)%3 == 0 {
						ops = append(ops, Op{Delete: true, Values: key})
						delete(want, id)
					}
				}
			}
			rej, err := w.Apply(context.Background(), ops)
			if err != nil || len(rej) > 0 {
				t.Fatalf("apply: %v %v", rej, err)
			}
			got := readAll(t, srv.DB(t), s)
			if len(got) != len(want) {
				t.Errorf("%d rows, want %d", len(got), len(want))
			}
			for k, v := range want {
				if g, ok := got[k]; !ok || g[2].Num != v {
					t.Errorf("key %q: got %v, want %d", k, g, v)
				}
			}
		})
	}
}

// TIMESTAMP values mean the same instant whatever the server's time zone: a MariaDB whose
// default zone is +08:00 (Lindorm's default) stores the instant rekey sent in a timestamp(3)
// column. Without the session's time_zone='+00:00' the stored instant is 8 hours early.
func TestTimestampSameInstantInAnyServerZone(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB")
	}
	srv := mysqltest.MariaDB(t, "--default-time-zone=+08:00")
	srv.Exec(t, "CREATE TABLE t (k timestamp(3) NOT NULL PRIMARY KEY, d date, v timestamp(3) NULL)")
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeTimestamp, KeyPos: 0}, {Name: "d", Type: pipeline.TypeDate, KeyPos: -1},
		{Name: "v", Type: pipeline.TypeTimestamp, KeyPos: -1}}}
	w := openWriter(t, srv, s, 1)
	const ms = 1700000000123
	if err := w.Write(context.Background(), []pipeline.Row{{Values: []pipeline.Value{pipeline.Int(ms), pipeline.Int(19675), pipeline.Int(ms + 1)}}}); err != nil {
		t.Fatal(err)
	}
	// a connection in the server's own zone: UNIX_TIMESTAMP gives the stored instant
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = srv.User, "tcp", srv.Addr, srv.Database
	conn, _ := mysql.NewConnector(c)
	db := sql.OpenDB(conn)
	defer db.Close()
	var zone string
	var k, v float64
	if err := db.QueryRow("SELECT @@time_zone, UNIX_TIMESTAMP(k), UNIX_TIMESTAMP(v) FROM t").Scan(&zone, &k, &v); err != nil {
		t.Fatal(err)
	}
	if zone != "+08:00" {
		t.Fatalf("server zone %s: the test needs +08:00", zone)
	}
	if int64(k*1000+0.5) != ms || int64(v*1000+0.5) != ms+1 {
		t.Errorf("stored instants %.3f, %.3f; want %.3f, %.3f", k, v, float64(ms)/1000, float64(ms+1)/1000)
	}
}

// faultProxy forwards TCP to a MySQL-protocol server and lets a test answer in its place:
// refuse a new connection with an error packet instead of the server's greeting (onConnect), or
// answer a client packet with an error packet without forwarding it, or cut the connection
// there (onPacket), or cut it once a packet was forwarded (cutAfter: the server runs a statement
// whose client is gone). Nil hooks forward everything.
type faultProxy struct {
	l         net.Listener
	onConnect func() (errPacket []byte)
	onPacket  func(p []byte) (errPacket []byte, cut bool)
	cutAfter  func(p []byte) bool
	// connPacket, when set, answers a packet of the proxy's n-th connection (from 1) in place
	// of onPacket: a server that behaves so on some connections only
	connPacket func(n int64, p []byte) (errPacket []byte, cut bool)
	conns      atomic.Int64
}

func newFaultProxy(t *testing.T, addr string, onConnect func() []byte, onPacket func([]byte) ([]byte, bool)) *faultProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{l: l, onConnect: onConnect, onPacket: onPacket}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if p.onConnect != nil {
					if e := p.onConnect(); e != nil {
						c.Write(e)
						return
					}
				}
				s, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer s.Close()
				go io.Copy(c, s)
				conn := p.conns.Add(1)
				onPacket := p.onPacket
				if p.connPacket != nil {
					onPacket = func(b []byte) ([]byte, bool) { return p.connPacket(conn, b) }
				}
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if onPacket != nil {
							if e, cut := onPacket(buf[:n]); cut {
								return // drop the packet and the connection
							} else if e != nil {
								c.Write(e) // the server never sees the packet: the session stays in step
								continue
							}
						}
						s.Write(buf[:n])
						if p.cutAfter != nil && p.cutAfter(buf[:n]) {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// newFlakyProxy cuts the first cuts connections once they carried an INSERT: the driver sees a
// lost connection mid-statement.
func newFlakyProxy(t *testing.T, addr string, cuts int) *faultProxy {
	var left atomic.Int64
	left.Store(int64(cuts))
	return newFaultProxy(t, addr, nil, func(p []byte) ([]byte, bool) {
		return nil, bytes.Contains(p, []byte("INSERT INTO")) && left.Add(-1) >= 0
	})
}

// errPacket is a MySQL ERR packet with sequence number seq (0 in place of a greeting, 1 as the
// answer to a command).
func errPacket(seq byte, code uint16, state, msg string) []byte {
	payload := append([]byte{0xff, byte(code), byte(code >> 8), '#'}, state...)
	payload = append(payload, msg...)
	return append([]byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}, payload...)
}

func TestTransientErrorsAreRetriedAndCounted(t *testing.T) {
	srv := mysqltest.GMS(t)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
	p := newFlakyProxy(t, srv.Addr, 2)
	tgt := targetVia(t, p.l, srv.Database)
	var failed atomic.Int64
	observe := func(kind string, rows int, d time.Duration, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	w, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, BackoffMin: time.Millisecond, Observe: observe})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var rows []pipeline.Row
	for i := 0; i < 10; i++ {
		rows = append(rows, pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Int(int64(i))}})
	}
	if err := w.Write(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	// each cut fails the statement once; ending the lost statement's session may take more
	// than one try on a busy machine (the server notices the kill late), and each such try
	// counts as a retry too
	if f := failed.Load(); f != 2 {
		t.Errorf("%d failed statements, want 2 (one per cut connection)", f)
	}
	if r := w.Stats.Retries.Load(); r < 2 {
		t.Errorf("%d retries counted, want at least the 2 statements tried again", r)
	}
	var n int
	srv.DB(t).QueryRow("SELECT COUNT(*) FROM t").Scan(&n)
	if n != 10 {
		t.Errorf("%d rows, want 10", n)
	}
}

// A server at its limits answers with its error codes rather than dropping the connection:
// "too many connections" (1040) instead of the greeting of a new connection, and Lindorm's
// "resource limit exceeded" (8008, its throttling) to a statement. Both are retried with backoff
// and counted, and the rows are then written. Before, 8008 stopped the run.
func TestServerLimitErrorsAreRetried(t *testing.T) {
	srv := mysqltest.GMS(t)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
	var refuse, throttle atomic.Int64
	refuse.Store(2)
	throttle.Store(3)
	p := newFaultProxy(t, srv.Addr,
		func() []byte {
			if refuse.Add(-1) >= 0 {
				return errPacket(0, 1040, "08004", "Too many connections (current limit: 100)")
			}
			return nil
		},
		func(b []byte) ([]byte, bool) {
			if bytes.Contains(b, []byte("INSERT INTO")) && throttle.Add(-1) >= 0 {
				return errPacket(1, 8008, "HY000", "Resource limit exceeded: write quota of the instance"), false
			}
			return nil, false
		})
	tgt := targetVia(t, p.l, srv.Database)
	w, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, BackoffMin: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open while the server refuses connections with 1040: %v", err)
	}
	defer w.Close()
	if r := w.Stats.Retries.Load(); r != 2 {
		t.Errorf("%d retries counted for the refused connections, want 2", r)
	}
	var rows []pipeline.Row
	for i := 0; i < 10; i++ {
		rows = append(rows, pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Int(int64(i))}})
	}
	if err := w.Write(context.Background(), rows); err != nil {
		t.Fatalf("Write while the server throttles with 8008: %v", err)
	}
	if r := w.Stats.Retries.Load(); r != 5 {
		t.Errorf("%d retries counted in all, want 5 (2 connections, 3 statements)", r)
	}
	var n int
	srv.DB(t).QueryRow("SELECT COUNT(*) FROM t").Scan(&n)
	if n != 10 {
		t.Errorf("%d rows, want 10", n)
	}
}

// A failover leaves the pool's connections on the old primary, which refuses writes as
// read-only (1290, MySQL's and MariaDB's --read-only; 1836 InnoDB's read-only mode) while new
// connections reach the new primary: the statement is tried again on a new connection, and the
// rows are written. Before, every retry ran on the same connection to the read-only server until
// the retries ran out and the run failed.
func TestReadOnlyServerIsLeftForANewConnection(t *testing.T) {
	for _, code := range []uint16{1290, 1836} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := mysqltest.GMS(t)
			s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
			srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
			var refused atomic.Int64
			p := newFaultProxy(t, srv.Addr, nil, nil)
			p.connPacket = func(n int64, b []byte) ([]byte, bool) {
				if n == 1 && bytes.Contains(b, []byte("INSERT INTO")) { // the connection Open made, kept in the pool
					refused.Add(1)
					return errPacket(1, code, "HY000", "The MySQL server is running with the --read-only option so it cannot execute this statement"), false
				}
				return nil, false
			}
			tgt := targetVia(t, p.l, srv.Database)
			w, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, Retries: 3, BackoffMin: time.Millisecond, BackoffMax: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var rows []pipeline.Row
			for i := 0; i < 10; i++ {
				rows = append(rows, pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Int(int64(i))}})
			}
			if err := w.Write(context.Background(), rows); err != nil {
				t.Fatalf("write after a failover (the pooled connection read-only, a new one writable): %v", err)
			}
			if r := refused.Load(); r != 1 {
				t.Errorf("the read-only connection refused %d statements, want 1: it is left after its first refusal", r)
			}
			if r := w.Stats.Retries.Load(); r != 1 {
				t.Errorf("%d retries counted, want 1", r)
			}
			if n := countRows(t, srv); n != 10 {
				t.Errorf("%d rows, want 10", n)
			}

			// a server that stays read-only (a replica named by mistake): the retries run out,
			// and the error says so rather than to check that the server is up
			p.connPacket = func(n int64, b []byte) ([]byte, bool) {
				if bytes.Contains(b, []byte("INSERT INTO")) {
					return errPacket(1, code, "HY000", "The MySQL server is running with the --read-only option so it cannot execute this statement"), false
				}
				return nil, false
			}
			err = w.Write(context.Background(), rows)
			if err == nil || !strings.Contains(err.Error(), "read-only: check that the target is the primary") {
				t.Errorf("write to a server that stays read-only: %v", err)
			}
		})
	}
}

// A server that is restarting refuses connections for a while: Open retries that transient error
// with backoff and counts it, as a statement's, so that a replicate restarted together with its
// target waits for it (transient errors, such as a connection reset, timeouts or throttling, retry
// with backoff and are counted). Before, Open failed at the first refused connection (the
// end-to-end TestReplicateIntoMariaDBSurvivesKills saw rekey exit 3).
func TestOpenWaitsForARestartingServer(t *testing.T) {
	srv := mysqltest.GMS(t)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there: connections are refused
	tgt, err := ParseURI("mysql://root@"+addr+"/"+srv.Database, noEnv)
	if err != nil {
		t.Fatal(err)
	}

	// never up: the error after the last retry says what was tried
	_, err = Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, Retries: 2, BackoffMin: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "tried 3 times") {
		t.Fatalf("Open of a port nothing listens on: %v", err)
	}

	// up after a while: Open waits for it
	type result struct {
		w   *Writer
		err error
	}
	done := make(chan result, 1)
	go func() {
		w, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
		done <- result{w, err}
	}()
	time.Sleep(300 * time.Millisecond) // the server stays down a while: the outage's length
	select {
	case r := <-done:
		t.Fatalf("Open returned while the server was down: %v", r.err)
	default:
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	go func() { // the server "comes back": a plain TCP relay to go-mysql-server
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, err := net.Dial("tcp", srv.Addr)
				if err != nil {
					return
				}
				defer b.Close()
				go io.Copy(b, c)
				io.Copy(c, b)
			}()
		}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("Open once the server is up: %v", r.err)
	}
	defer r.w.Close()
	if n := r.w.Stats.Retries.Load(); n < 1 {
		t.Errorf("%d retries counted, want at least 1", n)
	}
	if err := r.w.Write(context.Background(), []pipeline.Row{{Values: []pipeline.Value{pipeline.Int(1), pipeline.Int(2)}}}); err != nil {
		t.Fatal(err)
	}

	// a refusal that is not transient (here: a missing table) is not retried
	start := time.Now()
	s.Table = "missing"
	if _, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, BackoffMin: time.Second}); err == nil || time.Since(start) > 900*time.Millisecond {
		t.Errorf("Open of a missing table: %v after %s", err, time.Since(start))
	}
}

func TestParseURI(t *testing.T) {
	env := func(k string) string {
		if k == lindormsql.PasswordEnv {
			return "s3cret"
		}
		return ""
	}
	tg, err := ParseURI("lindorm://rekey@ld-xxx.lindorm.rds.aliyuncs.com/db1?tls=true&table=t2", env)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Dialect != lindormsql.Dialect || tg.Addr != "ld-xxx.lindorm.rds.aliyuncs.com:33060" || tg.Database != "db1" || tg.Table != "t2" || tg.TLS != "true" || tg.password != "s3cret" {
		t.Errorf("parsed %+v", tg)
	}
	for _, bad := range []string{
		"mysql://u:hunter2@h:3306/db", "mysql://u@h:3306/db?password=hunter2", "mysql://h:3306/db", "mysql://u@h:3306/",
		"mysql://u@h:3306/db?tls=maybe", "mysql://u@h:3306/db?nope=1", "postgres://u@h/db",
	} {
		_, err := ParseURI(bad, env)
		if err == nil {
			t.Errorf("%s: accepted", bad)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", bad, err)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want errClass
	}{
		{&mysql.MySQLError{Number: 1213}, classTransient},
		{&mysql.MySQLError{Number: 1205}, classTransient},
		// MariaDB's statement timeout (max_statement_time), retried as MySQL's (3024) is: it
		// stopped the run as an unknown error
		{&mysql.MySQLError{Number: 1969, Message: "Query execution was interrupted (max_statement_time exceeded)"}, classTransient},
		{&mysql.MySQLError{Number: 1406, Message: "Data too long for column 'v' at row 3"}, classRow},
		{&mysql.MySQLError{Number: 1366}, classRow},
		{&mysql.MySQLError{Number: 3819, Message: "Check constraint 'v_positive' is violated."}, classRow},
		{fmt.Errorf("x: %w", mysql.ErrPktTooLarge), classRow}, // the driver: over the server's max_allowed_packet
		{&mysql.MySQLError{Number: 1153, Message: "Got a packet bigger than 'max_allowed_packet' bytes"}, classRow},
		{&mysql.MySQLError{Number: 1064, Message: "syntax error"}, classFatal},
		{&mysql.MySQLError{Number: 1105, Message: "RegionTooBusyException: over memstore limit"}, classTransient},
		// HBase's names of a full call queue and of a server at its concurrent requests: they
		// stopped the run as unknown errors
		{&mysql.MySQLError{Number: 1105, Message: "org.apache.hadoop.hbase.CallQueueTooBigException: Call queue is full on rs1,16020, too many items queued ?"}, classTransient},
		{&mysql.MySQLError{Number: 1105, Message: "org.apache.hadoop.hbase.ipc.ServerTooBusyException: Busy Server: rs1,16020 (there are 100 concurrent rpc requests)"}, classTransient},
		{mysql.ErrInvalidConn, classTransient},
		{fmt.Errorf("x: %w", io.ErrUnexpectedEOF), classTransient},
		{context.Canceled, classFatal},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("%v: class %d, want %d", tc.err, got, tc.want)
		}
	}
	if r := rowError(&mysql.MySQLError{Number: 1406, Message: "Data too long for column 'v' at row 3"}, 100, "t"); r.Field != "v" || r.Code != CodeTargetRefused {
		t.Errorf("rowError: %+v", r)
	}
}

// BenchmarkAppendRow renders rows of every type as an upsert's tuples (the per-row work of Write).
func BenchmarkAppendRow(b *testing.B) {
	schema := testSchema()
	st := newStatements(mysqlsql.Dialect, schema)
	rows := make([][]pipeline.Value, 64)
	for i := range rows {
		rows[i] = testRow(i)
		rows[i][8] = pipeline.Float(float64(i) * 1.1) // FLOAT values of every length
	}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var rerr *pipeline.RowError
		if buf, rerr = st.appendRow(buf[:0], rows[i%len(rows)]); rerr != nil {
			b.Fatal(rerr)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// Literals must suit the session of the connection that runs them. MariaDB restarted with
// NO_BACKSLASH_ESCAPES under a running writer: its new connections (reconnects, the lifetime's
// rotation) used to get literals escaped for the mode read at Open, so the quote of a crafted
// value closed its literal, a row of the value's making was inserted, the rows after it in the
// statement were commented out, and the write still succeeded.
func TestLiteralsSuitEveryConnectionsSQLMode(t *testing.T) {
	srv := mysqltest.OwnMariaDB(t)
	schema := pipeline.TargetSchema{Table: "ev", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "name", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "n", Type: pipeline.TypeInteger, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(schema, mysqlsql.KeyCollations[srv.DDLDialect()]))
	const crafted = "x',0),(0x6576696c,0x70776e6564,77)#" // ('evil','pwned',77), then a comment to the end
	names := []string{`x\',0),(0x6576696c,0x70776e6564,77)#`, "x'\n", `a\b`, `c:\dir\`, "it's", "line\nbreak", `\\'`, "\x00\x1a\r"}
	row := func(i int) []pipeline.Value {
		name := names[i%len(names)]
		if i >= 40 && i < 80 { // plain text around one crafted value: nothing but it could break the statement
			name = fmt.Sprintf("n%d", i)
			if i == 50 {
				name = crafted
			}
		}
		return []pipeline.Value{pipeline.Text(fmt.Sprintf("k%03d", i)), pipeline.Text(name), pipeline.Int(int64(i))}
	}
	batch := func(from, to int) []pipeline.Row {
		var rows []pipeline.Row
		for i := from; i < to; i++ {
			rows = append(rows, pipeline.Row{Values: row(i)})
		}
		return rows
	}
	w := openWriter(t, srv, schema, 2)
	ctx := context.Background()
	if err := w.Write(ctx, batch(0, 40)); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t, "--sql-mode=STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES")
	var mode string
	if err := srv.DB(t).QueryRow("SELECT @@GLOBAL.sql_mode").Scan(&mode); err != nil || !strings.Contains(mode, "NO_BACKSLASH_ESCAPES") {
		t.Fatalf("the restarted server's sql_mode is %q (%v)", mode, err)
	}
	check := func(n int) {
		t.Helper()
		got := readAll(t, srv.DB(t), schema)
		for _, v := range got {
			if !strings.HasPrefix(v[0].Str, "k") {
				t.Errorf("a row the writer was not given: %q", v)
			}
		}
		for i := 0; i < n; i++ {
			want := row(i)
			g, ok := got[keyString(want[:1])]
			if !ok {
				t.Errorf("row %d (%q) missing", i, want[1].Str)
			} else if d := diffRow(schema, want, g); d != "" {
				t.Errorf("row %d: %s", i, d)
			}
		}
		if len(got) != n || w.Stats.Upserts.Load() != int64(n) {
			t.Fatalf("%d rows in the table, %d counted as written, want %d", len(got), w.Stats.Upserts.Load(), n)
		}
	}
	if err := w.Write(ctx, batch(40, 80)); err != nil {
		t.Fatal(err)
	}
	check(80)
	if err := w.Write(ctx, batch(80, 120)); err != nil {
		t.Fatal(err)
	}
	check(120)
}

// A statement InnoDB rolls back as a deadlock's victim runs again at once, however long the
// backoff (the other connection's statement went on: nothing is wrong with the server), and
// more often than the retries of a failing server: deadlocks are routine among connections.
func TestDeadlockVictimRunsAgainAtOnce(t *testing.T) {
	srv := mysqltest.GMS(t)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]))
	var deadlocks atomic.Int64
	deadlocks.Store(15)
	p := newFaultProxy(t, srv.Addr, func() []byte { return nil },
		func(b []byte) ([]byte, bool) {
			if bytes.Contains(b, []byte("INSERT INTO")) && deadlocks.Add(-1) >= 0 {
				return errPacket(1, 1213, "40001", "Deadlock found when trying to get lock; try restarting transaction"), false
			}
			return nil, false
		})
	tgt := targetVia(t, p.l, srv.Database)
	w, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, Retries: 3, BackoffMin: time.Hour, BackoffMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := w.Apply(ctx, []Op{{Values: []pipeline.Value{pipeline.Int(1), pipeline.Int(1)}}}); err != nil {
		t.Fatalf("apply through 15 deadlocks (3 retries, an hour's backoff): %v", err)
	}
	if r := w.Stats.Retries.Load(); r != 15 {
		t.Errorf("%d retries counted, want 15", r)
	}
}

// A server without a strict sql_mode (MySQL 5.6's default, an empty sql_mode in many configurations)
// stores a value too long for its column cut short, and a date out of range as zeros, with a
// warning no one reads: a key cut short merges two rows. Every connection is strict, so such a
// value is refused and goes to the rejects; and an empty string stays one where MariaDB's
// EMPTY_STRING_IS_NULL would make it NULL.
func TestSessionIsStrictWhateverTheServersMode(t *testing.T) {
	srv := mysqltest.GMS(t)
	srv.Exec(t, "SET GLOBAL sql_mode = 'ANSI_QUOTES'")
	schema := pipeline.TargetSchema{Table: "st", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(schema, mysqlsql.KeyCollations[srv.DDLDialect()]))
	w := openWriter(t, srv, schema, 1)
	var mode string
	if err := w.DB().QueryRow("SELECT @@SESSION.sql_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	modes := "," + strings.ToUpper(mode) + ","
	for _, m := range []string{"STRICT_ALL_TABLES", "ANSI_QUOTES"} {
		if !strings.Contains(modes, ","+m+",") {
			t.Errorf("the session's sql_mode %q lacks %s", mode, m)
		}
	}
	for _, m := range []string{"NO_BACKSLASH_ESCAPES", "EMPTY_STRING_IS_NULL"} {
		if strings.Contains(modes, ","+m+",") {
			t.Errorf("the session's sql_mode %q has %s", mode, m)
		}
	}
}

// Keys that differ only by trailing zero bytes (X'61', X'6100') are two rows in Lindorm and in
// the bulk-load files; a binary(N) key column pads every key with zero bytes to N, so they were
// one row (the second upsert overwrote the first, both counted as written), and a blob key is a
// key by a prefix only. The table check refuses both, saying which ALTER makes the column keep
// each key whole; after it, the two keys are two rows.
func TestBinaryKeysDifferingByTrailingZerosStayApart(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeVarbinary, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
			tgt, _ := ParseURI(srv.URI(""), noEnv)
			srv.Exec(t, "CREATE TABLE t (k binary(4) NOT NULL PRIMARY KEY, v bigint)")
			err := tableCheck(tgt, s)
			fix := "ALTER TABLE `t` MODIFY `k` varbinary(4) NOT NULL"
			if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "binary pads") || !strings.Contains(err.Error(), fix) {
				t.Errorf("a binary(4) key: want a refusal naming the padding and %q, got %v", fix, err)
			}
			srv.Exec(t, fix)
			rows := []pipeline.Row{
				{Values: []pipeline.Value{pipeline.Bytes("a"), pipeline.Int(1)}},
				{Values: []pipeline.Value{pipeline.Bytes("a\x00"), pipeline.Int(2)}},
			}
			rowsKept(t, srv, s, rows)
		})
	}
}

// tableCheck opens a writer on the table of s, and closes it: the table check's refusal, or nil.
func tableCheck(tgt *Target, s pipeline.TargetSchema) error {
	w, err := Open(context.Background(), Config{Target: tgt, Schema: s})
	if err == nil {
		w.Close()
	}
	return err
}

// rowsKept writes rows through a new writer and checks that the table then holds one row for
// each (none merged into another's key).
func rowsKept(t *testing.T, srv *mysqltest.Server, s pipeline.TargetSchema, rows []pipeline.Row) {
	t.Helper()
	w := openWriter(t, srv, s, 1)
	if err := w.Write(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, srv.DB(t), s); len(got) != len(rows) {
		t.Errorf("%d rows, want %d: %v", len(got), len(rows), got)
	}
}

// A value column of char(N) gives back its values without their trailing spaces ('a ' read as
// 'a'), and one of binary(N) pads its values with zero bytes to N (X'61' read as X'61000000'):
// the table check let both through, and rekey counted as written values the table does not
// hold (verify then found them different). It refuses them, naming the column type that keeps
// every value as it is.
func TestValueColumnsThatChangeValuesAreRefused(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			tgt, _ := ParseURI(srv.URI(""), noEnv)
			for _, tc := range []struct {
				typ          pipeline.Type
				create, want string
			}{
				{pipeline.TypeVarchar, "v char(5)", "char drops trailing spaces"},
				{pipeline.TypeVarbinary, "v binary(4)", "binary pads"},
			} {
				table := "t" + strings.Fields(tc.create)[1][:3]
				s := pipeline.TargetSchema{Table: table, KeyLen: 1, Columns: []pipeline.Column{
					{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: tc.typ, KeyPos: -1}}}
				srv.Exec(t, "CREATE TABLE "+table+" (k bigint NOT NULL PRIMARY KEY, "+tc.create+")")
				err := tableCheck(tgt, s)
				if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("a %s value column: want a refusal saying %q, got %v", tc.create, tc.want, err)
				}
			}
		})
	}
}

// A copy leaves a null out of its upsert, so a value column that is NOT NULL, has a DEFAULT, or
// changes itself ON UPDATE filled the row's null with a value the source never had: a table
// with `v varchar(10) NOT NULL DEFAULT 'x'` held 'x' for a row whose v was null, counted as
// written (MariaDB before 10.10 makes a table's first TIMESTAMP so unless it says NULL). The
// table check refuses such columns, naming what to drop; after the fix the null stays null.
func TestValueColumnsThatFillNullsAreRefused(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			tgt, _ := ParseURI(srv.URI(""), noEnv)
			s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1},
				{Name: "w", Type: pipeline.TypeVarchar, KeyPos: -1}}}
			cases := []struct{ create, want string }{
				{"v varchar(10) NOT NULL DEFAULT 'x'", "NOT NULL"},
				{"v varchar(10) NOT NULL", "NOT NULL"},
				{"v varchar(10) DEFAULT 'x'", "DEFAULT"},
			}
			if srv.Kind != "gms" {
				cases = append(cases, struct{ create, want string }{"v timestamp(3) NULL DEFAULT NULL ON UPDATE current_timestamp(3)", "ON UPDATE"})
			}
			for i, tc := range cases {
				s := s
				s.Table = fmt.Sprintf("t%d", i)
				if strings.Contains(tc.create, "timestamp") {
					s.Columns = slices.Clone(s.Columns)
					s.Columns[1].Type = pipeline.TypeTimestamp
				}
				srv.Exec(t, "CREATE TABLE "+s.Table+" (k bigint NOT NULL PRIMARY KEY, "+tc.create+", w varchar(10))")
				err := tableCheck(tgt, s)
				if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ALTER TABLE") {
					t.Errorf("a value column %s: want a refusal naming %s and the ALTER TABLE, got %v", tc.create, tc.want, err)
					continue
				}
				fix := regexp.MustCompile("ALTER TABLE .*? NULL DEFAULT NULL").FindString(err.Error())
				srv.Exec(t, fix)
				if w, err := Open(context.Background(), Config{Target: tgt, Schema: s}); err != nil {
					t.Errorf("after %s: %v", fix, err)
				} else {
					w.Close()
				}
			}
			srv.Exec(t, "CREATE TABLE t (k bigint NOT NULL PRIMARY KEY, v varchar(10), w varchar(10))")
			w := openWriter(t, srv, s, 1)
			if err := w.Write(context.Background(), []pipeline.Row{{Values: []pipeline.Value{pipeline.Int(1), pipeline.Null, pipeline.Text("b")}}}); err != nil {
				t.Fatal(err)
			}
			got := readAll(t, srv.DB(t), s)
			if len(got) != 1 {
				t.Fatalf("want one row, got %v", got)
			}
			for _, r := range got {
				if !r[1].IsNull() {
					t.Errorf("want the null kept, got %v", r)
				}
			}
		})
	}
}

// A unique index besides the primary key makes INSERT ... ON DUPLICATE KEY UPDATE update the
// row holding the same indexed value instead of inserting a row of another key: with UNIQUE
// (v), rows (1, 'a') and (2, 'a') left one row, key 1, and both counted as written. Lindorm has
// no unique index: the table check refuses one, with the ALTER TABLE that drops it.
func TestUniqueIndexBesidesTheKeyIsRefused(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			tgt, _ := ParseURI(srv.URI(""), noEnv)
			s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1}}}
			srv.Exec(t, "CREATE TABLE t (k bigint NOT NULL PRIMARY KEY, v varchar(10), UNIQUE KEY uv (v))")
			err := tableCheck(tgt, s)
			fix := "ALTER TABLE `t` DROP INDEX `uv`"
			if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "unique index uv") || !strings.Contains(err.Error(), fix) {
				t.Fatalf("a unique index on v: want a refusal naming it and %q, got %v", fix, err)
			}
			srv.Exec(t, fix)
			rows := []pipeline.Row{{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text("a")}}, {Values: []pipeline.Value{pipeline.Int(2), pipeline.Text("a")}}}
			rowsKept(t, srv, s, rows)
		})
	}
}

// An AUTO_INCREMENT key column numbers a row whose key is 0 anew (unless the server's sql_mode
// has NO_AUTO_VALUE_ON_ZERO): the row of key 0 was stored under key 1, counted as written, and
// the row of key 1 after it overwrote it. The table check refuses such a column, with the
// ALTER TABLE that makes it a plain one; after it, key 0 is key 0.
func TestAutoIncrementKeyIsRefused(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			tgt, _ := ParseURI(srv.URI(""), noEnv)
			s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
				{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1}}}
			srv.Exec(t, "CREATE TABLE t (k bigint NOT NULL AUTO_INCREMENT PRIMARY KEY, v varchar(10))")
			err := tableCheck(tgt, s)
			fix := regexp.MustCompile("ALTER TABLE `t` MODIFY `k` bigint(\\(20\\))? NOT NULL").FindString(fmt.Sprint(err))
			if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "AUTO_INCREMENT") || fix == "" {
				t.Fatalf("an AUTO_INCREMENT key: want a refusal naming it and the ALTER TABLE, got %v", err)
			}
			srv.Exec(t, fix)
			rows := []pipeline.Row{{Values: []pipeline.Value{pipeline.Int(0), pipeline.Text("zero")}}, {Values: []pipeline.Value{pipeline.Int(1), pipeline.Text("one")}}}
			rowsKept(t, srv, s, rows)
		})
	}
}

// A primary key on a prefix of a key column (PRIMARY KEY (k(3))) compares keys by that prefix
// only: rows 'abc1' and 'abc2' were one row, key 'abc1' holding the second row's value, both
// counted as written. The table check refuses it, with the ALTER TABLE that keys the whole
// column; after it, the two keys are two rows.
func TestPrimaryKeyOnAPrefixIsRefused(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB (go-mysql-server has no prefix indexes)")
	}
	srv := mysqltest.MariaDB(t)
	tgt, _ := ParseURI(srv.URI(""), noEnv)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "n", Type: pipeline.TypeBigint, KeyPos: 1},
		{Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	srv.Exec(t, "CREATE TABLE t (k varchar(100) CHARACTER SET utf8mb4 COLLATE "+mysqlsql.KeyCollations[srv.DDLDialect()]+
		" NOT NULL, n bigint NOT NULL, v bigint, PRIMARY KEY (k(3), n))")
	err := tableCheck(tgt, s)
	fix := "ALTER TABLE `t` DROP PRIMARY KEY, ADD PRIMARY KEY (`k`, `n`)"
	if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "its first 3") || !strings.Contains(err.Error(), fix) {
		t.Fatalf("a primary key on k(3): want a refusal naming the prefix and %q, got %v", fix, err)
	}
	srv.Exec(t, fix)
	rows := []pipeline.Row{{Values: []pipeline.Value{pipeline.Text("abc1"), pipeline.Int(1), pipeline.Int(1)}},
		{Values: []pipeline.Value{pipeline.Text("abc2"), pipeline.Int(1), pipeline.Int(2)}}}
	rowsKept(t, srv, s, rows)
}

// A FLOAT or DOUBLE column declared with digits (double(10,2), float(7,4)) rounds every value to
// them without a word, strict mode or not: 1.23456 was stored as 1.23 and counted as written.
// The table check refuses such a column, naming the plain type that keeps every value.
func TestFloatColumnsWithDigitsAreRefused(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB (go-mysql-server keeps no digits of a double)")
	}
	srv := mysqltest.MariaDB(t)
	tgt, _ := ParseURI(srv.URI(""), noEnv)
	for i, tc := range []struct {
		typ    pipeline.Type
		create string
	}{{pipeline.TypeDouble, "double(10,2)"}, {pipeline.TypeFloat, "float(7,4)"}} {
		s := pipeline.TargetSchema{Table: fmt.Sprintf("t%d", i), KeyLen: 1, Columns: []pipeline.Column{
			{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: tc.typ, KeyPos: -1}}}
		srv.Exec(t, "CREATE TABLE "+s.Table+" (k bigint NOT NULL PRIMARY KEY, v "+tc.create+")")
		err := tableCheck(tgt, s)
		if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "rounds every value") {
			t.Errorf("a %s column: want a refusal saying it rounds, got %v", tc.create, err)
		}
	}
}

// A reject names the column the server refused, however the server quotes it: MariaDB names
// the column of an incorrect string or datetime as `db`.`t`.`v`, and such rejects had no
// field (an emoji into a utf8mb3 column, a date out of a TIMESTAMP column's range).
func TestRejectNamesTheFieldHoweverQuoted(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB (go-mysql-server stores any character in a utf8mb3 column)")
	}
	srv := mysqltest.MariaDB(t)
	w := kvWriter(t, srv, "varchar(20) CHARACTER SET utf8mb3")
	err := w.Write(context.Background(), kvRows(3, func(i int) string {
		if i == 1 {
			return "smile \U0001F600"
		}
		return "ok"
	}))
	var rr *pipeline.RowRejects
	if !errors.As(err, &rr) || len(rr.Rows) != 1 {
		t.Fatalf("want one reject, got %v", err)
	}
	if r := rr.Rows[0]; r.Index != 1 || r.Err.Field != "v" {
		t.Errorf("reject %d %+v: want row 1, field v", r.Index, r.Err)
	}
}

func TestRowErrorFieldForms(t *testing.T) {
	for msg, want := range map[string]string{
		"Data too long for column 'v' at row 1":                                                 "v",
		"Incorrect string value: '\\xF0\\x9F\\x98\\x80' for column `rekey`.`t`.`v` at row 1":    "v",
		"Incorrect datetime value: '1960-01-01 00:00:00.000' for column `db`.`t`.`ts` at row 2": "ts",
		"Incorrect string value: '\\xF0' for column `a``b` at row 1":                            "a`b",
		// MySQL's invalid JSON text names the column with its table: the field is the column
		"Invalid JSON text: \"Invalid value.\" at position 6 in value for column 't.j'.": "j",
		"Data too long for column 'x.y' at row 1":                                        "x.y", // a column named so
	} {
		if got := rowError(errors.New(msg), 10, "t").Field; got != want {
			t.Errorf("%s: field %q, want %q", msg, got, want)
		}
	}
}

// A server with explicit_defaults_for_timestamp off (MariaDB before 10.10, MySQL 5.7) makes a
// table's first TIMESTAMP column ON UPDATE CURRENT_TIMESTAMP, a key column too: the upsert of
// a row already there moved it to the time of the update (key 2023-11-14 22:13:20.123 became
// the clock's time), a row lost under its key. The table check refuses such a key column, with
// the ALTER TABLE that makes it a datetime; after it, the row keeps its key.
func TestKeyColumnOnUpdateIsRefused(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB (go-mysql-server has no implicit ON UPDATE)")
	}
	srv := mysqltest.MariaDB(t, "--explicit-defaults-for-timestamp=0")
	tgt, _ := ParseURI(srv.URI(""), noEnv)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeTimestamp, KeyPos: 0}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1}}}
	srv.Exec(t, "CREATE TABLE t (k timestamp(3) NOT NULL PRIMARY KEY, v varchar(10))")
	err := tableCheck(tgt, s)
	fix := "ALTER TABLE `t` MODIFY `k` datetime(3) NOT NULL"
	if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), "ON UPDATE") || !strings.Contains(err.Error(), fix) {
		t.Fatalf("a key column ON UPDATE: want a refusal naming it and %q, got %v", fix, err)
	}
	srv.Exec(t, fix)
	w := openWriter(t, srv, s, 1)
	for _, v := range []string{"a", "b"} {
		if err := w.Write(context.Background(), []pipeline.Row{{Values: []pipeline.Value{pipeline.Int(1700000000123), pipeline.Text(v)}}}); err != nil {
			t.Fatal(err)
		}
	}
	got := readAll(t, srv.DB(t), s)
	if len(got) != 1 {
		t.Fatalf("want one row, got %v", got)
	}
	for _, r := range got {
		if r[0].Num != 1700000000123 || r[1].Str != "b" {
			t.Errorf("row %v, want key 1700000000123 holding b", r)
		}
	}
}

// targetVia is the target of database db on the server behind proxy listener l.
func targetVia(t *testing.T, l net.Listener, db string) *Target {
	t.Helper()
	tgt, err := ParseURI("mysql://root@"+l.Addr().String()+"/"+db, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}
