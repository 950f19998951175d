package replicate

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// offsetsFile is, in a table replication's state folder, the next offset of each partition the
// member committed last. Kafka forgets a group's committed offsets after
// offsets.retention.minutes without a member, and a group without them starts at the first
// retained message: the table would get the retained messages again and, without a word, miss
// those retention deleted since the stop. A folder's manifest.json keeps the offsets for it; a
// table keeps none, so the state folder does.
const offsetsFile = "offsets.json"

// offsetBook is the member's record of offsetsFile: written at most once per offsetBookEvery
// (a kill loses less than that of it: those messages are read again, harmlessly) and when a
// partition's worker ends.
type offsetBook struct {
	mu      sync.Mutex
	saved   savedOffsets
	dirty   bool
	written time.Time
}

// savedOffsets is offsetsFile's content: the offsets hold for this topic and group only.
type savedOffsets struct {
	Topic      string           `json:"topic"`
	Group      string           `json:"group"`
	Partitions map[string]int64 `json:"next_offsets"`
}

const offsetBookEvery = time.Second

// loadOffsetBook reads the state folder's offsetsFile (an empty book when there is none, or when
// it is another topic's or group's).
func (r *Replicator) loadOffsetBook(ctx context.Context) error {
	b := &offsetBook{saved: savedOffsets{Topic: r.cfg.Kafka.Topic, Group: r.cfg.Kafka.Group, Partitions: map[string]int64{}}}
	var s savedOffsets
	ok, err := getJSON(ctx, r.cfg.Store, offsetsFile, &s)
	if err != nil {
		return err
	}
	if ok && s.Topic == b.saved.Topic && s.Group == b.saved.Group && s.Partitions != nil {
		b.saved.Partitions = s.Partitions
	}
	r.offs = b
	return nil
}

// next is the next offset recorded for partition.
func (b *offsetBook) next(partition int) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	off, ok := b.saved.Partitions[strconv.Itoa(partition)]
	return off, ok
}

// note records partition's committed next offset, and writes the book when it is due (force:
// now, as a partition's worker ends).
func (r *Replicator) noteOffset(ctx context.Context, partition int, off int64, force bool) error {
	b := r.offs
	b.mu.Lock()
	defer b.mu.Unlock()
	if off >= 0 {
		key := strconv.Itoa(partition)
		b.dirty = b.dirty || b.saved.Partitions[key] != off
		b.saved.Partitions[key] = off
	}
	if !b.dirty || !force && time.Since(b.written) < offsetBookEvery {
		return nil
	}
	if err := putJSON(ctx, r.cfg.Store, offsetsFile, b.saved); err != nil {
		return fmt.Errorf("record the committed offsets in the state folder: %w", err)
	}
	b.dirty, b.written = false, time.Now()
	return nil
}
