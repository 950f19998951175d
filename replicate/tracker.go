package replicate

// tracker decides which offset of a partition may be committed to Kafka: the offset after the
// longest run of fetched messages, from the start of the assignment, that are all durable (in
// committed files or in a synced rejects file). Messages are fetched in offset order and grouped
// into spans (a roll each); spans may become durable out of order, but the committable offset only
// moves over a contiguous prefix of durable spans. Offsets may have gaps (compaction, transaction
// markers): contiguity is in fetch order, not in offset arithmetic.
type tracker struct {
	spans       []*span
	committable int64 // -1: nothing yet
}

type span struct {
	first, last int64
	durable     bool
}

func newTracker() *tracker { return &tracker{committable: -1} }

// open starts a span at a fetched offset; it must follow every earlier span.
func (t *tracker) open(first int64) *span {
	if n := len(t.spans); n > 0 && first <= t.spans[n-1].last {
		panic("replicate: tracker: span opened before the previous one's end")
	}
	s := &span{first: first, last: first}
	t.spans = append(t.spans, s)
	return s
}

// extend records a later fetched offset of the span.
func (s *span) extend(off int64) {
	if off > s.last {
		s.last = off
	}
}

// done marks the span durable and returns the offset to commit, or -1 when it did not move.
func (t *tracker) done(s *span) int64 {
	s.durable = true
	moved := false
	for len(t.spans) > 0 && t.spans[0].durable {
		t.committable = t.spans[0].last + 1
		t.spans = t.spans[1:]
		moved = true
	}
	if !moved {
		return -1
	}
	return t.committable
}
