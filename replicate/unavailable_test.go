package replicate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// A PostgreSQL UPDATE that leaves a TOASTed column unchanged reaches Kafka with Debezium's
// placeholder in that column: into a table the update sets the other columns and the column keeps
// its value; into files it is rejected (partial_update), never written. Before, the table's and
// the files' column became "__debezium_unavailable_value".
func TestUnavailableValueKeepsTheColumn(t *testing.T) {
	prog := tableProgram(t, "version: 1\nsource: {columns: {id: bigint, body: text, n: int}}\ntarget: {table: t, primary_key: '[id]'}\n")
	src := `"source":{"connector":"postgresql","ts_ms":1}`
	msgs := []kafkago.Message{
		{Offset: 0, Key: []byte(`{"id":1}`), Value: []byte(`{"op":"c",` + src + `,"before":null,"after":{"id":1,"body":"a long text","n":1}}`)},
		{Offset: 1, Key: []byte(`{"id":1}`), Value: []byte(`{"op":"u",` + src + `,"before":null,"after":{"id":1,"body":"__debezium_unavailable_value","n":2}}`)},
	}
	r, w, db := gmsWorker(t, prog, kafka.FormatDebezium)
	changes := w.dec.DecodeBatch(nil, kafka.FetchBatch{Messages: msgs})
	w.collect(changes)
	if len(w.rejects) != 0 {
		t.Fatalf("rejected: %s", w.rejects[0].Message)
	}
	if _, err := r.sqlw.Apply(context.Background(), w.ops); err != nil {
		t.Fatal(err)
	}
	var body string
	var n int
	if err := db.DB(t).QueryRow("SELECT body, n FROM t WHERE id = 1").Scan(&body, &n); err != nil {
		t.Fatal(err)
	}
	if body != "a long text" || n != 2 {
		t.Errorf("table row body %q, n %d; want the update's n 2 and the body kept", body, n)
	}

	files := opsWorker(t, "[id]", outputCaps{wholeRows: true})
	files.r.cfg.Program, files.r.target = prog, prog.Target()
	files.ev = prog.NewEvaluator()
	files.rows = rowSlab{n: len(prog.Target().Columns), chunk: 2}
	ops := files.operations(nil, &changes[1])
	if len(ops) != 1 || ops[0].kind != opReject || ops[0].err.Code != pipeline.CodePartialUpdate || !strings.Contains(ops[0].err.Message, "TOASTed") {
		var got []string
		for _, op := range ops {
			got = append(got, describe(op, 1))
		}
		t.Errorf("into files: %s; want the partial_update reject", strings.Join(got, "; "))
	}
}

// An update that moves the row to another target key (a key column computed from a non-key
// column it changes) but leaves a TOASTed column unavailable cannot be applied into a table: the
// row under its new key would lack that column's value, and the old row holding it is deleted.
// It is rejected whole (partial_move, naming the column), and the row stays under its old key
// with every value. Before, the old row was deleted and the new one written with body NULL: the
// TOASTed text was lost without a reject.
func TestUnavailableValueInAnUpdateThatMovesTheRowIsRejected(t *testing.T) {
	prog := tableProgram(t, "version: 1\nsource: {columns: {id: bigint, g: text, body: text, n: int}}\ntarget: {table: t, primary_key: '[g][id]'}\n")
	src := `"source":{"connector":"postgresql","ts_ms":1}`
	msgs := []kafkago.Message{
		{Offset: 0, Key: []byte(`{"id":1}`), Value: []byte(`{"op":"c",` + src + `,"before":null,"after":{"id":1,"g":"a","body":"a long text","n":1}}`)},
		{Offset: 1, Key: []byte(`{"id":1}`), Value: []byte(`{"op":"u",` + src + `,"before":{"id":1,"g":"a","body":"a long text","n":1},"after":{"id":1,"g":"b","body":"__debezium_unavailable_value","n":2}}`)},
	}
	r, w, db := gmsWorker(t, prog, kafka.FormatDebezium)
	w.collect(w.dec.DecodeBatch(nil, kafka.FetchBatch{Messages: msgs}))
	if len(w.rejects) != 1 || w.rejects[0].Code != CodePartialMove || w.rejects[0].Seq != 1 || w.rejects[0].Field != "body" {
		var got []string
		for _, rj := range w.rejects {
			got = append(got, rj.Code+" "+rj.Field+": "+rj.Message)
		}
		t.Errorf("rejects %q; want the update's, %s naming body", got, CodePartialMove)
	}
	if _, err := r.sqlw.Apply(context.Background(), w.ops); err != nil {
		t.Fatal(err)
	}
	rows, err := db.DB(t).Query("SELECT g, id, COALESCE(body, 'NULL') FROM t ORDER BY g")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var g, body string
		var id int
		if err := rows.Scan(&g, &id, &body); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%d body=%s", g, id, body))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "; ") != "a/1 body=a long text" {
		t.Errorf("table rows %q; want the row under its old key with its body", got)
	}
}

// The same update flattened by Debezium's ExtractNewRecordState (format=json rows): the
// placeholder is not the column's value, and the table keeps the text. Before, the table's body
// became "__debezium_unavailable_value".
func TestFlattenedUnavailableValueKeepsTheColumn(t *testing.T) {
	prog := tableProgram(t, "version: 1\nsource: {columns: {id: bigint, body: text, n: int}}\ntarget: {table: t, primary_key: '[id]'}\n")
	msgs := []kafkago.Message{
		{Offset: 0, Key: []byte(`{"id":1}`), Value: []byte(`{"id":1,"body":"a long text","n":1}`)},
		{Offset: 1, Key: []byte(`{"id":1}`), Value: []byte(`{"id":1,"body":"__debezium_unavailable_value","n":2}`)},
	}
	r, w, db := gmsWorker(t, prog, kafka.FormatJSON)
	w.collect(w.dec.DecodeBatch(nil, kafka.FetchBatch{Messages: msgs}))
	if len(w.rejects) != 0 {
		t.Fatalf("rejected: %s", w.rejects[0].Message)
	}
	if _, err := r.sqlw.Apply(context.Background(), w.ops); err != nil {
		t.Fatal(err)
	}
	var body string
	var n int
	if err := db.DB(t).QueryRow("SELECT body, n FROM t WHERE id = 1").Scan(&body, &n); err != nil {
		t.Fatal(err)
	}
	if body != "a long text" || n != 2 {
		t.Errorf("table row body %q, n %d; want the update's n 2 and the body kept", body, n)
	}
}

// tableProgram compiles the mapping yml (a source and a target table t).
func tableProgram(t *testing.T, yml string) *transform.Program {
	t.Helper()
	m, err := transform.Decode([]byte(yml), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// gmsWorker is a replicator of topic t in format into prog's table, created in an in-process
// go-mysql-server, and its worker of partition 0.
func gmsWorker(t *testing.T, prog *transform.Program, format string) (*Replicator, *sqlWorker, *mysqltest.Server) {
	t.Helper()
	db := mysqltest.GMS(t)
	db.Exec(t, mysqlsql.DDL(prog.Target(), mysqlsql.KeyCollations[db.DDLDialect()]))
	tgt, err := sqlsink.ParseURI(db.URI(""), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	r := &Replicator{cfg: Config{Program: prog, Kafka: kafka.Config{Format: format, Topic: "t"}, SQL: sqlsink.Config{Target: tgt, Conns: 1}},
		target: prog.Target(), log: zap.NewNop(), metrics: newMetrics("t", "test", nil)}
	if r.sqlw, err = sqlsink.Open(context.Background(), sqlsink.Config{Target: tgt, Schema: prog.Target(), Conns: 1}); err != nil {
		t.Fatal(err)
	}
	return r, &sqlWorker{partWorker: r.newSQLPartWorker(0, nil)}, db
}
