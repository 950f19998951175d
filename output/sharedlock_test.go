package output

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// A run of the whole table and a shard started on one folder at once: whichever takes the output
// first, the other is refused, also while the first has written nothing there yet (a whole run
// between its lock and its first checkpoint, which is what a shard looks for).
func TestWholeRunAndShardAtOnceOnOneFolder(t *testing.T) {
	ctx := context.Background()
	spec := Spec{Fingerprint: "fp", Format: "parquet"}
	refused := func(t *testing.T, err error, what string) {
		t.Helper()
		if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), "in use by") {
			t.Fatalf("%s: %v, want refused: the output is in use", what, err)
		}
	}
	t.Run("whole run first", func(t *testing.T) {
		st, err := store.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		whole, err := Open(ctx, st, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer whole.Close()
		sh, err := OpenShard(ctx, st, pipeline.Shard{Index: 0, Count: 2}, spec, nil)
		if err == nil {
			sh.Close()
		}
		refused(t, err, "a shard while a run of the whole table holds the output")
		if shards, err := SharedShards(ctx, st); err != nil || len(shards) > 0 {
			t.Fatalf("the refused shard left %v (%v)", shards, err)
		}
	})
	t.Run("shards first", func(t *testing.T) {
		st, err := store.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 { // the shards of one migration run together
			sh, err := OpenShard(ctx, st, pipeline.Shard{Index: i, Count: 2}, spec, nil)
			if err != nil {
				t.Fatalf("shard %d beside another: %v", i, err)
			}
			defer sh.Close()
		}
		_, err = Lock(ctx, st, "out", nil)
		refused(t, err, "a run of the whole table (or a merge) while shards run")
	})
}
