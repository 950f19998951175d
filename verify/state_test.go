package verify

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/transform"
)

// changesOf are the upserts of the rows a migration of recs writes, one stream in order.
func changesOf(rows [][]pipeline.Value) func(ctx context.Context, fn func(*ChangeBatch) error) error {
	return func(ctx context.Context, fn func(*ChangeBatch) error) error {
		for i := 0; i < len(rows); i += 100 {
			b := &ChangeBatch{Stream: "topic/0", Rejects: map[string]int64{}, Skipped: map[string]int64{}}
			for j := i; j < min(i+100, len(rows)); j++ {
				b.Changes = append(b.Changes, Change{Seq: int64(j), Values: rows[j]})
			}
			b.Messages = int64(len(b.Changes))
			if err := fn(b); err != nil {
				return err
			}
		}
		return nil
	}
}

// --sample N of a replication's changes checks the N rows of the smallest key hashes, as it does
// of a source's rows: it is not passed over while the result says it sampled.
func TestSampleRowsOfChanges(t *testing.T) {
	p := testProgram(t)
	tbl := migrated(t, p, testRecords(1000))
	rows := tbl.list()
	res := runWith(t, Config{Program: p, Changes: changesOf(rows), Lookup: tbl}, func(c *Config) { c.Sample = Sample{Rows: 100} })
	if res.Sample != "100 rows" || res.RowsChecked != 100 || res.KeysChecked != 100 || !res.Equal {
		t.Fatalf("--sample 100 of 1000 changes: sample %q, %d rows and %d keys checked; want 100 of each, equal", res.Sample, res.RowsChecked, res.KeysChecked)
	}
	folder := writeFolder(t, p.Target(), rows)
	res = runWith(t, Config{Program: p, Changes: changesOf(rows), Folder: folder}, func(c *Config) { c.Sample = Sample{Rows: 100} })
	if res.RowsChecked != 100 || res.KeysChecked != 100 || res.ExtraScope != ExtraSampledKeys || !res.Equal {
		t.Fatalf("--sample 100 of 1000 changes, a folder: %d rows and %d keys checked, extra scope %q; want 100 of each among the sampled keys", res.RowsChecked, res.KeysChecked, res.ExtraScope)
	}
}

// A range delete of a DECIMAL clustering column covers the keys it holds by value, as the
// table's condition does: price > 9.5 deletes 10.00 and 11.50, not only the keys whose text
// sorts after "9.5".
func TestRangeDeleteComparesDecimalsByValue(t *testing.T) {
	m, err := transform.Decode([]byte(`version: 1
source:
  name: prices
  columns: {p: text, price: decimal, v: text}
target:
  table: prices
  primary_key: "[p][price]"
  columns:
    price: "price :: DECIMAL(10,2)"
regions:
  count: 1
`), "prices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	row := func(price, v string) []pipeline.Value {
		return []pipeline.Value{pipeline.Text("a"), pipeline.Decimal(price), pipeline.Text(v)}
	}
	changes := func(ctx context.Context, fn func(*ChangeBatch) error) error {
		return fn(&ChangeBatch{Stream: "topic/0", Messages: 5, Changes: []Change{
			{Seq: 0, Values: row("-1.00", "x")},
			{Seq: 1, Values: row("9.00", "x")},
			{Seq: 2, Values: row("10.00", "x")},
			{Seq: 3, Values: row("11.50", "x")},
			{Seq: 4, Delete: true, Range: &pipeline.KeyRange{Prefix: []pipeline.Value{pipeline.Text("a")},
				Start: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Decimal("9.5")}}}},
		}})
	}
	tbl := &fakeTable{schema: p.Target(), max: 10, rows: map[string][]pipeline.Value{}}
	for _, r := range [][]pipeline.Value{row("-1.00", "x"), row("9.00", "x")} { // what the table holds after them
		tbl.rows[tbl.keyOf(r)] = r
	}
	res := runWith(t, Config{Program: p, Changes: changes, Lookup: tbl}, nil)
	if !res.Equal || res.KeysChecked != 2 {
		t.Fatalf("price > 9.5 deletes 10.00 and 11.50: want equal, 2 keys checked: %s (missing %d, keys %d)", Verdict(res), res.Missing, res.KeysChecked)
	}
}

// A replicate output compared with a source of rows (the table a cut-over replicates) is
// compared by state, and the source's distinct rows of one key are counted as lost there too:
// the verdict must not leave them out because the comparison is by state.
func TestRowsLostAgainstAReplicateOutput(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(300)
	recs = append(recs, rec(5, "renamed", 1, 2, "3.00"), recs[5], rec(7, "again", 1, 2, "3"), rec(7, "last", 1, 2, "3"))
	folder := writeFolder(t, p.Target(), migrated(t, p, recs).list())
	folder.Replication = &replicate.Replication{}
	res := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder}, nil)
	if !res.Equal || res.RowsOverwritten != 4 || res.RowsLost != 3 || !strings.Contains(Verdict(res), "3 source rows are in no target row") {
		t.Fatalf("want equal, 4 rows overwritten of which 3 lost: equal %v, overwritten %d, lost %d: %s", res.Equal, res.RowsOverwritten, res.RowsLost, Verdict(res))
	}
}

// A replication whose changes leave every key they name deleted is checked by looking those
// keys up: a table holding none of them holds what the changes leave, which is not "0 keys
// checked" and NOT VERIFIED; one still holding a key has it extra.
func TestChangesThatDeleteEveryKeyTheyName(t *testing.T) {
	p := testProgram(t)
	rows := migrated(t, p, testRecords(50)).list()
	changes := func(ctx context.Context, fn func(*ChangeBatch) error) error {
		b := &ChangeBatch{Stream: "topic/0", Rejects: map[string]int64{}, Skipped: map[string]int64{}}
		for i, r := range rows {
			b.Changes = append(b.Changes, Change{Seq: int64(2 * i), Values: r}, Change{Seq: int64(2*i + 1), Delete: true, Values: r})
		}
		b.Messages = int64(len(b.Changes))
		return fn(b)
	}
	empty := &fakeTable{schema: p.Target(), max: 10, rows: map[string][]pipeline.Value{}}
	res := runWith(t, Config{Program: p, Changes: changes, Lookup: empty}, nil)
	if v := Verdict(res); !res.Equal || res.KeysDeleted != 50 || !strings.Contains(v, "none of the 50 keys the changes delete") {
		t.Fatalf("50 keys deleted, none in the table: want equal, 50 keys deleted: equal %v, deleted %d: %s", res.Equal, res.KeysDeleted, v)
	}
	held := &fakeTable{schema: p.Target(), max: 10, rows: map[string][]pipeline.Value{}}
	held.rows[held.keyOf(rows[0])] = rows[0]
	res = runWith(t, Config{Program: p, Changes: changes, Lookup: held}, nil)
	if res.Equal || res.Extra == nil || *res.Extra != 1 || !strings.HasPrefix(Verdict(res), "DIFFERENT: 1 extra") {
		t.Fatalf("a deleted key the table holds: want 1 extra: %s", Verdict(res))
	}
}

// refusingTable is a fakeTable that refuses a NaN score before it is sent, as a SQL table does
// (files.ValueChecker).
type refusingTable struct{ *fakeTable }

func (r refusingTable) CheckValues(schema pipeline.TargetSchema, values []pipeline.Value) *pipeline.RowError {
	if v := values[schema.Index("score")]; v.Kind == pipeline.KindFloat && v.Float() != v.Float() {
		return &pipeline.RowError{Code: "target_refused", Field: "score", Message: "NaN has no SQL literal"}
	}
	return nil
}

// A change the table refuses before it is sent (a NaN into a SQL table: replicate rejected it,
// target_refused) leaves the key as it was, and verify counts it as rejected. Before, verify
// applied it and reported the key missing.
func TestChangesTheTableRefusesAreRejected(t *testing.T) {
	p := testProgram(t)
	tbl := migrated(t, p, testRecords(50))
	rows := tbl.list()
	bad := slices.Clone(rows[0])
	bad[0], bad[1] = pipeline.Int(1000%7), pipeline.Int(1000) // a key the table has not
	bad[p.Target().Index("score")] = pipeline.Float(math.NaN())
	res := runWith(t, Config{Program: p, Changes: changesOf(append(rows, bad)), Lookup: refusingTable{tbl}}, nil)
	if !res.Equal || res.RowsRejected != 1 || res.RejectCodes["target_refused"] != 1 {
		t.Fatalf("a change the table refuses: equal %v, %d missing, %d rejected %v; want equal with it rejected", res.Equal, res.Missing, res.RowsRejected, res.RejectCodes)
	}
}

// An update that moves its row to another key, whose new row the table refuses before it is
// sent (a NaN), is rejected whole by replicate into a table: the old key keeps its row. verify
// counts the change as rejected and looks for the old row, not for its delete. Before, it applied
// the move's delete alone and called the row replicate kept extra.
func TestTableRefusedMoveKeepsTheOldRow(t *testing.T) {
	p := testProgram(t)
	schema := p.Target()
	tbl := migrated(t, p, testRecords(50))
	rows := tbl.list()
	moved := slices.Clone(rows[0])
	moved[0], moved[1] = pipeline.Int(1000%7), pipeline.Int(1000)
	moved[schema.Index("score")] = pipeline.Float(math.NaN())
	changes := func(ctx context.Context, fn func(*ChangeBatch) error) error {
		if err := changesOf(rows)(ctx, fn); err != nil {
			return err
		}
		return fn(&ChangeBatch{Stream: "topic/0", Messages: 1, Rejects: map[string]int64{}, Skipped: map[string]int64{}, Changes: []Change{
			{Seq: 1000, Delete: true, Values: rows[0][:schema.KeyLen]}, {Seq: 1000, Values: moved}}})
	}
	res := runWith(t, Config{Program: p, Changes: changes, Lookup: refusingTable{tbl}}, nil)
	if !res.Equal || res.RowsRejected != 1 || res.RejectCodes["target_refused"] != 1 || res.KeysDeleted != 0 {
		t.Fatalf("a move the table refuses: equal %v, %d rejected %v, %d keys deleted: %s; want equal, the move rejected, nothing deleted",
			res.Equal, res.RowsRejected, res.RejectCodes, res.KeysDeleted, Verdict(res))
	}
}
