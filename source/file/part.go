package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
)

// A part of a file (Config.Part) is the records that start in a byte range of it: part i of N
// starts at the first record boundary at or after dataStart + (size-dataStart)*i/N, and ends
// where part i+1 starts (the last one at the end of the file). A boundary is found the same way
// on every machine, after the first '\n' at or after the nominal offset's previous byte, so the
// parts of one file are disjoint and cover it, whatever the offsets hit: a line's middle, its
// '\n', the header, the end of the file. That only holds where every '\n' ends a record: JSON
// Lines, and CSV with multiline=false; a gzip stream cannot be entered in the middle at all.

// partRefusal says why the file cannot be read in parts, "" when it can.
func (s *Source) partRefusal() string {
	switch {
	case s.stdin != nil:
		return "stdin cannot be split"
	case s.gz:
		return "it is gzip, which cannot be read from the middle: decompress it (gunzip), or split the input into more files"
	case s.format == formatCSV && !s.csv.singleLine:
		return "it is CSV, where a quoted field may hold a line break, so a line end is not always a record's end: " +
			"if no field holds one, add multiline=false to the --source URI (each line is then one record); otherwise split the input into more files"
	}
	return ""
}

// findPart sets the part's byte range [from, to) and the offset its line numbers count from.
func (s *Source) findPart(ctx context.Context) error {
	p := s.cfg.Part
	if why := s.partRefusal(); why != "" {
		return fmt.Errorf("file %s cannot be read in %d byte ranges: %s", s.cfg.Path, p.Count, why)
	}
	r, err := s.openRandom(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	if s.from, err = s.recordStart(r, s.nominalOffset(p.Index)); err != nil {
		return err
	}
	if s.to, err = s.recordStart(r, s.nominalOffset(p.Index+1)); err != nil {
		return err
	}
	s.parted = true
	// The first part's lines are the file's; another part's count from its start, which names
	// its stream (orders.jsonl@1048576), so that a reject's position finds its line without
	// counting the lines before.
	if p.Index > 0 {
		s.base = s.from
	}
	s.stream += "@" + strconv.FormatInt(s.base, 10)
	return nil
}

// nominalOffset is where part k of the data after the header starts, before moving to a record
// boundary.
func (s *Source) nominalOffset(k int) int64 {
	span := uint64(max(s.size-s.dataStart, 0))
	hi, lo := bits.Mul64(span, uint64(k))
	q, _ := bits.Div64(hi, lo, uint64(s.cfg.Part.Count)) // k <= Count: the quotient fits
	return s.dataStart + int64(q)
}

// recordStart returns the first record boundary at or after off: the data's start, the byte
// after the first '\n' at or after off-1, or the end of the file. It reads from off-1 in blocks
// that double, as far as that line's end.
func (s *Source) recordStart(r io.ReaderAt, off int64) (int64, error) {
	if off <= s.dataStart {
		return s.dataStart, nil
	}
	at, size := off-1, 64<<10
	for at < s.size {
		buf := make([]byte, min(int64(size), s.size-at))
		n, err := r.ReadAt(buf, at)
		if k := bytes.IndexByte(buf[:n], '\n'); k >= 0 {
			return at + int64(k) + 1, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read %s at offset %d: %w", s.cfg.Path, at, err)
		}
		if n == 0 {
			return 0, fmt.Errorf("read %s at offset %d: the file ends before its size (%d bytes): was it replaced?", s.cfg.Path, at, s.size)
		}
		at += int64(n)
		size = min(2*size, int(readAheadBlock))
	}
	return s.size, nil
}

// claimed is the part's byte range as the identity records it: the first part's starts at 0 (the
// header is read by every part, and the ranges of one file's parts tile it).
func (s *Source) claimed() string {
	from := s.from
	if s.cfg.Part.Index == 0 {
		from = 0
	}
	return strconv.FormatInt(from, 10) + "-" + strconv.FormatInt(s.to, 10)
}
