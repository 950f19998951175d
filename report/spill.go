package report

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/rekey/rekey/pipeline"
)

// Exact collision counting in bounded memory. Every accepted row appends
//
//	hash64(target key) | hash64(source values) | uvarint length | origin and values (text)
//
// to one of `buckets` temp files chosen by the key hash's top bits. Afterwards each bucket is
// loaded on its own (a bucket holds about 1/buckets of the rows) and sorted by (key hash, source
// hash): a key with more than one distinct source hash is a collision, and rows beyond the
// distinct ones are identical duplicates. The text (the row's origin, its key values and the
// source values the key is computed from, each capped) is only read back for a bounded number of
// examples. Memory: the workers' write buffers and one bucket at a time; disk: about
// 24 + len(text) bytes per row, removed by close.
type spill struct {
	dir     string
	shift   uint
	files   []*os.File
	mu      []sync.Mutex
	failed  error
	errOnce sync.Once

	bufSize int

	streamMu sync.Mutex
	streams  map[string]uint64
	names    []string
}

const (
	minBuckets = 256
	maxBuckets = 512 // open files; beyond, oversized buckets are split when counted
	// spillBufBytes is each worker's write buffer, shared out over the buckets (4-16 KiB each)
	spillBufBytes = 4 << 20
	// bytesPerRow is a typical temp record (hashes, origin, key source values), for sizing.
	bytesPerRow = 48
)

// spillBuckets is the number of temp files for an expected row count: enough that a file stays
// under maxBucketBytes, between minBuckets and maxBuckets (a power of two).
func spillBuckets(expectedRows int64) int {
	n := minBuckets
	for n < maxBuckets && expectedRows > 0 && expectedRows*bytesPerRow/int64(n) > maxBucketBytes*3/4 {
		n *= 2
	}
	return n
}

func newSpill(tmp string, buckets int) (*spill, error) {
	dir, err := os.MkdirTemp(tmp, "rekey-report-")
	if err != nil {
		return nil, fmt.Errorf("report: temp directory for the collision check: %w", err)
	}
	shift := uint(64)
	for b := buckets; b > 1; b /= 2 {
		shift--
	}
	s := &spill{dir: dir, shift: shift, files: make([]*os.File, buckets), mu: make([]sync.Mutex, buckets),
		streams: map[string]uint64{}, bufSize: min(max(spillBufBytes/buckets, 4<<10), 16<<10)}
	for i := range s.files {
		f, err := os.Create(fmt.Sprintf("%s/bucket-%03d", dir, i))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("report: collision check: %w", err)
		}
		s.files[i] = f
	}
	return s, nil
}

// close removes the temp files.
func (s *spill) close() {
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
	os.RemoveAll(s.dir)
}

func (s *spill) fail(err error) {
	s.errOnce.Do(func() { s.failed = err })
}

func (s *spill) streamID(name string) uint64 {
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	id, ok := s.streams[name]
	if !ok {
		id = uint64(len(s.names))
		s.streams[name] = id
		s.names = append(s.names, name)
	}
	return id
}

func (s *spill) streamName(id uint64) string {
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	if id < uint64(len(s.names)) {
		return s.names[id]
	}
	return "?"
}

// spillWriter buffers one worker's records per bucket.
type spillWriter struct {
	s    *spill
	bufs [][]byte
}

func (s *spill) writer() *spillWriter {
	return &spillWriter{s: s, bufs: make([][]byte, len(s.files))}
}

func (w *spillWriter) add(keyHash, srcHash uint64, text []byte) {
	b := int(keyHash >> w.s.shift)
	buf := w.bufs[b]
	if buf == nil {
		buf = make([]byte, 0, w.s.bufSize+256)
	}
	buf = binary.LittleEndian.AppendUint64(buf, keyHash)
	buf = binary.LittleEndian.AppendUint64(buf, srcHash)
	buf = binary.AppendUvarint(buf, uint64(len(text)))
	buf = append(buf, text...)
	w.bufs[b] = buf
	if len(buf) >= w.s.bufSize {
		w.flushBucket(b)
	}
}

func (w *spillWriter) flushBucket(b int) {
	buf := w.bufs[b]
	if len(buf) == 0 {
		return
	}
	s := w.s
	s.mu[b].Lock()
	_, err := s.files[b].Write(buf)
	s.mu[b].Unlock()
	if err != nil {
		s.fail(fmt.Errorf("report: collision check: write temp file: %w", err))
	}
	w.bufs[b] = buf[:0]
}

func (w *spillWriter) flush() {
	for b := range w.bufs {
		w.flushBucket(b)
	}
}

// maxOriginText caps each text value kept in the temp files for examples.
const maxOriginText = 160

// origin text: stream id, seq, key values (when kept), source values.
func appendOrigin(dst []byte, streamID uint64, seq int64, key []pipeline.Value, srcCols []int, rec []pipeline.Value) []byte {
	dst = binary.AppendUvarint(dst, streamID)
	dst = binary.AppendVarint(dst, seq)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	for _, v := range key {
		dst = appendValue(dst, v, maxOriginText)
	}
	dst = binary.AppendUvarint(dst, uint64(len(srcCols)))
	for _, c := range srcCols {
		v := pipeline.Null
		if c < len(rec) {
			v = rec[c]
		}
		dst = appendValue(dst, v, maxOriginText)
	}
	return dst
}

type origin struct {
	stream string
	seq    int64
	key    []pipeline.Value
	src    []pipeline.Value
	trunc  bool
}

func (s *spill) decodeOrigin(b []byte) (origin, bool) {
	var o origin
	id, k := binary.Uvarint(b)
	if k <= 0 {
		return o, false
	}
	b = b[k:]
	seq, k := binary.Varint(b)
	if k <= 0 {
		return o, false
	}
	b = b[k:]
	o.stream, o.seq = s.streamName(id), seq
	for _, dst := range []*[]pipeline.Value{&o.key, &o.src} {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > 1<<16 {
			return o, false
		}
		b = b[k:]
		for i := uint64(0); i < n; i++ {
			v, tr, rest, ok := decodeValue(b)
			if !ok {
				return o, false
			}
			o.trunc = o.trunc || tr
			*dst = append(*dst, v)
			b = rest
		}
	}
	return o, true
}

// collisionResult is what the bucket pass finds.
type collisionResult struct {
	Keys       int64 // distinct target keys
	Colliding  int64 // keys produced by more than one distinct source row
	Rows       int64 // rows that would be overwritten: per key, distinct source rows - 1
	Duplicates int64 // identical source rows repeated: per key, rows - distinct source rows
	Examples   []collisionExample
}

type collisionExample struct {
	keyHash uint64
	Rows    int64 // rows with this key
	Sources int64 // distinct source rows among them
	Origins []origin
}

// spillRec is a temp record's fixed part in memory: 24 bytes.
type spillRec struct {
	key, src uint64
	pos      uint64 // offset of the text in the file << 24 | its length
}

func (r spillRec) off() int64 { return int64(r.pos >> 24) }
func (r spillRec) n() int     { return int(r.pos & (1<<24 - 1)) }

// count processes every bucket (two at a time) and returns the totals and up to maxExamples
// examples: the colliding keys with the smallest key hashes (deterministic), each with up to
// maxOrigins distinct source rows.
func (s *spill) count(maxExamples, maxOrigins int) (collisionResult, error) {
	if s.failed != nil {
		return collisionResult{}, s.failed
	}
	for _, f := range s.files {
		if err := f.Close(); err != nil {
			return collisionResult{}, fmt.Errorf("report: collision check: %w", err)
		}
	}
	type part struct {
		res collisionResult
		err error
	}
	parts := make([]part, len(s.files))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var recs, tmp []spillRec
			for b := range next {
				name := s.files[b].Name()
				parts[b].res, recs, tmp, parts[b].err = s.countFile(name, 0, recs[:0], tmp, maxExamples, maxOrigins)
				os.Remove(name) // free the disk as we go
			}
		}()
	}
	for b := range s.files {
		next <- b
	}
	close(next)
	wg.Wait()
	var res collisionResult
	for _, p := range parts {
		if p.err != nil {
			return res, p.err
		}
		res.add(p.res, maxExamples)
	}
	return res, nil
}

func (r *collisionResult) add(o collisionResult, maxExamples int) {
	r.Keys += o.Keys
	r.Colliding += o.Colliding
	r.Rows += o.Rows
	r.Duplicates += o.Duplicates
	r.Examples = append(r.Examples, o.Examples...)
	slices.SortFunc(r.Examples, func(a, b collisionExample) int {
		switch {
		case a.keyHash < b.keyHash:
			return -1
		case a.keyHash > b.keyHash:
			return 1
		}
		return 0
	})
	if len(r.Examples) > maxExamples {
		r.Examples = r.Examples[:maxExamples]
	}
}

// maxBucketBytes bounds the temp file one goroutine sorts in memory (about 32 bytes per row of
// it for the sort, twice): a larger one (an input of more than ~50M rows) is first split into 16
// files by the next 4 bits of the key hash, so memory stays flat however large the input.
var maxBucketBytes int64 = 8 << 20

// spillHeader is the fixed part of a temp record: key hash, source hash, then the text length.
const spillHeader = 16

// countFile counts one bucket file (see spill). It reads the records' fixed parts in a stream
// and seeks back only for the examples' text.
func (s *spill) countFile(path string, depth int, recs, tmp []spillRec, maxExamples, maxOrigins int) (collisionResult, []spillRec, []spillRec, error) {
	var res collisionResult
	st, err := os.Stat(path)
	if err != nil {
		return res, recs, tmp, fmt.Errorf("report: collision check: %w", err)
	}
	if st.Size() > maxBucketBytes && depth < 8 {
		return s.splitFile(path, depth, recs, tmp, maxExamples, maxOrigins)
	}
	f, err := os.Open(path)
	if err != nil {
		return res, recs, tmp, fmt.Errorf("report: collision check: %w", err)
	}
	defer f.Close()
	err = scanSpill(f, func(k, src uint64, off int64, n int, _ []byte) error {
		recs = append(recs, spillRec{key: k, src: src, pos: uint64(off)<<24 | uint64(n)})
		return nil
	}, false)
	if err != nil {
		return res, recs, tmp, err
	}
	recs, tmp = radixSort(recs, tmp)
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].key == recs[i].key {
			j++
		}
		if j-i > 1 {
			// a key seen more than once: order its rows by source hash, then position
			slices.SortFunc(recs[i:j], func(a, b spillRec) int {
				switch {
				case a.src != b.src:
					if a.src < b.src {
						return -1
					}
					return 1
				case a.pos < b.pos:
					return -1
				case a.pos > b.pos:
					return 1
				}
				return 0
			})
		}
		distinct := int64(1)
		for q := i + 1; q < j; q++ {
			if recs[q].src != recs[q-1].src {
				distinct++
			}
		}
		rows := int64(j - i)
		res.Keys++
		res.Duplicates += rows - distinct
		if distinct > 1 {
			res.Colliding++
			res.Rows += distinct - 1
			if len(res.Examples) < maxExamples {
				ex := collisionExample{keyHash: recs[i].key, Rows: rows, Sources: distinct}
				for q := i; q < j && len(ex.Origins) < maxOrigins; q++ {
					if q > i && recs[q].src == recs[q-1].src {
						continue // one row per distinct source row
					}
					r := recs[q]
					buf := make([]byte, r.n())
					if _, err := f.ReadAt(buf, r.off()); err != nil {
						return res, recs, tmp, fmt.Errorf("report: collision check: read temp file: %w", err)
					}
					if o, ok := s.decodeOrigin(buf); ok {
						ex.Origins = append(ex.Origins, o)
					}
				}
				slices.SortFunc(ex.Origins, func(a, b origin) int {
					if a.stream != b.stream {
						if a.stream < b.stream {
							return -1
						}
						return 1
					}
					return int(min(max(a.seq-b.seq, -1), 1))
				})
				res.Examples = append(res.Examples, ex)
			}
		}
		i = j
	}
	return res, recs, tmp, nil
}

// scanSpill reads a temp file's records in order; with text the callback gets each record's
// text (valid during the call), otherwise only its offset and length.
func scanSpill(f *os.File, fn func(key, src uint64, off int64, n int, text []byte) error, text bool) error {
	br := bufio.NewReaderSize(f, 256<<10)
	var hdr [spillHeader]byte
	var buf []byte
	off := int64(0)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return errors.New("report: collision check: truncated temp file")
		}
		n, err := binary.ReadUvarint(br)
		if err != nil || n >= 1<<24 {
			return errors.New("report: collision check: corrupt temp file")
		}
		off += spillHeader + int64(uvarintLen(n))
		if text {
			if cap(buf) < int(n) {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			if _, err := io.ReadFull(br, buf); err != nil {
				return errors.New("report: collision check: truncated temp file")
			}
		} else if _, err := br.Discard(int(n)); err != nil {
			return errors.New("report: collision check: truncated temp file")
		}
		if err := fn(binary.LittleEndian.Uint64(hdr[:]), binary.LittleEndian.Uint64(hdr[8:]), off, int(n), buf); err != nil {
			return err
		}
		off += int64(n)
	}
}

func uvarintLen(n uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], n)
}

// splitFile distributes a bucket file over 16 files by the next 4 bits of the key hash, removes
// it, and counts each part.
func (s *spill) splitFile(path string, depth int, recs, tmp []spillRec, maxExamples, maxOrigins int) (collisionResult, []spillRec, []spillRec, error) {
	var res collisionResult
	in, err := os.Open(path)
	if err != nil {
		return res, recs, tmp, fmt.Errorf("report: collision check: %w", err)
	}
	if s.shift < 4*uint(depth+1) {
		return s.countFile(path, 1<<20, recs, tmp, maxExamples, maxOrigins) // out of hash bits: sort it as it is
	}
	shift := s.shift - 4*uint(depth+1)
	var parts [16]*os.File
	var ws [16]*bufio.Writer
	closeAll := func() {
		for _, p := range parts {
			if p != nil {
				p.Close()
			}
		}
	}
	for i := range parts {
		if parts[i], err = os.Create(fmt.Sprintf("%s.%x", path, i)); err != nil {
			in.Close()
			closeAll()
			return res, recs, tmp, fmt.Errorf("report: collision check: %w", err)
		}
		ws[i] = bufio.NewWriterSize(parts[i], 32<<10)
	}
	var hdr [spillHeader + binary.MaxVarintLen64]byte
	err = scanSpill(in, func(k, src uint64, _ int64, n int, text []byte) error {
		w := ws[(k>>shift)&15]
		binary.LittleEndian.PutUint64(hdr[:], k)
		binary.LittleEndian.PutUint64(hdr[8:], src)
		m := binary.PutUvarint(hdr[spillHeader:], uint64(n))
		w.Write(hdr[:spillHeader+m])
		_, err := w.Write(text)
		return err
	}, true)
	in.Close()
	for _, w := range ws {
		if ferr := w.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("report: collision check: write temp file: %w", ferr)
		}
	}
	closeAll()
	if err != nil {
		return res, recs, tmp, err
	}
	os.Remove(path)
	for i := range parts {
		var r collisionResult
		r, recs, tmp, err = s.countFile(parts[i].Name(), depth+1, recs[:0], tmp, maxExamples, maxOrigins)
		os.Remove(parts[i].Name())
		if err != nil {
			return res, recs, tmp, err
		}
		res.add(r, maxExamples)
	}
	return res, recs, tmp, nil
}

// radixSort orders records by key hash (LSD radix over the low 56 bits: the top 8 or more bits
// are the bucket, the same for all); tmp is scratch space. Both slices are returned for reuse.
func radixSort(recs, tmp []spillRec) ([]spillRec, []spillRec) { return radixSortBits(recs, tmp, 56) }

// radixSortBits sorts by the low bits of the key hash.
func radixSortBits(recs, tmp []spillRec, bits uint) ([]spillRec, []spillRec) {
	if len(recs) < 64 {
		slices.SortFunc(recs, func(a, b spillRec) int {
			switch {
			case a.key < b.key:
				return -1
			case a.key > b.key:
				return 1
			}
			return 0
		})
		return recs, tmp
	}
	if cap(tmp) < len(recs) {
		tmp = make([]spillRec, len(recs))
	}
	tmp = tmp[:len(recs)]
	const bitsPer = 14
	var counts [1 << bitsPer]int
	for shift := uint(0); shift < bits; shift += bitsPer {
		clear(counts[:])
		for i := range recs {
			counts[(recs[i].key>>shift)&(1<<bitsPer-1)]++
		}
		sum := 0
		for i, c := range counts {
			counts[i] = sum
			sum += c
		}
		for i := range recs {
			d := (recs[i].key >> shift) & (1<<bitsPer - 1)
			tmp[counts[d]] = recs[i]
			counts[d]++
		}
		recs, tmp = tmp, recs
	}
	return recs, tmp
}
