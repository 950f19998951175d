package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"
)

// FetchOptions tune FetchPartition.
type FetchOptions struct {
	MaxBytes int           // bytes per fetch (default 16 MiB)
	MaxWait  time.Duration // how long the broker holds a fetch that finds no data (default 250ms)
	BatchLen int           // messages per FetchBatch at most (default 1024)
	// Buffer is how many fetched batches StartFetch's channel holds ahead of the consumer
	// (default 4).
	Buffer int
	// Free, when set, returns batches' message slices for reuse: the consumer sends a slice
	// back (cleared) once nothing refers to its messages any more.
	Free chan []kafkago.Message
	// Gap is called when the next offset to read is below the partition's first retained one:
	// the messages from next to first were deleted (retention, DeleteRecords) before they were
	// read. Its error ends the fetch; nil continues at first. A nil Gap continues with a warning
	// (a window reads what the topic retains).
	Gap    func(next, first int64) error
	Logger *zap.Logger
}

// GapError says that messages of a partition were deleted before they were read.
type GapError struct {
	Topic     string
	Partition int
	Next      int64 // the next offset to read (the committed one)
	First     int64 // the partition's earliest available offset
}

func (e *GapError) Error() string {
	return fmt.Sprintf("topic %s partition %d: messages %d to %d were deleted (retention) before they were read: committed next offset %d, earliest available offset %d (%d messages lost)",
		e.Topic, e.Partition, e.Next, e.First-1, e.Next, e.First, e.First-e.Next)
}

// PastEndError says that the offset a partition's read starts at is past the partition's end
// offset: it was not taken from the log the partition holds now (the topic was deleted and
// created again under the same name, or an unclean leader election truncated the log). Read
// on from it once the partition reached it, the messages below it would be skipped.
type PastEndError struct {
	Topic     string
	Partition int
	Next      int64 // the offset to read from (a consumer group's committed one)
	End       int64 // the partition's end offset (high watermark)
}

func (e *PastEndError) Error() string {
	return fmt.Sprintf("topic %s partition %d: the offset to read from, %d, is past the partition's end offset %d: it was not taken from the log the partition holds "+
		"(was the topic deleted and created again, or its log truncated by an unclean leader election?); reading on from it would skip the messages from offset %d to %d",
		e.Topic, e.Partition, e.Next, e.End, e.End, e.Next-1)
}

// fetchResponseMargin is how long a fetch response may take to arrive after the broker's MaxWait.
const fetchResponseMargin = 30 * time.Second

// FetchBatch is a run of consecutive messages of one partition, in offset order, with the high
// watermark the broker reported and the fetch's position after it. An empty batch means a fetch
// found no new message.
type FetchBatch struct {
	Messages      []kafkago.Message
	HighWaterMark int64
	// Next is the offset the partition's next fetch starts at: past the batch's messages and past
	// the offsets read after them that hold none (transaction markers, an aborted transaction's
	// messages). A consumer that commits it, as Kafka's own consumer commits its position, is not
	// left one offset short of the end of a partition that ends with a marker.
	Next int64
}

// Before returns the batch without its messages at or past end.
func (b FetchBatch) Before(end int64) FetchBatch {
	for i := range b.Messages {
		if b.Messages[i].Offset >= end {
			b.Messages = b.Messages[:i]
			break
		}
	}
	b.Next = min(b.Next, end)
	return b
}

// DecodeBatch appends a fetched batch's changes to dst: one change per message, in offset order,
// with the message's offset and bytes. Their values alias the batch's messages and the decoder's
// arena: recycle the batch and reset the arena only once they are consumed.
func (d *Decoder) DecodeBatch(dst []Change, b FetchBatch) []Change {
	for i := range b.Messages {
		m := &b.Messages[i]
		dst = d.Decode(dst, m.Key, m.Value)
		ch := &dst[len(dst)-1]
		ch.Offset, ch.Key, ch.Value = m.Offset, m.Key, m.Value
	}
	return dst
}

// Fetcher reads one partition in the background (FetchPartition) for one consumer: batches
// arrive on C, which closes when the fetch ends (Err says why). The consumer hands a batch back
// with Recycle once nothing refers to its messages, so that its slice is reused.
type Fetcher struct {
	C      <-chan FetchBatch
	free   chan []kafkago.Message
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// StartFetch starts fetching partition from offset until ctx ends or Stop is called.
func (c *Config) StartFetch(ctx context.Context, dialer *kafkago.Dialer, partition int, offset int64, o FetchOptions) *Fetcher {
	fctx, cancel := context.WithCancel(ctx)
	if o.Buffer <= 0 {
		o.Buffer = 4
	}
	ch := make(chan FetchBatch, o.Buffer)
	f := &Fetcher{C: ch, free: make(chan []kafkago.Message, 8), cancel: cancel, done: make(chan struct{})}
	o.Free = f.free
	go func() {
		defer close(f.done)
		defer close(ch)
		f.err = c.FetchPartition(fctx, dialer, partition, offset, o, ch)
	}()
	return f
}

// Recycle hands a consumed batch's message slice back for the next batches.
func (f *Fetcher) Recycle(b FetchBatch) {
	if cap(b.Messages) < 1024 {
		return
	}
	clear(b.Messages)
	select {
	case f.free <- b.Messages[:0]:
	default:
	}
}

// Stop cancels the fetch and waits for it, dropping what it had read.
func (f *Fetcher) Stop() {
	f.cancel()
	for range f.C {
	}
	<-f.done
}

// Err waits for the fetch to end and returns FetchPartition's error: nil when its context ended
// or Stop was called.
func (f *Fetcher) Err() error {
	<-f.done
	return f.err
}

// FetchPartition reads one partition from offset (absolute, or kafka-go's FirstOffset /
// LastOffset) with kafka-go's connection API and sends the messages to out in batches, one
// channel operation per batch rather than per message (kafka-go's Reader hands messages over one
// by one). It never joins a group nor commits. Transient errors (leader moves, broker restarts,
// timeouts) are retried with backoff; an offset older than the partition's first one (deleted by
// retention) goes to o.Gap; an offset past the partition's end is a *PastEndError; a record
// batch that fails to read (CRC, decompression) is fetched once more. It returns nil when ctx
// ends, o.Gap's error, the *PastEndError, or the error of a batch that failed to read twice; out
// is never closed. A broker that refuses the client the topic (its ACLs) ends it with an error
// saying what to grant.
func (c *Config) FetchPartition(ctx context.Context, dialer *kafkago.Dialer, partition int, offset int64, o FetchOptions, out chan<- FetchBatch) error {
	f := newPartitionFetch(ctx, c, partition, offset, o, out)
	// stalled counts the connections in a row whose fetches failed before the read moved on: a
	// leader that moved fails one, a broker that fails the partition's every fetch all of them
	stalled := 0
	var unknownSince time.Time // when the brokers began to answer that they do not know the topic
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !sleep(ctx, backoff(attempt)) {
			return nil
		}
		conn, start, first, err := c.dialPartition(ctx, dialer, partition, f.offset)
		if err == nil && f.offset >= 0 && f.offset < first {
			if err := f.gap(f.offset, first); err != nil {
				conn.Close()
				return err
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var past *PastEndError
			if errors.As(err, &past) {
				return err
			}
			if refused(err) {
				return c.refusedError(partition, err)
			}
			if !errors.Is(err, kafkago.UnknownTopicOrPartition) {
				unknownSince = time.Time{}
			} else if unknownSince.IsZero() {
				unknownSince = time.Now()
			} else if time.Since(unknownSince) > topicGoneWait {
				return fmt.Errorf("kafka: %s: the brokers have not known the topic for %s: was it deleted? "+
					"(kafka-topics --describe --topic %s tells): %w", Stream(c.Topic, partition), topicGoneWait, c.Topic, err)
			}
			if errors.Is(err, kafkago.OffsetOutOfRange) {
				// retention moved the partition's first offset past it between two reads of
				// the offsets: the next dial sees the gap
				f.log.Debug("offset before the partition's first one, dialling again", zap.Int64("offset", f.offset))
				continue
			}
			if attempt == 1 || attempt%20 == 0 {
				f.log.Warn("kafka: cannot reach the partition leader, retrying", zap.Int("attempt", attempt), zap.Error(err))
			}
			continue
		}
		attempt = 0
		f.offset = start
		stop, readErr := f.read(conn)
		if stop {
			return readErr
		}
		if ctx.Err() != nil {
			return nil
		}
		if refused(readErr) {
			return c.refusedError(partition, readErr)
		}
		if f.offset > start {
			stalled = 0
		}
		if stalled++; stalled == 3 || stalled%20 == 0 {
			f.log.Warn("kafka: the partition's fetches fail at its leader and its read does not move on; reconnecting and retrying",
				zap.Int64("offset", f.offset), zap.Int("failures", stalled), zap.Error(readErr))
		} else {
			f.log.Debug("kafka: reconnecting to the partition leader", zap.Error(readErr))
		}
	}
}

// refused tells whether err is the broker refusing this client the topic (its ACLs): no retry
// can fix it, and Kafka's own consumer raises it to the application.
func refused(err error) bool {
	return errors.Is(err, kafkago.TopicAuthorizationFailed) || errors.Is(err, kafkago.ClusterAuthorizationFailed)
}

// refusedError is the error of a fetch the broker refuses: what to grant, and to whom.
func (c *Config) refusedError(partition int, err error) error {
	return fmt.Errorf("kafka: %s: the broker refuses to let this client read the topic: grant it Read and Describe on the topic "+
		"(kafka-acls --add --allow-principal %s --operation Read --operation Describe --topic %s), then run again: %w",
		Stream(c.Topic, partition), c.principal(), c.Topic, err)
}

// principal is the ACL principal of the client's user, as kafka-acls names it.
func (c *Config) principal() string {
	if c.SASL.User != "" {
		return "User:" + c.SASL.User
	}
	return "User:NAME"
}

// partitionFetch is one FetchPartition: where it is in the partition and where it sends.
type partitionFetch struct {
	ctx    context.Context
	o      FetchOptions
	log    *zap.Logger
	gap    func(next, first int64) error
	out    chan<- FetchBatch
	offset int64 // the next offset to read
	// fetchBytes is the next fetch's MaxBytes: about one batch of messages (fetchSize)
	fetchBytes int
	// pending is the part batch a response ended with while the partition held more: the next
	// response fills it. Sent short, it halved the rows of every other SQL statement.
	pending []kafkago.Message
	// failed is the offset a fetch whose records failed to read (CRC, decompression, a bad
	// record) was to go on from: a second failure there ends the fetch.
	failed int64
}

// minFetchBytes is the least a fetch asks for: small messages still come many to a request.
const minFetchBytes = 1 << 20

// compressedFetchBytes is the least a fetch asks for after a response whose batches were all
// compressed: their messages hold their batches' decompressed bytes, not the response, which the
// next fetch reads into again (leaderConn.spare), so a partition holds one response whatever its
// size. Fewer, larger fetches cost the broker less: a real Kafka 4 broker spent 0.6-1.1 CPU-s
// serving replicate 2M lz4 messages in fetches of 1 MiB, 0.3-0.5 in fetches of 8 MiB.
const compressedFetchBytes = 8 << 20

// fetchSize is the MaxBytes of the fetch after one of prev bytes whose response held msgs
// messages in n bytes of records: about a batch's worth (batchLen messages), at least
// minFetchBytes (compressedFetchBytes after a response of compressed batches only), at most
// limit; prev again after a fetch without messages. Every message of an uncompressed batch
// keeps the whole response it was read from, and batches wait in the fetch's channel and the
// consumer's queue, for each partition: responses of 16 MiB held that way reached 550 MiB over 6
// partitions of a slow SQL target, and the collector ran without pause near the memory limit
// (three times the CPU).
func fetchSize(prev, n, msgs, batchLen, limit int, compressed bool) int {
	if msgs == 0 {
		return prev
	}
	floor := minFetchBytes
	if compressed {
		floor = compressedFetchBytes
	}
	want := n / msgs * batchLen * 5 / 4
	return min(max(want, floor), limit)
}

// newPartitionFetch fills o's defaults: 16 MiB and 250ms a fetch, 1,024 messages a batch, and a
// gap that is logged and skipped.
func newPartitionFetch(ctx context.Context, c *Config, partition int, offset int64, o FetchOptions, out chan<- FetchBatch) *partitionFetch {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 16 << 20
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 250 * time.Millisecond
	}
	if o.BatchLen <= 0 {
		o.BatchLen = 1024
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("stream", Stream(c.Topic, partition)))
	gap := o.Gap
	if gap == nil {
		gap = func(next, first int64) error {
			log.Warn("kafka: messages were deleted by retention before they were read; continuing at the first retained offset",
				zap.Int64("offset", next), zap.Int64("first", first))
			return nil
		}
	}
	return &partitionFetch{ctx: ctx, o: o, log: log, gap: gap, out: out, offset: offset, failed: -1}
}

// send hands b over; false when ctx ended first.
func (f *partitionFetch) send(b FetchBatch) bool {
	select {
	case f.out <- b:
		return true
	case <-f.ctx.Done():
		return false
	}
}

// read fetches from conn until it fails, then closes it. stop says that the fetch ends (ctx
// ended while it sent, or the gap's error, returned as err); otherwise err is why conn failed
// and the caller reconnects.
func (f *partitionFetch) read(conn *leaderConn) (stop bool, err error) {
	stopWatch := context.AfterFunc(f.ctx, func() { conn.Close() })
	defer func() {
		stopWatch()
		conn.Close()
	}()
	var readErr error
	for readErr == nil {
		var sent bool
		if sent, readErr = f.readBatch(conn); !sent {
			return true, nil
		}
		switch {
		case readErr == nil, errors.Is(readErr, io.EOF), errors.Is(readErr, kafkago.RequestTimedOut):
			readErr = nil
		case errors.Is(readErr, errUnreadable):
			return true, readErr
		case errors.Is(readErr, kafkago.OffsetOutOfRange):
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			first, _, err := conn.ReadOffsets()
			if err == nil && f.offset < first {
				if err := f.gap(f.offset, first); err != nil {
					return true, err
				}
				f.offset = first
			}
		}
	}
	return false, readErr
}

// readBatch sends one fetch on conn and sends its messages in batches of o.BatchLen; it returns
// the fetch's error, with sent false when ctx ended before a batch was taken.
func (f *partitionFetch) readBatch(conn *leaderConn) (sent bool, readErr error) {
	if conn.version == 0 {
		return f.readLegacy(conn)
	}
	// The broker holds the fetch at most MaxWait; the response (up to MaxBytes) may take
	// longer to arrive on a loaded machine or a slow link. A deadline of MaxWait alone
	// timed such responses out and reconnected for ever without delivering anything.
	if f.fetchBytes == 0 {
		f.fetchBytes = min(minFetchBytes, f.o.MaxBytes)
	}
	res, err := conn.fetch(f.offset, f.fetchBytes, f.o.MaxWait, fetchResponseMargin)
	if err != nil {
		return true, err
	}
	if res.errorCode != 0 {
		return true, kafkago.Error(res.errorCode)
	}
	set := newRecordSet(res.records, f.offset, res.aborted)
	read := 0
	defer func() {
		f.fetchBytes = fetchSize(f.fetchBytes, len(res.records), read, f.o.BatchLen, f.o.MaxBytes, !set.aliased)
	}()
	// allocated at the first message: idle fetches cost nothing
	msgs := f.pending
	f.pending = nil
	for {
		if msgs == nil {
			msgs = f.messages()
		}
		msgs = append(msgs, kafkago.Message{Topic: conn.topic, Partition: int(conn.partition), HighWaterMark: res.highWaterMark})
		ok, err := set.read(&msgs[len(msgs)-1])
		if !ok {
			msgs = msgs[:len(msgs)-1]
			if errors.Is(err, errLegacyMessages) && len(msgs) == 0 {
				return f.readLegacy(conn)
			}
			readErr = err
			break
		}
		read++
		if len(msgs) == f.o.BatchLen {
			f.offset = msgs[len(msgs)-1].Offset + 1
			if !f.send(FetchBatch{Messages: msgs, HighWaterMark: res.highWaterMark, Next: f.offset}) {
				return false, nil
			}
			msgs = nil
		}
	}
	if !set.aliased {
		conn.spare = res.body
	}
	if readErr == nil && set.cut && set.whole == 0 {
		// the broker returns the first batch whole, however small the fetch: one cut short is
		// broken (its length), and no fetch of it gets further
		readErr = fmt.Errorf("kafka: record batch at offset %d: cut short, in a response of %d bytes without a whole batch", f.offset, len(res.records))
	}
	legacy := errors.Is(readErr, errLegacyMessages)
	if legacy {
		// what comes before the old messages is sent; the next fetch starts at them
		readErr = nil
	} else if readErr == nil {
		// past the batches read whole: control records and a compaction's gaps included. Not
		// after an error: set.next is past the batch that failed, which is to be read again.
		f.offset = set.next
	}
	if len(msgs) > 0 {
		f.offset = max(f.offset, msgs[len(msgs)-1].Offset+1)
		if readErr == nil && !legacy && read > 0 && f.offset < res.lastStable {
			// behind the partition's end (the end a read-committed fetch reaches, before any
			// open transaction): the next response follows at once and fills the batch
			f.pending = msgs
			return true, nil
		}
	}
	if readErr != nil && !legacy {
		// once may be bytes garbled on their way (the CRC's reason); twice at the same offset,
		// the batch is so in the partition's log: fetching it again for ever reads nothing more
		if f.failed == f.offset {
			readErr = fmt.Errorf("kafka: %s: %w (fetched twice): %w", Stream(conn.topic, int(conn.partition)), errUnreadable, readErr)
		}
		f.failed = f.offset
	}
	if len(msgs) > 0 || readErr == nil {
		if !f.send(FetchBatch{Messages: msgs, HighWaterMark: res.highWaterMark, Next: f.offset}) {
			return false, readErr
		}
	}
	return true, readErr
}

// errUnreadable ends a fetch: a record batch of the partition failed to read twice.
var errUnreadable = errors.New("a record batch cannot be read")

// messages returns a recycled message slice, or a new one.
func (f *partitionFetch) messages() []kafkago.Message {
	select {
	case msgs := <-f.o.Free:
		return msgs[:0]
	default:
		return make([]kafkago.Message, 0, f.o.BatchLen)
	}
}

// readLegacy reads one fetch with kafka-go's reader, which reads message formats v0 and v1 (old
// segments of a topic written before Kafka 0.11) that recordSet does not, and speaks to brokers
// older than FetchPartition's Fetch versions.
func (f *partitionFetch) readLegacy(conn *leaderConn) (sent bool, readErr error) {
	if _, err := conn.Seek(f.offset, kafkago.SeekAbsolute|kafkago.SeekDontCheck); err != nil {
		return true, err
	}
	conn.SetReadDeadline(time.Now().Add(f.o.MaxWait + fetchResponseMargin))
	batch := conn.ReadBatchWith(kafkago.ReadBatchConfig{MinBytes: 1, MaxBytes: f.o.MaxBytes, MaxWait: f.o.MaxWait})
	hwm := batch.HighWaterMark()
	var msgs []kafkago.Message
	for n := 0; ; n++ {
		if n%256 == 0 {
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		}
		m, err := batch.ReadMessage()
		if err != nil {
			break
		}
		f.offset = m.Offset + 1
		if msgs == nil {
			msgs = f.messages()
		}
		msgs = append(msgs, m)
		if len(msgs) == f.o.BatchLen {
			if !f.send(FetchBatch{Messages: msgs, HighWaterMark: hwm, Next: f.offset}) {
				batch.Close()
				return false, nil
			}
			msgs = nil
		}
	}
	readErr = batch.Close()
	if len(msgs) > 0 || readErr == nil {
		if !f.send(FetchBatch{Messages: msgs, HighWaterMark: hwm, Next: f.offset}) {
			return false, readErr
		}
	}
	return true, readErr
}

// dialPartition connects to the partition's leader and seeks to offset (sentinels resolved,
// an offset before the first retained one moved to it, one past the end a *PastEndError); it
// returns the offset it seeked to and the partition's first retained one.
func (c *Config) dialPartition(ctx context.Context, dialer *kafkago.Dialer, partition int, offset int64) (*leaderConn, int64, int64, error) {
	var lastErr error
	for _, b := range c.Brokers {
		conn, err := dialLeader(ctx, dialer, b, c.Topic, partition)
		if err != nil {
			lastErr = err
			continue
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if err := conn.negotiate(); err != nil {
			conn.Close()
			return nil, 0, 0, fmt.Errorf("API versions of %s's leader: %w", Stream(c.Topic, partition), err)
		}
		first, last, err := conn.ReadOffsets()
		if err != nil {
			conn.Close()
			return nil, 0, 0, fmt.Errorf("offsets of %s: %w", Stream(c.Topic, partition), err)
		}
		switch {
		case offset == kafkago.LastOffset: // before offset < first, which LastOffset (-1) is too
			offset = last
		case offset == kafkago.FirstOffset, offset < first:
			offset = first
		case offset > last:
			// the end offset does not move back: no wait makes this log reach the offset with
			// the messages it was taken after
			conn.Close()
			return nil, 0, 0, &PastEndError{Topic: c.Topic, Partition: partition, Next: offset, End: last}
		}
		start, err := conn.Seek(offset, kafkago.SeekAbsolute)
		if err != nil {
			conn.Close()
			return nil, 0, 0, err
		}
		conn.SetDeadline(time.Time{})
		return conn, start, first, nil
	}
	return nil, 0, 0, lastErr
}

func backoff(attempt int) time.Duration {
	d := 50 * time.Millisecond << min(attempt, 6)
	if d > 2*time.Second {
		d = 2 * time.Second
	}
	return d/2 + rand.N(d/2)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// SeedRepeats passes the messages [from, to) of partition through d, so that d knows the commit
// log positions their events reached (Decoder.SkipRepeats) before it decodes the messages from
// to on: a consumer that takes over a partition at to would otherwise apply again a run of
// events the connector publishes a second time after it. Messages deleted by retention are
// skipped; d's changes are dropped and its repeat count left as it was.
func (c *Config) SeedRepeats(ctx context.Context, dialer *kafkago.Dialer, partition int, from, to int64, d *Decoder) error {
	if from >= to {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan FetchBatch, 2)
	var ferr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		ferr = c.FetchPartition(ctx, dialer, partition, from, FetchOptions{MaxWait: 10 * time.Millisecond,
			Gap: func(next, first int64) error { return nil }}, ch)
	}()
	defer func() {
		cancel()
		for range ch {
		}
		<-done
	}()
	repeats := d.Repeats
	defer func() { d.Repeats = repeats; d.Reset() }()
	var buf []Change
	pos := from
	for b := range ch {
		if len(b.Messages) == 0 {
			// a fetch that found no message: nothing more before to (a compacted topic's
			// missing offsets), unless it moved on past an aborted transaction's batches or
			// markers, all a fetch may hold
			if b.Next <= pos || b.Next >= to {
				return nil
			}
			pos = b.Next
			continue
		}
		pos = max(pos, b.Next)
		for i := range b.Messages {
			m := &b.Messages[i]
			if m.Offset >= to {
				return nil
			}
			buf = d.Decode(buf[:0], m.Key, m.Value)
			if m.Offset == to-1 {
				return nil
			}
		}
		d.Reset()
	}
	if ctx.Err() == nil && ferr != nil {
		return ferr
	}
	return nil
}

// topicGoneWait is how long the brokers may answer that they do not know the topic before a
// fetch from it fails: a topic being created or a broker catching up answers so for moments, a
// deleted topic for good.
var topicGoneWait = brokerWait
