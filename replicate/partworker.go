package replicate

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// partWorker is what both kinds of worker (files and SQL) hold for their partition: its stream,
// the offset commit (timed), a logger naming it, the decoder and evaluator its messages go
// through, and the change -> operations step (operations) with what it needs.
type partWorker struct {
	r         *Replicator
	partition int
	stream    string
	commit    func(partition int, offset int64) error
	log       *zap.Logger
	dec       *kafka.Decoder
	ev        *transform.Evaluator
	batch     pipeline.Batch
	changes   []kafka.Change // the SQL worker's batch, one per message
	rec       pipeline.Record
	saltWarn  bool
	caps      outputCaps
	rows      rowSlab     // the operations' rows
	opBuf     []operation // one change's operations
}

// newPartWorker returns the partition's worker state for an output that can hold caps; its
// operations' rows come from slabs of chunk rows.
func (r *Replicator) newPartWorker(partition int, commit func(int, int64) error, caps outputCaps, chunk int) partWorker {
	w := partWorker{
		r:         r,
		partition: partition,
		stream:    kafka.Stream(r.cfg.Kafka.Topic, partition),
		commit: func(p int, off int64) error {
			defer observeSince(r.metrics.offsetSeconds, time.Now())
			return commit(p, off)
		},
		log:  r.log.With(zap.Int("partition", partition)),
		ev:   r.cfg.Program.NewEvaluator(),
		caps: caps,
		rows: rowSlab{n: len(r.target.Columns), chunk: chunk},
	}
	w.dec, _ = kafka.NewDecoder(r.cfg.Kafka, r.cfg.Program.Source()) // validated by New
	w.dec.SkipRepeats = true                                         // one partition's messages, in order
	w.batch = pipeline.Batch{Stream: w.stream, SaltOrigin: true}
	return w
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

// startFetch starts fetching partition from offset for a worker until hard ends or the
// fetcher's Stop.
func (r *Replicator) startFetch(hard context.Context, partition int, offset int64, log *zap.Logger) *kafka.Fetcher {
	return r.cfg.Kafka.StartFetch(hard, r.dialer, partition, offset, kafka.FetchOptions{Logger: log, Gap: r.gap(hard, partition, log)})
}

// fetchEnded is why a worker's fetch closed its channel: hard's error when it ended, else the
// fetcher's (never nil).
func fetchEnded(f *kafka.Fetcher, hard context.Context, partition int) error {
	ferr := f.Err()
	if err := hard.Err(); err != nil {
		return err
	}
	if ferr == nil {
		return fmt.Errorf("partition %d: the fetcher stopped", partition)
	}
	return ferr
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
