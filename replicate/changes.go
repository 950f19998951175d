package replicate

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// ChangesConfig is a read of a topic's changes as replicate applies them, for `rekey verify` of
// a replication: each message becomes the upserts and deletes replicate makes of it (the same
// decoding and mapping, through the SQL worker's own translation), up to the offsets it
// committed.
type ChangesConfig struct {
	Kafka   kafka.Config
	Program *transform.Program
	// End is, per partition, the offset to stop before: the next offset replicate committed. A
	// partition End does not name is not read (replicate applied none of its messages).
	End map[int]int64
	// Every change is given as a table applies it, also to verify a folder output, which
	// refuses the changes that set some columns only and the range deletes: what the source
	// holds after them is what the output is compared with.
	Logger *zap.Logger
}

// ChangeBatch is a run of one partition's messages, in offset order, as changes. Ops and their
// values are valid until the callback returns.
type ChangeBatch struct {
	Partition int
	Messages  int64          // messages read
	Ops       []sqlsink.Op   // the changes, in message order
	Offsets   []int64        // Ops[i] comes from the message at Offsets[i]
	Rejects   map[string]int // messages rejected, by code (a message counts once), but Skipped's
	// Skipped are the messages rejected, by code, whose change no target can hold (a truncate, a
	// range delete the table's key does not make one range): the target misses what the source did.
	Skipped map[string]int
	// FilesRefuse counts, by the code a folder output rejects them with, the Ops that bulk-load
	// files cannot hold (a change of some columns, a range or partition delete).
	FilesRefuse map[string]int
	// OtherTable counts the messages of other tables than the mapping's source.table: no change
	OtherTable int
	Range      PartitionWindow // the partition's window (the same in each of its batches)
}

// skippedCodes are the reject codes of changes no target applies, unlike a row the mapping
// cannot take (a parse or type error), which a migration rejects too. A range delete after a
// newer row of its mutation is one: the table misses the rows it deleted.
var skippedCodes = map[string]bool{kafka.CodeUnsupported: true, pipeline.CodeRangeTombstone: true, pipeline.CodePartialUpdate: true,
	CodeRangeAfterNewerWrite: true, CodePartialMove: true,
	CodeRegularKeyColumn: true}

// PartitionWindow is the offsets of a partition a change read covers: [From, End).
type PartitionWindow struct {
	Partition int
	From, End int64
	// Deleted is the messages before From that replicate may have applied but the topic no
	// longer retains (retention): their changes cannot be read.
	Deleted int64
}

// ChangeWindows returns the window of each partition End names: from its first retained offset
// up to End.
func ChangeWindows(ctx context.Context, cfg ChangesConfig) ([]PartitionWindow, error) {
	offs, err := cfg.Kafka.Offsets(ctx)
	if err != nil {
		return nil, err
	}
	var out []PartitionWindow
	for _, o := range offs {
		end, ok := cfg.End[o.Partition]
		if !ok || end <= 0 {
			continue
		}
		if end > o.End {
			return nil, fmt.Errorf("kafka: partition %s: replicate committed offset %d, past the partition's end %d: is this the topic it replicated?", kafka.Stream(cfg.Kafka.Topic, o.Partition), end, o.End)
		}
		w := PartitionWindow{Partition: o.Partition, From: min(o.First, end), End: end}
		w.Deleted = w.From
		out = append(out, w)
	}
	have := map[int]bool{}
	for _, o := range offs {
		have[o.Partition] = true
	}
	for p := range cfg.End {
		if !have[p] {
			return nil, fmt.Errorf("kafka: replicate committed offsets of partition %d, which topic %s does not have: is this the topic it replicated?", p, cfg.Kafka.Topic)
		}
	}
	return out, nil
}

// ReadChanges reads the windows (ChangeWindows) and calls fn with each batch, from one
// goroutine per partition: fn must be safe for concurrent use.
func ReadChanges(ctx context.Context, cfg ChangesConfig, windows []PartitionWindow, fn func(*ChangeBatch) error) error {
	if err := cfg.Kafka.Validate(); err != nil {
		return err
	}
	if _, err := kafka.NewDecoder(cfg.Kafka, cfg.Program.Source()); err != nil {
		return err
	}
	dialer, err := cfg.Kafka.Dialer()
	if err != nil {
		return err
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	r := changesReplicator(cfg, log)
	r.dialer = dialer
	g, ctx := errgroup.WithContext(ctx)
	for _, win := range windows {
		if win.From >= win.End {
			continue
		}
		g.Go(func() error { return r.readChanges(ctx, win, fn) })
	}
	return g.Wait()
}

// changesReplicator is a replicator without an output: its SQL worker's translation of messages
// is what ReadChanges reuses (its metrics count what the translation counts: repeats, other
// tables' events).
func changesReplicator(cfg ChangesConfig, log *zap.Logger) *Replicator {
	return &Replicator{cfg: Config{Kafka: cfg.Kafka, Program: cfg.Program}, log: log, target: cfg.Program.Target(), metrics: &Metrics{}}
}

// readChanges reads win on pipeline's engine: its source (kafka.PartitionSource, bounded by the
// window's end) fetches and decodes, and one worker turns each batch's changes into ops, in
// offset order, for fn.
func (r *Replicator) readChanges(ctx context.Context, win PartitionWindow, fn func(*ChangeBatch) error) error {
	w := &sqlWorker{partWorker: r.newSQLPartWorker(win.Partition, nil)}
	w.seedRepeats(ctx, win.From) // as replicate did where it started
	src := &kafka.PartitionSource{Config: &r.cfg.Kafka, Dialer: r.dialer, Partition: win.Partition, Offset: win.From, End: win.End, Decoder: w.dec,
		Fetch: kafka.FetchOptions{Logger: w.log, Gap: func(next, first int64) error {
			return fmt.Errorf("%w: verify cannot read the changes replicate applied from them", &kafka.GapError{Topic: r.cfg.Kafka.Topic, Partition: win.Partition, Next: next, First: first})
		}}}
	next := win.From
	step := func(_ context.Context, j *pipeline.Job) error {
		d := j.Batch.Payload.(*kafka.Decoded)
		if len(d.Changes) == 0 {
			return nil
		}
		next = d.Changes[len(d.Changes)-1].Offset + 1
		defer w.ev.Reset()
		return fn(w.changeBatch(d.Changes, win))
	}
	o, err := pipeline.NewEngine(pipeline.EngineConfig{Source: src, Workers: 1,
		NewWorker: func(int) (func(context.Context, *pipeline.Job) error, func()) { return step, nil }}).Run(ctx)
	if err != nil {
		return err // fn's
	}
	if err = o.SourceErr; err == nil {
		err = o.Cancelled
	}
	if err != nil {
		return fmt.Errorf("partition %d at offset %d (reading up to %d): %w", win.Partition, next, win.End, err)
	}
	return nil
}

// changeBatch turns changes into ops as sqlWorker.apply does, without applying them.
func (w *sqlWorker) changeBatch(changes []kafka.Change, win PartitionWindow) *ChangeBatch {
	w.rows.drop() // the ops' rows stay the batch's
	w.collect(changes)
	b := &ChangeBatch{Partition: w.partition, Messages: int64(len(changes)), Rejects: map[string]int{}, Skipped: map[string]int{},
		FilesRefuse: map[string]int{}, Range: win}
	for k, op := range w.ops {
		i := w.opMsg[k]
		b.Ops = append(b.Ops, op)
		b.Offsets = append(b.Offsets, changes[i].Offset)
		switch {
		case op.Range != nil:
			b.FilesRefuse[pipeline.CodeRangeTombstone]++
		case op.Set != nil && !op.Delete:
			b.FilesRefuse[pipeline.CodePartialUpdate]++
		}
	}
	for i := range changes {
		if changes[i].OtherTable != "" {
			b.OtherTable++
		}
	}
	for _, rj := range w.rejects {
		if skippedCodes[rj.Code] {
			b.Skipped[rj.Code]++
		} else {
			b.Rejects[rj.Code]++
		}
	}
	return b
}
