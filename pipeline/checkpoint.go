package pipeline

import (
	"context"
	"encoding/json"
	"time"
)

// Checkpoint is a consistent cut of a run: every file it lists is durable, every stream's cursor
// points just past the rows those files and the first RejectsBytes of the rejects hold. The
// output (package output) writes it atomically after each Commit, so a crash at any moment
// resumes without loss or duplicates: data files it does not list are deleted on resume, and the
// rejects are cut back to it.
type Checkpoint struct {
	Version     int        `json:"version"`
	Fingerprint string     `json:"fingerprint"`      // of the resolved mapping
	Format      string     `json:"format,omitempty"` // of the data files
	Source      Identity   `json:"source,omitempty"` // what the source reads; a resume must read the same
	Target      string     `json:"target,omitempty"` // the SQL table a run writes ("" for files); a resume must write the same
	Plan        RegionPlan `json:"plan"`
	// Regions is the region count the run was given (--regions), 0 when none: a quantile plan
	// may place fewer than asked, so a resume and the other shards compare their --regions to it.
	Regions      int                    `json:"regions,omitempty"`
	Splits       []Value                `json:"splits"`
	Streams      map[string]StreamState `json:"streams"`
	Files        []FileInfo             `json:"files"`
	RowsIn       int64                  `json:"rows_in"`
	RowsWritten  int64                  `json:"rows_written"`
	RowsRejected int64                  `json:"rows_rejected"`
	RowsSkipped  int64                  `json:"rows_skipped,omitempty"` // left out by the source's filter (since=)
	RejectCodes  map[string]int64       `json:"reject_codes,omitempty"`
	RejectsBytes int64                  `json:"rejects_bytes"`
	// RejectParts counts the committed rejects objects of an output on an object store, which
	// cannot append: one per cut that had rejects.
	RejectParts int   `json:"rejects_parts,omitempty"`
	ReplayBytes int64 `json:"replay_bytes,omitempty"` // of the replay file (ReplayFile)
	Complete    bool  `json:"complete"`               // the source was read to its end
	// StartedAt is when the run (its first attempt, not a resume) started reading the source:
	// the loaded cells' timestamp in the bulkload job, so writes made after it win.
	StartedAt time.Time `json:"started_at,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	// Job holds the settings of the job that loads the files (bulkload.json's names and
	// resources, sink/lindorm's), as the run's first attempt was given them: a resume that is
	// not given them again writes the same job.
	Job json.RawMessage `json:"job,omitempty"`
	// Digest is the SHA-256 of the checkpoint as written without it (the last field, so that a
	// reader can take it off the bytes): a checkpoint changed since rekey wrote it (edited by
	// hand) is refused. "": an earlier rekey's, which wrote none.
	Digest string `json:"digest,omitempty"`
}

// Result is the outcome the checkpointed run recorded: a complete checkpoint whose final files
// (manifest...) were never written is finished from it, without reading the source again.
func (c *Checkpoint) Result() Result {
	return Result{RowsIn: c.RowsIn, RowsWritten: c.RowsWritten, RowsRejected: c.RowsRejected, RowsSkipped: c.RowsSkipped,
		RejectCodes: c.RejectCodes, Files: c.Files, Resumed: true, StartedAt: c.StartedAt}
}

// Journal is where a run records, beside its data files, what makes it resumable: the rejected
// rows (and the replay file) and the checkpoint. Package output implements it over an output's
// store.
type Journal interface {
	// Reject records one rejected record (buffered: durable at the next Cut); stage is "source"
	// (decode), "transform" (mapping) or "sink" (a value the file cannot hold exactly).
	Reject(b *Batch, rec *Record, stage string, err *RowError) error
	// Cut makes the rejects durable, fills in cp's rejects fields (lengths, parts, counts per
	// code) and saves cp atomically. The sink's files that cp lists are committed by then; when
	// cp.Complete, what unfinished writes under the data folder a stall left are swept first.
	Cut(ctx context.Context, cp *Checkpoint) error
	// RejectsName names the rejects in messages ("rejects.jsonl").
	RejectsName() string
}
