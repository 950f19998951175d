package pipeline

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
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
	RejectCodes  map[string]int64       `json:"reject_codes,omitempty"`
	RejectsBytes int64                  `json:"rejects_bytes"`
	ReplayBytes  int64                  `json:"replay_bytes,omitempty"` // of the replay file (rejected-rows.*)
	Complete     bool                   `json:"complete"`               // the source was read to its end
	UpdatedAt    time.Time              `json:"updated_at"`
}

// LoadCheckpoint reads dir's checkpoint; it returns (nil, nil) when there is none.
func LoadCheckpoint(dir string) (*Checkpoint, error) {
	var c Checkpoint
	if ok, err := ReadJSON(filepath.Join(dir, CheckpointFile), "checkpoint", &c); !ok {
		return nil, err
	}
	c.Plan.Splits = c.Splits
	for _, f := range c.Files {
		// these paths are deleted around, resumed from and copied into the manifest
		if err := CheckRelPath(f.Path); err != nil {
			return nil, fmt.Errorf("%s is damaged: %w", filepath.Join(dir, CheckpointFile), err)
		}
	}
	return &c, nil
}

func (c *Checkpoint) save(dir string) error {
	c.Version = 1
	c.Splits = c.Plan.Splits
	c.UpdatedAt = time.Now().UTC()
	// 0600: a checkpoint names the source and its cursors; nobody but the run's user needs it.
	return WriteJSONAtomicMode(filepath.Join(dir, CheckpointFile), c, 0o600)
}

// RemoveUncommitted deletes the data files under dir's data folder that keep is not listing,
// and every temporary file: what a crashed run left behind after its last checkpoint.
func RemoveUncommitted(dir string, keep []FileInfo) (removed []string, err error) {
	listed := make(map[string]bool, len(keep))
	for _, f := range keep {
		listed[filepath.FromSlash(f.Path)] = true
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		inData := strings.HasPrefix(rel, DataDir+string(filepath.Separator))
		if d.IsDir() {
			if path != dir && rel != DataDir && !inData {
				return filepath.SkipDir
			}
			return nil
		}
		if IsTemp(path) || (inData && !listed[rel]) {
			if err := os.Remove(path); err != nil {
				return err
			}
			removed = append(removed, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(removed)
	if err != nil {
		return removed, fmt.Errorf("remove files of the interrupted run: %w", err)
	}
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
	return Result{RowsIn: c.RowsIn, RowsWritten: c.RowsWritten, RowsRejected: c.RowsRejected,
		RejectCodes: c.RejectCodes, Files: c.Files, Resumed: true}
}
