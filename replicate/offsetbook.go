package replicate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/store"
)

// offsetsFile is, in a table replication's state folder, the next offset of each partition the
// member committed last. Kafka forgets a group's committed offsets after
// offsets.retention.minutes without a member, and a group without them starts at the first
// retained message: the table would get the retained messages again and, without a word, miss
// those retention deleted since the stop. A folder's manifest.json keeps the offsets for it; a
// table keeps none, so the state folder does.
const offsetsFile = "offsets.json"

// offsetsLock is, in the state folder, the lock file its members take to rewrite offsetsFile.
const offsetsLock = "offsets.lock"

// offsetBook is the member's record of offsetsFile: written at most once per offsetBookEvery
// (a kill loses less than that of it: those messages are read again, harmlessly) and when a
// partition's worker ends. Members that share a state folder (two processes on one machine
// with the default --state) each write the partitions they committed into what the file holds,
// under offsetsLock: a copy of its own would drop the other members' partitions.
type offsetBook struct {
	mu      sync.Mutex
	saved   savedOffsets
	changed map[string]bool // the partitions noted since the last write
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
// it is another group's of the topic: a new group applies the topic again). One of another topic
// is refused (ErrStateOfAnotherTopic): the folder is another replication's.
func (r *Replicator) loadOffsetBook(ctx context.Context) error {
	st, topic := r.cfg.Store, r.cfg.Kafka.Topic
	b := &offsetBook{saved: savedOffsets{Topic: topic, Group: r.cfg.Kafka.Group, Partitions: map[string]int64{}}, changed: map[string]bool{}}
	if err := b.read(ctx, st); err != nil {
		if !errors.Is(err, ErrStateOfAnotherTopic) {
			err = outputFailed(err)
		}
		return err
	}
	r.offs = b
	return nil
}

// ErrStateOfAnotherTopic is the error (wrapped) of a table replication whose state folder holds
// another topic's replication: a refusal of what was asked, not a failure.
var ErrStateOfAnotherTopic = errors.New("replicate: the state folder holds another topic's replication")

// otherTopicError is an error that is ErrStateOfAnotherTopic without saying so in its text.
type otherTopicError struct{ error }

func (e otherTopicError) Unwrap() error      { return e.error }
func (otherTopicError) Is(target error) bool { return target == ErrStateOfAnotherTopic }

// read takes the partitions of the state folder's offsetsFile into the book, but for those
// noted since the last write (none when it is another group's); one of another topic is refused
// (ErrStateOfAnotherTopic).
func (b *offsetBook) read(ctx context.Context, st store.Store) error {
	var s savedOffsets
	ok, err := getJSON(ctx, st, offsetsFile, &s)
	if err != nil || !ok {
		return err
	}
	if s.Topic != b.saved.Topic {
		// its rejects files are named by partition and offsets: this replication's first batch
		// of a partition would remove those of the other topic's as its own replayed ones, and
		// each would write offsets.json without the other's offsets
		return otherTopicError{fmt.Errorf("the state folder %s holds the offsets of another replication into this table, of topic %s (consumer group %s), whose rejects files this one's would replace: "+
			"give the replication of topic %s a state folder of its own (--state DIR); if the replication of topic %s is over and its rejects are dealt with, remove %s instead",
			st.Location(""), s.Topic, s.Group, b.saved.Topic, s.Topic, st.Location(offsetsFile))}
	}
	if s.Group != b.saved.Group {
		return nil // an earlier group's: a new group applies the topic again
	}
	for p, off := range s.Partitions {
		if !b.changed[p] {
			b.saved.Partitions[p] = off
		}
	}
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
		if old, ok := b.saved.Partitions[key]; !ok || old != off {
			b.changed[key] = true
		}
		b.saved.Partitions[key] = off
	}
	if len(b.changed) == 0 || !force && time.Since(b.written) < offsetBookEvery {
		return nil
	}
	if err := r.writeOffsetBook(ctx); err != nil {
		return fmt.Errorf("record the committed offsets in the state folder: %w", err)
	}
	clear(b.changed)
	b.written = time.Now()
	return nil
}

// writeOffsetBook rewrites offsetsFile with the partitions noted since the last write over what
// the file holds (other members sharing the state folder write theirs), under offsetsLock; the
// book's lock is held.
func (r *Replicator) writeOffsetBook(ctx context.Context) error {
	b, st := r.offs, r.cfg.Store
	if root, ok := store.LocalPath(st); ok {
		unlock, err := output.FlockFile(ctx, filepath.Join(root, offsetsLock))
		if err != nil {
			return err
		}
		defer unlock()
	}
	if err := b.read(ctx, st); err != nil {
		return err
	}
	return putJSON(ctx, st, offsetsFile, b.saved)
}
