package pipeline

import (
	"bufio"
	"encoding/json"
	"fmt"
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
}

// rejectLog appends rejects to rejects.jsonl. Lines are buffered and flushed, with an fsync, at
// every checkpoint: the checkpoint records the file length that is durable.
type rejectLog struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	size   int64
	counts map[string]int64
}

func openRejectLog(path string, truncateTo int64, counts map[string]int64) (*rejectLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open rejects file: %w", err)
	}
	// A resumed run drops the lines written after the last checkpoint: their rows are read again.
	if err := f.Truncate(truncateTo); err != nil {
		f.Close()
		return nil, fmt.Errorf("truncate rejects file to its checkpointed length: %w", err)
	}
	if _, err := f.Seek(truncateTo, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("seek rejects file: %w", err)
	}
	if counts == nil {
		counts = map[string]int64{}
	}
	return &rejectLog{f: f, w: bufio.NewWriterSize(f, 256<<10), size: truncateTo, counts: counts}, nil
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
	l.size += int64(len(line))
	l.counts[r.Code]++
	return nil
}

// sync flushes and fsyncs, returning the durable length and a copy of the per-code counts.
func (l *rejectLog) sync() (int64, map[string]int64, error) {
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

func (l *rejectLog) close() error {
	if _, _, err := l.sync(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}
