package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
)

// Sample returns up to n records spread over the file, for placing region splits. For an
// uncompressed file much larger than the sample it reads rows at spread byte offsets (one in each
// of n equal stretches, pipeline.SpreadPick), each resynchronised to the next line start (those
// records have Seq 0: their line number is not known). A gzip file gives its first n rows; a small file is read whole and sampled evenly.
// Records that fail to parse are included with Err set.
func (s *Source) Sample(ctx context.Context, n int) ([]pipeline.Record, error) {
	return s.sample(ctx, n, s.sampleBytes())
}

// sample is Sample holding at most budget bytes of records.
func (s *Source) sample(ctx context.Context, n int, budget int64) ([]pipeline.Record, error) {
	if n <= 0 {
		return nil, nil
	}
	if s.stdin != nil {
		return nil, fmt.Errorf("%s cannot be sampled: it can be read only once", s.cfg.Path)
	}
	dataSize := s.size - s.dataStart
	if s.gz || s.avgRow <= 0 || float64(n)*s.avgRow*4 >= float64(dataSize) {
		return s.sampleSequential(ctx, n, budget)
	}
	return s.sampleSpread(ctx, n, dataSize, budget)
}

func (s *Source) sampleSequential(ctx context.Context, n int, budget int64) ([]pipeline.Record, error) {
	r, err := s.openAt(ctx, s.dataStart, s.size) // the whole file, also for a part: every part plans the same regions
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// every record is read; one in every kept, halved (every doubled) whenever the kept ones
	// pass SampleBytes. A file's records keep their read buffers while they fit (a small file,
	// the common case, is sampled without a copy); past the budget they are copied out, and the
	// buffers go back
	var recs []pipeline.Record
	var held int64
	seen, every := 0, 1
	inPlace := !s.gz
	err = s.readChunks(ctx, r, s.dataStart, s.dataLine, func(c *chunk) bool {
		for _, b := range s.parseChunk(c) {
			for i := range b.Records {
				if seen%every == 0 {
					rec := b.Records[i]
					if !inPlace {
						rec = detachRecord(&rec)
					}
					recs = append(recs, rec)
					held += rec.Size()
				}
				seen++
				if held > budget && inPlace {
					for j := range recs {
						recs[j] = detachRecord(&recs[j])
					}
					inPlace = false
				}
				for held > budget && len(recs) > 1 {
					recs, held = halveSample(recs), 0
					for j := range recs {
						held += recs[j].Size()
					}
					every *= 2
				}
			}
			if b.Release != nil && !inPlace {
				b.Release()
			}
		}
		return !(s.gz && seen >= n)
	})
	if err != nil {
		return nil, err
	}
	if s.gz && every > 1 {
		return recs, nil // the first n rows, thinned to SampleBytes
	}
	if len(recs) <= n {
		return recs, nil
	}
	if s.gz {
		return recs[:n], nil
	}
	out := make([]pipeline.Record, n)
	for k, i := range pipeline.SpreadIndexes(int64(len(recs)), n) {
		out[k] = recs[i]
	}
	return out, nil
}

func (s *Source) sampleSpread(ctx context.Context, n int, dataSize, budget int64) ([]pipeline.Record, error) {
	f, err := s.openRandom(ctx)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// an offset in each of n equal stretches, at a hashed place within it (evenly spaced offsets
	// over rows of one width would each land the same number of rows after the last)
	at := func(k int) int64 { return s.dataStart + pipeline.SpreadPick(k, n, dataSize) }
	var r io.ReaderAt = f
	if s.cfg.Object != nil {
		// A bucket answers each ranged read in milliseconds: sample clusters of neighbouring rows
		// at objectSampleClusters places, each cluster fetched by one read.
		per := (n + objectSampleClusters - 1) / objectSampleClusters
		clusters := int64((n + per - 1) / per)
		step := max(1, int64(s.avgRow))
		at = func(k int) int64 {
			return s.dataStart + int64(k/per)*dataSize/clusters + int64(k%per)*step
		}
		r = &blockReaderAt{r: f, size: int(float64(per)*s.avgRow*2) + 64<<10}
	}
	ncols := len(s.names)
	slab := make([]pipeline.Value, n*ncols)
	recs := make([]pipeline.Record, 0, n)
	parse := s.parseCSVRow
	if s.format == formatJSONL {
		parse = func(data string, pos int, vals []pipeline.Value) (int, int, bool, *pipeline.RowError) {
			return s.parseJSONRow(data, pos, vals, nil) // a sample needs no write times
		}
	}
	var buf []byte
	// the picks k with k%every == 0 are read; every doubles (and the kept picks are halved)
	// whenever the rows kept pass SampleBytes: fewer rows, still spread over the input
	var picks []int
	var held int64
	every := 1
	for k, read := 0, 0; k < n; k, read = k+every, read+1 {
		if read%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		vals := slab[len(recs)*ncols : (len(recs)+1)*ncols : (len(recs)+1)*ncols]
		rec, ok, err := s.sampleAt(r, at(k), &buf, vals, parse)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		recs, picks = append(recs, rec), append(picks, k)
		held += rec.Size()
		for held > budget && len(recs) > 1 {
			every *= 2
			kept := 0
			for j := range recs {
				if picks[j]%every != 0 {
					continue
				}
				// compacted in order: a record's values move to a slab place at or before theirs
				v := slab[kept*ncols : (kept+1)*ncols : (kept+1)*ncols]
				copy(v, recs[j].Values)
				recs[kept], picks[kept] = recs[j], picks[j]
				recs[kept].Values = v
				kept++
			}
			clear(slab[kept*ncols : len(recs)*ncols]) // the dropped rows' strings go
			recs, picks, held = recs[:kept], picks[:kept], 0
			for j := range recs {
				held += recs[j].Size()
			}
		}
		k -= k % every // the loop's step lands on the next pick of a doubled every
	}
	return recs, nil
}

// sampleBytes is Config.SampleBytes or its default.
func (s *Source) sampleBytes() int64 {
	if s.cfg.SampleBytes > 0 {
		return s.cfg.SampleBytes
	}
	return defaultSampleBytes
}

// defaultSampleBytes is Config.SampleBytes's default.
const defaultSampleBytes = 64 << 20

// detachRecord copies r out of the read buffer its strings point into.
func detachRecord(r *pipeline.Record) pipeline.Record {
	out := *r
	out.Values = make([]pipeline.Value, len(r.Values))
	for i, v := range r.Values {
		v.Str = strings.Clone(v.Str)
		out.Values[i] = v
	}
	out.Raw = ""
	if r.Err != nil {
		out.Raw = strings.Clone(r.Raw)
	}
	return out
}

// halveSample keeps every other record, the first one included.
func halveSample(recs []pipeline.Record) []pipeline.Record {
	kept := 0
	for j := 0; j < len(recs); j += 2 {
		recs[kept] = recs[j]
		kept++
	}
	clear(recs[kept:])
	return recs[:kept]
}

// sampleAt reads the first record that starts after off (at off when off is the data's start)
// into vals, reading through *buf, a window it widens up to twice the largest record. ok is
// false when there is none: off is in the last line, or no record ends within the widest window.
func (s *Source) sampleAt(r io.ReaderAt, off int64, buf *[]byte, vals []pipeline.Value,
	parse func(data string, pos int, vals []pipeline.Value) (int, int, bool, *pipeline.RowError)) (rec pipeline.Record, ok bool, err error) {
	size := int(s.avgRow*4) + 4096
	// The line start and one whole record lie within this many bytes, or the sample point is
	// skipped (a record longer than the limit is a reject, not a sample).
	maxWindow := 2*s.cfg.MaxRecordSize + 2
	for {
		if cap(*buf) < size {
			*buf = make([]byte, size)
		}
		*buf = (*buf)[:size]
		m, err := r.ReadAt(*buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return rec, false, fmt.Errorf("read %s at %d: %w", s.cfg.Path, off, err)
		}
		eof := m < size
		win := (*buf)[:m]
		start := 0
		if off > s.dataStart {
			// off may fall inside a line: start at the next one.
			i := bytes.IndexByte(win, '\n')
			if i < 0 {
				if eof || size >= maxWindow {
					return rec, false, nil
				}
				size = min(2*size, maxWindow)
				continue
			}
			start = i + 1
		}
		win = win[start:]
		if !eof {
			// The first record must end in the window, as the splitter decides.
			cut, head := s.splitPoint(win)
			if head > 0 {
				return rec, false, nil
			}
			if cut == 0 {
				if size >= maxWindow {
					return rec, false, nil
				}
				size = min(2*size, maxWindow)
				continue
			}
			win = win[:cut]
		}
		// The window is only looked at to find where its first record ends: a view of it, not
		// a copy (the window is a few KiB, the record a few dozen bytes).
		str := unsafe.String(unsafe.SliceData(win), len(win))
		next, _, blank, _ := parse(str, 0, vals)
		if blank || next == 0 {
			clear(vals) // no value may point into the window, which the next read overwrites
			return rec, false, nil
		}
		// Keep only the row's bytes alive, not the window.
		row := strings.Clone(str[:next])
		clear(vals)
		_, _, _, rerr := parse(row, 0, vals)
		rec = pipeline.Record{Values: vals, Err: rerr}
		if next > s.cfg.MaxRecordSize {
			rec.Err, row = s.tooLong(int64(next)), s.rawStart(rawLine(row))
		}
		if rec.Err != nil {
			rec.Raw = rawLine(row)
		}
		return rec, true, nil
	}
}

// openRandom opens the file, or the object, for reads at any offset.
func (s *Source) openRandom(ctx context.Context) (interface {
	io.ReaderAt
	io.Closer
}, error) {
	if o := s.cfg.Object; o != nil {
		return o.open(ctx) // the version listed: a part's boundaries are found in the bytes it reads
	}
	f, err := os.Open(s.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", s.cfg.Path, err)
	}
	return f, nil
}

// objectSampleClusters is how many places of an object a spread sample reads.
const objectSampleClusters = 256

// blockReaderAt serves reads from the last block it fetched: the reads of one sample cluster
// cost one request.
type blockReaderAt struct {
	r     io.ReaderAt
	size  int
	block []byte
	off   int64
	err   error // the fetch's error (io.EOF at the end of the object)
}

func (b *blockReaderAt) ReadAt(p []byte, off int64) (int, error) {
	end := b.off + int64(len(b.block))
	// a hit: off lies in the block, and so does the read's end unless the block ends the object
	hit := b.block != nil && off >= b.off && (off+int64(len(p)) <= end || b.err != nil)
	if !hit {
		buf := make([]byte, max(b.size, len(p)))
		n, err := b.r.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		b.block, b.off, b.err = buf[:n], off, err
	}
	if off >= b.off+int64(len(b.block)) {
		return 0, io.EOF
	}
	n := copy(p, b.block[off-b.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
