package kafka

import (
	"context"
	"fmt"
	"strconv"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/pipeline"
)

// PartitionSource reads one partition of the topic as a pipeline.Source of one stream
// (Stream(topic, partition)), for a consumer that applies its changes (replicate): each batch is
// one fetched batch, its messages decoded in this source's goroutine into changes (Batch.Payload,
// a *Decoded) in offset order, and its Cursor the offset after its last message. A fetch that
// found no new message still sends a batch, without changes nor Cursor, for the high watermark
// the broker reported (the partition's lag). A batch's Release recycles its messages' slice and
// its changes' arena for the batches after it.
type PartitionSource struct {
	Config    *Config
	Dialer    *kafkago.Dialer
	Partition int
	// Offset is where the read starts (absolute, or kafka-go's FirstOffset / LastOffset); the
	// stream's resume cursor, when there is one, wins.
	Offset int64
	// Decoder decodes the partition's messages, in order (its SkipRepeats may be set and seeded).
	Decoder *Decoder
	// End, when above 0, bounds the read: messages at End and after are left out, and the
	// source ends (Run returns nil) once it has sent the last message before End. 0: endless.
	End int64
	// Fetch tunes the fetch (Gap, Logger); its Buffer defaults to 2: decoded batches wait in the
	// engine's feed as well.
	Fetch FetchOptions
}

// Decoded is the payload of a PartitionSource's batch: its messages' changes, one per message in
// offset order (their values valid until the batch's Release), the partition's high watermark
// as the fetch saw it (0: not reported) and the read's position after the batch (FetchBatch.Next).
type Decoded struct {
	Changes       []Change
	HighWaterMark int64
	Next          int64
	arena         Arena
}

// Stream is the source's one stream.
func (s *PartitionSource) Stream() string { return Stream(s.Config.Topic, s.Partition) }

// Run fetches and decodes until ctx ends (its error) or the fetch fails (its error: Fetch.Gap's, for
// messages deleted before they were read).
func (s *PartitionSource) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	stream := s.Stream()
	offset := s.Offset
	if st, ok := resume[stream]; ok && st.Cursor != "" {
		off, err := strconv.ParseInt(st.Cursor, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: resume cursor %q: %w", stream, st.Cursor, err)
		}
		offset = off
	}
	if s.End > 0 && offset >= s.End {
		return nil
	}
	o := s.Fetch
	if o.Buffer <= 0 {
		o.Buffer = 2
	}
	f := s.Config.StartFetch(ctx, s.Dialer, s.Partition, offset, o)
	defer f.Stop()
	// the payloads Release hands back, for the next batches: more than the engine holds at once
	// (its feed's buffer, the batch its worker applies, the one this loop sends)
	free := make(chan *Decoded, 8)
	next := offset
	for fb := range f.C {
		ended := false
		if s.End > 0 {
			n := len(fb.Messages)
			fb = fb.Before(s.End)
			ended = len(fb.Messages) < n
		}
		next = max(next, fb.Next) // past the batch's messages, and a transaction's marker after them
		b := s.batch(stream, fb, f, free)
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		if s.End > 0 && (ended || next >= s.End) {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := f.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s: the fetch stopped", stream)
}

// batch decodes a fetched batch into a recycled Decoded, and makes its Release give both back.
func (s *PartitionSource) batch(stream string, fb FetchBatch, f *Fetcher, free chan *Decoded) pipeline.Batch {
	var d *Decoded
	select {
	case d = <-free:
	default:
		d = &Decoded{}
	}
	d.HighWaterMark, d.Next = fb.HighWaterMark, fb.Next
	s.Decoder.UseArena(&d.arena)
	d.Changes = s.Decoder.DecodeBatch(d.Changes[:0], fb)
	s.Decoder.UseArena(nil)
	b := pipeline.Batch{Stream: stream, SaltOrigin: true, Payload: d}
	if n := len(d.Changes); n > 0 {
		b.Cursor = strconv.FormatInt(d.Changes[n-1].Offset+1, 10)
	}
	b.Release = func() {
		f.Recycle(fb)
		clear(d.Changes) // they alias the messages' bytes: let those go
		d.Changes = d.Changes[:0]
		d.arena.Reset()
		select {
		case free <- d:
		default:
		}
	}
	return b
}
