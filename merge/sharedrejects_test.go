package merge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rekey/rekey/merge"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
)

// TestMergeOfAFinishedSharedOutputKeepsItsRejects: a shared output, once finished, keeps its
// rejects in its shards' folders (each cut to its checkpointed length) and none at its top. A
// merge of it (into a bucket, or beside other runs) wrote a manifest counting those rejects and
// no rejects.jsonl: the rejected rows were in no file of the merged output. The merged
// rejects.jsonl holds each shard's checkpointed rejects, in shard order.
func TestMergeOfAFinishedSharedOutputKeepsItsRejects(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	rejects := map[int]string{0: "s0-a\ns0-b\n", 1: "s1-a\n"}
	for i := range 2 {
		sh := pipeline.Shard{Index: i, Count: 2}
		writeShard(t, shared, sh, true)
		dir := filepath.Join(shared, filepath.FromSlash(output.ShardDir(sh)))
		// a line past the checkpointed length: written after the shard's last cut
		if err := os.WriteFile(filepath.Join(dir, output.RejectsFile), []byte(rejects[i]+"uncommitted\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var cp pipeline.Checkpoint
		data, err := os.ReadFile(filepath.Join(dir, output.CheckpointFile))
		if err == nil {
			err = json.Unmarshal(data, &cp)
		}
		if err != nil {
			t.Fatal(err)
		}
		cp.RejectsBytes = int64(len(rejects[i]))
		if data, err = json.Marshal(cp); err == nil {
			err = os.WriteFile(filepath.Join(dir, output.CheckpointFile), data, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := finishShards(shared); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "merged")
	if err := mergeRun([]string{shared}, out, merge.Copy); err != nil {
		t.Fatal(err)
	}
	if _, err := outputtest.Manifest(out); err != nil {
		t.Fatal(err)
	}
	rej, err := os.ReadFile(filepath.Join(out, output.RejectsFile))
	if want := rejects[0] + rejects[1]; string(rej) != want {
		t.Fatalf("merged rejects %q (%v), want the shards' checkpointed rejects %q", rej, err, want)
	}
	// the input is left as it was
	if _, err := os.Stat(filepath.Join(shared, output.RejectsFile)); !os.IsNotExist(err) {
		t.Fatalf("the finished shared output got a rejects file of its own: %v", err)
	}
}
