package replicate

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	kafkago "github.com/segmentio/kafka-go"
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

// openSQL opens the target table (its definition checked first) with the statement metrics wired.
func (r *Replicator) openSQL() error {
	cfg := r.cfg.SQL
	cfg.Schema = r.target
	cfg.Observe = r.metrics.enableSQL()
	if cfg.Logger == nil {
		cfg.Logger = r.log.Named("sql")
	}
	w, err := sqlsink.Open(context.Background(), cfg)
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
	ops      []sqlsink.Op
	opMsg    []int // ops[i] comes from message opMsg[i] of the batch
	slab     []pipeline.Value
	setSlab  []bool
	rejects  []*output.Reject
	rejected int // index of the last message with a reject line, or -1
	cleaned  bool
	upserts  int64
	deletes  int64
	dropped  int64
}

func (r *Replicator) newSQLWorker(partition int, commit func(int, int64) error) *sqlWorker {
	w := &sqlWorker{partWorker: r.newPartWorker(partition, commit)}
	return w
}

// run applies the partition's messages from offset until wctx ends: on a rebalance or a stop
// the batch being applied finishes and is committed first; on a hard stop it is abandoned (its
// messages are read again by the partition's next owner).
func (w *sqlWorker) run(wctx, hard context.Context, offset int64) error {
	r := w.r
	r.metrics.assign(w.partition, true)
	w.log.Info("partition assigned", zap.Int64("offset", offset))
	if offset >= 0 {
		r.metrics.committed(w.partition, offset)
		r.metrics.position(w.partition, offset, -1)
	}
	f := r.startFetch(hard, w.partition, offset, w.log)
	ch, free, stopFetch := f.ch, f.free, f.stop
	for {
		select {
		case b, ok := <-ch:
			if !ok {
				ferr := f.ended(hard, w.partition)
				if hard.Err() != nil {
					return ferr
				}
				return ferr
			}
			if len(b.Messages) == 0 {
				r.metrics.position(w.partition, -1, b.HighWaterMark)
				continue
			}
			if err := w.apply(hard, b.Messages); err != nil {
				stopFetch()
				return fmt.Errorf("partition %d: %w", w.partition, err)
			}
			r.metrics.position(w.partition, b.Messages[len(b.Messages)-1].Offset+1, b.HighWaterMark)
			if cap(b.Messages) >= 1024 {
				clear(b.Messages)
				select {
				case free <- b.Messages[:0]:
				default:
				}
			}
		case <-wctx.Done():
			stopFetch()
			cause := context.Cause(wctx)
			if hard.Err() != nil || (cause != errGenerationEnded && cause != errStop) {
				return fmt.Errorf("partition %d: %w", w.partition, cause)
			}
			return nil // every applied batch is committed
		}
	}
}

// apply turns a batch of messages into changes, applies them, writes the batch's rejects and
// commits the offset after the batch.
func (w *sqlWorker) apply(ctx context.Context, msgs []kafkago.Message) error {
	r := w.r
	first, last := msgs[0].Offset, msgs[len(msgs)-1].Offset
	if !w.cleaned {
		if err := w.removeReplayedRejects(ctx, first); err != nil {
			return err
		}
		w.cleaned = true
	}
	w.ops, w.opMsg, w.slab, w.setSlab, w.rejects, w.rejected = w.ops[:0], w.opMsg[:0], w.slab[:0], w.setSlab[:0], w.rejects[:0], -1
	w.upserts, w.deletes, w.dropped = 0, 0, 0
	for i := range msgs {
		w.message(i, &msgs[i])
	}
	rej, err := r.sqlw.Apply(ctx, w.ops)
	if err != nil {
		return err
	}
	for _, x := range rej {
		i := w.opMsg[x.Index]
		if w.ops[x.Index].Delete {
			w.deletes--
		} else {
			w.upserts--
		}
		w.reject(i, &msgs[i], "sink", x.Err)
	}
	if err := w.writeRejects(ctx, first, last); err != nil {
		return err
	}
	w.ev.Reset()
	w.dec.Reset()
	m := r.metrics
	m.MessagesIn.Add(int64(len(msgs)))
	m.RowsWritten.Add(w.upserts)
	m.Deletes.Add(w.deletes)
	m.TombstonesDropped.Add(w.dropped)
	for _, rj := range w.rejects {
		m.reject(rj.Code, 1)
	}
	if err := w.hook(StepApplied, first, last); err != nil {
		return err
	}
	if err := w.commit(w.partition, last+1); err != nil {
		m.CommitErrors.Add(1)
		w.log.Warn("offset commit failed: the changes are applied, their messages will be read again (harmlessly)", zap.Int64("offset", last+1), zap.Error(err))
	} else {
		m.OffsetCommits.Add(1)
		m.committed(w.partition, last+1)
		if err := w.hook(StepOffset, first, last); err != nil {
			return err
		}
	}
	w.log.Debug("batch applied", zap.Int64("offset", first), zap.Int64("last", last), zap.Int("messages", len(msgs)),
		zap.Int64("upserts", w.upserts), zap.Int64("deletes", w.deletes), zap.Int("rejected", len(w.rejects)))
	return nil
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

// row returns room for one target row in the batch's slab.
func (w *sqlWorker) row() []pipeline.Value {
	n := len(w.r.target.Columns)
	if len(w.slab)+n > cap(w.slab) {
		w.slab = make([]pipeline.Value, 0, max(4096*n, 2*cap(w.slab))) // earlier rows keep the old slab
	}
	w.slab = w.slab[:len(w.slab)+n]
	return w.slab[len(w.slab)-n:]
}

// targetSet returns room for one target column mask in the batch's slab.
func (w *sqlWorker) targetSet() []bool {
	n := len(w.r.target.Columns)
	if len(w.setSlab)+n > cap(w.setSlab) {
		w.setSlab = make([]bool, 0, max(1024*n, 2*cap(w.setSlab))) // earlier masks keep the old slab
	}
	w.setSlab = w.setSlab[:len(w.setSlab)+n]
	return w.setSlab[len(w.setSlab)-n:]
}

// message turns one message into ops (or rejects), as the file path does: a delete of the key,
// an upsert, and for an update that moves the row to another key, the delete of the old key first.
func (w *sqlWorker) message(i int, m *kafkago.Message) {
	for c, changes := 0, w.decode(m); c < len(changes); c++ {
		ch := &changes[c]
		if ch.Err != nil {
			w.reject(i, m, "source", ch.Err)
			continue
		}
		if t := w.r.cfg.SQL.Target; t != nil && t.CellTimestamps && ch.WriteTime == 0 {
			if ch.Tombstone && w.r.cfg.Kafka.Format == kafka.FormatDebezium {
				// it repeats the delete event before it, which carried the write time; at
				// the server's time it would hide the writes made after it
				w.dropped++
				continue
			}
			w.reject(i, m, "source", &pipeline.RowError{Code: CodeNoWriteTime,
				Message: "write_time=true: the event carries no Cassandra write time (source.ts_us or source.ts_ms of Debezium's Cassandra connector); replicate other events without write_time"})
			continue
		}
		if ch.Op == kafka.OpDelete {
			w.delete(i, m, ch)
			continue
		}
		if ch.Op == kafka.OpRangeDelete {
			w.deleteRange(i, m, ch)
			continue
		}
		row := w.row()
		var set []bool
		if ch.Set != nil {
			set = w.targetSet()
		}
		if rerr := w.mapRow(ch, m.Offset, row, set); rerr != nil {
			w.reject(i, m, "transform", rerr)
			continue
		}
		if ch.Before != nil {
			w.moveKey(i, m, row, ch.Before)
		}
		w.ops = append(w.ops, sqlsink.Op{Values: row, Set: set, Timestamp: ch.WriteTime})
		w.opMsg = append(w.opMsg, i)
		w.upserts++
	}
}

// moveKey deletes the old key of an update whose before image maps to another target key.
func (w *sqlWorker) moveKey(i int, m *kafkago.Message, row, before []pipeline.Value) {
	old := w.row()
	moved, rerr := w.oldKey(before, m.Offset, row, old)
	if rerr != nil {
		w.reject(i, m, "transform", rerr)
		return
	}
	if !moved {
		return
	}
	w.ops = append(w.ops, sqlsink.Op{Delete: true, Values: old[:w.r.target.KeyLen]})
	w.opMsg = append(w.opMsg, i)
	w.deletes++
}

// delete adds the delete of the key the change gives (see worker.delete for the tombstones).
func (w *sqlWorker) delete(i int, m *kafkago.Message, ch *kafka.Change) {
	dbzTombstone := ch.Tombstone && w.r.cfg.Kafka.Format == kafka.FormatDebezium
	if w.r.cfg.Program.UsesSalt() {
		if dbzTombstone {
			w.dropped++
			return
		}
		w.reject(i, m, "transform", &pipeline.RowError{Code: kafka.CodeUnsupported,
			Message: "delete: the key uses random(n), whose salt depends on the row and its offset: the key of the row to delete cannot be computed"})
		return
	}
	row := w.row()
	rec := pipeline.Record{Values: ch.Values, Seq: m.Offset}
	if rerr := w.ev.ApplyKey(&w.batch, &rec, row); rerr != nil {
		if dbzTombstone && rerr.Code == pipeline.CodeNullKey {
			w.dropped++
			return
		}
		if ch.Set != nil && rerr.Code == pipeline.CodeNullKey {
			// a Cassandra partition delete: every row of the partition, an open range
			w.deleteRange(i, m, &kafka.Change{Values: ch.Values, Set: ch.Set, Range: &pipeline.ClusteringRange{}, WriteTime: ch.WriteTime})
			return
		}
		rerr.Message = "delete: " + rerr.Message
		w.reject(i, m, "transform", rerr)
		return
	}
	w.ops = append(w.ops, sqlsink.Op{Delete: true, Values: row[:w.r.target.KeyLen], Timestamp: ch.WriteTime})
	w.opMsg = append(w.opMsg, i)
	w.deletes++
}

// deleteRange adds the delete of the key range a Cassandra range tombstone covers, or rejects it
// when the mapping's key does not make it one range of the table.
func (w *sqlWorker) deleteRange(i int, m *kafkago.Message, ch *kafka.Change) {
	rec := pipeline.Record{Values: ch.Values, Seq: m.Offset, Set: ch.Set}
	kr, rerr := w.ev.KeyRange(&w.batch, &rec, ch.Range, w.row())
	if rerr != nil {
		w.reject(i, m, "transform", rerr)
		return
	}
	w.ops = append(w.ops, sqlsink.Op{Delete: true, Range: &kr, Timestamp: ch.WriteTime})
	w.opMsg = append(w.opMsg, i)
	w.deletes++
}

// reject records the message's reject: one line per message (its first problem), as the file
// path writes them.
func (w *sqlWorker) reject(i int, m *kafkago.Message, stage string, rerr *pipeline.RowError) {
	if w.rejected == i {
		w.log.Warn("message rejected again: only its first reject is in the rejects file", zap.Int64("offset", m.Offset),
			zap.String("code", rerr.Code), zap.String("field", rerr.Field), zap.String("message", rerr.Message))
		return
	}
	w.rejected = i
	w.rejects = append(w.rejects, messageReject(w.r.cfg.Kafka.Topic, w.stream, w.partition, m, stage, rerr))
	w.log.Debug("message rejected", zap.Int64("offset", m.Offset), zap.String("code", rerr.Code), zap.String("field", rerr.Field))
}

// messageReject is the rejects.jsonl line of a message.
func messageReject(topic, stream string, partition int, m *kafkago.Message, stage string, rerr *pipeline.RowError) *output.Reject {
	rj := &output.Reject{
		Position: "kafka:" + stream + ":" + strconv.FormatInt(m.Offset, 10), Stream: stream, Seq: m.Offset,
		Stage: stage, Code: rerr.Code, Field: rerr.Field, Message: rerr.Message,
		LogPosition: &output.LogPosition{Topic: topic, Partition: partition, Offset: m.Offset},
	}
	const limit = 64 << 10
	switch {
	case m.Value == nil:
		rj.Raw = "null"
	case len(m.Value) > limit:
		rj.Raw = string(m.Value[:limit])
	default:
		rj.Raw = string(m.Value)
	}
	if k := m.Key; len(k) > 0 {
		rj.Key = string(k[:min(len(k), 4096)])
	}
	return rj
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
