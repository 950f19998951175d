package verify

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Both sides of a comparison (source rows, target rows) are partitioned by a 64-bit hash of the
// row's key into buckets, so that equal keys meet in the same bucket and one bucket at a time is
// compared with a map. A bucket's entries stay in memory while all buckets together hold less
// than the spill limit; past it, a bucket being written goes to its temp file. An entry is
//
//	hash (8 bytes LE) | uvarint ord | uvarint len | key | uvarint len | row
//
// with the key's and the row's values in their stored form (encode.go): ord is the row's place in
// the source's reading order (the last one of a key wins), or its file and row in the target.

// parts is one side's buckets.
type parts struct {
	dir   string
	name  string
	n     int        // buckets, a power of two
	shift uint       // bucket = hash >> shift & (n-1)
	mem   [][][]byte // per bucket, the writers' buffers handed over whole (never copied)
	memN  []int64    // bytes in mem per bucket
	files []*os.File
	sizes []int64 // bytes in each file
	mu    []sync.Mutex
	used  *atomic.Int64 // bytes held in memory, shared by the sides that share a limit
	limit int64

	errMu sync.Mutex
	err   error
}

func newParts(dir, name string, n int, shift uint, used *atomic.Int64, limit int64) *parts {
	return &parts{dir: dir, name: name, n: n, shift: shift, mem: make([][][]byte, n), memN: make([]int64, n), files: make([]*os.File, n),
		sizes: make([]int64, n), mu: make([]sync.Mutex, n), used: used, limit: limit}
}

func (p *parts) bucket(h uint64) int { return int(h>>p.shift) & (p.n - 1) }

func (p *parts) fail(err error) {
	p.errMu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.errMu.Unlock()
}

func (p *parts) failed() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// add hands a writer's buffer of whole entries to bucket b: p owns it from now on.
func (p *parts) add(b int, data []byte) {
	p.mu[b].Lock()
	defer p.mu[b].Unlock()
	if p.used.Load()+int64(len(data)) <= p.limit {
		p.mem[b] = append(p.mem[b], data)
		p.memN[b] += int64(len(data))
		p.used.Add(int64(len(data)))
		return
	}
	// over the limit: this bucket's entries go to its file, and its memory is given back
	if p.files[b] == nil {
		f, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("%s-%03d", p.name, b)))
		if err != nil {
			p.fail(fmt.Errorf("verify: temp file: %w (set --tmp to a folder with room)", err))
			return
		}
		p.files[b] = f
	}
	for _, d := range append(p.mem[b], data) {
		if _, err := p.files[b].Write(d); err != nil {
			p.fail(fmt.Errorf("verify: write temp file: %w (set --tmp to a folder with room)", err))
			return
		}
		p.sizes[b] += int64(len(d))
	}
	p.used.Add(-p.memN[b])
	p.mem[b], p.memN[b] = nil, 0
}

// size is bucket b's bytes, in memory and on disk.
func (p *parts) size(b int) int64 { return p.sizes[b] + p.memN[b] }

// load returns bucket b's entries, in chunks of whole entries, and releases them from p (its
// file is removed). A spilled bucket is read into buf, grown if need be and returned for the
// next bucket: a fresh buffer per bucket cost as much as reading it (zeroing, page faults).
func (p *parts) load(b int, buf []byte) ([][]byte, []byte, error) {
	chunks := p.mem[b]
	if f := p.files[b]; f != nil {
		if int64(cap(buf)) < p.sizes[b] {
			buf = make([]byte, p.sizes[b])
		}
		data := buf[:p.sizes[b]]
		if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, buf, fmt.Errorf("verify: read temp file: %w", err)
		}
		f.Close()
		os.Remove(f.Name())
		p.files[b] = nil
		chunks = append([][]byte{data}, chunks...)
	}
	p.used.Add(-p.memN[b])
	p.mem[b], p.memN[b] = nil, 0
	return chunks, buf, nil
}

// peek returns bucket b's entries, in chunks of whole entries, and keeps them in p.
func (p *parts) peek(b int) ([][]byte, error) {
	chunks := p.mem[b]
	if f := p.files[b]; f != nil {
		data := make([]byte, p.sizes[b])
		if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("verify: read temp file: %w", err)
		}
		chunks = append([][]byte{data}, chunks...)
	}
	return chunks, nil
}

// close removes what is left of p's files.
func (p *parts) close() {
	for b, f := range p.files {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
			p.files[b] = nil
		}
	}
}

// writer buffers one goroutine's entries per bucket, so that the shared buckets are locked once
// per few KiB rather than per row.
type writer struct {
	p    *parts
	bufs [][]byte
	size int
}

const writerBuf = 16 << 10

func (p *parts) writer() *writer { return &writer{p: p, bufs: make([][]byte, p.n), size: writerBuf} }

// add files an entry in the bucket of its key hash h.
func (w *writer) add(h uint64, ord uint64, key, row []byte) {
	b := w.p.bucket(h)
	w.give(b, appendEntry(w.take(b), h, ord, key, row))
}

// addRecord files a fixed-size record (a digest) in the bucket of its key hash h.
func (w *writer) addRecord(h uint64, rec []byte) {
	b := w.p.bucket(h)
	w.give(b, append(w.take(b), rec...))
}

func (w *writer) take(b int) []byte {
	if buf := w.bufs[b]; buf != nil {
		return buf
	}
	return make([]byte, 0, w.size+256)
}

// give keeps bucket b's buffer, handing it to the bucket once it is full.
func (w *writer) give(b int, buf []byte) {
	if len(buf) >= w.size {
		w.p.add(b, buf)
		buf = nil
	}
	w.bufs[b] = buf
}

func (w *writer) flush() {
	for b, buf := range w.bufs {
		if len(buf) > 0 {
			w.p.add(b, buf)
		}
		w.bufs[b] = nil
	}
}

func appendEntry(dst []byte, h, ord uint64, key, row []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, h)
	dst = binary.AppendUvarint(dst, ord)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(row)))
	return append(dst, row...)
}

// entry is one decoded entry; key and row point into the bucket's bytes.
type entry struct {
	h        uint64
	ord      uint64
	key, row []byte
}

var errDamagedSpill = errors.New("verify: temp file damaged")

// nextEntry decodes the entry at the start of b and returns the rest.
func nextEntry(b []byte) (entry, []byte, error) {
	var e entry
	if len(b) < 8 {
		return e, nil, errDamagedSpill
	}
	e.h = binary.LittleEndian.Uint64(b)
	b = b[8:]
	var k int
	if e.ord, k = binary.Uvarint(b); k <= 0 {
		return e, nil, errDamagedSpill
	}
	b = b[k:]
	for _, dst := range []*[]byte{&e.key, &e.row} {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return e, nil, errDamagedSpill
		}
		*dst = b[k : k+int(n) : k+int(n)]
		b = b[k+int(n):]
	}
	return e, b, nil
}
