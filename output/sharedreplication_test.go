package output

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// An output holds one kind of run: a shard with --shared-out is refused an output holding a
// replication (replicate.json) before it writes there, as a whole-table run is, also while the
// replication has committed no roll yet (no data file, no manifest that would refuse it).
func TestSharedOutputRefusesAReplication(t *testing.T) {
	ctx := context.Background()
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, ReplicateStateFile, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []Spec{{Fingerprint: "fp"}, {Fingerprint: "fp", Resume: true}} {
		o, err := OpenShard(ctx, st, pipeline.Shard{Index: 0, Count: 2}, spec, nil)
		if err == nil {
			o.Close()
		}
		if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), "holds a replication") {
			t.Fatalf("a shard into an output holding %s (resume %v): %v, want refused", ReplicateStateFile, spec.Resume, err)
		}
		if shards, err := SharedShards(ctx, st); err != nil || len(shards) > 0 {
			t.Fatalf("the refused shard left %v (%v) in the replication's output", shards, err)
		}
	}
}
