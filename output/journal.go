package output

import (
	"context"
	"encoding/hex"
	"fmt"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// Journal is what a run of the pipeline writes beside its data files (pipeline.Journal): the
// rejects, the source's replay file and the checkpoints, continued from the output's checkpoint.
type Journal struct {
	st      store.Store
	rejects *RejectLog
	schema  pipeline.SourceSchema
	regions int    // the run's --regions, for a checkpoint that has none yet
	target  string // the table a run into a SQL table writes, for a checkpoint that has none yet
	log     *zap.Logger
}

// Journal opens the rejects (and the replay file, when src can give its rejected records back in
// the input's format) from the checkpoint the output was opened at. A rejected record without
// its raw text is written with its values named by schema. Close it when the run ends.
func (o *Output) Journal(src pipeline.Source, schema pipeline.SourceSchema) (*Journal, error) {
	var rf *pipeline.ReplayFile
	if rp, ok := src.(pipeline.Replayer); ok {
		if f, ok := rp.ReplayFile(); ok {
			rf = &f
		}
	}
	rejects, err := openRejects(o.Store, o.Checkpoint, rf)
	if err != nil {
		return nil, err
	}
	return &Journal{st: o.Store, rejects: rejects, schema: schema, regions: o.regions, target: o.target, log: o.log}, nil
}

// Reject adds a rejected record to the rejects (durable at the next Cut).
func (j *Journal) Reject(b *pipeline.Batch, rec *pipeline.Record, stage string, rerr *pipeline.RowError) error {
	rj := &Reject{Position: b.Position(rec), Stream: b.Stream, Seq: rec.Seq, Stage: stage,
		Code: rerr.Code, Field: rerr.Field, Message: rerr.Message, Raw: rec.Raw, rawCut: rerr.RawCut}
	if rj.Raw == "" && j.schema != nil && rec.Values != nil {
		rj.Values = recordValues(j.schema, rec)
	}
	j.log.Debug("row rejected", zap.String("position", rj.Position), zap.String("code", rj.Code), zap.String("field", rj.Field))
	return j.rejects.Add(rj)
}

// recordValues renders a rejected record's decoded values, by column name: a blob as 0x and its
// bytes in hex, as a file source reads it (a JSON string of its bytes would hold U+FFFD for each
// byte that is not UTF-8).
func recordValues(schema pipeline.SourceSchema, r *pipeline.Record) map[string]string {
	m := make(map[string]string, len(schema))
	for i, c := range schema {
		if i >= len(r.Values) {
			continue
		}
		switch v := r.Values[i]; v.Kind {
		case pipeline.KindNull:
		case pipeline.KindBytes:
			m[c.Name] = "0x" + hex.EncodeToString([]byte(v.Str))
		default:
			m[c.Name] = v.String()
		}
	}
	return m
}

// Cut makes the rejects durable and saves cp with their lengths. On the cut that completes the
// run every data file is committed and no writer is open: an unfinished upload under data/ now
// is one whose abort, or whose start's answer, was lost (a stall); it is aborted first, or the
// bucket would keep it, billed, after a successful run.
func (j *Journal) Cut(ctx context.Context, cp *pipeline.Checkpoint) error {
	if cp.Complete {
		if err := j.st.Sweep(ctx, DataDir+"/"); err != nil {
			return fmt.Errorf("abort the run's unfinished uploads: %w", err)
		}
	}
	size, replaySize, codes, err := j.rejects.Sync(ctx)
	if err != nil {
		return err
	}
	cp.RejectsBytes, cp.ReplayBytes, cp.RejectCodes = size, replaySize, codes
	cp.RejectParts = j.rejects.Parts()
	if cp.Regions == 0 {
		cp.Regions = j.regions
	}
	if cp.Target == "" {
		cp.Target = j.target
	}
	return saveCheckpoint(ctx, j.st, cp)
}

// RejectsName names the rejects in messages.
func (j *Journal) RejectsName() string { return RejectsFile }

// Close closes the rejects (on a folder, syncing them; on an object store the lines since the
// last Cut are dropped: no checkpoint counts them, and their rows are read again on resume).
func (j *Journal) Close() error { return j.rejects.Close() }
