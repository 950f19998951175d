package replicate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/elemindex"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// partWorker is what both kinds of worker (files and SQL) hold for their partition: its stream,
// its read on pipeline's engine (read), the offset commit (timed), a logger naming it, the
// decoder and evaluator its messages go through, and the change -> operations step (operations)
// with what it needs.
type partWorker struct {
	r         *Replicator
	partition int
	stream    string
	commit    func(partition int, offset int64) error
	log       *zap.Logger
	dec       *kafka.Decoder
	ev        *transform.Evaluator
	batch     pipeline.Batch
	eng       *pipeline.Engine // the partition's read (read)
	hwm       int64            // the partition's high watermark, as the last fetch reported it
	pos       int64            // the read position: past the last message applied and the offsets after it without one (transaction markers); -1: not known
	decoded   []kafka.Change   // a batch decoded outside a read (verify's changes), one per message
	rec       pipeline.Record
	staged    []kafka.Change // the changes whose records batch.Records holds (stage)
	saltWarn  bool
	ttlWarn   bool // the warning of cells written with a TTL was logged
	caps      outputCaps
	fetchLen  int         // messages per fetched batch at most (0: the fetcher's default)
	rows      rowSlab     // the operations' rows
	opBuf     []operation // one change's operations
	// keyReads lists, per target key column, the source columns it is computed from
	keyReads [][]int
	// kafkaOff is the offset last committed to the group (-1: none): behind what is durable
	// after a refused commit, which a later commit carries
	kafkaOff int64
}

// newPartWorker returns the partition's worker state for an output that can hold caps; its
// operations' rows come from slabs of chunk rows.
func (r *Replicator) newPartWorker(partition int, commit func(int, int64) error, caps outputCaps, chunk int) partWorker {
	w := partWorker{
		r:         r,
		partition: partition,
		kafkaOff:  -1,
		stream:    kafka.Stream(r.cfg.Kafka.Topic, partition),
		commit: func(p int, off int64) error {
			defer observeSince(r.metrics.offsetSeconds, time.Now())
			return commit(p, off)
		},
		log:  r.log.With(zap.Int("partition", partition)),
		ev:   r.cfg.Program.NewEvaluator(),
		caps: caps,
		rows: rowSlab{n: len(r.target.Columns), chunk: chunk},
		pos:  -1,
	}
	src := r.cfg.Program.Source()
	for _, names := range r.cfg.Program.KeySourceColumns() {
		var idx []int
		for _, n := range names {
			if ci := src.Index(n); ci >= 0 {
				idx = append(idx, ci)
			}
		}
		w.keyReads = append(w.keyReads, idx)
	}
	w.dec, _ = kafka.NewDecoder(r.cfg.Kafka, src) // validated by New
	w.dec.SkipRepeats = true                      // one partition's messages, in order
	w.dec.Table, w.dec.Tables = r.cfg.Program.SourceTable(), &r.tables
	w.dec.Logger = w.log
	w.batch = pipeline.Batch{Stream: w.stream, SaltOrigin: true}
	w.eng = pipeline.NewEngine(pipeline.EngineConfig{}) // not run: until read, CutAfter does nothing
	return w
}

// stage gives the transform the records of a batch's changes in batch.Records, before they are
// applied one by one: the transform then computes what a row needs from the rows after it too
// (MD5 hash prefixes, eight at a time).
func (w *partWorker) stage(changes []kafka.Change) {
	recs := w.batch.Records[:0]
	for i := range changes {
		ch := &changes[i]
		recs = append(recs, pipeline.Record{Values: ch.Values, Seq: ch.Offset, Set: ch.Set, Err: ch.Err})
	}
	w.batch.Records, w.staged = recs, changes
}

// unstage forgets the staged changes once applied: their slice is reused for the next batch.
func (w *partWorker) unstage() { w.batch.Records, w.staged = w.batch.Records[:0], nil }

// record is the record of change ch to map: its staged one when ch is among the staged changes,
// else w.rec, filled.
func (w *partWorker) record(ch *kafka.Change) *pipeline.Record {
	if i, ok := elemindex.Of(w.staged, ch); ok && len(w.batch.Records) == len(w.staged) {
		return &w.batch.Records[i]
	}
	w.rec = pipeline.Record{Values: ch.Values, Seq: ch.Offset, Set: ch.Set}
	return &w.rec
}

// tableStop is the error that stops the read at a change of another table than the one the
// topic's first event named, when the mapping states no source.table (nil for other changes):
// nothing of its batch is applied, nor committed.
func (w *partWorker) tableStop(ch *kafka.Change) error {
	if ch.TableErr == nil {
		return nil
	}
	return fmt.Errorf("topic %s partition %d offset %d: %w; nothing from this offset on is applied: once the mapping states its table, run the same command again",
		w.r.cfg.Kafka.Topic, w.partition, ch.Offset, ch.TableErr)
}

// otherTable counts a change of another table than the mapping's source.table, which is not
// applied, and logs the first of each table.
func (w *partWorker) otherTable(ch *kafka.Change) {
	if w.r.metrics.otherTable(ch.OtherTable) {
		w.log.Warn("the topic carries events of another table than the mapping's source.table: they are not applied, and the summary counts them by table",
			zap.String("table", ch.OtherTable), zap.String("source_table", w.r.cfg.Program.SourceTable()), zap.Int64("offset", ch.Offset))
	}
}

// countTTLCells counts n cells written with a TTL of their own, which the output holds without
// it, and says so once per partition.
func (w *partWorker) countTTLCells(n int64) {
	if n == 0 {
		return
	}
	w.r.metrics.TTLCells.Add(n)
	if !w.ttlWarn {
		w.ttlWarn = true
		w.log.Warn("the events write cells with a TTL of their own (Cassandra's USING TTL), which replicate writes without it: " +
			"they stay in the output after Cassandra expires them, unless the table's TTL expires them (give the table the Cassandra table's TTL); " +
			"the summary counts them")
	}
}

// repeatWindow is how many messages before its start offset a worker reads to know the
// connector's commit log positions they reached (kafka.Config.SeedRepeats).
const repeatWindow = 10000

// seedRepeats reads the last repeatWindow messages before offset (what the partition's previous
// owner applied) into the decoder, so that a run of events Debezium's Cassandra connector
// publishes again after them is skipped as it would have been by that owner. It is best
// effort: a failure is logged, and the worker goes on.
func (w *partWorker) seedRepeats(ctx context.Context, offset int64) {
	if !w.dec.SkipRepeats || w.r.cfg.Kafka.Format != kafka.FormatDebezium || offset <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	from := max(0, offset-repeatWindow)
	if err := w.r.cfg.Kafka.SeedRepeats(ctx, w.r.dialer, w.partition, from, offset, w.dec); err != nil {
		w.log.Warn("could not read the messages before the start offset: an event the connector publishes again after them would be applied again",
			zap.Int64("offset", offset), zap.Error(err))
	}
}

// read runs the partition's read from offset on pipeline's engine until wctx ends or the read
// fails: the source (kafka.PartitionSource) fetches the messages and decodes them into changes,
// and the engine's one worker (a partition is applied in order; Queue 0) gives each batch with
// changes to apply, in offset order, once the high watermark is noted (a batch without changes
// only moves the partition's lag). cfg brings the cut (Cut, Every) and the engine is set in
// w.eng before it runs, for the worker's CutAfter. wctx's end for a rebalance or a stop is the
// engine's Stop: what was read is applied (the caller then commits it); for another cause
// (another worker failed), as on a hard stop (hard cancelled), the read is cancelled at once.
// err is a failure of apply or of the cut, else the cancellation (the partition named); a
// fetch error is left in the outcome's SourceErr, for the caller to keep what was read first.
func (w *partWorker) read(wctx, hard context.Context, offset int64, cfg pipeline.EngineConfig,
	apply func(ctx context.Context, d *kafka.Decoded) error) (pipeline.Outcome, error) {
	r := w.r
	ctx, cancel := context.WithCancelCause(hard)
	defer cancel(nil)
	unwatch := context.AfterFunc(wctx, func() {
		if cause := context.Cause(wctx); !gracefulEnd(cause) {
			cancel(cause)
		}
	})
	defer unwatch()
	cfg.Source = &kafka.PartitionSource{Config: &r.cfg.Kafka, Dialer: r.dialer, Partition: w.partition, Offset: offset, Decoder: w.dec,
		Fetch: kafka.FetchOptions{Logger: w.log, Gap: r.gap(hard, w.partition, w.log), BatchLen: w.fetchLen}}
	cfg.Workers, cfg.Queue, cfg.Stop = 1, 0, wctx.Done()
	cfg.NewWorker = func(int) (func(context.Context, *pipeline.Job) error, func()) { return w.step(apply), nil }
	w.eng = pipeline.NewEngine(cfg)
	o, err := w.eng.Run(ctx)
	if err == nil && o.Cancelled != nil {
		err = fmt.Errorf("partition %d: %w", w.partition, o.Cancelled)
	}
	var past *kafka.PastEndError
	if errors.As(o.SourceErr, &past) {
		// the same command stops there again: say what to do instead
		o.SourceErr = fmt.Errorf("%w.\nThat offset is the consumer group's committed one (or the next one of the partition's last roll in --out's manifest.json), "+
			"taken from the topic's earlier log. Check what the target holds, then replicate the topic with a new consumer group (group=), "+
			"into a new --out for files: a new group reads the partition from its first offset", o.SourceErr)
	}
	return o, err
}

// step is the engine worker's per-batch function: the high watermark noted, a batch with changes,
// or one that moves the position past offsets without messages (a transaction's marker), goes to
// apply; one without either (a fetch that found nothing new) moves the partition's lag only.
func (w *partWorker) step(apply func(context.Context, *kafka.Decoded) error) func(context.Context, *pipeline.Job) error {
	return func(ctx context.Context, j *pipeline.Job) error {
		d := j.Batch.Payload.(*kafka.Decoded)
		if d.HighWaterMark > 0 {
			w.hwm = d.HighWaterMark
		}
		if len(d.Changes) == 0 && (d.Next <= w.pos || w.pos < 0) {
			next := int64(-1)
			if w.pos < 0 && d.Next > 0 {
				w.pos, next = d.Next, d.Next // where a start at the first or the last offset resolved to
			}
			w.r.metrics.position(w.partition, next, d.HighWaterMark)
			return nil
		}
		return apply(ctx, d)
	}
}

// gracefulEnd tells whether a worker's context ended for a rebalance or a stop, after which it
// commits what it read.
func gracefulEnd(cause error) bool { return cause == errGenerationEnded || cause == errStop }

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

// commitKafka commits off, the offset after what is durable or applied, to the partition's group
// offset. A refused commit is counted and logged with what happens next (then); the caller tries
// it again later.
func (w *partWorker) commitKafka(off int64, then string) bool {
	m := w.r.metrics
	if err := w.commit(w.partition, off); err != nil {
		m.CommitErrors.Add(1)
		w.log.Warn("offset commit failed: "+then, zap.Int64("offset", off), zap.Error(err))
		return false
	}
	w.kafkaOff = off
	m.OffsetCommits.Add(1)
	m.committed(w.partition, off)
	return true
}
