package output

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rekey/rekey/pipeline"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

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
	// rawCut: Raw is only the record's start (pipeline.RowError.RawCut), kept out of the replay
	// file: read back, a cut CSV line could be a whole row with a shorter last value.
	rawCut bool

	// *LogPosition adds a message's coordinates in a partitioned log (topic, partition, offset,
	// key) to the line; nil (and absent from the line) for rows of files and tables.
	*LogPosition
}

// LogPosition identifies a rejected message of a partitioned log (a Kafka topic) by (topic,
// partition, offset); replicate writes a roll's rejects with the roll, so a replayed message is
// never listed twice.
type LogPosition struct {
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
	replayFile pipeline.ReplayFile
}

// RejectsPartsDir and ReplayPartsDir hold the rejects of an output on an object store.
const (
	RejectsPartsDir = RejectsDir
	ReplayPartsDir  = "rejected-rows"
)

// RejectsPart names the n-th rejects object of an output on an object store.
func RejectsPart(n int) string { return fmt.Sprintf("%s/part-%05d.jsonl", RejectsPartsDir, n) }

// ReplayPart names the n-th replay object (the rejected records as read, under the input's
// header) of an output on an object store, or of a merged output; ext is the input's extension.
func ReplayPart(n int, ext string) string {
	return fmt.Sprintf("%s/part-%05d.%s", ReplayPartsDir, n, ext)
}

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

// ReplayLocation is where the rejected records of src are written as they were read (the
// replay file, or its parts' folder on an object store), to run again once fixed; "" when src
// cannot give them back in its input's format.
func ReplayLocation(st store.Store, src pipeline.Source) string {
	rp, ok := src.(pipeline.Replayer)
	if !ok {
		return ""
	}
	rf, ok := rp.ReplayFile()
	if !ok {
		return ""
	}
	if _, ok := st.(store.Dir); ok {
		return st.Location(ReplayPrefix + rf.Ext)
	}
	return st.Location(ReplayPartsDir + "/")
}

// ReadRejects reads back the rejects of the output st whose checkpoint is cp, in the order they
// were written, one object at a time: fn gets each object's name and the bytes of it that count.
// This is the one reader of the layout RejectLog writes, whatever the store:
//   - with a checkpoint that counts parts (an object store): rejects/part-NNNNN.jsonl, the
//     parts it counts (a part past the count is a killed run's, read again on resume);
//   - with any other checkpoint (a folder): rejects.jsonl up to its checkpointed length (lines
//     past it are a killed run's);
//   - with none (cp nil: a merged output, which keeps no checkpoint): rejects.jsonl whole.
//
// A missing rejects.jsonl and an empty object hold no rejects; a missing counted part is an error.
func ReadRejects(ctx context.Context, st store.Store, cp *pipeline.Checkpoint, fn func(name string, r io.Reader) error) error {
	names, limit := []string{RejectsFile}, int64(-1)
	if cp != nil && cp.RejectParts > 0 {
		names = names[:0]
		for n := 0; n < cp.RejectParts; n++ {
			names = append(names, RejectsPart(n))
		}
	} else if cp != nil {
		limit = cp.RejectsBytes
	}
	for _, name := range names {
		r, err := st.Open(ctx, name)
		if store.IsNotExist(err) && name == RejectsFile {
			continue
		} else if err != nil {
			return fmt.Errorf("read the rejects %s: %w", st.Location(name), err)
		}
		size := r.Size()
		if limit >= 0 && size > limit {
			size = limit
		}
		if size > 0 { // an empty file (an earlier rekey wrote one without rejects): none
			err = fn(name, io.NewSectionReader(r, 0, size))
		}
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadReplay reads back the replay files of the output st whose checkpoint is cp (the rejected
// records as read, each file under the input's header), as ReadRejects reads its rejects: fn
// gets each file's name and the bytes of it that count, in name order:
//   - with a checkpoint that counts parts (an object store): rejected-rows/part-NNNNN.EXT, the
//     parts it counts;
//   - with any other checkpoint (a folder): rejected-rows.EXT up to its checkpointed length;
//   - with none (a merged output): every rejected-rows.EXT and rejected-rows/part-NNNNN.EXT whole.
func ReadReplay(ctx context.Context, st store.Store, cp *pipeline.Checkpoint, fn func(name string, r io.Reader) error) error {
	objs, err := st.List(ctx, ReplayPartsDir)
	if err != nil {
		return fmt.Errorf("list the rejected rows in %s: %w", st.Location(""), err)
	}
	for _, o := range objs {
		inFolder := strings.HasPrefix(o.Name, ReplayPartsDir+"/")
		top := strings.HasPrefix(o.Name, ReplayPrefix) && !strings.Contains(o.Name, "/")
		size := o.Size
		switch n, isPart := partNumber(o.Name); {
		case !inFolder && !top, inFolder && !isPart:
			continue
		case cp == nil:
		case cp.RejectParts > 0:
			if !inFolder || n >= cp.RejectParts { // a part past the count is a killed run's
				continue
			}
		case !top:
			continue
		default:
			size = min(size, cp.ReplayBytes) // lines past it are a killed run's
		}
		if size == 0 {
			continue
		}
		r, err := st.Open(ctx, o.Name)
		if err != nil {
			return fmt.Errorf("read the rejected rows %s: %w", st.Location(o.Name), err)
		}
		err = fn(o.Name, io.NewSectionReader(r, 0, size))
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// openRejects opens the rejects of the output st from its checkpoint cp (nil on a fresh run),
// and the replay file rf of the source, if it has one. A folder's files are cut to the
// checkpointed lengths and appended to; an object store's lines are spooled into parts.
func openRejects(st store.Store, cp *pipeline.Checkpoint, rf *pipeline.ReplayFile) (*RejectLog, error) {
	if cp == nil {
		cp = &pipeline.Checkpoint{}
	}
	// a copy: the checkpoint resumed from (a failed run's result) counts only what it committed
	counts := maps.Clone(cp.RejectCodes)
	if counts == nil {
		counts = map[string]int64{}
	}
	l := &RejectLog{counts: counts}
	d, local := st.(store.Dir)
	var err error
	if local {
		l.log, err = openAppendFile(filepath.Join(d.Path(), RejectsFile), cp.RejectsBytes, "rejects file", "")
	} else {
		l.log, err = openSpool("rejects")
		// the checkpointed lengths go on from the committed parts
		l.st, l.parts = st, cp.RejectParts
	}
	if err != nil {
		return nil, err
	}
	l.log.size = cp.RejectsBytes
	if rf == nil {
		return l, nil
	}
	if local {
		// a fresh file starts with the header; each part on an object store does (commitPart)
		l.replay, err = openAppendFile(filepath.Join(d.Path(), ReplayPrefix+rf.Ext), cp.ReplayBytes, "replay file", rf.Header)
	} else if l.replay, err = openSpool("replay"); err == nil {
		l.replay.size = cp.ReplayBytes
	}
	if err != nil {
		l.log.close()
		return nil, err
	}
	l.replayFile = *rf
	return l, nil
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

// ReplayPrefix starts the name of every replay file.
const ReplayPrefix = "rejected-rows."

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
	if l.replay != nil && r.Raw != "" && !r.rawCut {
		if err := l.replay.write(append([]byte(r.Raw), '\n')); err != nil {
			return err
		}
	}
	l.counts[r.Code]++
	return nil
}

// Sync flushes and fsyncs (on an object store: commits the lines since the last Sync as the
// next part, under ctx: a hard stop ends a stalled upload), returning the durable length of the
// rejects and of the replay file (0 without one), and a copy of the per-code counts.
func (l *RejectLog) Sync(ctx context.Context) (size, replaySize int64, counts map[string]int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st != nil {
		if err := l.commitPart(ctx); err != nil {
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
func (l *RejectLog) commitPart(ctx context.Context) error {
	if l.log.spooled() == 0 && (l.replay == nil || l.replay.spooled() == 0) {
		return nil
	}
	if err := l.log.commitTo(ctx, l.st, RejectsPart(l.parts), ""); err != nil {
		return err
	}
	if l.replay != nil {
		name := ReplayPart(l.parts, l.replayFile.Ext)
		if err := l.replay.commitTo(ctx, l.st, name, l.replayFile.Header); err != nil {
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
		_, _, _, err = l.Sync(context.Background()) // a folder's files: no request to end
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
// A local file is created with its first line (f nil until then): a run without rejects leaves
// no rejects file.
type appendFile struct {
	f      *os.File
	w      *bufio.Writer
	size   int64
	what   string
	spool  int64  // bytes in the spool file
	path   string // of a local file not created yet
	header string // what a local file starts with when created
}

// openAppendFile opens path (0600: rejected rows are raw input, which may be personal data) cut
// to truncateTo. With truncateTo 0 the file is created by the first write, under header; a file
// already there (lines no checkpoint counts) is removed.
func openAppendFile(path string, truncateTo int64, what, header string) (*appendFile, error) {
	if truncateTo == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove the uncommitted %s: %w", what, err)
		}
		return &appendFile{what: what, path: path, header: header}, nil
	}
	return createAppendFile(path, truncateTo, what)
}

func createAppendFile(path string, truncateTo int64, what string) (*appendFile, error) {
	// not through a symbolic link: the file it leads to, outside the output, would be cut and
	// given the raw rows
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("open %s: %s is a symbolic link, which could lead outside the output: replace it with the file itself (the %s of the interrupted run), or start over without --resume", what, path, what)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	if err := f.Chmod(0o600); err != nil { // a file from an older run may be wider
		f.Close()
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	// A resumed run drops the lines written after the last checkpoint: their rows are read again.
	if err := f.Truncate(truncateTo); err != nil {
		f.Close()
		return nil, fmt.Errorf("truncate %s to its checkpointed length: %w", what, err)
	}
	size, err := f.Seek(truncateTo, io.SeekStart)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("seek %s: %w", what, err)
	}
	return &appendFile{f: f, w: bufio.NewWriterSize(f, 256<<10), size: size, what: what}, nil
}

func (a *appendFile) write(b []byte) error {
	if a.f == nil {
		f, err := createAppendFile(a.path, 0, a.what)
		if err != nil {
			return err
		}
		a.f, a.w = f.f, f.w
		if a.header != "" {
			header := a.header
			a.header = ""
			if err := a.write([]byte(header)); err != nil {
				return err
			}
		}
	}
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
	if a.f == nil {
		return nil
	}
	if err := a.w.Flush(); err != nil {
		return fmt.Errorf("flush %s: %w", a.what, err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", a.what, err)
	}
	return nil
}

func (a *appendFile) close() error {
	if a.f == nil {
		return nil
	}
	return a.f.Close()
}
