package output

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/store"
)

// topEntries lists the top-level entries of the output st (a file, or the first folder of a
// path), in order, leaving out the locks and what unfinished writers left (temporary names).
func topEntries(ctx context.Context, st store.Store) ([]string, error) {
	objs, err := st.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var tops []string
	for _, obj := range objs {
		top, _, _ := strings.Cut(obj.Name, "/")
		if top == LockFile || top == ReplicateLockFile || atomicfile.IsTemp(obj.Name) {
			continue
		}
		if len(tops) == 0 || tops[len(tops)-1] != top {
			tops = append(tops, top)
		}
	}
	return tops, nil
}

// CheckReplicationOutput refuses to start a replication (rekey replicate) in the output st, out
// naming it in messages, when st holds anything else: a migration, finished or interrupted (its
// manifest.json would be replaced by the replication's, which no longer lists the migration's
// data files, and migrate --resume would then call the run complete), the shards of one, a
// merge, or files rekey did not write. An empty output, or one holding a replication
// (ReplicateStateFile, or a manifest with a replication section), is accepted. The error wraps
// ErrRefusedResume.
func CheckReplicationOutput(ctx context.Context, st store.Store, out string) error {
	tops, err := topEntries(ctx, st)
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	if len(tops) == 0 || slices.Contains(tops, ReplicateStateFile) {
		return nil
	}
	if slices.Contains(tops, ManifestFile) {
		var m struct {
			Replication json.RawMessage `json:"replication"`
		}
		data, err := st.Get(ctx, ManifestFile)
		if err != nil {
			return fmt.Errorf("--out %s: %w", out, err)
		}
		if json.Unmarshal(data, &m) == nil && len(m.Replication) > 0 && string(m.Replication) != "null" {
			return nil // written by a rekey that kept no replicate.json
		}
	}
	const elsewhere = "rekey replicate writes its own manifest.json there, which would no longer list these files: replicate into a new --out directory"
	switch {
	case slices.Contains(tops, ShardsDir):
		return refuse("--out %s holds the shards of a migration written together (%s/), not a replication: %s (finish the shards with rekey merge --out %s)", out, ShardsDir, elsewhere, out)
	case slices.Contains(tops, MergePlanFile):
		return refuse("--out %s holds an interrupted merge (%s), not a replication: %s (finish the merge by running it again)", out, MergePlanFile, elsewhere)
	case slices.Contains(tops, CheckpointFile), slices.Contains(tops, ManifestFile):
		what := "a finished migration (rekey migrate: " + ManifestFile + ")"
		if !slices.Contains(tops, ManifestFile) {
			what = "an interrupted migration (rekey migrate: " + CheckpointFile + ", no " + ManifestFile + "; finish it with rekey migrate --resume)"
		}
		return refuse("--out %s holds %s, not a replication: %s", out, what, elsewhere)
	}
	if foreign := notRekeyFiles(tops, finalFiles); len(foreign) > 0 {
		return refuse("--out %s holds files rekey did not write (%s): it is not a replication; replicate into a new --out directory", out, strings.Join(foreign, ", "))
	}
	return refuse("--out %s holds what a migration writes (%s) and no %s: it is not a replication; %s", out, strings.Join(tops, ", "), ReplicateStateFile, elsewhere)
}
