package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rekey/rekey/store"
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
// Lines are buffered and made durable by Sync, which a checkpoint calls: the checkpoint records
// what is durable.
//
// On a local folder the files are appended to, and a resume cuts them to the checkpointed
// lengths. An object store cannot append: lines are spooled to a local temporary file and each
// Sync that has some commits them as the next numbered objects, rejects/part-NNNNN.jsonl (and
// rejected-rows/part-NNNNN.<ext>, each under the input's header). The checkpoint counts the parts,
// and a resume removes the parts past that count, whose rows are read again: no reject is lost
// or listed twice.
type RejectLog struct {
	mu     sync.Mutex
	log    *appendFile
	replay *appendFile // nil without a replay file
	counts map[string]int64

	// object stores only
	st         store.Store
	parts      int // committed parts
	replayName ReplayFile
}

// RejectsPartsDir and ReplayPartsDir hold the rejects of an output on an object store.
const (
	RejectsPartsDir = "rejects"
	ReplayPartsDir  = "rejected-rows"
)

// RejectsPart names the n-th rejects object of an output on an object store.
func RejectsPart(n int) string { return fmt.Sprintf("%s/part-%05d.jsonl", RejectsPartsDir, n) }

// partNumber reads N of ".../part-NNNNN.<ext>".
func partNumber(name string) (int, bool) {
	base := name[strings.LastIndexByte(name, '/')+1:]
	digits, ok := strings.CutPrefix(base, "part-")
	if !ok {
		return 0, false
	}
	digits, _, _ = strings.Cut(digits, ".")
	n, err := strconv.Atoi(digits)
	return n, err == nil && n >= 0
}

// RejectsLocation says where an output's rejects are, for messages.
func RejectsLocation(st store.Store) string {
	if _, ok := st.(store.Dir); ok {
		return st.Location(RejectsFile)
	}
	return st.Location(RejectsPartsDir + "/")
}

// OpenRejects opens the rejects of the output st from its checkpoint cp (nil on a fresh run).
func OpenRejects(ctx context.Context, st store.Store, cp *Checkpoint) (*RejectLog, error) {
	if cp == nil {
		cp = &Checkpoint{}
	}
	if d, ok := st.(store.Dir); ok {
		return OpenRejectLog(filepath.Join(d.Path(), RejectsFile), cp.RejectsBytes, cp.RejectCodes)
	}
	f, err := openSpool("rejects")
	if err != nil {
		return nil, err
	}
	counts := cp.RejectCodes
	if counts == nil {
		counts = map[string]int64{}
	}
	// the checkpointed lengths go on from the committed parts
	f.size = cp.RejectsBytes
	return &RejectLog{log: f, counts: counts, st: st, parts: cp.RejectParts}, nil
}

// openSpool creates a local temporary file that holds lines until they are committed.
func openSpool(what string) (*appendFile, error) {
	f, err := os.CreateTemp("", "rekey-"+what+"-*.spool")
	if err != nil {
		return nil, fmt.Errorf("create a local spool for %s: %w", what, err)
	}
	os.Remove(f.Name()) // gone when closed, whatever happens
	return &appendFile{f: f, w: bufio.NewWriterSize(f, 256<<10), what: what}, nil
}

// Parts is the number of rejects objects committed so far (0 on a local folder).
func (l *RejectLog) Parts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.parts
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

// OpenReplayIn is OpenReplay for the output st: the replay file beside data/ on a local folder,
// or its parts on an object store (ReplayPartsDir/part-NNNNN.<ext>, each under the header).
func (l *RejectLog) OpenReplayIn(st store.Store, rf ReplayFile, truncateTo int64) error {
	if d, ok := st.(store.Dir); ok {
		return l.OpenReplay(d.Path(), rf, truncateTo)
	}
	f, err := openSpool("replay")
	if err != nil {
		return err
	}
	f.size = truncateTo
	l.mu.Lock()
	l.replay, l.replayName = f, rf
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

// Sync flushes and fsyncs (on an object store: commits the lines since the last Sync as the
// next part), returning the durable length of the rejects and of the replay file (0 without
// one), and a copy of the per-code counts.
func (l *RejectLog) Sync() (size, replaySize int64, counts map[string]int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st != nil {
		if err := l.commitPart(); err != nil {
			return 0, 0, nil, err
		}
	} else {
		if err := l.log.sync(); err != nil {
			return 0, 0, nil, err
		}
		if l.replay != nil {
			if err := l.replay.sync(); err != nil {
				return 0, 0, nil, err
			}
		}
	}
	if l.replay != nil {
		replaySize = l.replay.size
	}
	counts = make(map[string]int64, len(l.counts))
	for k, v := range l.counts {
		counts[k] = v
	}
	return l.log.size, replaySize, counts, nil
}

// commitPart writes the spooled lines as part number l.parts and empties the spools. l.mu held.
func (l *RejectLog) commitPart() error {
	if l.log.spooled() == 0 && (l.replay == nil || l.replay.spooled() == 0) {
		return nil
	}
	ctx := context.Background()
	if err := l.log.commitTo(ctx, l.st, RejectsPart(l.parts), ""); err != nil {
		return err
	}
	if l.replay != nil {
		ext := strings.TrimPrefix(l.replayName.Name, ReplayPrefix)
		name := fmt.Sprintf("%s/part-%05d.%s", ReplayPartsDir, l.parts, ext)
		if err := l.replay.commitTo(ctx, l.st, name, l.replayName.Header); err != nil {
			return err
		}
	}
	l.parts++
	return nil
}

// Close syncs and closes the files. On an object store the lines since the last Sync are
// dropped instead: no checkpoint counts them, and their rows are read again on resume.
func (l *RejectLog) Close() error {
	var err error
	if l.st == nil {
		_, _, _, err = l.Sync()
	}
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

// appendFile is a buffered file written at its end, with its length. As a spool (object
// stores) size goes on across commits while the file holds only the lines since the last one.
type appendFile struct {
	f     *os.File
	w     *bufio.Writer
	size  int64
	what  string
	spool int64 // bytes in the spool file
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
	a.spool += int64(len(b))
	return nil
}

func (a *appendFile) spooled() int64 { return a.spool }

// commitTo writes header and the spooled bytes as the object name, then empties the spool.
func (a *appendFile) commitTo(ctx context.Context, st store.Store, name, header string) error {
	if err := a.w.Flush(); err != nil {
		return fmt.Errorf("flush %s: %w", a.what, err)
	}
	w, err := st.Create(ctx, name)
	if err != nil {
		return fmt.Errorf("commit %s: %w", a.what, err)
	}
	_, err = io.WriteString(w, header)
	if err == nil {
		_, err = io.Copy(w, io.NewSectionReader(a.f, 0, a.spool))
	}
	if err == nil {
		_, err = w.Commit(ctx)
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("commit %s as %s: %w", a.what, name, err)
	}
	if err := a.f.Truncate(0); err != nil {
		return fmt.Errorf("empty the %s spool: %w", a.what, err)
	}
	if _, err := a.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("empty the %s spool: %w", a.what, err)
	}
	a.spool = 0
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
