package replicate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka"
)

// An update that moves its row to another key is applied whole or not at all into a table too:
// when its new row holds a value no SQL statement can carry (a NaN or infinite DOUBLE), the change
// is rejected (target_refused) and the old key is not deleted, so the row stays under its old key
// with its values. Before, the old key's DELETE ran and only the new row was rejected: the row
// left the table.
func TestRefusedMoveIntoATableDeletesNothing(t *testing.T) {
	prog := tableProgram(t, "version: 1\nsource: {columns: {id: bigint, g: text, x: double}}\ntarget: {table: t, primary_key: '[g][id]'}\n")
	src := `"source":{"connector":"postgresql","ts_ms":1}`
	msgs := []kafkago.Message{
		{Offset: 0, Key: []byte(`{"id":1}`), Value: []byte(`{"op":"c",` + src + `,"before":null,"after":{"id":1,"g":"a","x":1.5}}`)},
		{Offset: 1, Key: []byte(`{"id":2}`), Value: []byte(`{"op":"c",` + src + `,"before":null,"after":{"id":2,"g":"a","x":2.5}}`)},
		{Offset: 2, Key: []byte(`{"id":1}`), Value: []byte(`{"op":"u",` + src + `,"before":{"id":1,"g":"a","x":1.5},"after":{"id":1,"g":"b","x":"NaN"}}`)},
		{Offset: 3, Key: []byte(`{"id":2}`), Value: []byte(`{"op":"u",` + src + `,"before":{"id":2,"g":"a","x":2.5},"after":{"id":2,"g":"b","x":3.5}}`)},
	}
	r, w, db := gmsWorker(t, prog, kafka.FormatDebezium)
	w.collect(w.dec.DecodeBatch(nil, kafka.FetchBatch{Messages: msgs}))
	rejected, err := r.sqlw.Apply(context.Background(), w.ops)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, rj := range w.rejects {
		codes = append(codes, rj.Code)
	}
	for _, rj := range rejected {
		codes = append(codes, rj.Err.Code)
	}
	if len(codes) != 1 || codes[0] != sqlsink.CodeTargetRefused {
		t.Errorf("rejects %q; want the NaN move's, %s", codes, sqlsink.CodeTargetRefused)
	}
	rows, err := db.DB(t).Query("SELECT g, id, x FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var g string
		var id int
		var x float64
		if err := rows.Scan(&g, &id, &x); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%d x=%g", g, id, x))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "; ") != "a/1 x=1.5; b/2 x=3.5" {
		t.Errorf("table rows %q; want the refused move's row under its old key, the other moved", got)
	}
}
