package verify

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// repairPass reads the source once more, in order, and gives Config.Repair the rows whose key
// is among the keys missing or differing: migrated again, they make the target hold them.
func (v *run) repairPass(ctx context.Context) error {
	cfg := v.cfg
	ev := cfg.Program.NewEvaluator()
	out := make([]pipeline.Value, len(v.schema.Columns))
	found := make(map[string]struct{}, len(v.res.repairKeys))
	var key []byte
	var counters pipeline.Counters
	done := v.phase("writing the repair rows", estimatedRows(cfg.Source), &counters)
	defer done()
	// one worker: Config.Repair writes the rows in source order
	o, err := pipeline.NewEngine(pipeline.EngineConfig{Source: cfg.Source, Workers: 1,
		NewWorker: func(int) (func(context.Context, *pipeline.Job) error, func()) {
			return func(_ context.Context, j *pipeline.Job) error {
				defer ev.Reset()
				return v.repairBatch(&j.Batch, ev, out, &key, found, &counters)
			}, nil
		}}).Run(ctx)
	if err != nil {
		return err
	}
	err = o.SourceErr
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("read the source again for the repair rows: %w", err)
	}
	if lost := len(v.res.repairKeys) - len(found); lost > 0 {
		v.res.Notes = append(v.res.Notes, fmt.Sprintf("%d of the keys to repair were not in the source when it was read again: did it change while verify ran?", lost))
	}
	cfg.Logger.Info("repair rows written", zap.Int64("rows", v.res.RepairRows), zap.Int("keys", len(found)))
	return nil
}

func (v *run) repairBatch(b *pipeline.Batch, ev *transform.Evaluator, out []pipeline.Value, key *[]byte, found map[string]struct{}, c *pipeline.Counters) error {
	for i := range b.Records {
		rec := &b.Records[i]
		c.RowsIn.Add(1)
		if rec.Err != nil || ev.Apply(b, rec, out) != nil {
			continue // rejected: never compared
		}
		k, ok := v.storedKey((*key)[:0], out)
		*key = k
		if !ok {
			continue
		}
		if _, want := v.res.repairKeys[string(k)]; !want {
			continue
		}
		if b.SaltOrigin && v.cfg.Program.UsesSalt() {
			return errors.New("the mapping's random(n) salts each key with the row's place in this source (a Kafka offset): rows written to a file would get other keys when migrated from it, so they cannot repair the target; migrate the keys again from this source instead")
		}
		if rec.Set != nil {
			return fmt.Errorf("%s is a change of some columns only: a row of the repair file sets every column, so it cannot stand for it; migrate the keys again from this source instead", b.Position(rec))
		}
		if err := v.cfg.Repair(b, rec); err != nil {
			return fmt.Errorf("write the repair row of %s: %w", b.Position(rec), err)
		}
		found[string(k)] = struct{}{}
		v.res.RepairRows++
		c.RowsWritten.Add(1)
	}
	return nil
}

// storedKey encodes the key columns of a transformed row as the comparison files them.
func (v *run) storedKey(dst []byte, out []pipeline.Value) ([]byte, bool) {
	for c := range v.keyCols {
		var e *pipeline.RowError
		if dst, e = appendStored(dst, v.keyCols[c], out[c]); e != nil {
			return dst, false
		}
	}
	return dst, true
}
