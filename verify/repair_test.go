package verify

import (
	"slices"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Repair is given, in source order, every source row of the keys missing or differing (the
// earlier rows of a key too, so that the last one wins again) and no other; with a sample, only
// the sampled keys'.
func TestRepairGetsTheRowsOfKeysMissingOrDiffering(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(2000)
	recs = append(recs, rec(10, "later", 1, 2, "3.00"), rec(11, "later", 1, 2, "3.00"))
	tbl := migrated(t, p, recs)
	key := func(id int64) string { return tbl.keyOf([]pipeline.Value{pipeline.Int(id % 7), pipeline.Int(id)}) }
	delete(tbl.rows, key(10))
	tbl.rows[key(20)][p.Target().Index("amount")] = pipeline.Decimal("99.00")
	var got []int64
	repair := func(c *Config) {
		got = got[:0]
		c.Repair = func(_ *pipeline.Batch, r *pipeline.Record) error {
			got = append(got, r.Seq)
			return nil
		}
	}
	res := runLookup(t, p, recs, tbl, repair)
	if res.Missing != 1 || res.Differ != 1 || res.RepairRows != 3 || !slices.Equal(got, []int64{10, 20, 10}) || len(res.ExtraKeys) != 0 {
		t.Fatalf("repair rows (by Seq) %v, result %+v; want 10, 20, 10 (the key of 10 has two rows)", got, res)
	}
	// a sample: the repair rows are those of the sampled keys only
	res = runLookup(t, p, recs, tbl, func(c *Config) { repair(c); c.Sample = Sample{Fraction: 0.0001} })
	if res.Missing+res.Differ != 0 || len(got) != 0 || res.RepairRows != 0 {
		t.Fatalf("a sample without the keys that differ: repair rows %v, result %+v", got, res)
	}
}

// A source read only once cannot give the repair rows: refused before reading it.
func TestRepairNeedsASourceReadAgain(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(10)
	_, err := Run(t.Context(), Config{Program: p, Source: &sliceSource{recs}, Lookup: migrated(t, p, recs), SourceOnce: true,
		Repair: func(*pipeline.Batch, *pipeline.Record) error { return nil }})
	if err == nil {
		t.Fatal("Repair with SourceOnce accepted")
	}
}
