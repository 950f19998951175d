package pipeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// RejectsFile is the name of the rejected-rows file in the output directory.
const RejectsFile = "rejects.jsonl"

// Reject is one line of rejects.jsonl.
type Reject struct {
	Position string            `json:"position"` // "orders.csv:1234", "kafka:topic/3:42"
	Stream   string            `json:"stream"`
	Seq      int64             `json:"seq"`
	Stage    string            `json:"stage"` // "source" (decode), "transform" (mapping) or "sink" (a value the file cannot hold exactly)
	Code     string            `json:"code"`
	Field    string            `json:"field,omitempty"`
	Message  string            `json:"message"`
	Raw      string            `json:"raw,omitempty"`    // the input as read, when the source keeps it
	Values   map[string]string `json:"values,omitempty"` // the decoded source values, when there is no raw text

	// *KafkaMessage adds the message's coordinates (topic, partition, offset, key) to the line;
	// nil (and absent from the line) outside replicate.
	*KafkaMessage
}

// KafkaMessage identifies a rejected Kafka message by (topic, partition, offset); replicate writes
// a roll's rejects with the roll, so a replayed message is never listed twice.
type KafkaMessage struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key,omitempty"`
}

// RejectLog appends rejects to rejects.jsonl; it is safe for concurrent use. Lines are buffered
// and made durable (flush + fsync) by Sync, which a checkpoint calls: the checkpoint records the
// file length that is durable.
type RejectLog struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	size   int64
	counts map[string]int64
}

// OpenRejectLog opens (or creates) the rejects file at path. A truncateTo >= 0 cuts the file to
// that length (a resumed run drops the lines written after its checkpoint); a negative one keeps
// the file and appends at its end. counts holds the per-code counts so far (nil: none).
func OpenRejectLog(path string, truncateTo int64, counts map[string]int64) (*RejectLog, error) {
	flags := os.O_CREATE | os.O_WRONLY
	if truncateTo < 0 {
		flags |= os.O_APPEND
	}
	// 0600: rejected rows are raw input, which may be personal data.
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open rejects file: %w", err)
	}
	if err := f.Chmod(0o600); err != nil { // a file from an older run may be wider
		f.Close()
		return nil, fmt.Errorf("open rejects file: %w", err)
	}
	var size int64
	if truncateTo >= 0 {
		// A resumed run drops the lines written after the last checkpoint: their rows are read again.
		if err := f.Truncate(truncateTo); err != nil {
			f.Close()
			return nil, fmt.Errorf("truncate rejects file to its checkpointed length: %w", err)
		}
		size, err = f.Seek(truncateTo, io.SeekStart)
	} else {
		size, err = f.Seek(0, io.SeekEnd)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("seek rejects file: %w", err)
	}
	if counts == nil {
		counts = map[string]int64{}
	}
	return &RejectLog{f: f, w: bufio.NewWriterSize(f, 256<<10), size: size, counts: counts}, nil
}

// Add appends one line (buffered).
func (l *RejectLog) Add(r *Reject) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode reject: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(line); err != nil {
		return fmt.Errorf("write rejects file: %w", err)
	}
	l.size += int64(len(line))
	l.counts[r.Code]++
	return nil
}

// Sync flushes and fsyncs, returning the durable length and a copy of the per-code counts.
func (l *RejectLog) Sync() (int64, map[string]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.Flush(); err != nil {
		return 0, nil, fmt.Errorf("flush rejects file: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return 0, nil, fmt.Errorf("fsync rejects file: %w", err)
	}
	counts := make(map[string]int64, len(l.counts))
	for k, v := range l.counts {
		counts[k] = v
	}
	return l.size, counts, nil
}

// Close syncs and closes the file.
func (l *RejectLog) Close() error {
	if _, _, err := l.Sync(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}
