package verify

import (
	"context"
	"testing"

	"github.com/rekey/rekey/pipeline"
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
