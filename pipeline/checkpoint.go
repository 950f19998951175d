package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/rekey/rekey/store"
)

// CheckpointFile is the name of the checkpoint in the output directory.
const CheckpointFile = "checkpoint.json"

// Checkpoint is a consistent cut of a run: every file it lists is durable, every stream's cursor
// points just past the rows those files and the first RejectsBytes of rejects.jsonl hold. It is
// written atomically after each Commit, so a crash at any moment resumes without loss or
// duplicates: data files it does not list are deleted on resume, and rejects.jsonl is truncated.
type Checkpoint struct {
	Version      int                    `json:"version"`
	Fingerprint  string                 `json:"fingerprint"`      // of the resolved mapping
	Format       string                 `json:"format,omitempty"` // of the data files
	Source       Identity               `json:"source,omitempty"` // what the source reads; a resume must read the same
	Plan         RegionPlan             `json:"plan"`
	Splits       []Value                `json:"splits"`
	Streams      map[string]StreamState `json:"streams"`
	Files        []FileInfo             `json:"files"`
	RowsIn       int64                  `json:"rows_in"`
	RowsWritten  int64                  `json:"rows_written"`
	RowsRejected int64                  `json:"rows_rejected"`
	RowsSkipped  int64                  `json:"rows_skipped,omitempty"` // left out by the source's filter (since=)
	RejectCodes  map[string]int64       `json:"reject_codes,omitempty"`
	RejectsBytes int64                  `json:"rejects_bytes"`
	// RejectParts counts the committed objects rejects/part-NNNNN.jsonl (and rejected-rows/...) of
	// an output on an object store, which cannot append: one per cut that had rejects.
	RejectParts int   `json:"rejects_parts,omitempty"`
	ReplayBytes int64 `json:"replay_bytes,omitempty"` // of the replay file (rejected-rows.*)
	Complete    bool  `json:"complete"`               // the source was read to its end
	// StartedAt is when the run (its first attempt, not a resume) started reading the source:
	// the loaded cells' timestamp in the bulkload job, so writes made after it win.
	StartedAt time.Time `json:"started_at,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// LoadCheckpoint reads the checkpoint of the local folder dir; it returns (nil, nil) when there
// is none.
func LoadCheckpoint(dir string) (*Checkpoint, error) {
	st, err := store.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	return ReadCheckpoint(context.Background(), st)
}

// ReadCheckpoint reads an output's checkpoint; it returns (nil, nil) when there is none.
func ReadCheckpoint(ctx context.Context, st store.Store) (*Checkpoint, error) {
	data, err := st.Get(ctx, CheckpointFile)
	if store.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", st.Location(CheckpointFile), err)
	}
	c.Plan.Splits = c.Splits
	for _, f := range c.Files {
		// these paths are deleted around, resumed from and copied into the manifest
		if err := CheckRelPath(f.Path); err != nil {
			return nil, fmt.Errorf("%s is damaged: %w", st.Location(CheckpointFile), err)
		}
	}
	for field, n := range map[string]int64{"rejects_bytes": c.RejectsBytes, "replay_bytes": c.ReplayBytes, "rejects_parts": int64(c.RejectParts)} {
		if n < 0 {
			return nil, fmt.Errorf("%s is damaged: %s %d is negative", st.Location(CheckpointFile), field, n)
		}
	}
	return &c, nil
}

// save writes the checkpoint atomically (the local store keeps it 0600: it names the source and
// its cursors, which nobody but the run's user needs).
func (c *Checkpoint) save(ctx context.Context, st store.Store) error {
	c.Version = 1
	c.Splits = c.Plan.Splits
	c.UpdatedAt = time.Now().UTC()
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if err := st.Put(ctx, CheckpointFile, append(data, '\n')); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// RemoveUncommitted deletes the data files under dir's data folder that keep is not listing,
// and every temporary file: what a crashed run left behind after its last checkpoint.
func RemoveUncommitted(dir string, keep []FileInfo) (removed []string, err error) {
	st, err := store.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	return removeUncommitted(context.Background(), st, &Checkpoint{Files: keep})
}

// removeUncommitted deletes what a crashed run left after its last checkpoint cp: unfinished
// writes (Sweep), data objects cp does not list, and rejects parts past cp's count.
func removeUncommitted(ctx context.Context, st store.Store, cp *Checkpoint) (removed []string, err error) {
	if err := st.Sweep(ctx, ""); err != nil {
		return nil, fmt.Errorf("remove files of the interrupted run: %w", err)
	}
	listed := make(map[string]bool, len(cp.Files))
	for _, f := range cp.Files {
		listed[f.Path] = true
	}
	objs, err := st.List(ctx, DataDir+"/")
	if err != nil {
		return nil, fmt.Errorf("remove files of the interrupted run: %w", err)
	}
	for _, o := range objs {
		if !listed[o.Name] {
			removed = append(removed, o.Name)
		}
	}
	for _, folder := range []string{RejectsPartsDir, ReplayPartsDir} {
		objs, err := st.List(ctx, folder+"/")
		if err != nil {
			return nil, fmt.Errorf("remove files of the interrupted run: %w", err)
		}
		for _, o := range objs {
			if n, ok := partNumber(o.Name); !ok || n >= cp.RejectParts {
				removed = append(removed, o.Name)
			}
		}
	}
	if err := st.Remove(ctx, removed...); err != nil {
		return nil, fmt.Errorf("remove files of the interrupted run: %w", err)
	}
	sort.Strings(removed)
	return removed, nil
}

// DataDir is the folder of an output that holds the data files and nothing else: the bulk
// load reads it whole (Spark lists it recursively and would read anything else as data).
// Everything else (manifest, checkpoint, rejects...) lives beside it.
const DataDir = "data"

// RegionDirPrefix starts the name of every region folder under DataDir.
const RegionDirPrefix = "region-"

// RegionName is the name of region i's folder ("region-0007"), for people.
func RegionName(i int) string { return fmt.Sprintf("%s%04d", RegionDirPrefix, i) }

// RegionDir is the folder of region i, relative to the output directory: "data/region-0007".
func RegionDir(i int) string { return DataDir + "/" + RegionName(i) }

// Result is the outcome the checkpointed run recorded: a complete checkpoint whose final files
// (manifest...) were never written is finished from it, without reading the source again.
func (c *Checkpoint) Result() Result {
	return Result{RowsIn: c.RowsIn, RowsWritten: c.RowsWritten, RowsRejected: c.RowsRejected, RowsSkipped: c.RowsSkipped,
		RejectCodes: c.RejectCodes, Files: c.Files, Resumed: true, StartedAt: c.StartedAt}
}
