package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
)

// --stats-json is written by a --resume that finds the run complete, with the run's figures from
// its checkpoint: one killed before its final files (which the resume writes) and one finished
// ("nothing to resume"). Before, both took --stats-json and wrote nothing, so a script reading
// the file found none, or the figures an earlier attempt left there.
func TestStatsJSONOfAResumeThatFindsTheRunComplete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 3000, 1)
	out := filepath.Join(dir, "out")
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--out", out, "--progress", "never"}
	mustRun(t, args...)
	// killed after its last checkpoint, before manifest.json: the resume writes the final files
	if err := os.Remove(filepath.Join(out, output.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"final files written", "nothing to resume"} {
		stats := filepath.Join(dir, strings.ReplaceAll(step, " ", "-")+".json")
		mustRun(t, append(args, "--resume", "--stats-json", stats)...)
		b, err := os.ReadFile(stats)
		if err != nil {
			t.Errorf("%s: --stats-json not written: %v", step, err)
			continue
		}
		var s struct {
			RowsIn      int64 `json:"rows_in"`
			RowsWritten int64 `json:"rows_written"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.RowsIn != 3000 || s.RowsWritten != 3000 {
			t.Errorf("%s: --stats-json %s (%v), want the run's 3000 rows in and written", step, b, err)
		}
	}
}
