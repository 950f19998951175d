package output

import (
	"context"
	"encoding/json"
	"github.com/rekey/rekey/pipeline"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/rekey/rekey/store"
)

// crashPoint is an instant a run is killed at (its context cancelled: nothing more is committed or
// checkpointed), met through the run's checkpoint saves rather than the clock, so that every run
// is killed at the same point however fast or loaded the machine is.
type crashPoint struct {
	name string
	// pauseAfter stalls the source after this many batches until the kill (0: never), so that a
	// checkpoint holding exactly those batches is sure to come before the source ends.
	pauseAfter int
	// beforeSave kills the run as it is about to save the checkpoint that matches: the cut's files
	// are committed, the checkpoint listing them is not written. Otherwise the kill follows the save.
	beforeSave bool
	matches    func(cp *pipeline.Checkpoint) bool
}

// afterFirstCheckpoint kills a run after the checkpoint it saves before reading any row.
var afterFirstCheckpoint = crashPoint{name: "after the first checkpoint, before any row",
	matches: func(cp *pipeline.Checkpoint) bool { return cp.RowsIn == 0 }}

// crashPoints are the instants every kill test covers; rowsPerBatch sizes the mid-run points.
func crashPoints(rowsPerBatch int64) []crashPoint {
	return []crashPoint{
		afterFirstCheckpoint,
		{name: "after the checkpoint of the first batch", pauseAfter: 1,
			matches: func(cp *pipeline.Checkpoint) bool { return cp.RowsIn == rowsPerBatch }},
		{name: "after the checkpoint of 100 batches", pauseAfter: 100,
			matches: func(cp *pipeline.Checkpoint) bool { return cp.RowsIn == 100*rowsPerBatch }},
		{name: "between the commit of 100 batches and its checkpoint", pauseAfter: 100, beforeSave: true,
			matches: func(cp *pipeline.Checkpoint) bool { return cp.RowsIn == 100*rowsPerBatch }},
		{name: "after the final commit, before the final checkpoint", beforeSave: true,
			matches: func(cp *pipeline.Checkpoint) bool { return cp.Complete }},
	}
}

// crashStore kills a run (kill) at the first checkpoint save that matches point.
type crashStore struct {
	store.Store
	point crashPoint
	kill  context.CancelFunc
	hit   atomic.Bool
}

// crashLocal keeps a local folder a folder for pipeline (flock, rejects.jsonl appended in place).
type crashLocal struct{ *crashStore }

func (c crashLocal) Path() string { return c.Store.(store.Dir).Path() }

// withCrash wraps st so that the run is killed at point; hit says whether it was.
func withCrash(st store.Store, point crashPoint, kill context.CancelFunc) (store.Store, *atomic.Bool) {
	cs := &crashStore{Store: st, point: point, kill: kill}
	if _, ok := st.(store.Dir); ok {
		return crashLocal{cs}, &cs.hit
	}
	return cs, &cs.hit
}

func (s *crashStore) Put(ctx context.Context, name string, data []byte) error {
	if name != CheckpointFile || s.hit.Load() {
		return s.Store.Put(ctx, name, data)
	}
	var cp pipeline.Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil || !s.point.matches(&cp) {
		return s.Store.Put(ctx, name, data)
	}
	s.hit.Store(true)
	if s.point.beforeSave {
		s.kill()
		return context.Canceled
	}
	err := s.Store.Put(ctx, name, data)
	s.kill()
	return err
}

// rowsOnDisk lists the rows of the sink's committed files that are still in its folder: a resume
// deletes the files a crashed run committed after its last checkpoint.
func (m *memSink) rowsOnDisk() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rows []string
	for path, r := range m.files {
		if _, err := os.Stat(filepath.Join(m.dir, path)); err == nil {
			rows = append(rows, r...)
		}
	}
	return rows
}
