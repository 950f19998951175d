package replicate

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// The step both workers share for an update with a before image: the old key is deleted only
// when the before image maps to another key; a before image whose key cannot be computed is
// rejected saying so; a salted key is never looked up (its salt depends on the values).
func TestUpdateBeforeImageGivesTheOldKey(t *testing.T) {
	w := opsWorker(t, "[g][id]", outputCaps{})
	n := len(w.r.target.Columns)
	row, old := make([]pipeline.Value, n), make([]pipeline.Value, n)
	after := []pipeline.Value{pipeline.Int(1), pipeline.Text("a"), pipeline.Text("new")}
	if rerr := w.mapRow(&kafka.Change{Values: after, Offset: 7}, row, nil); rerr != nil {
		t.Fatal(rerr)
	}
	same := []pipeline.Value{pipeline.Int(1), pipeline.Text("a"), pipeline.Text("old")}
	if moved, rerr := w.oldKey(same, 7, row, old); moved || rerr != nil {
		t.Fatalf("same key: moved %v, %v; want not moved", moved, rerr)
	}
	other := []pipeline.Value{pipeline.Int(1), pipeline.Text("b"), pipeline.Text("old")}
	if moved, rerr := w.oldKey(other, 7, row, old); !moved || rerr != nil || old[0].Str != "b" {
		t.Fatalf("another key: moved %v, old %v, %v; want moved from b", moved, old[0], rerr)
	}
	noKey := []pipeline.Value{pipeline.Int(1), pipeline.Null, pipeline.Null}
	moved, rerr := w.oldKey(noKey, 7, row, old)
	if moved || rerr == nil || rerr.Code != pipeline.CodeNullKey || !strings.HasPrefix(rerr.Message, `update: cannot compute the old key from "before" to delete it: `) {
		t.Fatalf("before image without its key: moved %v, %+v; want the null_key reject naming the update", moved, rerr)
	}

	salted := opsWorker(t, "[g][id][random(4)]", outputCaps{})
	n = len(salted.r.target.Columns)
	row, old = make([]pipeline.Value, n), make([]pipeline.Value, n)
	if moved, rerr := salted.oldKey(other, 7, row, old); moved || rerr != nil {
		t.Fatalf("salted key: moved %v, %v; want never looked up", moved, rerr)
	}
}

// A relational update without a before image (PostgreSQL's default REPLICA IDENTITY DEFAULT logs
// no old tuple for an update that keeps the primary key: debezium-connector-postgres
// PostgresChangeRecordEmitter.getOldColumnValues gives null for an empty old tuple list, and
// debezium-connector-common RelationalChangeRecordEmitter.emitUpdateRecord emits it as an update
// with a null before) names its old row by the message key only. A target key of other columns may have moved, and its old key
// cannot be deleted: the update is rejected saying so, beside its upsert, as an update whose before
// image lacks the key is. A target key of the message key's columns cannot move (a key change is
// a delete and a create): the upsert alone. Before, the upsert was applied alone, leaving the row
// under its old target key beside the new one.
func TestUpdateWithoutBeforeImage(t *testing.T) {
	const event = `{"op":"u","source":{"connector":"postgresql"},"before":null,"after":{"id":1,"g":"b","v":"x"}}`
	cases := []struct{ key, want string }{
		{"[g][id]", `reject transform null_key field="g": update: cannot compute the old key from "before" to delete it: key column g is null` + noBeforeImage + "\nupsert b,1,x"},
		{"[id]", "upsert 1,b,x"},
	}
	for _, c := range cases {
		w := opsWorker(t, c.key, outputCaps{})
		d, err := kafka.NewDecoder(w.r.cfg.Kafka, w.r.cfg.Program.Source())
		if err != nil {
			t.Fatal(err)
		}
		chs := d.Decode(nil, []byte(`{"id":1}`), []byte(event))
		var got []string
		for _, op := range w.operations(nil, &chs[0]) {
			got = append(got, describe(op, w.r.target.KeyLen))
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("key %s: got\n\t%s\nwant\n\t%s", c.key, strings.Join(got, "\n\t"), strings.ReplaceAll(c.want, "\n", "\n\t"))
		}
	}
}

// A delete event without a before image is the delete itself, named by its message key: not the
// tombstone Debezium sends after it (a null value). When the target key needs more than the
// message key it cannot be applied, and is rejected; only the redundant tombstone is dropped.
// Before, such a delete event was taken for the tombstone and dropped, its row left in place.
func TestDeleteEventWithoutBeforeImageIsNotATombstone(t *testing.T) {
	w := opsWorker(t, "[g][id]", outputCaps{})
	d, err := kafka.NewDecoder(w.r.cfg.Kafka, w.r.cfg.Program.Source())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, value, want string }{
		{"delete event", `{"op":"d","source":{"connector":"postgresql"},"before":null,"after":null}`, `reject transform null_key field="g": delete: key column g is null` + noDeleteImage},
		{"its tombstone", "", "drop"},
	} {
		var value []byte
		if c.value != "" {
			value = []byte(c.value)
		}
		chs := d.Decode(nil, []byte(`{"id":1}`), value)
		var got []string
		for _, op := range w.operations(nil, &chs[0]) {
			got = append(got, describe(op, w.r.target.KeyLen))
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("%s: got %q, want %q", c.name, strings.Join(got, "\n"), c.want)
		}
	}
}

// A relational connector's event lacking a column the mapping declares says nothing of it: the
// JSON converter writes every field of the row's struct, null ones too (connect/json
// JsonConverter.convertToJson, case STRUCT), so a member missing is a column the connector does
// not publish (column.exclude.list: debezium-connector-common relational/TableSchemaBuilder
// createValueGenerator adds the columns the filter keeps). The change sets the columns it names:
// a table keeps the others, files refuse it (partial_update). Before, it was a whole row whose
// missing columns were null, nulling the table's values.
func TestRelationalEventLackingAColumnLeavesIt(t *testing.T) {
	const src = `"source":{"connector":"postgresql"}`
	cases := []struct{ name, event, files, sql string }{
		{"update lacking v", `{"op":"u",` + src + `,"before":null,"after":{"id":1,"g":"b"}}`,
			`reject sink partial_update field="after": the change sets some columns only`, "upsert 1,b,null set=[true true false]"},
		{"snapshot row lacking v", `{"op":"r",` + src + `,"after":{"id":1,"g":"b"}}`,
			`reject sink partial_update field="after": the change sets some columns only`, "upsert 1,b,null set=[true true false]"},
		{"v null", `{"op":"u",` + src + `,"before":null,"after":{"id":1,"g":"b","v":null}}`, "upsert 1,b,null", "upsert 1,b,null"},
	}
	for _, c := range cases {
		for _, out := range []struct {
			caps outputCaps
			want string
		}{{outputCaps{wholeRows: true}, c.files}, {outputCaps{}, c.sql}} {
			w := opsWorker(t, "[id]", out.caps)
			d, err := kafka.NewDecoder(w.r.cfg.Kafka, w.r.cfg.Program.Source())
			if err != nil {
				t.Fatal(err)
			}
			chs := d.Decode(nil, []byte(`{"id":1}`), []byte(c.event))
			var got []string
			for _, op := range w.operations(nil, &chs[0]) {
				got = append(got, describe(op, w.r.target.KeyLen))
			}
			if g := strings.Join(got, "\n"); !strings.HasPrefix(g, out.want) {
				t.Errorf("%s, whole rows %v: got %q, want %q", c.name, out.caps.wholeRows, g, out.want)
			}
		}
	}
}

// A whole change whose non-key value is over Lindorm's 2 MB is rejected naming its column, as
// migrate rejects such a row; before, replicate wrote it (the files' bulk load or the upsert
// then fails on the value).
func TestChangeValueOverLindormLimitRejected(t *testing.T) {
	w := opsWorker(t, "[g][id]", outputCaps{})
	row := make([]pipeline.Value, len(w.r.target.Columns))
	after := []pipeline.Value{pipeline.Int(1), pipeline.Text("a"), pipeline.Text(strings.Repeat("x", transform.MaxValueBytes+1))}
	rerr := w.mapRow(&kafka.Change{Values: after, Offset: 7}, row, nil)
	if rerr == nil || rerr.Code != pipeline.CodeValueTooLong || rerr.Field != "v" {
		t.Fatalf("got %v, want %s on v", rerr, pipeline.CodeValueTooLong)
	}
}

// A JSON row flattened by Debezium's ExtractNewRecordState under delete.tombstone.handling.mode
// rewrite ("__deleted": "true", the row the delete left) deletes its target key, whether that key
// is the message key or computed from the row's other columns; its tombstone, under
// rewrite-with-tombstone, deletes the message key again. Before, the deleted row was upserted.
func TestFlattenedDeleteDeletesTheRow(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"[id]", `{"id":1,"g":"b","v":null,"__deleted":"true"}`, "delete 1"},
		{"[g][id]", `{"id":1,"g":"b","v":null,"__deleted":"true"}`, "delete b,1"},
		{"[id]", `{"id":1,"g":"b","v":null,"__deleted":"false"}`, "upsert 1,b,null"},
		{"[id]", "", "delete 1"},
	} {
		w := opsWorker(t, c.key, outputCaps{})
		w.r.cfg.Kafka.Format = kafka.FormatJSON
		d, err := kafka.NewDecoder(w.r.cfg.Kafka, w.r.cfg.Program.Source())
		if err != nil {
			t.Fatal(err)
		}
		var value []byte
		if c.value != "" {
			value = []byte(c.value)
		}
		chs := d.Decode(nil, []byte(`{"id":1}`), value)
		var got []string
		for _, op := range w.operations(nil, &chs[0]) {
			got = append(got, describe(op, w.r.target.KeyLen))
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("key %s, value %s: got %q, want %q", c.key, c.value, strings.Join(got, "\n"), c.want)
		}
	}
}
