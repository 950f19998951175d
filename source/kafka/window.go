package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/rekey/rekey/pipeline"
)

// Window is a bounded, non-committing source over the messages a topic retains: from the
// earliest offsets (Start "earliest") or ending at the latest ones ("latest"), at most Max
// messages in all (shared among partitions in proportion to what each retains), never past the
// end offsets seen when the window was opened. It never joins a consumer group and never commits
// offsets, so `rekey report` and `rekey migrate` can look at a topic that is being replicated.
//
// Each partition is one stream ("topic/3") whose batches follow offset order; the records' Seq is
// the offset and the batches set SaltOrigin. Upserts become records; a message that cannot be
// decoded becomes a record with Err (code parse or type), and so does a delete (code "delete":
// report and migrate write rows, `rekey replicate` applies deletes). An update that moves a row
// to a new key yields only the new row here.
//
// It implements pipeline.Source, pipeline.Sizer and pipeline.Sampler.
type Window struct {
	cfg    Config
	schema pipeline.SourceSchema
	log    *zap.Logger
	dialer *kafkago.Dialer
	parts  []windowPart
	total  int64
	// retained is the messages the topic held when the window was opened (total when max= does
	// not cut it short)
	retained int64

	spansOnce sync.Once
	spans     map[string]windowPart // PartitionWindow's

	// Table is the mapping's source.table: the table of a topic of Debezium change events to
	// read; the events of other tables are skipped (Batch.Skipped) and logged by table. "": the
	// first event's table is the one, and an event of another table fails the read.
	Table  string
	tables TableSeen // the first event's table, shared by the partitions' decoders
	// unrecordedAsk: the checkpoint resumed (AdoptIdentity) is an earlier rekey's, which did not
	// record start= and max=, so Identity leaves them out
	unrecordedAsk bool
	heldMu        sync.Mutex
	held          []HeldBack // Run's partitions an open transaction held back, in the order they ended

	// BatchSize is the number of records per batch (default 1024).
	BatchSize int
	// SampleBytes bounds the messages Sample holds (default 64 MiB): each run of a partition's
	// sample stops at its share, at least one message.
	SampleBytes int64
	// Idle ends a partition's stream when no message arrives for this long before its end
	// offset is reached. The fetch's position passes transaction markers and the offsets
	// compaction removed, so the stream ends there without waiting; Idle ends it (EndHeldBack),
	// or warns that it waits, when fetches are answered without getting further: an open
	// transaction holds back the rest. Fetches
	// not answered (a leader moving, a broker restarting) are retried, and the stream waits for
	// them; the time the window's consumer takes to take its batches does not count either.
	// Default 5s.
	Idle time.Duration
	// EndHeldBack ends a partition's stream held back by an open transaction after Idle, the
	// offsets it did not reach in HeldBack (a report judges what it read, and says what it did
	// not). Otherwise the stream waits until the transaction ends: every message of the window
	// is read (migrate, verify).
	EndHeldBack bool
	// Timestamps makes every batch carry its messages' timestamps (Batch.WriteTimes, epoch ms;
	// unknown for a message without one), for rekey report's write order.
	Timestamps bool
}

type windowPart struct {
	partition  int
	start, end int64 // [start, end)
}

var (
	_ pipeline.Source       = (*Window)(nil)
	_ pipeline.Sizer        = (*Window)(nil)
	_ pipeline.Sampler      = (*Window)(nil)
	_ pipeline.BatchSampler = (*Window)(nil)
)

// NewWindow validates cfg, looks up the topic's partitions and offsets and fixes the window.
func NewWindow(ctx context.Context, cfg Config, schema pipeline.SourceSchema, logger *zap.Logger) (*Window, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := NewDecoder(cfg, schema); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	dialer, err := cfg.Dialer()
	if err != nil {
		return nil, err
	}
	offs, err := cfg.Offsets(ctx)
	if err != nil {
		return nil, err
	}
	w := &Window{cfg: cfg, schema: schema, log: logger, dialer: dialer, BatchSize: 1024, Idle: 5 * time.Second}
	w.parts, w.total = windowParts(offs, cfg.Start, cfg.Max)
	for _, o := range offs {
		w.retained += o.End - o.First
	}
	logger.Info("kafka window", zap.String("topic", cfg.Topic), zap.Int("partitions", len(offs)),
		zap.String("start", cfg.Start), zap.Int64("messages", w.total))
	return w, nil
}

// windowParts splits max messages among partitions in proportion to what each retains.
func windowParts(offs []PartitionOffsets, start string, max int64) ([]windowPart, int64) {
	var avail int64
	for _, o := range offs {
		avail += o.End - o.First
	}
	parts := make([]windowPart, 0, len(offs))
	var total int64
	for i, o := range offs {
		n := o.End - o.First
		if max > 0 && max < avail {
			// largest-remainder-free split: floor shares, the last partitions take the rest
			// in 128 bits: max × n passes int64 for partitions of a few billion messages; the
			// quotient is below n, as max is below avail
			hi, lo := bits.Mul64(uint64(max), uint64(n))
			q, _ := bits.Div64(hi, lo, uint64(avail))
			share := int64(q)
			if i == len(offs)-1 {
				share = max - total
				if share > n {
					share = n
				}
			}
			n = share
		}
		p := windowPart{partition: o.Partition, start: o.First, end: o.First + n}
		if start == StartLatest {
			p.start, p.end = o.End-n, o.End
		}
		parts = append(parts, p)
		total += n
	}
	return parts, total
}

// PartitionWindow is the offsets [first, end) the window reads of a stream ("topic/3"). It is
// called for every record of a report: a map built once.
func (w *Window) PartitionWindow(stream string) (first, end int64, ok bool) {
	w.spansOnce.Do(func() {
		w.spans = make(map[string]windowPart, len(w.parts))
		for _, p := range w.parts {
			w.spans[Stream(w.cfg.Topic, p.partition)] = p
		}
	})
	p, ok := w.spans[stream]
	return p.start, p.end, ok
}

// EstimatedRows is the number of messages in the window.
func (w *Window) EstimatedRows() int64 { return w.total }

// Part says whether max= cut the window short of the messages the topic retains: how many it
// retains (0 when the window reads them all), and whether the window reads the newest of them
// (start=latest) or the oldest.
func (w *Window) Part() (retained int64, newest bool) {
	if w.total >= w.retained {
		return 0, false
	}
	return w.retained, w.cfg.Start == StartLatest
}

// HeldBack is the part of a partition's window a read did not reach: an open transaction held
// back the messages from offset From on, up to the window's End (exclusive).
type HeldBack struct {
	Stream    string
	From, End int64
}

// HeldBack lists the partitions whose window Run ended short of its end offset, waiting on an
// open transaction (Idle): what it read is part of the window.
func (w *Window) HeldBack() []HeldBack {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	return slices.Clone(w.held)
}

// errHeldBack ends a partition's read that waited Idle on an open transaction.
var errHeldBack = errors.New("kafka: an open transaction holds back the rest of the partition")

// Run reads every partition's window and sends its batches to out.
func (w *Window) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	// every cursor is checked before any partition is read: a read started before a bad cursor
	// was found would go on sending on out after Run returned its error
	type start struct {
		p    windowPart
		from int64
	}
	var starts []start
	for _, p := range w.parts {
		stream := Stream(w.cfg.Topic, p.partition)
		from := p.start
		if st, ok := resume[stream]; ok {
			if st.Done {
				continue
			}
			if st.Cursor != "" {
				off, err := strconv.ParseInt(st.Cursor, 10, 64)
				if err != nil || off < p.start {
					return fmt.Errorf("kafka: stream %s: bad resume cursor %q (the window starts at %d: were the messages deleted by retention?)", stream, st.Cursor, p.start)
				}
				from = off
			}
		}
		starts = append(starts, start{p, from})
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, s := range starts {
		g.Go(func() error { return w.runPart(ctx, s.p, s.from, out) })
	}
	return g.Wait()
}

func (w *Window) runPart(ctx context.Context, p windowPart, from int64, out chan<- pipeline.Batch) error {
	stream := Stream(w.cfg.Topic, p.partition)
	send := func(b pipeline.Batch) error {
		select {
		case out <- b:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if from >= p.end {
		return send(pipeline.Batch{Stream: stream, Cursor: strconv.FormatInt(p.end, 10), Done: true, SaltOrigin: true})
	}
	dec, err := w.decoder()
	if err != nil {
		return err
	}
	dec.Logger = w.log.With(zap.String("stream", stream))
	var recs []pipeline.Record
	var times []int64
	var skipped int64
	others := map[string]int64{} // the events of other tables than Table, by table
	next := from
	flush := func(done bool) error {
		b := pipeline.Batch{Stream: stream, Records: recs, Skipped: skipped, Cursor: strconv.FormatInt(next, 10), Done: done, SaltOrigin: true, WriteTimes: times}
		recs, times, skipped = nil, nil, 0
		return send(b)
	}
	err = w.read(ctx, p.partition, from, p.end, w.EndHeldBack, func(m *kafkago.Message) error {
		r, other, err := w.record(dec, m)
		if err != nil {
			return err
		}
		next = m.Offset + 1
		if other != "" {
			if others[other]++; others[other] == 1 {
				w.log.Warn("the topic carries events of another table than the mapping's source.table: they are skipped (counted as rows skipped)",
					zap.String("stream", stream), zap.String("table", other), zap.String("source_table", w.Table), zap.Int64("offset", m.Offset))
			}
			skipped++
		} else {
			recs = append(recs, r)
			if w.Timestamps {
				times = append(times, messageTime(m))
			}
		}
		if len(recs) >= w.BatchSize || skipped >= int64(w.BatchSize) {
			return flush(false)
		}
		return nil
	}, func() error {
		if len(recs) > 0 || skipped > 0 {
			return flush(false)
		}
		return nil
	})
	if errors.Is(err, errHeldBack) {
		w.heldMu.Lock()
		w.held = append(w.held, HeldBack{Stream: stream, From: next, End: p.end})
		w.heldMu.Unlock()
		err = nil
	}
	if err != nil {
		return err
	}
	for t, n := range others {
		w.log.Info("events of another table skipped", zap.String("stream", stream), zap.String("table", t), zap.Int64("events", n))
	}
	w.log.Debug("partition window read", zap.String("stream", stream), zap.Int64("offset", next))
	return flush(true)
}

// decoder is a decoder of one of the window's partitions.
func (w *Window) decoder() (*Decoder, error) {
	dec, err := NewDecoder(w.cfg, w.schema)
	if err != nil {
		return nil, err
	}
	dec.Table, dec.Tables = w.Table, &w.tables
	return dec, nil
}

// record turns a message into the window's record: the upsert, or an error. An event of another
// table than the window's gives its table (other), or the error that ends the read when the
// mapping states none.
func (w *Window) record(dec *Decoder, m *kafkago.Message) (r pipeline.Record, other string, err error) {
	changes := dec.Decode(nil, m.Key, m.Value)
	r = pipeline.Record{Seq: m.Offset}
	c := changes[0]
	if c.TableErr != nil {
		return r, "", fmt.Errorf("kafka: stream %s offset %d: %w; then run again", Stream(w.cfg.Topic, m.Partition), m.Offset, c.TableErr)
	}
	if c.OtherTable != "" {
		return r, c.OtherTable, nil
	}
	switch {
	case c.Err != nil:
		r.Err = c.Err
	case c.Op == OpDelete:
		r.Err = &pipeline.RowError{Code: CodeDelete, Message: "a delete (tombstone, Debezium op d or a flattened row's __deleted \"true\"): report and migrate write rows only, rekey replicate applies deletes"}
	case c.Op == OpRangeDelete:
		r.Err = &pipeline.RowError{Code: pipeline.CodeRangeTombstone, Field: "op", Message: "a Cassandra range tombstone (op r): report and migrate write rows only, rekey replicate into a table (--out mysql://... or lindorm://...) applies it"}
	case c.Set != nil:
		r.Err = &pipeline.RowError{Code: pipeline.CodePartialUpdate, Field: "after", Message: "a change that sets some columns only (a Cassandra UPDATE, a Debezium event lacking a column or its value) is not a whole row: report and migrate write rows only, rekey replicate into a table (--out mysql://... or lindorm://...) updates those columns"}
	default:
		r.Values = c.Values
		return r, "", nil
	}
	r.Raw = rawMessage(m)
	return r, "", nil
}

// rawMessage is a message as rejects.jsonl shows it: the value, or the key of a tombstone.
func rawMessage(m *kafkago.Message) string {
	if len(m.Value) == 0 {
		return "key=" + string(m.Key) + " value=null"
	}
	const limit = 64 << 10
	if len(m.Value) > limit {
		return string(m.Value[:limit]) + "...(truncated)"
	}
	return string(m.Value)
}

// read calls fn with every message of a partition in [from, end), and idle when no message is
// ready (a good moment to flush). It stops at end, or, with endHeld, after Idle without a message
// while fetches are answered (errHeldBack: an open transaction holds the rest back); without, it
// waits there for the transaction to end.
func (w *Window) read(ctx context.Context, partition int, from, end int64, endHeld bool, fn func(*kafkago.Message) error, idle func() error) error {
	// the batches' messages are not recycled: the records sent on alias them
	stream := Stream(w.cfg.Topic, partition)
	f := w.cfg.StartFetch(ctx, w.dialer, partition, from, FetchOptions{Logger: w.log, Gap: func(next, first int64) error {
		// the window's bounds were fixed when it opened (or in a checkpoint): read without them,
		// it would end as if whole
		return fmt.Errorf("kafka: stream %s: messages %d to %d of the window were deleted (retention) before they were read: the window cannot be read whole; "+
			"run again without --resume (a new window starts at the first message the topic retains), or raise the topic's retention while it is read", stream, next, min(first, end)-1)
	}})
	defer f.Stop()
	timer := time.NewTimer(w.Idle)
	defer timer.Stop()
	deadline := time.Now().Add(w.Idle)
	// handed moves the deadline on by the time since t0, spent handing messages on: a consumer
	// slow to take them (a slow target) is no time without a message from the partition
	handed := func(t0 time.Time) {
		deadline = deadline.Add(time.Since(t0))
		timer.Reset(time.Until(deadline))
	}
	// answered says that a fetch was answered without getting further since the deadline was
	// set: what is left is held back (an open transaction), not out of reach
	answered, warned := false, false
	for {
		var b FetchBatch
		var ok bool
		select {
		case b, ok = <-f.C:
		case <-timer.C:
			if !answered {
				// the fetch retries: the partition's messages are still to read
				if !warned {
					w.log.Warn("no fetch of the partition answered for a while: waiting for its leader",
						zap.String("stream", stream), zap.Int64("offset", from), zap.Duration("waited", w.Idle))
					warned = true
				}
				deadline = time.Now().Add(w.Idle)
				timer.Reset(w.Idle)
				continue
			}
			if !endHeld {
				// the messages past the transaction's start are the window's: wait for it to end
				if !warned {
					w.log.Warn("an open transaction holds back the partition's messages up to the window's end offset: waiting until it commits or aborts "+
						"(the broker aborts a transaction left open past its producer's transaction.timeout.ms)",
						zap.String("stream", stream), zap.Int64("offset", from), zap.Int64("end", end), zap.Duration("waited", w.Idle))
					warned = true
				}
				deadline = time.Now().Add(w.Idle)
				timer.Reset(w.Idle)
				continue
			}
			w.log.Warn("nothing read for a while before the window's end offset: the partition's window ends here, without the messages up to its end "+
				"(an open transaction holds them back until it commits or aborts); run again once it has ended",
				zap.String("stream", stream), zap.Int64("offset", from), zap.Int64("end", end), zap.Duration("waited", w.Idle))
			return errHeldBack
		case <-ctx.Done():
			return ctx.Err()
		}
		if !ok {
			if err := f.Err(); err != nil {
				return err
			}
			return ctx.Err()
		}
		t0 := time.Now()
		if len(b.Messages) == 0 {
			if b.Next >= end {
				return nil // the window ends with offsets that hold no message (a transaction's marker)
			}
			if b.Next > from {
				// the fetch got further, past offsets without messages (an aborted transaction's
				// batches, markers): the partition is not idle
				from, deadline, answered = b.Next, t0.Add(w.Idle), false
			} else {
				answered = true
			}
			warned = false
			if err := idle(); err != nil {
				return err
			}
			handed(t0)
			continue
		}
		deadline, answered, warned = t0.Add(w.Idle), false, false
		for i := range b.Messages {
			m := &b.Messages[i]
			if m.Offset >= end {
				return nil
			}
			if err := fn(m); err != nil {
				return err
			}
			from = m.Offset + 1
		}
		if from = max(from, b.Next); from >= end {
			return nil
		}
		if len(f.C) == 0 {
			if err := idle(); err != nil {
				return err
			}
		}
		handed(t0)
	}
}

// Sample reads up to n records spread over the window: in each partition, runs of consecutive
// messages starting at evenly spaced offsets. Deletes are left out; records that fail to decode
// are included with Err set.
func (w *Window) Sample(ctx context.Context, n int) ([]pipeline.Record, error) {
	bs, err := w.SampleBatches(ctx, n)
	return pipeline.SampleRecords(bs), err
}

// SampleBatches is Sample with one batch per partition (its stream, offsets as Seq, SaltOrigin),
// carrying the messages' timestamps when Timestamps asks for them.
func (w *Window) SampleBatches(ctx context.Context, n int) ([]pipeline.Batch, error) {
	if n <= 0 || w.total == 0 {
		return nil, nil
	}
	var mu sync.Mutex
	var out []pipeline.Batch
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, p := range w.parts {
		size := p.end - p.start
		if size <= 0 {
			continue
		}
		quota := int64(n) * size / w.total
		if quota < 1 {
			quota = 1
		}
		if quota > size {
			quota = size
		}
		runs := min(quota, 16)
		// each run holds its share of the partition's share of SampleBytes, at least a message
		runBytes := max(1, w.sampleBytes()/runs*size/w.total)
		g.Go(func() error {
			dec, err := w.decoder()
			if err != nil {
				return err
			}
			b := pipeline.Batch{Stream: Stream(w.cfg.Topic, p.partition), SaltOrigin: true}
			for j := int64(0); j < runs; j++ {
				// run j takes its part of the quota: the runs take the quota in all
				from := p.start + j*size/runs
				end := min(from+quota*(j+1)/runs-quota*j/runs, p.end)
				var held int64
				err := w.read(ctx, p.partition, from, end, true, func(m *kafkago.Message) error { // a sample's run ends at a transaction
					if held >= runBytes {
						return errRunFull
					}
					held += int64(len(m.Key) + len(m.Value))
					r, other, err := w.record(dec, m)
					if err != nil {
						return err
					}
					if other == "" && (r.Err == nil || r.Err.Code != CodeDelete) {
						b.Records = append(b.Records, r)
						if w.Timestamps {
							b.WriteTimes = append(b.WriteTimes, messageTime(m))
						}
					}
					return nil
				}, func() error { return nil })
				if err != nil && !errors.Is(err, errRunFull) && !errors.Is(err, errHeldBack) {
					return err
				}
			}
			mu.Lock()
			out = append(out, b)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// partitions in their window's order, so that the sample does not depend on scheduling
	slices.SortFunc(out, func(a, b pipeline.Batch) int { return strings.Compare(a.Stream, b.Stream) })
	rows := 0
	for i := range out {
		b := &out[i]
		if k := n - rows; len(b.Records) > k {
			b.Records = b.Records[:k]
			if b.WriteTimes != nil {
				b.WriteTimes = b.WriteTimes[:k]
			}
		}
		rows += len(b.Records)
	}
	return out, nil
}

// errRunFull ends a run of a sample that holds its share of SampleBytes.
var errRunFull = errors.New("kafka: the sample's run holds its share")

// defaultSampleBytes is Window.SampleBytes's default.
const defaultSampleBytes = 64 << 20

// sampleBytes is SampleBytes or its default.
func (w *Window) sampleBytes() int64 {
	if w.SampleBytes > 0 {
		return w.SampleBytes
	}
	return defaultSampleBytes
}

// messageTime is a message's timestamp in epoch ms, math.MinInt64 when it has none.
func messageTime(m *kafkago.Message) int64 {
	if m.Time.IsZero() || m.Time.UnixMilli() <= 0 {
		return math.MinInt64
	}
	return m.Time.UnixMilli()
}
