package replicate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/source/kafka"
)

// worker replicates one partition for one generation: it owns the partition's roll, so nothing
// in it is shared with other workers except the rejects log, the manifest and the metrics.
type worker struct {
	partWorker
	ctx context.Context // the process's: uploads stop on a hard stop only

	key    []byte
	stmt   []byte
	budget int64 // bytes of buffered rows this worker may hold
	// router routes rows to regions as the plan's Route does, a hex prefix's region by a
	// table of the splits' first bytes (Route's binary search cost ~170 instructions a row)
	router *pipeline.Router

	tracker     *tracker
	roll        *roll
	freeBufs    []files.Buffer
	firstBuf    files.Buffer // the buffers' first: the others are its siblings
	floor       int64        // the partition's next offset in the manifest: offsets below are in committed rolls
	msgRejected bool         // the current message has its reject line
	sinceCheck  int64        // message bytes since the last memory and roll-size check
	// written counts the batch's rows written, added to the shared counter once per batch: an
	// atomic add per row on a cache line every partition's worker writes took ~5% of replicate's CPU
	written int64
	// early: the assignment's first roll is still to close, which it does after the first
	// fetched batch that opened it, not after the roll interval: a member's first committed
	// offset after its start or a rebalance then waits for one batch and one roll's close
	early bool
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
	other       int64 // events of other tables than the mapping's source.table
	// committed: manifest.json lists the roll, or may (its write failed: the new manifest may
	// have replaced the old one); its files are renamed or left for the partition's next owner to
	// rename (or remove, when the manifest does not list them), never removed here
	committed bool
}

func (r *Replicator) newWorker(partition int, commit func(int, int64) error, partitions int) *worker {
	return &worker{
		// a change's rows are copied into the buffers before the next change: two rows at most
		partWorker: r.newPartWorker(partition, commit, outputCaps{wholeRows: true, values: valueChecker(r.cfg.Format)}, 2),
		tracker:    newTracker(),
		budget:     r.cfg.Memory / int64(max(1, partitions)),
		router:     r.cfg.Plan.Router(),
		early:      true,
	}
}

// valueChecker is the format's own refusals of values, nil when it has none.
func valueChecker(f files.Format) files.ValueChecker {
	c, _ := f.(files.ValueChecker)
	return c
}

// run replicates from offset (the group's, or kafka-go's FirstOffset/LastOffset) or from the
// end of the partition's last committed roll in the folder, until wctx ends: then, if the cause
// is a rebalance or a stop, what was read is applied and the roll is closed and committed; on a
// hard stop (hard cancelled) or another worker's failure it is abandoned, its temporary files
// removed. A fetch error keeps what was read (the roll is closed), then fails. The roll closes
// on the engine's cut at its interval (closeDue), and in process on its size, the memory budget
// or, for the assignment's first roll, after its first batch.
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
	w.pos = offset
	w.seedRepeats(hard, offset)
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
	o, err := w.read(wctx, hard, offset, pipeline.EngineConfig{Cut: w.closeDue, Every: r.cfg.RollInterval},
		func(_ context.Context, d *kafka.Decoded) error { return w.process(d.Changes, d.Next) })
	if err != nil {
		return err
	}
	if o.SourceErr != nil {
		// keep what was read: close the roll, then fail
		if cerr := w.closeRoll("fetch error"); cerr != nil {
			return cerr
		}
		return o.SourceErr
	}
	reason := "rebalance"
	if context.Cause(wctx) == errStop {
		reason = "stop"
	}
	return w.closeRoll(reason)
}

// closeDue is the engine's cut: it closes the roll once it is its interval old. The roll asks
// for the cut when it opens (openRoll); a cut of the engine's own schedule, or one asked for by
// a roll closed since, finds it younger and leaves it open.
func (w *worker) closeDue(context.Context) error {
	if w.roll == nil {
		w.recommit() // an idle partition's refused commit: no roll would carry it
		return nil
	}
	if time.Since(w.roll.opened) < w.r.cfg.RollInterval {
		return nil
	}
	return w.closeRoll("interval")
}

// process applies a batch's changes (one per message) in offset order, then moves the
// partition's position to next (the fetch's, past them).
func (w *worker) process(changes []kafka.Change, next int64) error {
	r := w.r
	var read int64
	w.stage(changes)
	defer w.unstage()
	for i := range changes {
		ch := &changes[i]
		read += int64(len(ch.Key) + len(ch.Value) + 64)
		if ch.Offset < w.floor {
			continue // in a committed roll (the fetch starts after them; kept safe here)
		}
		if err := w.tableStop(ch); err != nil {
			w.countWritten()
			return err
		}
		if w.roll == nil {
			w.openRoll(ch.Offset)
		}
		rl := w.roll
		rl.span.extend(ch.Offset)
		rl.last = ch.Offset
		rl.msgs++
		w.msgRejected = false
		if err := w.change(ch); err != nil {
			w.countWritten()
			return err
		}
		if w.msgRejected {
			rl.rejected++
		}
	}
	w.countWritten()
	r.metrics.MessagesIn.Add(int64(len(changes)))
	if n := len(changes); n > 0 {
		w.pos = max(w.pos, changes[n-1].Offset+1)
	}
	w.pass(next)
	r.metrics.position(w.partition, w.pos, w.hwm)
	w.ev.Reset()
	if w.roll == nil {
		return nil
	}
	if w.early {
		w.early = false
		return w.closeRoll("first batch")
	}
	// the memory and size checks walk every segment: do them once per checkEvery bytes read
	w.sinceCheck += read
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

// pass moves the position to next past offsets the fetch read that hold no message (transaction
// markers, an aborted transaction's messages). The roll covers them, an empty one when none is
// open, so that the committed offset reaches next once the roll commits, as Kafka's consumer
// commits its position: a partition that ends with a marker is not left one offset short of its
// end (a lag of 1 for ever, which a drain waiting for 0 never gets past).
func (w *worker) pass(next int64) {
	if w.pos < 0 || next <= w.pos {
		w.pos = max(w.pos, next)
		return
	}
	if next > w.floor {
		if w.roll == nil {
			w.openRoll(max(w.pos, w.floor))
		}
		w.roll.span.extend(next - 1)
		w.roll.last = max(w.roll.last, next-1)
	}
	w.pos = next
}

func (w *worker) openRoll(first int64) {
	rl := &roll{first: first, opened: time.Now(), span: w.tracker.open(first),
		segs: make([]*segment, w.r.cfg.Plan.Count()), rejects: w.newRejects(first)}
	w.roll = rl
	w.eng.CutAfter(w.r.cfg.RollInterval)
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

// change applies one change's operations to the roll: files hold whole rows and keys to delete
// (outputCaps' wholeRows keeps the other operations out).
func (w *worker) change(ch *kafka.Change) error {
	w.opBuf = w.operations(w.opBuf[:0], ch)
	for i := range w.opBuf {
		op := &w.opBuf[i]
		var err error
		switch {
		case op.kind == opUpsert && op.set == nil:
			err = w.upsert(ch, op.row)
			w.countTTLCells(int64(ch.TTLCells))
		case op.kind == opDelete:
			err = w.deleteRow(op.row)
		case op.kind == opReject:
			err = w.reject(ch, op.stage, op.err)
		case op.kind == opDrop:
			w.r.metrics.TombstonesDropped.Add(1)
			w.roll.dropped++
		case op.kind == opRepeat:
			w.r.metrics.RepeatsSkipped.Add(1)
		case op.kind == opOther:
			w.otherTable(ch)
			w.roll.other++
		default:
			err = fmt.Errorf("partition %d offset %d: a partial %s cannot be written to files", w.partition, ch.Offset, op.kind)
		}
		if err != nil {
			return err
		}
	}
	w.rows.reset()
	return nil
}

// upsert adds a row to its region's segment.
func (w *worker) upsert(ch *kafka.Change, row []pipeline.Value) error {
	r := w.r
	if r.target.KeyLen < len(row) && pipeline.AllNull(row[r.target.KeyLen:]) {
		// a row of NULLs holds nothing: in a wide table it is the key's delete (a bulk load
		// of it would leave the key's earlier cells in place)
		return w.deleteRow(row)
	}
	region := w.router.Route(row[0])
	s, err := w.segment(region)
	if err != nil {
		return err
	}
	if len(s.dkeys) > 0 {
		w.key = appendKey(w.key[:0], r.target.Key(), row)
		if s.deleted(w.key) {
			// upserts of a segment go before its deletes: a key upserted after its delete
			// starts a new segment, so that the order of the messages is kept
			w.roll.split = append(w.roll.split, s)
			w.roll.segs[region] = nil
			if s, err = w.newSegment(region, ch.Offset); err != nil {
				return err
			}
		}
	}
	if err := s.add(row); err != nil {
		var rerr *pipeline.RowError
		if errors.As(err, &rerr) {
			return w.reject(ch, stageSink, rerr)
		}
		return err
	}
	w.written++
	w.roll.upserts++
	return nil
}

// countWritten adds the rows written since its last call to the metrics.
func (w *worker) countWritten() {
	if w.written > 0 {
		w.r.metrics.RowsWritten.Add(w.written)
		w.written = 0
	}
}

// deleteRow writes the DELETE of the key in row's first KeyLen values.
func (w *worker) deleteRow(row []pipeline.Value) error {
	region := w.router.Route(row[0])
	s, err := w.segment(region)
	if err != nil {
		return err
	}
	w.key = appendKey(w.key[:0], w.r.target.Key(), row)
	before := s.dels
	if err := s.addDelete(row, w.key); err != nil {
		return err
	}
	w.r.metrics.Deletes.Add(s.dels - before)
	return nil
}

// reject writes the rejects line of the change's message: one per message (its first problem).
func (w *worker) reject(ch *kafka.Change, st stage, rerr *pipeline.RowError) error {
	if w.msgRejected {
		// one line per message, so that a message counts once; its second problem (an update
		// whose old key cannot be computed, and whose new row does not fit) is logged
		w.log.Warn("message rejected again: only its first reject is in the rejects file", zap.Int64("offset", ch.Offset),
			zap.String("code", rerr.Code), zap.String("field", rerr.Field), zap.String("message", rerr.Message))
		return nil
	}
	w.msgRejected = true
	w.r.metrics.reject(rerr.Code, 1)
	w.log.Debug("message rejected", zap.Int64("offset", ch.Offset), zap.String("code", rerr.Code), zap.String("field", rerr.Field))
	return w.roll.rejects.add(w.ctx, changeReject(w.r.cfg.Kafka.Topic, w.stream, w.partition, ch, st, rerr))
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
// under its temporary name, then, under the output's commit lock, stage them (output.PendingFile:
// on an object store, upload them), rewrite the manifest (the roll's commit point), give a
// folder's files their final names, and last commit the offset after the roll's last message to
// Kafka.
func (w *worker) closeRoll(reason string) error {
	rl := w.roll
	if rl == nil {
		w.recommit() // a stop or a rebalance commits what is durable, also after a refused commit
		return nil
	}
	r := w.r
	start := time.Now()
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
		rejected: rl.rejected, upserts: rl.upserts, dropped: rl.dropped, other: rl.other}
	var files rollFiles
	c.stage = func() ([]segmentFiles, *RejectFile, []output.Staged, error) {
		return w.stageRoll(rl, segs, &files, &nfiles, &nbytes)
	}
	c.rename = func() error { return w.renameRoll(rl, files) }
	c.writing = func() { rl.committed = true }
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
	w.commitOffset(rl)
	if err := w.hook(StepOffset, rl); err != nil {
		return err
	}
	m.roll(time.Since(start))
	w.log.Debug("roll committed", zap.String("reason", reason), zap.Int64("offset", rl.first), zap.Int64("last", rl.last),
		zap.Int64("messages", rl.msgs), zap.Int64("rejected", rl.rejected), zap.Int64("files", nfiles), zap.Int64("bytes", nbytes),
		zap.Duration("took", time.Since(start)))
	return nil
}

// stageRoll stages the finished files of a roll's segments and its rejects file under their
// final names (the commit's step under the output's lock, before manifest.json lists them; on an
// object store they are uploaded), adding them to staged and counting them into files and bytes.
// It returns what the manifest lists: the segments, the rejects file, and a folder's renames.
func (w *worker) stageRoll(rl *roll, segs []*segment, staged *rollFiles, files, bytes *int64) ([]segmentFiles, *RejectFile, []output.Staged, error) {
	var committed []segmentFiles
	for _, s := range segs {
		n := len(*staged)
		sf, err := s.stage(w.ctx, rl.last, staged)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("partition %d: %w", w.partition, err)
		}
		if sf.Data == nil && sf.Deletes == nil {
			continue
		}
		committed = append(committed, sf)
		if sf.Data != nil {
			*files++
			*bytes += sf.Data.Bytes
		}
		if sf.Deletes != nil {
			*files++
			*bytes += sf.Deletes.Bytes
		}
		for range (*staged)[n:] {
			if err := w.hook(StepStaging, rl); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	rej, err := rl.rejects.stage(w.ctx, w.partition, rl.first, rl.last, staged)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("partition %d: %w", w.partition, err)
	}
	if rej != nil {
		if err := w.hook(StepStaging, rl); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := w.hook(StepStaged, rl); err != nil {
		return nil, nil, nil, err
	}
	var renames []output.Staged
	for _, f := range *staged {
		if f.staged != nil {
			renames = append(renames, *f.staged)
		}
	}
	return committed, rej, renames, nil
}

// renameRoll gives the staged files of a committed roll (manifest.json lists it) their final
// names; a crash leaves the rest to the partition's next owner (manifest.claim).
func (w *worker) renameRoll(rl *roll, staged rollFiles) error {
	rl.committed = true
	if err := w.hook(StepManifest, rl); err != nil {
		return err
	}
	for _, f := range staged {
		if err := f.f.Commit(w.ctx, f.name); err != nil {
			return fmt.Errorf("partition %d: %w", w.partition, err)
		}
		if f.staged == nil {
			continue // uploaded before the manifest
		}
		if err := w.hook(StepRenaming, rl); err != nil {
			return err
		}
	}
	return w.hook(StepRenamed, rl)
}

// commitOffset commits to Kafka the offset the committed roll lets the partition's tracker
// advance to. A failed commit is counted and logged: the files are durable, and a later roll's
// commit carries the offset, or, when no roll is open, the next roll interval or the stop
// (recommit).
func (w *worker) commitOffset(rl *roll) {
	if off := w.tracker.done(rl.span); off >= 0 {
		w.commitAt(off)
	}
}

// recommit commits the durable offset again when Kafka refused its commit and no roll since
// carried it.
func (w *worker) recommit() {
	if off := w.tracker.committable; off > w.kafkaOff {
		w.commitAt(off)
	}
}

// commitAt commits off, the offset after what is durable, to Kafka.
func (w *worker) commitAt(off int64) {
	w.commitKafka(off, "the files are durable (manifest.json records where the partition continues); "+
		"the commit is tried again with the next roll, at the roll interval and at the stop")
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
	if w.roll.committed {
		remove = false // its manifest lists it, or may: the partition's next owner renames its files, or removes them
	}
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
	w.tracker.committable = next // durable: recommit tries it again when this commit is refused
	w.commitAt(next)
	return next
}
