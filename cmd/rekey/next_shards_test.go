package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/lindorm"
)

// A shard's next step is to merge the shards, not the bulk load of its own part: without
// --shared-out it prints the merge of the N outputs (its own named), with --shared-out the
// finishing merge. merge, either form, then prints the next steps of a finished migrate: create
// the table, submit the bulkload job it wrote, verify.
func TestShardsAndMergePrintNextSteps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	shared := filepath.Join(dir, "shared")
	var outs []string
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		outs = append(outs, out)
		text := mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=300", "--shard", fmt.Sprintf("%d/2", i), "--regions", "4", "--out", out, "--progress", "never")
		want := "rekey merge " + out + " SHARD_1_OUT --out MERGED_OUT"
		if i == 1 {
			want = "rekey merge SHARD_0_OUT " + out + " --out MERGED_OUT"
		}
		if !strings.Contains(text, want) || strings.Contains(text, "Submit the job") || strings.Contains(text, "rekey verify") {
			t.Errorf("shard %d/2 without --shared-out: its next steps are not %q:\n%s", i, want, text)
		}
		text = mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=300", "--shard", fmt.Sprintf("%d/2", i), "--regions", "4", "--out", shared, "--shared-out", "--progress", "never")
		if !strings.Contains(text, "rekey merge --out "+shared) || strings.Contains(text, "Submit the job") {
			t.Errorf("shard %d/2 with --shared-out: its next step is not the finishing merge:\n%s", i, text)
		}
	}
	merged := filepath.Join(dir, "merged")
	for _, args := range [][]string{{"merge", outs[0], outs[1], "--out", merged}, {"merge", "--out", shared}} {
		text := mustRun(t, args...)
		out := args[len(args)-1]
		for _, want := range []string{"Next steps", "< " + filepath.Join(out, "ddl.sql"), "Submit the job with bulkload.json's fields", `"filePath":"` + filepath.Join(out, "data") + "/" + lindorm.RegionGlob + `"`,
			"holds the 300 rows written", "rekey verify -m MAPPING --source SOURCE --target lindorm://"} {
			if !strings.Contains(text, want) {
				t.Errorf("rekey %s: no %q in its next steps:\n%s", strings.Join(args, " "), want, text)
			}
		}
	}
}
