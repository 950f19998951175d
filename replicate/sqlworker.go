package replicate

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka"
)

// Replication into a SQL table (--out lindorm:// or mysql://) applies every change through the
// API instead of writing files:
//
//   - each fetched batch of a partition becomes upserts and deletes in offset order, applied by
//     sqlsink.Writer.Apply, which spreads them over its connections by key and keeps the order of
//     each key's changes;
//   - the offset after the batch is committed to Kafka only once every statement holding its
//     messages succeeded and its rejects file is durable;
//   - a crash replays the uncommitted batch: upserts and deletes by key are idempotent, and the
//     replay's rejects replace the rejects file of the batch it repeats (files are named by
//     partition and offsets: rejects/p0002-<first>-<last>.jsonl in the state folder, Config.Store).

// CodeNoWriteTime rejects a change without a Cassandra write time into a target that writes
// cell timestamps (lindorm://...?write_time=true).
const CodeNoWriteTime = "no_write_time"

// CodeRangeAfterNewerWrite rejects a Cassandra range delete that its connector published after a
// row its mutation wrote at a newer timestamp (kafka.Change.AfterNewerWrite), where the table
// cannot keep that row from the delete.
const CodeRangeAfterNewerWrite = "range_after_newer_write"

// CodePartialMove rejects an update that moves its row to another target key but does not carry
// every column (a Debezium value it could not read, a column its connector does not publish): the
// row under its new key would lack those columns' values, which the old row, deleted, held.
const CodePartialMove = "partial_move"

// CodeRegularKeyColumn rejects a change of Debezium's Cassandra connector when the target key is
// computed from a column outside the table's primary key: a change of that column moves the row,
// and no event carries the old row, so the old key cannot be deleted.
const CodeRegularKeyColumn = "regular_key_column"

// openSQL opens the target table (its definition checked first) with the statement metrics wired;
// ctx ends the connection's retries of a target that is not up yet.
func (r *Replicator) openSQL(ctx context.Context) error {
	cfg := r.cfg.SQL
	cfg.Schema = r.target
	cfg.Observe = r.metrics.enableSQL()
	if h := r.cfg.Hooks.Statement; h != nil {
		observe := cfg.Observe
		cfg.Observe = func(kind string, rows int, d time.Duration, err error) {
			observe(kind, rows, d, err)
			if err == nil {
				h()
			}
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = r.log.Named("sql")
	}
	w, err := sqlsink.Open(ctx, cfg)
	if err != nil {
		return err
	}
	r.sqlw = w
	r.metrics.sqlRetries(&w.Stats.Retries)
	return nil
}

// sqlWorker replicates one partition into the table for one generation.
type sqlWorker struct {
	partWorker
	lease    *lease // the generation's: statements run only while it is held (nil: not checked)
	ops      []sqlsink.Op
	opMsg    []int // ops[i] comes from message opMsg[i] of the batch
	rejects  []*output.Reject
	rejected []bool // by message of the batch: it has its reject line
	cleaned  bool
	upserts  int64
	deletes  int64
	dropped  int64
	repeats  int64 // events skipped as the connector's repeats (counted once applied: verify has no metrics)
	ttlCells int64 // cells of the upserts written with a TTL of their own
}

func (r *Replicator) newSQLWorker(partition int, commit func(int, int64) error) *sqlWorker {
	return &sqlWorker{partWorker: r.newSQLPartWorker(partition, commit)}
}

// newSQLPartWorker is the partition's worker state for the table: a batch's rows stay until its
// statements ran.
func (r *Replicator) newSQLPartWorker(partition int, commit func(int, int64) error) partWorker {
	t := r.cfg.SQL.Target
	w := r.newPartWorker(partition, commit, outputCaps{writeTime: t != nil && t.CellTimestamps, values: sqlsink.ValueChecker{}}, 4096)
	// a batch of up to one statement's rows, as a program applying the same statements batches
	// what has arrived: a shorter one splits the statements, a round trip each
	w.fetchLen = r.cfg.SQL.RowsPerStatement()
	return w
}

// run applies the partition's messages from offset until wctx ends: on a rebalance or a stop
// what was read is applied and committed first; on a hard stop the batch being applied is
// abandoned (its messages are read again by the partition's next owner).
func (w *sqlWorker) run(wctx, hard context.Context, offset int64) error {
	r := w.r
	r.metrics.assign(w.partition, true)
	if next, ok := r.offs.next(w.partition); ok && offset < 0 {
		// the group has no offset of it (Kafka forgot it, or the group is new) while the state
		// folder recorded one: continue there, where messages retention deleted since show
		w.log.Warn("the consumer group has no committed offset for this partition (Kafka forgets a group's offsets after "+
			"offsets.retention.minutes without a member): continuing at the next offset the state folder recorded",
			zap.Int64("offset", next), zap.String("state", r.cfg.Out))
		offset = next
	}
	defer func() {
		if err := r.noteOffset(hard, w.partition, -1, true); err != nil {
			w.log.Warn("the committed offsets were not recorded in the state folder", zap.Error(err))
		}
	}()
	w.log.Info("partition assigned", zap.Int64("offset", offset))
	if offset >= 0 {
		r.metrics.committed(w.partition, offset)
		r.metrics.position(w.partition, offset, -1)
	}
	w.pos = offset
	w.kafkaOff = offset
	w.seedRepeats(hard, offset)
	o, err := w.read(wctx, hard, offset, pipeline.EngineConfig{}, func(ctx context.Context, d *kafka.Decoded) error {
		if len(d.Changes) == 0 {
			w.pass(d.Next)
			return nil
		}
		if err := w.apply(ctx, d.Changes, d.Next); err != nil {
			return fmt.Errorf("partition %d: %w", w.partition, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// every batch read is applied: a commit Kafka refused is tried again before the partition's
	// work ends (a later batch's commit would have carried it)
	if w.pos > w.kafkaOff && w.commitOffset(w.pos) {
		if err := r.noteOffset(hard, w.partition, w.pos, false); err != nil {
			w.log.Warn("the committed offsets were not recorded in the state folder", zap.Error(err))
		}
	}
	return o.SourceErr // nil after a rebalance or a stop: every applied batch is committed
}

// apply turns a batch's changes into statements, runs them, writes the batch's rejects and
// commits the offset after the batch: next, the fetch's position, when it is past the batch's
// last message (a transaction's marker follows it).
func (w *sqlWorker) apply(ctx context.Context, changes []kafka.Change, next int64) error {
	r := w.r
	for i := range changes {
		if err := w.tableStop(&changes[i]); err != nil {
			return err
		}
	}
	w.rows.reset()
	w.collect(changes)
	first, last := changes[0].Offset, changes[len(changes)-1].Offset
	if !w.cleaned {
		if err := w.removeReplayedRejects(ctx, first); err != nil {
			return err
		}
		w.cleaned = true
	}
	if err := w.hook(StepApplying, first, last); err != nil {
		return err
	}
	if w.lease != nil && !w.lease.held() {
		return fmt.Errorf("offsets %d to %d not applied: %w", first, last, errLeaseLost)
	}
	if w.lease != nil {
		// asked again before every statement: a pause in the middle of the batch loses the
		// lease as one before it does
		ctx = sqlsink.WithGuard(ctx, func() (time.Duration, error) {
			if !w.lease.held() {
				return 0, fmt.Errorf("offsets %d to %d not wholly applied: %w", first, last, errLeaseLost)
			}
			// asked again while a statement runs: at the lease's end, and at each heartbeat
			// (whose answer may say the member is out), so that a statement still waiting on
			// the server then is ended there before the next owner applies newer changes
			return min(w.lease.left(), r.cfg.Group.HeartbeatInterval), nil
		})
	}
	rej, err := r.sqlw.Apply(ctx, w.ops)
	if err != nil {
		return err
	}
	w.sinkRejects(changes, rej)
	if err := w.writeRejects(ctx, first, last); err != nil {
		return err
	}
	w.ev.Reset()
	m := r.metrics
	m.MessagesIn.Add(int64(len(changes)))
	m.RowsWritten.Add(w.upserts)
	m.Deletes.Add(w.deletes)
	m.TombstonesDropped.Add(w.dropped)
	m.RepeatsSkipped.Add(w.repeats)
	w.countTTLCells(w.ttlCells)
	for _, rj := range w.rejects {
		m.reject(rj.Code, 1)
	}
	if err := w.hook(StepApplied, first, last); err != nil {
		return err
	}
	w.pos = max(last+1, next)
	m.position(w.partition, w.pos, w.hwm) // before the commit: a drain that sees it waits for nothing more
	if w.commitOffset(w.pos) {
		if err := r.noteOffset(ctx, w.partition, w.pos, false); err != nil {
			return err
		}
		if err := w.hook(StepOffset, first, last); err != nil {
			return err
		}
	}
	w.log.Debug("batch applied", zap.Int64("offset", first), zap.Int64("last", last), zap.Int("messages", len(changes)),
		zap.Int64("upserts", w.upserts), zap.Int64("deletes", w.deletes), zap.Int("rejected", len(w.rejects)))
	return nil
}

// commitOffset commits off, the offset after what is applied; a failed commit is counted and
// logged (what it covers is applied: a later batch's commit carries it, or the one as the
// partition's work ends; read again, it is applied again harmlessly).
func (w *sqlWorker) commitOffset(off int64) bool {
	return w.commitKafka(off, "the changes are applied; the commit is tried again with the next batch and as the partition's work ends "+
		"(a run that starts before it is read them again, harmlessly)")
}

// pass moves the position to next past offsets that hold no message (step hands over a batch
// without changes only then) and commits it, as worker.pass does for files: here everything
// before is applied already.
func (w *sqlWorker) pass(next int64) {
	w.pos = next
	w.r.metrics.position(w.partition, next, w.hwm)
	w.commitOffset(next)
}

// hook runs the fault hook of a step after a batch; its error stops the process as a kill would.
func (w *sqlWorker) hook(step CommitStep, first, last int64) error {
	h := w.r.cfg.Hooks.Commit
	if h == nil {
		return nil
	}
	if err := h(step, w.partition, first, last); err != nil {
		w.r.crashed.Store(true)
		return err
	}
	return nil
}

// collect turns a batch's changes into the table's ops and the rejects of their messages.
func (w *sqlWorker) collect(changes []kafka.Change) {
	w.ops, w.opMsg, w.rejects, w.rejected = w.ops[:0], w.opMsg[:0], w.rejects[:0], w.rejected[:0]
	w.upserts, w.deletes, w.dropped, w.repeats, w.ttlCells = 0, 0, 0, 0, 0
	w.stage(changes)
	defer w.unstage()
	for i := range changes {
		w.rejected = append(w.rejected, false)
		w.change(i, &changes[i])
	}
}

// change adds the ops of change i of the batch (or its reject): a table applies every operation.
func (w *sqlWorker) change(i int, ch *kafka.Change) {
	w.opBuf = w.operations(w.opBuf[:0], ch)
	for k := range w.opBuf {
		op := &w.opBuf[k]
		switch op.kind {
		case opReject:
			w.reject(i, ch, op.stage, op.err)
			continue
		case opDrop:
			w.dropped++
			continue
		case opRepeat:
			w.repeats++
			continue
		case opOther:
			w.otherTable(ch)
			continue
		case opUpsert:
			w.ops = append(w.ops, sqlsink.Op{Values: op.row, Set: op.set, Timestamp: op.writeTime})
			w.upserts++
			w.ttlCells += int64(ch.TTLCells)
		case opDelete:
			w.ops = append(w.ops, sqlsink.Op{Delete: true, Values: op.row[:w.r.target.KeyLen], Timestamp: op.writeTime})
			w.deletes++
		case opDeleteRange:
			w.ops = append(w.ops, sqlsink.Op{Delete: true, Range: op.keyRange, Timestamp: op.writeTime})
			w.deletes++
		}
		w.opMsg = append(w.opMsg, i)
	}
}

// sinkRejects records the rejects of the ops the table refused: their messages' rejects, and
// the counts of upserts and deletes without them.
func (w *sqlWorker) sinkRejects(changes []kafka.Change, rej []pipeline.RowReject) {
	for _, x := range rej {
		i := w.opMsg[x.Index]
		if w.ops[x.Index].Delete {
			w.deletes--
		} else {
			w.upserts--
		}
		w.reject(i, &changes[i], stageSink, x.Err)
	}
}

// reject records the reject of message i of the batch: one line per message (its first
// problem), as the file path writes them.
func (w *sqlWorker) reject(i int, ch *kafka.Change, st stage, rerr *pipeline.RowError) {
	if w.rejected[i] {
		w.log.Warn("message rejected again: only its first reject is in the rejects file", zap.Int64("offset", ch.Offset),
			zap.String("code", rerr.Code), zap.String("field", rerr.Field), zap.String("message", rerr.Message))
		return
	}
	w.rejected[i] = true
	w.rejects = append(w.rejects, changeReject(w.r.cfg.Kafka.Topic, w.stream, w.partition, ch, st, rerr))
	w.log.Debug("message rejected", zap.Int64("offset", ch.Offset), zap.String("code", rerr.Code), zap.String("field", rerr.Field))
}

// writeRejects makes the batch's rejects durable before its offset is committed: written under a
// temporary name, fsynced, renamed, the folder fsynced (store.Local's Put). Mode 0600: raw messages.
func (w *sqlWorker) writeRejects(ctx context.Context, first, last int64) error {
	if len(w.rejects) == 0 {
		return nil
	}
	var buf []byte
	for _, rj := range w.rejects {
		line, err := json.Marshal(rj)
		if err != nil {
			return fmt.Errorf("encode reject: %w", err)
		}
		buf = append(append(buf, line...), '\n')
	}
	name := output.RollRejectsFile(w.partition, first, last)
	if err := w.r.cfg.Store.Put(ctx, name, buf); err != nil {
		return fmt.Errorf("write %s: %w", w.r.cfg.Store.Location(name), err)
	}
	return nil
}

// removeReplayedRejects removes the partition's rejects files of batches at or after first, and
// its unfinished (temporary) ones: they were written before a crash that kept their offsets from
// being committed, and the batches that replay them write them again.
func (w *sqlWorker) removeReplayedRejects(ctx context.Context, first int64) error {
	st := w.r.cfg.Store
	// a kill while writing a rejects file leaves it under its temporary name: the batch is
	// replayed too (its offset was not committed), so the leftover goes as well
	if err := st.Sweep(ctx, output.RollRejectsPrefix(w.partition)); err != nil {
		return fmt.Errorf("remove the unfinished rejects files of partition %d: %w", w.partition, err)
	}
	objs, err := st.List(ctx, output.RejectsDir+"/")
	if err != nil {
		return fmt.Errorf("list %s: %w", st.Location(output.RejectsDir+"/"), err)
	}
	var replayed []string
	for _, o := range objs {
		if p, f, _, ok := output.ParseRollName(path.Base(o.Name)); ok && p == w.partition && f >= first && path.Dir(o.Name) == output.RejectsDir {
			replayed = append(replayed, o.Name)
		}
	}
	if len(replayed) == 0 {
		return nil
	}
	if err := st.Remove(ctx, replayed...); err != nil {
		return fmt.Errorf("remove the replayed rejects files of partition %d: %w", w.partition, err)
	}
	w.log.Info("removed the rejects files of batches being replayed", zap.Int("files", len(replayed)), zap.Int64("offset", first))
	return nil
}
