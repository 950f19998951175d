package replicate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/rekey/rekey/pipeline"
)

// Reject is one line of rejects.jsonl: pipeline's reject fields plus the message's coordinates.
// Position is "kafka:TOPIC/PARTITION:OFFSET". A message replayed after a crash is rejected
// again, so a line may repeat: (topic, partition, offset) identifies the message.
type Reject struct {
	pipeline.Reject
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key,omitempty"`
}

// rejectLog appends to rejects.jsonl, shared by the partition workers. Lines are buffered and
// made durable (flush + fsync) by sync, which a roll calls before its offsets are committed.
type rejectLog struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
	n  int64
}

func openRejects(path string) (*rejectLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open rejects file: %w", err)
	}
	return &rejectLog{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (l *rejectLog) add(r *Reject) error {
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
	l.n++
	return nil
}

func (l *rejectLog) sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("flush rejects file: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("fsync rejects file: %w", err)
	}
	return nil
}

func (l *rejectLog) close() error {
	err := l.sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
