package merge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rekey/rekey/merge"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
)

// TestMergeCatchupShards: shards of a catch-up (a Cassandra source's since=) merge into a
// manifest whose counts still add up (rows_in = written + rejected + skipped) and whose
// next_since is the earliest shard's: a later one would miss rows written while that shard ran.
func TestMergeCatchupShards(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "shard-0"), filepath.Join(root, "shard-1")
	writeRun(t, a, "data/region-0000/part-00000.parquet")
	writeRun(t, b, "data/region-0000/part-00000.parquet")
	early := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for dir, since := range map[string]time.Time{a: early.Add(time.Minute), b: early} {
		m, err := outputtest.Manifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		m.RowsIn += 5
		m.RowsSkipped = 5
		m.NextSince = &since
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, output.ManifestFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(root, "out")
	if err := mergeRun([]string{a, b}, out, merge.Link); err != nil {
		t.Fatal(err)
	}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.RowsIn != 12 || m.RowsWritten != 2 || m.RowsSkipped != 10 {
		t.Fatalf("merged: in %d, written %d, skipped %d; want 12 = 2 + 10", m.RowsIn, m.RowsWritten, m.RowsSkipped)
	}
	if m.NextSince == nil || !m.NextSince.Equal(early) {
		t.Fatalf("merged next_since %v, want the earliest shard's %v", m.NextSince, early)
	}
}
