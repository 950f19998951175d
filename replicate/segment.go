package replicate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// segment is one (region, partition) part of a roll (its files are named by output.RollFile): an upsert file in the table format and a
// file of DELETE statements, both written under temporary names until the roll commits.
type segment struct {
	w      *worker
	region int
	first  int64
	dir    string // of the data file, relative to the output (data/region-0003)
	ddir   string // of the delete file (deletes/region-0003)

	buf  files.Buffer
	rows int64

	f       *output.PendingFile
	out     countingWriter
	fw      files.FileWriter
	rawDone int64 // buffered bytes already encoded into the file

	df    *output.PendingFile
	dw    *bufio.Writer
	dkeys map[string]struct{}
	dsize int64
	dels  int64
}

// countingWriter counts the bytes written to the file; a pooled bufio.Writer is attached while
// a chunk is encoded, so idle segments hold no write buffer.
type countingWriter struct {
	f  io.Writer
	bw *bufio.Writer
	n  int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	var n int
	var err error
	if c.bw != nil {
		n, err = c.bw.Write(p)
	} else {
		n, err = c.f.Write(p)
	}
	c.n += int64(n)
	return n, err
}

var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}

func (c *countingWriter) attach() {
	c.bw = bufPool.Get().(*bufio.Writer)
	c.bw.Reset(c.f)
}

func (c *countingWriter) detach() error {
	err := c.bw.Flush()
	c.bw.Reset(nil)
	bufPool.Put(c.bw)
	c.bw = nil
	return err
}

// add copies one target row into the buffer; a value that does not fit gives a *RowError.
func (s *segment) add(row []pipeline.Value) error {
	if err := s.buf.Append(row); err != nil {
		return err
	}
	s.rows++
	return nil
}

// used is the bytes buffered and not yet encoded.
func (s *segment) used() int64 { return s.buf.Used() }

// flush encodes the buffered rows as one chunk (a Parquet row group) into the file.
func (s *segment) flush() error {
	if s.buf.Rows() == 0 {
		return nil
	}
	if s.f == nil {
		f, err := s.w.r.createFile(s.w.ctx, s.dir, s.w.partition, s.first, s.w.r.cfg.Format.Ext())
		if err != nil {
			return fmt.Errorf("create data file: %w", err)
		}
		s.f = f
		s.out = countingWriter{f: f}
		s.out.attach()
		fw, err := s.w.r.cfg.Format.NewWriter(&s.out, s.w.r.target)
		if derr := s.out.detach(); err == nil {
			err = derr
		}
		if err != nil {
			return fmt.Errorf("start %s file: %w", s.w.r.cfg.Format.Name(), err)
		}
		s.fw = fw
	}
	c := s.buf.Cut()
	raw := c.Mem()
	before := s.out.n
	s.out.attach()
	err := s.fw.Write(c)
	if derr := s.out.detach(); err == nil {
		err = derr
	}
	c.Release()
	if err != nil {
		return fmt.Errorf("write %s's file of partition %d: %w", s.dir, s.w.partition, err)
	}
	s.rawDone += raw
	s.w.r.noteRatio(raw, s.out.n-before)
	return nil
}

// estSize is the expected size of the data file: written bytes plus the buffered rows at the
// compression ratio seen so far.
func (s *segment) estSize() int64 {
	return s.out.n + int64(float64(s.buf.Used())*s.w.r.ratio()) + s.dsize
}

// deleted tells whether the key was deleted in this segment.
func (s *segment) deleted(key []byte) bool {
	if len(s.dkeys) == 0 {
		return false
	}
	_, ok := s.dkeys[string(key)]
	return ok
}

// addDelete writes the DELETE of row's key (key is its encoding); repeated keys are written once.
func (s *segment) addDelete(row []pipeline.Value, key []byte) error {
	if _, dup := s.dkeys[string(key)]; dup {
		return nil
	}
	if s.df == nil {
		f, err := s.w.r.createFile(s.w.ctx, s.ddir, s.w.partition, s.first, output.RollDeletesExt)
		if err != nil {
			return fmt.Errorf("create delete file: %w", err)
		}
		s.df = f
		s.dw = bufio.NewWriterSize(f, 64<<10)
		s.dkeys = map[string]struct{}{}
		n, _ := s.dw.WriteString(deleteHeader(s.w.r.target.Table, s.region, s.w.partition, s.first))
		s.dsize += int64(n)
	}
	s.dkeys[string(key)] = struct{}{}
	w := s.w
	w.stmt = w.r.dstmt.append(w.stmt[:0], row)
	n, err := s.dw.Write(w.stmt)
	s.dsize += int64(n)
	if err != nil {
		return fmt.Errorf("write delete file: %w", err)
	}
	s.dels++
	return nil
}

// segmentFiles is what a committed segment wrote.
type segmentFiles struct {
	Region    int
	Partition int
	First     int64
	Last      int64
	Data      *pipeline.FileInfo // nil: no upserts
	Deletes   *DeleteFile        // nil: no deletes
}

// finish closes both files (footer; on a folder fsync and close under their temporary names).
func (s *segment) finish() error {
	var errs []error
	if err := s.flush(); err != nil {
		errs = append(errs, err)
	}
	if s.f != nil {
		s.out.attach()
		err := s.fw.Close()
		if derr := s.out.detach(); err == nil {
			err = derr
		}
		if err == nil {
			err = s.f.Finish()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("close data file: %w", err))
		}
	}
	if s.df != nil {
		err := s.dw.Flush()
		if err == nil {
			err = s.df.Finish()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("close delete file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// stage readies the finished files to commit under their final names once the manifest lists
// them (output.PendingFile.Stage: on an object store they are uploaded now), adding them to
// files; it says what the segment holds.
func (s *segment) stage(ctx context.Context, rollLast int64, files *rollFiles) (segmentFiles, error) {
	w := s.w
	sf := segmentFiles{Region: s.region, Partition: w.partition, First: s.first, Last: rollLast}
	if s.f != nil {
		rel := output.RollFile(s.dir, w.partition, s.first, rollLast, w.r.cfg.Format.Ext())
		if err := files.stage(ctx, s.f, rel); err != nil {
			return sf, err
		}
		sf.Data = &pipeline.FileInfo{Region: s.region, Path: rel, Rows: s.rows, Bytes: s.out.n}
	}
	if s.df != nil {
		rel := output.RollFile(s.ddir, w.partition, s.first, rollLast, output.RollDeletesExt)
		if err := files.stage(ctx, s.df, rel); err != nil {
			return sf, err
		}
		sf.Deletes = &DeleteFile{Region: s.region, Path: rel, Keys: s.dels, Bytes: s.dsize}
	}
	return sf, nil
}

// rollFile is a staged file of a closing roll and its final name.
type rollFile struct {
	f      *output.PendingFile
	name   string
	staged *output.Staged // a folder's rename, which the manifest records; nil: uploaded
}

// rollFiles are a closing roll's staged files.
type rollFiles []rollFile

// stage stages f as name and adds it.
func (files *rollFiles) stage(ctx context.Context, f *output.PendingFile, name string) error {
	st, err := f.Stage(ctx, name)
	if err != nil {
		return err
	}
	*files = append(*files, rollFile{f: f, name: name, staged: st})
	return nil
}

// abort closes the temporary files and, when remove is set, removes them.
func (s *segment) abort(remove bool) {
	if s.f != nil {
		dropFile(s.f, remove)
		s.f = nil
	}
	if s.df != nil {
		dropFile(s.df, remove)
		s.df = nil
	}
}

// release returns the buffer for reuse.
func (s *segment) release() {
	if s.buf != nil {
		if s.buf.Rows() > 0 {
			s.buf.Cut().Release()
		}
		// keep a few small buffers for the next roll; large ones go to the GC
		if len(s.w.freeBufs) < 2*s.w.r.cfg.Plan.Count() && s.buf.Mem() <= 1<<20 {
			s.w.freeBufs = append(s.w.freeBufs, s.buf)
		}
		s.buf = nil
	}
}
