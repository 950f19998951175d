package replicate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// worker replicates one partition for one generation: it owns the partition's roll, so nothing
// in it is shared with other workers except the rejects log, the manifest and the metrics.
type worker struct {
	partWorker
	ctx context.Context // the process's: uploads stop on a hard stop only

	row    []pipeline.Value
	before []pipeline.Value
	key    []byte
	stmt   []byte
	budget int64 // bytes of buffered rows this worker may hold

	tracker     *tracker
	roll        *roll
	freeBufs    []files.Buffer
	firstBuf    files.Buffer // the buffers' first: the others are its siblings
	timer       *time.Timer
	hwm         int64
	floor       int64 // the partition's next offset in the manifest: offsets below are in committed rolls
	msgRejected bool  // the current message has its reject line
	sinceCheck  int64 // message bytes since the last memory and roll-size check
}

// checkEvery is how many message bytes a worker reads between two memory and roll-size checks.
const checkEvery = 256 << 10

// roll is the partition's open roll: one current segment per region, plus segments already
// split off (an upsert of a key deleted in the same segment starts a new one).
type roll struct {
	first, last int64
	opened      time.Time
	span        *span
	segs        []*segment // by region; nil until the region gets a change
	split       []*segment
	rejects     *rollRejects
	msgs        int64 // messages: each one is rejected or written
	rejected    int64
	upserts     int64 // rows in the data files
	dropped     int64 // redundant Debezium tombstones
}

func (r *Replicator) newWorker(partition int, commit func(int, int64) error, partitions int) *worker {
	w := &worker{
		partWorker: r.newPartWorker(partition, commit),
		tracker:    newTracker(),
		budget:     r.cfg.Memory / int64(max(1, partitions)),
	}
	n := len(r.target.Columns)
	w.row = make([]pipeline.Value, n)
	w.before = make([]pipeline.Value, n)
	return w
}

// run replicates from offset (the group's, or kafka-go's FirstOffset/LastOffset) or from the
// end of the partition's last committed roll in the folder, until wctx ends: then, if the cause
// is a rebalance or a stop, the roll is closed and committed; on a hard stop (hard cancelled) or
// another worker's failure it is abandoned, its temporary files removed.
func (w *worker) run(wctx, hard context.Context, offset int64, cl claimed) (err error) {
	r := w.r
	w.ctx = hard
	r.metrics.assign(w.partition, true)
	w.log.Info("partition assigned", zap.Int64("offset", offset))
	offset = w.startAt(offset, cl)
	if offset >= 0 {
		r.metrics.committed(w.partition, offset)
		r.metrics.position(w.partition, offset, -1)
	}
	f := r.startFetch(hard, w.partition, offset, w.log)
	ch, free, stopFetch := f.ch, f.free, f.stop
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	defer w.timer.Stop()
	defer func() {
		if err != nil && w.roll != nil {
			w.abortRoll(!r.crashed.Load())
		}
		for _, b := range w.freeBufs {
			if b.Rows() > 0 {
				b.Cut().Release()
			}
		}
		w.freeBufs = nil
	}()

	for {
		select {
		case b, ok := <-ch:
			if !ok {
				ferr := f.ended(hard, w.partition)
				if hard.Err() != nil {
					return ferr
				}
				// keep what was read: close the roll, then fail
				if cerr := w.closeRoll("fetch error"); cerr != nil {
					return cerr
				}
				return ferr
			}
			if b.HighWaterMark > 0 {
				w.hwm = b.HighWaterMark
			}
			if len(b.Messages) == 0 {
				r.metrics.position(w.partition, -1, b.HighWaterMark)
				continue
			}
			if err := w.process(b.Messages); err != nil {
				stopFetch()
				return err
			}
			if cap(b.Messages) >= 1024 { // the messages are copied into buffers: reuse the slice
				clear(b.Messages)
				select {
				case free <- b.Messages[:0]:
				default:
				}
			}
		case <-w.timer.C:
			if err := w.closeRoll("interval"); err != nil {
				stopFetch()
				return err
			}
		case <-wctx.Done():
			stopFetch()
			cause := context.Cause(wctx)
			if hard.Err() != nil || (cause != errGenerationEnded && cause != errStop) {
				return fmt.Errorf("partition %d: %w", w.partition, context.Cause(wctx))
			}
			reason := "rebalance"
			if cause == errStop {
				reason = "stop"
			}
			return w.closeRoll(reason)
		}
	}
}

// process handles a batch of fetched messages in offset order.
func (w *worker) process(msgs []kafkago.Message) error {
	r := w.r
	for i := range msgs {
		m := &msgs[i]
		if m.Offset < w.floor {
			continue // in a committed roll (the fetch starts after them; kept safe here)
		}
		if w.roll == nil {
			w.openRoll(m.Offset)
		}
		rl := w.roll
		rl.span.extend(m.Offset)
		rl.last = m.Offset
		rl.msgs++
		w.msgRejected = false
		if err := w.message(m); err != nil {
			return err
		}
		if w.msgRejected {
			rl.rejected++
		}
	}
	r.metrics.MessagesIn.Add(int64(len(msgs)))
	r.metrics.position(w.partition, msgs[len(msgs)-1].Offset+1, w.hwm)
	w.ev.Reset()
	w.dec.Reset()
	if w.roll == nil {
		return nil
	}
	// the memory and size checks walk every segment: do them once per checkEvery bytes read
	for i := range msgs {
		w.sinceCheck += int64(len(msgs[i].Key) + len(msgs[i].Value) + 64)
	}
	if w.sinceCheck < checkEvery {
		return nil
	}
	w.sinceCheck = 0
	if err := w.fitMemory(); err != nil {
		return err
	}
	if w.rollSize() >= r.cfg.RollSize {
		return w.closeRoll("size")
	}
	return nil
}

func (w *worker) openRoll(first int64) {
	rl := &roll{first: first, opened: time.Now(), span: w.tracker.open(first),
		segs: make([]*segment, w.r.cfg.Plan.Count()), rejects: w.newRejects(first)}
	w.roll = rl
	w.timer.Reset(w.r.cfg.RollInterval)
}

// segment returns the roll's current segment of a region, creating it: a region's first segment
// is named by the roll's first offset (so every file of a roll names where it starts, and a
// replay finds the roll's end from any of them); one split off later by the offset it starts at.
func (w *worker) segment(region int) (*segment, error) {
	if s := w.roll.segs[region]; s != nil {
		return s, nil
	}
	return w.newSegment(region, w.roll.first)
}

func (w *worker) newSegment(region int, offset int64) (*segment, error) {
	s := &segment{w: w, region: region, first: offset, dir: output.RegionDir(region), ddir: output.DeletesRegionDir(region)}
	if n := len(w.freeBufs); n > 0 {
		s.buf = w.freeBufs[n-1]
		w.freeBufs = w.freeBufs[:n-1]
	} else {
		b, err := w.newBuffer()
		if err != nil {
			return nil, err
		}
		s.buf = b
	}
	w.roll.segs[region] = s
	return s, nil
}

// newBuffer returns an empty buffer: a sibling of the worker's first one, so that what one
// region's chunks learn about the partition's data every region's chunks use.
func (w *worker) newBuffer() (files.Buffer, error) {
	if s, ok := w.firstBuf.(files.Siblings); ok {
		return s.Sibling(), nil
	}
	b, err := w.r.cfg.Format.NewBuffer(w.r.target)
	if err != nil {
		return nil, fmt.Errorf("%s buffer: %w", w.r.cfg.Format.Name(), err)
	}
	if w.firstBuf == nil {
		w.firstBuf = b
	}
	return b, nil
}

// message applies one message's changes to the roll.
func (w *worker) message(m *kafkago.Message) error {
	r := w.r
	for i, changes := 0, w.decode(m); i < len(changes); i++ {
		ch := &changes[i]
		if ch.Err != nil {
			if err := w.reject(m, "source", ch.Err); err != nil {
				return err
			}
			continue
		}
		if rerr := wholeRowsOnly(ch); rerr != nil {
			if err := w.reject(m, "sink", rerr); err != nil {
				return err
			}
			continue
		}
		if ch.Op == kafka.OpDelete {
			if err := w.delete(m, ch); err != nil {
				return err
			}
			continue
		}
		if rerr := w.mapRow(ch, m.Offset, w.row, nil); rerr != nil {
			if err := w.reject(m, "transform", rerr); err != nil {
				return err
			}
			continue
		}
		if ch.Before != nil {
			if err := w.moveKey(m, ch.Before); err != nil {
				return err
			}
		}
		if r.target.KeyLen < len(w.row) && pipeline.AllNull(w.row[r.target.KeyLen:]) {
			// a row of NULLs holds nothing: in a wide table it is the key's delete (a bulk load
			// of it would leave the key's earlier cells in place)
			if err := w.deleteRow(m, w.row); err != nil {
				return err
			}
			continue
		}
		region := r.cfg.Plan.Route(w.row[0])
		s, err := w.segment(region)
		if err != nil {
			return err
		}
		if len(s.dkeys) > 0 {
			w.key = appendKey(w.key[:0], w.row, r.target.KeyLen)
			if s.deleted(w.key) {
				// upserts of a segment go before its deletes: a key upserted after its delete
				// starts a new segment, so that the order of the messages is kept
				w.roll.split = append(w.roll.split, s)
				w.roll.segs[region] = nil
				if s, err = w.newSegment(region, m.Offset); err != nil {
					return err
				}
			}
		}
		if err := s.add(w.row); err != nil {
			var rerr *pipeline.RowError
			if errors.As(err, &rerr) {
				if err := w.reject(m, "sink", rerr); err != nil {
					return err
				}
				continue
			}
			return err
		}
		r.metrics.RowsWritten.Add(1)
		w.roll.upserts++
	}
	return nil
}

// moveKey deletes the old key of an update whose before image maps to another target key.
func (w *worker) moveKey(m *kafkago.Message, before []pipeline.Value) error {
	moved, rerr := w.oldKey(before, m.Offset, w.row, w.before)
	if rerr != nil {
		return w.reject(m, "transform", rerr)
	}
	if !moved {
		return nil
	}
	return w.deleteRow(m, w.before)
}

func sameKey(a, b []pipeline.Value, n int) bool {
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wholeRowsOnly refuses the changes a file of whole rows cannot express: a change that sets
// some columns only (its row would null the others) and a range delete.
func wholeRowsOnly(ch *kafka.Change) *pipeline.RowError {
	switch {
	case ch.Op == kafka.OpRangeDelete:
		return &pipeline.RowError{Code: pipeline.CodeRangeTombstone, Field: "op",
			Message: "a range tombstone (a delete of a clustering range) cannot be written to bulk-load files: replicate into the table instead (--out mysql://... or lindorm://...)"}
	case ch.Set != nil && ch.Op == kafka.OpUpsert:
		return &pipeline.RowError{Code: pipeline.CodePartialUpdate, Field: "after",
			Message: "the change sets some columns only (a Cassandra UPDATE or INSERT that names some columns), and a bulk-load file holds whole rows: writing it would null the other columns; replicate into the table instead (--out mysql://... or lindorm://...), which updates the columns the change sets"}
	}
	return nil
}

// delete writes the DELETE of the key the values give.
//
// Debezium follows every delete event with a tombstone of the same key: when the target key
// cannot be computed from the message key alone (it uses other columns), the tombstone is
// dropped (counted in TombstonesDropped), the delete event having done the work.
func (w *worker) delete(m *kafkago.Message, ch *kafka.Change) error {
	dbzTombstone := ch.Tombstone && w.r.cfg.Kafka.Format == kafka.FormatDebezium
	if w.r.cfg.Program.UsesSalt() {
		if dbzTombstone {
			w.r.metrics.TombstonesDropped.Add(1)
			w.roll.dropped++
			return nil
		}
		return w.reject(m, "transform", &pipeline.RowError{Code: kafka.CodeUnsupported,
			Message: "delete: the key uses random(n), whose salt depends on the row and its offset: the key of the row to delete cannot be computed"})
	}
	rec := pipeline.Record{Values: ch.Values, Seq: m.Offset}
	if rerr := w.ev.ApplyKey(&w.batch, &rec, w.row); rerr != nil {
		if dbzTombstone && rerr.Code == pipeline.CodeNullKey {
			w.r.metrics.TombstonesDropped.Add(1)
			w.roll.dropped++
			return nil
		}
		if ch.Set != nil && rerr.Code == pipeline.CodeNullKey {
			return w.reject(m, "sink", &pipeline.RowError{Code: pipeline.CodeRangeTombstone, Field: rerr.Field,
				Message: "a Cassandra partition delete (its clustering cells are null) deletes every row of the partition, which bulk-load files cannot express: replicate into the table instead (--out mysql://... or lindorm://...)"})
		}
		rerr.Message = "delete: " + rerr.Message
		return w.reject(m, "transform", rerr)
	}
	return w.deleteRow(m, w.row)
}

func (w *worker) deleteRow(m *kafkago.Message, row []pipeline.Value) error {
	region := w.r.cfg.Plan.Route(row[0])
	s, err := w.segment(region)
	if err != nil {
		return err
	}
	w.key = appendKey(w.key[:0], row, w.r.target.KeyLen)
	before := s.dels
	if err := s.addDelete(row, w.key); err != nil {
		return err
	}
	w.r.metrics.Deletes.Add(s.dels - before)
	return nil
}

func (w *worker) reject(m *kafkago.Message, stage string, rerr *pipeline.RowError) error {
	r := w.r
	if w.msgRejected {
		// one line per message, so that a message counts once; its second problem (an update
		// whose old key cannot be computed, and whose new row does not fit) is logged
		w.log.Warn("message rejected again: only its first reject is in the rejects file", zap.Int64("offset", m.Offset),
			zap.String("code", rerr.Code), zap.String("field", rerr.Field), zap.String("message", rerr.Message))
		return nil
	}
	w.msgRejected = true
	// Position is "kafka:TOPIC/PARTITION:OFFSET"; the message's coordinates are also fields.
	rj := &output.Reject{
		Position: "kafka:" + w.stream + ":" + fmt.Sprint(m.Offset), Stream: w.stream, Seq: m.Offset,
		Stage: stage, Code: rerr.Code, Field: rerr.Field, Message: rerr.Message,
		LogPosition: &output.LogPosition{Topic: r.cfg.Kafka.Topic, Partition: w.partition, Offset: m.Offset},
	}
	const limit = 64 << 10
	raw := m.Value
	if len(raw) > limit {
		raw = raw[:limit]
	}
	if m.Value == nil {
		rj.Raw = "null"
	} else {
		rj.Raw = string(raw)
	}
	if len(m.Key) > 0 {
		k := m.Key
		if len(k) > 4096 {
			k = k[:4096]
		}
		rj.Key = string(k)
	}
	r.metrics.reject(rerr.Code, 1)
	w.log.Debug("message rejected", zap.Int64("offset", m.Offset), zap.String("code", rerr.Code), zap.String("field", rerr.Field))
	return w.roll.rejects.add(w.ctx, rj)
}

// fitMemory keeps the memory of the roll's buffers (allocated bytes) within the worker's
// budget: the fullest buffer is encoded into its file and replaced by an empty one (a flushed
// buffer keeps its capacity for the next chunk, which an idle region would hold for nothing).
// A buffer never grows past a row group (64 MiB).
func (w *worker) fitMemory() error {
	const rowGroup = 64 << 20
	for {
		var total int64
		var big *segment
		var bigUsed int64
		for _, s := range w.roll.allSegments() {
			u := s.used()
			if u >= rowGroup {
				if err := w.flushFresh(s); err != nil {
					return err
				}
				u = 0
			}
			total += s.buf.Mem()
			if u > bigUsed {
				big, bigUsed = s, u
			}
		}
		if total <= w.budget || big == nil {
			return nil
		}
		if err := w.flushFresh(big); err != nil {
			return err
		}
	}
}

// flushFresh encodes a segment's buffer and gives the segment an empty buffer.
func (w *worker) flushFresh(s *segment) error {
	if err := s.flush(); err != nil {
		return err
	}
	b, err := w.newBuffer()
	if err != nil {
		return err
	}
	s.buf = b
	return nil
}

func (rl *roll) allSegments() []*segment {
	out := append([]*segment(nil), rl.split...)
	for _, s := range rl.segs {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// rollSize estimates the bytes of the roll's files.
func (w *worker) rollSize() int64 {
	var n int64
	for _, s := range w.roll.split {
		n += s.estSize()
	}
	for _, s := range w.roll.segs {
		if s != nil {
			n += s.estSize()
		}
	}
	return n
}

// closeRoll makes the roll durable and commits its offsets: finish every file (footer, fsync)
// under its temporary name, then, under the output's commit lock, give them their final names
// (output.PendingFile), rewrite the manifest (the roll's commit point), and last commit the offset after the roll's
// last message to Kafka.
func (w *worker) closeRoll(reason string) error {
	rl := w.roll
	if rl == nil {
		return nil
	}
	r := w.r
	start := time.Now()
	w.timer.Stop()
	segs := rl.allSegments()
	for _, s := range segs {
		if err := s.finish(); err != nil {
			return fmt.Errorf("partition %d: %w", w.partition, err)
		}
	}
	if err := rl.rejects.finish(); err != nil {
		return fmt.Errorf("partition %d: %w", w.partition, err)
	}
	if err := w.hook(StepFinished, rl); err != nil {
		return err
	}
	var nfiles, nbytes int64
	c := &rollCommit{partition: w.partition, first: rl.first, last: rl.last, expect: w.floor, messages: rl.msgs,
		rejected: rl.rejected, upserts: rl.upserts, dropped: rl.dropped}
	c.rename = func() ([]segmentFiles, *RejectFile, error) {
		var committed []segmentFiles
		for _, s := range segs {
			sf, err := s.commit(w.ctx, rl.last)
			if err != nil {
				return nil, nil, fmt.Errorf("partition %d: %w", w.partition, err)
			}
			if sf.Data == nil && sf.Deletes == nil {
				continue
			}
			committed = append(committed, sf)
			if sf.Data != nil {
				nfiles++
				nbytes += sf.Data.Bytes
			}
			if sf.Deletes != nil {
				nfiles++
				nbytes += sf.Deletes.Bytes
			}
			if err := w.hook(StepRenaming, rl); err != nil {
				return nil, nil, err
			}
		}
		rej, err := rl.rejects.commit(w.ctx, w.partition, rl.first, rl.last)
		if err != nil {
			return nil, nil, fmt.Errorf("partition %d: %w", w.partition, err)
		}
		if rej != nil {
			if err := w.hook(StepRenaming, rl); err != nil {
				return nil, nil, err
			}
		}
		if err := w.hook(StepRenamed, rl); err != nil {
			return nil, nil, err
		}
		return committed, rej, nil
	}
	committing := time.Now()
	if err := r.man.commit(w.ctx, c); err != nil {
		return err
	}
	observeSince(r.metrics.manifestSeconds, committing)
	for _, s := range segs {
		s.release()
	}
	w.roll = nil
	w.floor = rl.last + 1
	m := r.metrics
	m.FilesCommitted.Add(nfiles)
	m.BytesWritten.Add(nbytes)
	if err := w.hook(StepManifest, rl); err != nil {
		return err
	}
	if off := w.tracker.done(rl.span); off >= 0 {
		if err := w.commit(w.partition, off); err != nil {
			m.CommitErrors.Add(1)
			w.log.Warn("offset commit failed: the files are durable, their messages will be read again", zap.Int64("offset", off), zap.Error(err))
		} else {
			m.OffsetCommits.Add(1)
			m.committed(w.partition, off)
		}
	}
	if err := w.hook(StepOffset, rl); err != nil {
		return err
	}
	m.roll(time.Since(start))
	w.log.Debug("roll committed", zap.String("reason", reason), zap.Int64("offset", rl.first), zap.Int64("last", rl.last),
		zap.Int64("messages", rl.msgs), zap.Int64("rejected", rl.rejected), zap.Int64("files", nfiles), zap.Int64("bytes", nbytes),
		zap.Duration("took", time.Since(start)))
	return nil
}

// hook runs the fault hook of a commit step; its error stops the process as a kill would.
func (w *worker) hook(step CommitStep, rl *roll) error {
	h := w.r.cfg.Hooks.Commit
	if h == nil {
		return nil
	}
	if err := h(step, w.partition, rl.first, rl.last); err != nil {
		w.r.crashed.Store(true)
		return err
	}
	return nil
}

// abortRoll drops the roll: its messages will be read again. remove: its temporary files are
// removed (false: left as a kill would leave them, for the partition's next owner to remove).
func (w *worker) abortRoll(remove bool) {
	for _, s := range w.roll.allSegments() {
		s.abort(remove)
		s.release()
	}
	w.roll.rejects.abort(remove)
	w.roll = nil
}

// startAt returns the offset to read the partition from. The folder's manifest may be ahead of
// the group's offset (a member stopped after committing a roll, before committing its offset):
// the partition then continues after its last committed roll, whose messages are counted
// already, and that offset is committed at once.
func (w *worker) startAt(offset int64, cl claimed) int64 {
	if !cl.known {
		if offset > 0 && cl.other {
			w.log.Warn("the group has read this partition up to the offset, but the output folder holds none of its rolls: "+
				"if another member of the group writes to another --out, the two folders overlap (members of a group must share one --out)",
				zap.Int64("offset", offset), zap.String("out", w.r.cfg.Out))
		}
		return offset
	}
	next := cl.entry.NextOffset
	w.floor = next
	switch {
	case offset > next:
		w.log.Warn("the group's offset is past the output folder's last roll of this partition: the messages in between are not in the folder; "+
			"another member of the group may write to another --out (members of a group must share one), or the group's offsets were moved",
			zap.Int64("offset", offset), zap.Int64("next_offset", next), zap.String("out", w.r.cfg.Out))
		return offset
	case offset == next:
		return offset
	}
	w.log.Info("continuing after the partition's last committed roll", zap.Int64("offset", offset), zap.Int64("next_offset", next))
	if err := w.commit(w.partition, next); err != nil {
		w.r.metrics.CommitErrors.Add(1)
		w.log.Warn("offset commit failed: the next roll's commit carries it", zap.Int64("offset", next), zap.Error(err))
	} else {
		w.r.metrics.OffsetCommits.Add(1)
	}
	return next
}

// fetch reads one partition in the background (kafka.FetchPartition) for a worker: batches
// arrive on ch, their message slices go back through free for reuse.
type fetch struct {
	ch     chan kafka.FetchBatch
	free   chan []kafkago.Message
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
}

// startFetch starts fetching partition from offset until hard ends or stop is called.
func (r *Replicator) startFetch(hard context.Context, partition int, offset int64, log *zap.Logger) *fetch {
	fctx, cancel := context.WithCancel(hard)
	f := &fetch{ch: make(chan kafka.FetchBatch, 4), free: make(chan []kafkago.Message, 8), cancel: cancel}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(f.ch)
		f.err = r.cfg.Kafka.FetchPartition(fctx, r.dialer, partition, offset, kafka.FetchOptions{Logger: log, Free: f.free, Gap: r.gap(hard, partition, log)}, f.ch)
	}()
	return f
}

// gap handles messages of partition deleted (retention) before they were read: they are lost
// to the table, so the replication stops, unless Config.AcceptGaps accepts the loss, which is
// then logged, counted and recorded in manifest.json.
func (r *Replicator) gap(ctx context.Context, partition int, log *zap.Logger) func(next, first int64) error {
	return func(next, first int64) error {
		gerr := &kafka.GapError{Topic: r.cfg.Kafka.Topic, Partition: partition, Next: next, First: first}
		if !r.cfg.AcceptGaps {
			return fmt.Errorf("%w.\nThe topic's retention deleted them before rekey read them; the table misses their changes. "+
				"Reload the table from a snapshot of the source, or accept the loss with --accept-gaps (recorded in manifest.json); "+
				"then keep replicate within the topic's retention (retention.ms)", gerr)
		}
		log.Warn("messages deleted by retention before they were read were skipped (--accept-gaps): the table misses their changes",
			zap.Int64("next_offset", next), zap.Int64("first_offset", first), zap.Int64("messages", first-next))
		r.metrics.Gaps.Add(1)
		r.metrics.GapMessages.Add(first - next)
		if r.man != nil {
			if err := r.man.noteGap(ctx, partition, next, first); err != nil {
				return fmt.Errorf("record %v in the manifest: %w", gerr, err)
			}
		}
		return nil
	}
}

// stop cancels the fetch and waits for it, dropping what it had read.
func (f *fetch) stop() {
	f.cancel()
	for range f.ch {
	}
	f.wg.Wait()
}

// ended is why the fetch closed ch: hard's error when it ended, else the fetcher's (never nil).
func (f *fetch) ended(hard context.Context, partition int) error {
	f.wg.Wait()
	if err := hard.Err(); err != nil {
		return err
	}
	if f.err == nil {
		return fmt.Errorf("partition %d: the fetcher stopped", partition)
	}
	return f.err
}

// partWorker is what both kinds of worker (files and SQL) hold for their partition: its stream,
// the offset commit (timed), a logger naming it, and the decoder and evaluator its messages go
// through.
type partWorker struct {
	r         *Replicator
	partition int
	stream    string
	commit    func(partition int, offset int64) error
	log       *zap.Logger
	dec       *kafka.Decoder
	ev        *transform.Evaluator
	batch     pipeline.Batch
	changes   []kafka.Change
	rec       pipeline.Record
	saltWarn  bool
}

// The decode -> transform step both workers (files and SQL) share: a message's changes, each
// change's target row, and the old key of an update that moved its row.

// decode turns a message into its changes; valid until the next decode.
func (w *partWorker) decode(m *kafkago.Message) []kafka.Change {
	repeats := w.dec.Repeats
	w.changes = w.dec.Decode(w.changes[:0], m.Key, m.Value)
	if w.dec.Repeats != repeats {
		w.r.metrics.RepeatsSkipped.Add(1)
		w.log.Debug("event skipped: the connector published it already", zap.Int64("offset", m.Offset))
	}
	return w.changes
}

// mapRow maps a change's values to the target row; set receives the target columns a partial
// change sets (nil for a whole row).
func (w *partWorker) mapRow(ch *kafka.Change, offset int64, row []pipeline.Value, set []bool) *pipeline.RowError {
	w.rec = pipeline.Record{Values: ch.Values, Seq: offset, Set: ch.Set}
	if ch.Set != nil {
		return w.ev.ApplyPartial(&w.batch, &w.rec, row, set)
	}
	// a change that nulls every non-key column deletes those cells: it is not a key-only row
	// to reject (Apply's key_only_row is for whole-row snapshots)
	return w.ev.ApplyKey(&w.batch, &w.rec, row)
}

// oldKey computes into old the key an update's before image maps to; moved tells whether it
// differs from row's. A key with a salt cannot be recomputed (the salt depends on the values):
// never moved, with one warning.
func (w *partWorker) oldKey(before []pipeline.Value, offset int64, row, old []pipeline.Value) (moved bool, rerr *pipeline.RowError) {
	if w.r.cfg.Program.UsesSalt() {
		if !w.saltWarn {
			w.saltWarn = true
			w.log.Warn("the key uses random(n): an update that changes the row's values gets a new salt, and the old key cannot be found to delete it")
		}
		return false, nil
	}
	w.rec = pipeline.Record{Values: before, Seq: offset}
	if rerr := w.ev.ApplyKey(&w.batch, &w.rec, old); rerr != nil {
		// the before image may lack non-key columns; only a key error matters
		rerr.Message = "update: cannot compute the old key from \"before\" to delete it: " + rerr.Message
		return false, rerr
	}
	return !sameKey(row, old, w.r.target.KeyLen), nil
}

func (r *Replicator) newPartWorker(partition int, commit func(int, int64) error) partWorker {
	w := partWorker{
		r:         r,
		partition: partition,
		stream:    kafka.Stream(r.cfg.Kafka.Topic, partition),
		commit: func(p int, off int64) error {
			defer observeSince(r.metrics.offsetSeconds, time.Now())
			return commit(p, off)
		},
		log: r.log.With(zap.Int("partition", partition)),
		ev:  r.cfg.Program.NewEvaluator(),
	}
	w.dec, _ = kafka.NewDecoder(r.cfg.Kafka, r.cfg.Program.Source()) // validated by New
	w.dec.SkipRepeats = true                                         // one partition's messages, in order
	w.batch = pipeline.Batch{Stream: w.stream, SaltOrigin: true}
	return w
}
