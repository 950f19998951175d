package pipeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// RejectLog appends rejects to rejects.jsonl and, when the source can give its rejected records
// back in the input's own format, their raw text to a replay file; it is safe for concurrent use.
// Lines are buffered and made durable (flush + fsync) by Sync, which a checkpoint calls: the
// checkpoint records the lengths that are durable.
type RejectLog struct {
	mu     sync.Mutex
	log    *appendFile
	replay *appendFile // nil without a replay file
	counts map[string]int64
}

// ReplayFile names the file a source's rejected records are written back to, in the input's own
// format (a CSV header and lines, JSON Lines), so that once the cause is fixed `rekey migrate
// --source file:rejected-rows.csv` runs exactly those rows again.
type ReplayFile struct {
	Name   string // in the output directory: ReplayPrefix + extension
	Header string // written at the top of the file (a CSV header line with its newline), or ""
}

// ReplayPrefix starts the name of every replay file.
const ReplayPrefix = "rejected-rows."

// Replayer is implemented by sources whose Record.Raw is a whole input record in the input's
// format; ok is false when this input cannot be replayed as one file.
type Replayer interface {
	ReplayFile() (f ReplayFile, ok bool)
}

// OpenRejectLog opens (or creates) the rejects file at path. A truncateTo >= 0 cuts the file to
// that length (a resumed run drops the lines written after its checkpoint); a negative one keeps
// the file and appends at its end. counts holds the per-code counts so far (nil: none).
func OpenRejectLog(path string, truncateTo int64, counts map[string]int64) (*RejectLog, error) {
	f, err := openAppendFile(path, truncateTo, "rejects file")
	if err != nil {
		return nil, err
	}
	if counts == nil {
		counts = map[string]int64{}
	}
	return &RejectLog{log: f, counts: counts}, nil
}

// OpenReplay starts writing rejected records' raw text to the replay file rf in dir, cut to
// truncateTo (the checkpointed length; 0 on a fresh run, when the header is written).
func (l *RejectLog) OpenReplay(dir string, rf ReplayFile, truncateTo int64) error {
	f, err := openAppendFile(filepath.Join(dir, rf.Name), truncateTo, "replay file")
	if err != nil {
		return err
	}
	if f.size == 0 && rf.Header != "" {
		f.write([]byte(rf.Header))
	}
	l.mu.Lock()
	l.replay = f
	l.mu.Unlock()
	return nil
}

// Add appends one line (buffered), and the record's raw text to the replay file.
func (l *RejectLog) Add(r *Reject) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode reject: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.log.write(line); err != nil {
		return err
	}
	if l.replay != nil && r.Raw != "" {
		if err := l.replay.write(append([]byte(r.Raw), '\n')); err != nil {
			return err
		}
	}
	l.counts[r.Code]++
	return nil
}

// Sync flushes and fsyncs, returning the durable length of the rejects file and of the replay
// file (0 without one), and a copy of the per-code counts.
func (l *RejectLog) Sync() (size, replaySize int64, counts map[string]int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.log.sync(); err != nil {
		return 0, 0, nil, err
	}
	if l.replay != nil {
		if err := l.replay.sync(); err != nil {
			return 0, 0, nil, err
		}
		replaySize = l.replay.size
	}
	counts = make(map[string]int64, len(l.counts))
	for k, v := range l.counts {
		counts[k] = v
	}
	return l.log.size, replaySize, counts, nil
}

// Close syncs and closes the files.
func (l *RejectLog) Close() error {
	_, _, _, err := l.Sync()
	if cerr := l.log.close(); err == nil {
		err = cerr
	}
	if l.replay != nil {
		if cerr := l.replay.close(); err == nil {
			err = cerr
		}
	}
	return err
}

// appendFile is a buffered file written at its end, with its length.
type appendFile struct {
	f    *os.File
	w    *bufio.Writer
	size int64
	what string
}

// openAppendFile opens path (0600: rejected rows are raw input, which may be personal data) cut
// to truncateTo, or at its end when truncateTo < 0.
func openAppendFile(path string, truncateTo int64, what string) (*appendFile, error) {
	flags := os.O_CREATE | os.O_WRONLY
	if truncateTo < 0 {
		flags |= os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	if err := f.Chmod(0o600); err != nil { // a file from an older run may be wider
		f.Close()
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	var size int64
	if truncateTo >= 0 {
		// A resumed run drops the lines written after the last checkpoint: their rows are read again.
		if err := f.Truncate(truncateTo); err != nil {
			f.Close()
			return nil, fmt.Errorf("truncate %s to its checkpointed length: %w", what, err)
		}
		size, err = f.Seek(truncateTo, io.SeekStart)
	} else {
		size, err = f.Seek(0, io.SeekEnd)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("seek %s: %w", what, err)
	}
	return &appendFile{f: f, w: bufio.NewWriterSize(f, 256<<10), size: size, what: what}, nil
}

func (a *appendFile) write(b []byte) error {
	if _, err := a.w.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", a.what, err)
	}
	a.size += int64(len(b))
	return nil
}

func (a *appendFile) sync() error {
	if err := a.w.Flush(); err != nil {
		return fmt.Errorf("flush %s: %w", a.what, err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", a.what, err)
	}
	return nil
}

func (a *appendFile) close() error { return a.f.Close() }
