package replicate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rekey/rekey/pipeline"
)

// rollRejects is a roll's rejects file: rejects/p0002-<first>-<last>.jsonl, a line per rejected
// message (pipeline.Reject with the message's topic, partition and offset). It is written under
// a temporary name and committed with the roll's data files, so a replayed roll rewrites it
// instead of appending its rejects a second time. Mode 0600: the lines hold raw messages, which
// may be personal data.
type rollRejects struct {
	dir   string // DIR/rejects
	tmp   string
	f     *os.File
	w     *bufio.Writer
	lines int64
	line  []byte
}

func (w *worker) newRejects(first int64) *rollRejects {
	dir := filepath.Join(w.r.cfg.OutDir, RejectsDir)
	return &rollRejects{dir: dir, tmp: filepath.Join(dir, w.r.tmpName(w.partition, first, "jsonl"))}
}

func (rr *rollRejects) add(rj *pipeline.Reject) error {
	if rr.f == nil {
		if err := os.MkdirAll(rr.dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", rr.dir, err)
		}
		f, err := os.OpenFile(rr.tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("create rejects file: %w", err)
		}
		rr.f = f
		rr.w = bufio.NewWriterSize(f, 64<<10)
	}
	line, err := json.Marshal(rj)
	if err != nil {
		return fmt.Errorf("encode reject: %w", err)
	}
	if _, err := rr.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", rr.tmp, err)
	}
	rr.lines++
	return nil
}

// finish flushes, fsyncs and closes the file under its temporary name.
func (rr *rollRejects) finish() error {
	if rr.f == nil || rr.w == nil {
		return nil
	}
	err := rr.w.Flush()
	if err == nil {
		err = rr.f.Sync()
	}
	if cerr := rr.f.Close(); err == nil {
		err = cerr
	}
	rr.w = nil
	if err != nil {
		return fmt.Errorf("close rejects file: %w", err)
	}
	return nil
}

// commit renames the finished file to its final name (the caller fsyncs the folder).
func (rr *rollRejects) commit(partition int, first, last int64) (*RejectFile, error) {
	if rr.f == nil {
		return nil, nil
	}
	name := SegmentName(partition, first, last) + ".jsonl"
	rel := RejectsDir + "/" + name
	if err := os.Rename(rr.tmp, filepath.Join(rr.dir, name)); err != nil {
		return nil, fmt.Errorf("commit %s: %w", rel, err)
	}
	return &RejectFile{Partition: partition, FirstOffset: first, RollLast: last, Path: rel, Rejects: rr.lines}, nil
}

// abort closes the temporary file and, when remove is set, removes it.
func (rr *rollRejects) abort(remove bool) {
	if rr.f != nil {
		rr.f.Close()
		if remove {
			os.Remove(rr.tmp)
		}
		rr.f = nil
	}
}
