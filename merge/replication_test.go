package merge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/merge"
	"github.com/rekey/rekey/output"
)

// A replication's output (rekey replicate) is not a migration's: its DELETE statements, under
// deletes/, apply after its data files, segment by segment, in the order its manifest lists. A
// merge would keep its data files and drop its deletes (the rows they removed would be loaded),
// so it is refused, with or without a migration beside it.
func TestMergeRefusesAReplication(t *testing.T) {
	root := t.TempDir()
	snapshot, repl := filepath.Join(root, "snapshot"), filepath.Join(root, "repl")
	writeRun(t, snapshot, "data/region-0000/part-00000.parquet")
	writeRun(t, repl, "data/region-0000/part-00000.parquet")
	// what replicate writes beside the data: its state and a segment's DELETE statements
	if err := os.WriteFile(filepath.Join(repl, output.ReplicateStateFile), []byte(`{"version":1,"topic":"t"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repl, "deletes", "region-0000"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repl, "deletes", "region-0000", "p0000-0000000000000000-0000000000000001.sql"), []byte("DELETE FROM t WHERE id = 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dirs := range [][]string{{snapshot, repl}, {repl}} {
		err := mergeRun(dirs, filepath.Join(root, "out"+strings.Repeat("x", len(dirs))), merge.Link)
		if err == nil || !strings.Contains(err.Error(), "replicat") {
			t.Errorf("merge of %v: %v, want a refusal of the replication's output", dirs, err)
		}
	}
}
