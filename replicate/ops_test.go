package replicate

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// opsWorker is the change -> operations step of a worker for an output that can hold caps, with
// a mapping keyed [g][id] (or salted) of Debezium changes.
func opsWorker(t *testing.T, key string, caps outputCaps) *partWorker {
	t.Helper()
	m, err := transform.Decode([]byte("version: 1\nsource: {columns: {id: bigint, g: text, v: text}}\ntarget: {table: t, primary_key: '"+key+"'}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Replicator{cfg: Config{Program: prog, Kafka: kafka.Config{Format: kafka.FormatDebezium}}, target: prog.Target(), log: zap.NewNop()}
	w := r.newPartWorker(0, nil, caps, 2)
	return &w
}

// describe writes an operation as the tests compare it: its kind, then the key or the range, the
// columns set, the write time, or the reject's stage, code, field and message.
func describe(op operation, keyLen int) string {
	var b strings.Builder
	b.WriteString(op.kind.String())
	vals := func(vs []pipeline.Value) {
		for i, v := range vs {
			if i > 0 {
				b.WriteString(",")
			}
			if v.Kind == pipeline.KindNull {
				b.WriteString("null")
			} else if v.Str != "" {
				b.WriteString(v.Str)
			} else {
				fmt.Fprint(&b, v.Num)
			}
		}
	}
	switch op.kind {
	case opUpsert:
		b.WriteString(" ")
		vals(op.row)
		if op.set != nil {
			fmt.Fprintf(&b, " set=%v", op.set)
		}
	case opDelete:
		b.WriteString(" ")
		vals(op.row[:keyLen])
	case opDeleteRange:
		b.WriteString(" prefix=")
		vals(op.keyRange.Prefix)
	case opReject:
		fmt.Fprintf(&b, " %s %s field=%q: %s", op.stage, op.err.Code, op.err.Field, op.err.Message)
	}
	if op.writeTime != 0 {
		fmt.Fprintf(&b, " at=%d", op.writeTime)
	}
	return b.String()
}

// What each change does to a folder (whole rows only) and to a table, in the order the
// operations are applied: the one step both workers carry out.
func TestChangeOperations(t *testing.T) {
	row := func(id int64, g, v string) []pipeline.Value { // id < 0: null

		out := []pipeline.Value{pipeline.Null, pipeline.Null, pipeline.Null}
		if id >= 0 {
			out[0] = pipeline.Int(id)
		}
		if g != "" {
			out[1] = pipeline.Text(g)
		}
		if v != "" {
			out[2] = pipeline.Text(v)
		}
		return out
	}
	parse := &pipeline.RowError{Code: pipeline.CodeParse, Field: "after", Message: "invalid JSON"}
	cases := []struct {
		name        string
		ch          kafka.Change
		files, sql  []string
		salted      []string // files and SQL alike, with the key [g][id][random(4)]
		sqlWithTime []string // a table that writes cell timestamps
	}{{
		name:        "undecodable",
		ch:          kafka.Change{Err: parse},
		files:       []string{`reject source parse field="after": invalid JSON`},
		sql:         []string{`reject source parse field="after": invalid JSON`},
		sqlWithTime: []string{`reject source parse field="after": invalid JSON`},
	}, {
		name:        "whole row",
		ch:          kafka.Change{Op: kafka.OpUpsert, Values: row(1, "a", "x"), WriteTime: 5},
		files:       []string{"upsert a,1,x at=5"},
		sql:         []string{"upsert a,1,x at=5"},
		salted:      []string{"upsert a,1 at=5"},
		sqlWithTime: []string{"upsert a,1,x at=5"},
	}, {
		name:  "columns set",
		ch:    kafka.Change{Op: kafka.OpUpsert, Values: row(1, "a", ""), Set: []bool{true, true, false}, WriteTime: 5},
		files: []string{`reject sink partial_update field="after": the change sets some columns only (a Cassandra UPDATE or INSERT that names some columns, or a Debezium event missing a value the database did not log: an unchanged TOASTed or LOB column, or a column the connector does not publish), and a bulk-load file holds whole rows: writing it would null the other columns; replicate into the table instead (--out mysql://... or lindorm://...), which updates the columns the change sets`},
		sql:   []string{"upsert a,1,null set=[true true false] at=5"},
	}, {
		name:  "range delete",
		ch:    kafka.Change{Op: kafka.OpRangeDelete, Values: row(-1, "a", ""), Set: []bool{false, true, false}, Range: &pipeline.ClusteringRange{}, WriteTime: 5},
		files: []string{`reject sink range_tombstone field="op": a range tombstone (a delete of a clustering range) cannot be written to bulk-load files: replicate into the table instead (--out mysql://... or lindorm://...)`},
		sql:   []string{"range delete prefix=a at=5"},
	}, {
		// a BATCH's range delete published after a row it wrote 2 ms later: a table without
		// cell timestamps would delete the row Cassandra keeps; Lindorm's timestamps keep it
		name:        "range delete after a newer write of its mutation",
		ch:          kafka.Change{Op: kafka.OpRangeDelete, Values: row(-1, "a", ""), Set: []bool{false, true, false}, Range: &pipeline.ClusteringRange{}, WriteTime: 5, AfterNewerWrite: 7},
		files:       []string{`reject sink range_tombstone field="op": a range tombstone (a delete of a clustering range) cannot be written to bulk-load files: replicate into the table instead (--out mysql://... or lindorm://...)`},
		sql:         []string{`reject source range_after_newer_write field="op": ` + rangeAfterNewerWrite},
		sqlWithTime: []string{"range delete prefix=a at=5"},
	}, {
		// the same within one millisecond: a cell timestamp cannot tell them apart
		name:        "range delete after a write of its mutation newer by less than a millisecond",
		ch:          kafka.Change{Op: kafka.OpRangeDelete, Values: row(-1, "a", ""), Set: []bool{false, true, false}, Range: &pipeline.ClusteringRange{}, WriteTime: 5, AfterNewerWrite: 5},
		sql:         []string{`reject source range_after_newer_write field="op": ` + rangeAfterNewerWrite},
		sqlWithTime: []string{`reject source range_after_newer_write field="op": ` + rangeAfterNewerWrite},
	}, {
		name:        "delete",
		ch:          kafka.Change{Op: kafka.OpDelete, Values: row(1, "a", ""), WriteTime: 5},
		files:       []string{"delete a,1 at=5"},
		sql:         []string{"delete a,1 at=5"},
		salted:      []string{`reject transform unsupported field="": delete: the key uses random(n), whose salt depends on the row and its offset: the key of the row to delete cannot be computed`},
		sqlWithTime: []string{"delete a,1 at=5"},
	}, {
		name:        "Debezium tombstone of a key the message key lacks",
		ch:          kafka.Change{Op: kafka.OpDelete, Values: row(1, "", ""), Tombstone: true},
		files:       []string{"drop"},
		sql:         []string{"drop"},
		salted:      []string{"drop"},
		sqlWithTime: []string{"drop"},
	}, {
		name:        "delete without its key",
		ch:          kafka.Change{Op: kafka.OpDelete, Values: row(1, "", "")},
		files:       []string{`reject transform null_key field="g": delete: key column g is null` + noDeleteImage},
		sql:         []string{`reject transform null_key field="g": delete: key column g is null` + noDeleteImage},
		sqlWithTime: []string{`reject source no_write_time field="": write_time=true: the event carries no Cassandra write time (source.ts_us or source.ts_ms of Debezium's Cassandra connector); replicate other events without write_time`},
	}, {
		name:  "partition delete",
		ch:    kafka.Change{Op: kafka.OpDelete, Values: row(-1, "a", ""), Set: []bool{false, true, false}, WriteTime: 5},
		files: []string{`reject sink range_tombstone field="id": a Cassandra partition delete (its clustering cells are null) deletes every row of the partition, which bulk-load files cannot express: replicate into the table instead (--out mysql://... or lindorm://...)`},
		sql:   []string{"range delete prefix=a at=5"},
	}, {
		name:   "update that moves the key",
		ch:     kafka.Change{Op: kafka.OpUpsert, Values: row(1, "b", "x"), Before: row(1, "a", "w"), WriteTime: 5},
		files:  []string{"delete a,1", "upsert b,1,x at=5"},
		sql:    []string{"delete a,1", "upsert b,1,x at=5"},
		salted: []string{"upsert b,1 at=5"},
	}, {
		name:  "update that keeps the key",
		ch:    kafka.Change{Op: kafka.OpUpsert, Values: row(1, "a", "x"), Before: row(1, "a", "w")},
		files: []string{"upsert a,1,x"},
		sql:   []string{"upsert a,1,x"},
	}, {
		name:  "update whose before image lacks the key",
		ch:    kafka.Change{Op: kafka.OpUpsert, Values: row(1, "a", "x"), Before: row(1, "", "")},
		files: []string{`reject transform null_key field="g": update: cannot compute the old key from "before" to delete it: key column g is null`, "upsert a,1,x"},
		sql:   []string{`reject transform null_key field="g": update: cannot compute the old key from "before" to delete it: key column g is null`, "upsert a,1,x"},
	}, {
		name:  "row that cannot be mapped",
		ch:    kafka.Change{Op: kafka.OpUpsert, Values: row(1, "", "x")},
		files: []string{`reject transform null_key field="g": key column g is null`},
		sql:   []string{`reject transform null_key field="g": key column g is null`},
	}}
	check := func(t *testing.T, w *partWorker, ch kafka.Change, want []string) {
		t.Helper()
		if want == nil {
			return
		}
		var got []string
		for _, op := range w.operations(nil, &ch) {
			got = append(got, describe(op, w.r.target.KeyLen))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Run("files", func(t *testing.T) { check(t, opsWorker(t, "[g][id]", outputCaps{wholeRows: true}), c.ch, c.files) })
			t.Run("sql", func(t *testing.T) { check(t, opsWorker(t, "[g][id]", outputCaps{}), c.ch, c.sql) })
			t.Run("sql write time", func(t *testing.T) {
				check(t, opsWorker(t, "[g][id]", outputCaps{writeTime: true}), c.ch, c.sqlWithTime)
			})
			if c.salted != nil && c.ch.Set == nil {
				t.Run("salted", func(t *testing.T) {
					w := opsWorker(t, "[g][id][random(4)]", outputCaps{wholeRows: true})
					// the salt is the key's last column: compare the values before it
					var got []string
					for _, op := range w.operations(nil, &c.ch) {
						if op.kind == opUpsert {
							op.row = op.row[:2]
						}
						got = append(got, describe(op, 2))
					}
					if strings.Join(got, "\n") != strings.Join(c.salted, "\n") {
						t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.salted, "\n\t"))
					}
				})
			}
		})
	}
}

// A batch's changes staged as the transform's records map to the rows each change maps to
// alone, with a hash prefix computed ahead from the later changes; once unstaged, and the
// changes' slice holds the next batch (reused, as the fetcher's is), the first batch's records
// are not read for it.
func TestStagedChangesMapAsAlone(t *testing.T) {
	batch := func(prefix string) []kafka.Change {
		changes := make([]kafka.Change, 20)
		for i := range changes {
			g := prefix + strconv.Itoa(i*37%11)
			changes[i] = kafka.Change{Op: kafka.OpUpsert, Offset: int64(i), Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(g), pipeline.Text("v")}}
		}
		changes[3] = kafka.Change{Op: kafka.OpDelete, Offset: 3, Values: []pipeline.Value{pipeline.Int(3), pipeline.Text(prefix + "d"), pipeline.Null}}
		changes[7].Err = &pipeline.RowError{Code: "bad_json", Message: "not JSON"}
		return changes
	}
	alone := opsWorker(t, "[md5(g).substr(0,4) + g AS k][id]", outputCaps{wholeRows: true})
	staged := opsWorker(t, "[md5(g).substr(0,4) + g AS k][id]", outputCaps{wholeRows: true})
	changes := batch("a")
	for round, prefix := range []string{"a", "b"} {
		copy(changes, batch(prefix)) // the same slice, the next batch's changes
		if round == 0 {
			staged.stage(changes)
		}
		for i := range changes {
			var want, got []string
			for _, op := range alone.operations(nil, &kafka.Change{Op: changes[i].Op, Offset: changes[i].Offset, Values: changes[i].Values, Err: changes[i].Err}) {
				want = append(want, describe(op, 2))
			}
			for _, op := range staged.operations(nil, &changes[i]) {
				got = append(got, describe(op, 2))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("round %d change %d: staged\n\t%s\nalone\n\t%s", round, i, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
			}
			if changes[i].Op == kafka.OpUpsert && changes[i].Err == nil && !strings.HasPrefix(got[0], "upsert "+md5Hex(changes[i].Values[1].Str)[:4]+prefix) {
				t.Fatalf("round %d change %d: %s, want the key of %q", round, i, got[0], changes[i].Values[1].Str)
			}
		}
		staged.unstage()
	}
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The rejects line of a message longer than it keeps (64 KiB of its value) says that its raw
// holds only the message's start, and where to read the whole: a message the table refuses for
// its size (over max_allowed_packet) is always such a one. Before, the raw was cut short without
// a word, and read as the message it looked like.
func TestRejectOfALongMessageSaysItsRawIsCut(t *testing.T) {
	long := `{"v":"` + strings.Repeat("x", 100<<10) + `"}`
	ch := &kafka.Change{Offset: 42, Value: []byte(long)}
	rj := changeReject("orders", "orders/3", 3, ch, stageSink, &pipeline.RowError{Code: "target_refused", Message: "the row's statement is larger than the server's max_allowed_packet"})
	if len(rj.Raw) != 64<<10 || !strings.HasPrefix(long, rj.Raw) {
		t.Fatalf("raw of %d bytes, want the message's first 64 KiB", len(rj.Raw))
	}
	for _, want := range []string{"max_allowed_packet", "first 65536 of its 102408 bytes", "partition 3", "offset 42"} {
		if !strings.Contains(rj.Message, want) {
			t.Errorf("message %q lacks %q", rj.Message, want)
		}
	}
	short := changeReject("orders", "orders/3", 3, &kafka.Change{Offset: 1, Value: []byte(`{"v":1}`)}, stageSink, &pipeline.RowError{Code: "x", Message: "m"})
	if short.Raw != `{"v":1}` || short.Message != "m" {
		t.Errorf("a short message's reject: raw %q, message %q", short.Raw, short.Message)
	}
}
