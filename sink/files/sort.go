package files

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/pipeline"
)

// Sort mode: a region's rows are copied into an arena; when the arena holds the region's share of
// memory it is sorted and spilled to a run file (a temporary name in the region folder). Commit
// merges the runs and the rows still in memory, in key order, into the region's format buffer.

const arenaBlock = 256 << 10
const maxFanIn = 64

type sorter struct {
	schema pipeline.TargetSchema
	ncols  int
	prefix string // the sink's NamePrefix, which its run files' names carry too

	blocks [][]byte
	vals   []pipeline.Value // rows * ncols
	order  []int32
	mem    int64

	runs   []string
	runSeq int
}

func newSorter(schema pipeline.TargetSchema, prefix string) *sorter {
	return &sorter{schema: schema, ncols: len(schema.Columns), prefix: prefix}
}

func (t *sorter) rows() int { return len(t.vals) / max(t.ncols, 1) }

func (t *sorter) memory() int64 {
	m := int64(cap(t.vals))*int64(unsafe.Sizeof(pipeline.Value{})) + int64(cap(t.order))*4
	for _, b := range t.blocks {
		m += int64(cap(b))
	}
	return m
}

// copyString copies s into the arena.
func (t *sorter) copyString(s string) string {
	if len(s) == 0 {
		return ""
	}
	n := len(t.blocks)
	if n == 0 || cap(t.blocks[n-1])-len(t.blocks[n-1]) < len(s) {
		size := arenaBlock
		if len(s) > size/4 {
			size = len(s)
		}
		t.blocks = append(t.blocks, make([]byte, 0, size))
		n++
	}
	b := t.blocks[n-1]
	start := len(b)
	b = append(b, s...)
	t.blocks[n-1] = b
	return unsafe.String(&b[start], len(s))
}

func (t *sorter) add(values []pipeline.Value) {
	for _, v := range values {
		switch v.Kind {
		case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
			v.Str = t.copyString(v.Str)
		default:
			v.Str = ""
		}
		t.vals = append(t.vals, v)
	}
}

func (t *sorter) row(i int32) []pipeline.Value {
	return t.vals[int(i)*t.ncols : int(i+1)*t.ncols]
}

// sortRows sorts the in-memory rows (stable: equal keys keep their arrival order).
func (t *sorter) sortRows() {
	n := t.rows()
	t.order = t.order[:0]
	for i := 0; i < n; i++ {
		t.order = append(t.order, int32(i))
	}
	slices.SortStableFunc(t.order, func(a, b int32) int {
		return t.schema.CompareKeys(t.row(a), t.row(b))
	})
}

func (t *sorter) reset() {
	t.blocks, t.vals, t.order = nil, nil, nil
}

// spill sorts the rows in memory and writes them to a new run file in dir.
func (t *sorter) spill(dir string) error {
	t.sortRows()
	path, err := t.newRun(dir)
	if err != nil {
		return err
	}
	w, err := newRunWriter(path)
	if err != nil {
		return err
	}
	for _, i := range t.order {
		w.write(t.row(i))
	}
	if err := w.close(); err != nil {
		return err
	}
	t.runs = append(t.runs, path)
	t.reset()
	return nil
}

func (t *sorter) newRun(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("files: create %s: %w", dir, err)
	}
	t.runSeq++
	// the sinks of one output's time slices spill into the same region folders on a disk
	return filepath.Join(dir, fmt.Sprintf("%s%srun-%06d", atomicfile.TempPrefix, t.prefix, t.runSeq)), nil
}

func (t *sorter) removeRuns() error {
	var errs []error
	for _, p := range t.runs {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	t.runs = nil
	t.reset()
	return errors.Join(errs...)
}

// Run file encoding, per value: kind byte, then uvarint length + bytes (text, bytes, decimal) or
// varint I (int, float bits, bool). Only rekey reads it back, in the same run.

type runWriter struct {
	f   *os.File
	bw  *bufio.Writer
	tmp []byte
	err error
}

func newRunWriter(path string) (*runWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) // raw rows: private
	if err != nil {
		return nil, fmt.Errorf("files: create sort run: %w", err)
	}
	return &runWriter{f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (w *runWriter) write(row []pipeline.Value) {
	b := w.tmp[:0]
	for _, v := range row {
		b = append(b, byte(v.Kind))
		switch v.Kind {
		case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
			b = binary.AppendUvarint(b, uint64(len(v.Str)))
			b = append(b, v.Str...)
		case pipeline.KindNull:
		default:
			b = binary.AppendVarint(b, v.Num)
		}
	}
	w.tmp = b
	if _, err := w.bw.Write(b); err != nil && w.err == nil {
		w.err = err
	}
}

func (w *runWriter) close() error {
	err := w.err
	if ferr := w.bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("files: write sort run %s: %w", w.f.Name(), err)
	}
	return nil
}

// rowSource yields rows in key order; the returned slice is valid until the next call.
type rowSource interface {
	next() ([]pipeline.Value, error) // nil, nil at the end
	close() error
}

type runReader struct {
	f    *os.File
	br   *bufio.Reader
	vals []pipeline.Value
	buf  []byte
}

func openRun(path string, ncols int) (*runReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("files: open sort run: %w", err)
	}
	return &runReader{f: f, br: bufio.NewReaderSize(f, 64<<10), vals: make([]pipeline.Value, ncols)}, nil
}

func (r *runReader) next() ([]pipeline.Value, error) {
	r.buf = r.buf[:0]
	type span struct{ col, start, n int }
	var spans [16]span
	sp := spans[:0]
	for c := range r.vals {
		k, err := r.br.ReadByte()
		if err != nil {
			if err == io.EOF && c == 0 {
				return nil, nil
			}
			return nil, fmt.Errorf("files: read sort run %s: %w", r.f.Name(), noEOF(err))
		}
		v := pipeline.Value{Kind: pipeline.Kind(k)}
		switch v.Kind {
		case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
			n, err := binary.ReadUvarint(r.br)
			if err != nil {
				return nil, fmt.Errorf("files: read sort run %s: %w", r.f.Name(), noEOF(err))
			}
			start := len(r.buf)
			r.buf = slices.Grow(r.buf, int(n))[:start+int(n)]
			if _, err := io.ReadFull(r.br, r.buf[start:]); err != nil {
				return nil, fmt.Errorf("files: read sort run %s: %w", r.f.Name(), noEOF(err))
			}
			sp = append(sp, span{c, start, int(n)})
		case pipeline.KindNull:
		default:
			v.Num, err = binary.ReadVarint(r.br)
			if err != nil {
				return nil, fmt.Errorf("files: read sort run %s: %w", r.f.Name(), noEOF(err))
			}
		}
		r.vals[c] = v
	}
	for _, s := range sp {
		if s.n > 0 {
			r.vals[s.col].Str = unsafe.String(&r.buf[s.start], s.n)
		}
	}
	return r.vals, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (r *runReader) close() error { return r.f.Close() }

type memSource struct {
	t *sorter
	i int
}

func (m *memSource) next() ([]pipeline.Value, error) {
	if m.i >= len(m.t.order) {
		return nil, nil
	}
	row := m.t.row(m.t.order[m.i])
	m.i++
	return row, nil
}

func (m *memSource) close() error { return nil }

// merger is a k-way merge; ties go to the lower source index (runs in creation order, then the
// rows in memory), so equal keys keep their arrival order.
type merger struct {
	schema pipeline.TargetSchema
	srcs   []rowSource
	cur    [][]pipeline.Value
	h      []int
}

func (m *merger) Len() int { return len(m.h) }
func (m *merger) Less(i, j int) bool {
	a, b := m.h[i], m.h[j]
	c := m.schema.CompareKeys(m.cur[a], m.cur[b])
	return c < 0 || c == 0 && a < b
}
func (m *merger) Swap(i, j int) { m.h[i], m.h[j] = m.h[j], m.h[i] }
func (m *merger) Push(x any)    { m.h = append(m.h, x.(int)) }
func (m *merger) Pop() any {
	x := m.h[len(m.h)-1]
	m.h = m.h[:len(m.h)-1]
	return x
}

func newMerger(schema pipeline.TargetSchema, srcs []rowSource) (*merger, error) {
	m := &merger{schema: schema, srcs: srcs, cur: make([][]pipeline.Value, len(srcs))}
	for i, s := range srcs {
		row, err := s.next()
		if err != nil {
			return nil, err
		}
		if row != nil {
			m.cur[i] = row
			m.h = append(m.h, i)
		}
	}
	heap.Init(m)
	return m, nil
}

// each calls fn for every row in order.
func (m *merger) each(fn func([]pipeline.Value) error) error {
	for len(m.h) > 0 {
		i := m.h[0]
		if err := fn(m.cur[i]); err != nil {
			return err
		}
		row, err := m.srcs[i].next()
		if err != nil {
			return err
		}
		if row == nil {
			heap.Pop(m)
			continue
		}
		m.cur[i] = row
		heap.Fix(m, 0)
	}
	return nil
}

func closeAll(srcs []rowSource) error {
	var errs []error
	for _, s := range srcs {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// compactRuns merges runs maxFanIn at a time until at most maxFanIn remain.
func (t *sorter) compactRuns(ctx context.Context, dir string) error {
	for len(t.runs) > maxFanIn {
		if err := ctx.Err(); err != nil {
			return err
		}
		group := t.runs[:maxFanIn]
		srcs := make([]rowSource, 0, len(group))
		for _, p := range group {
			r, err := openRun(p, t.ncols)
			if err != nil {
				closeAll(srcs)
				return err
			}
			srcs = append(srcs, r)
		}
		path, err := t.newRun(dir)
		if err != nil {
			closeAll(srcs)
			return err
		}
		w, err := newRunWriter(path)
		if err != nil {
			closeAll(srcs)
			return err
		}
		m, err := newMerger(t.schema, srcs)
		if err == nil {
			err = m.each(func(row []pipeline.Value) error { w.write(row); return nil })
		}
		err = errors.Join(err, w.close(), closeAll(srcs))
		if err != nil {
			os.Remove(path)
			return err
		}
		for _, p := range group {
			os.Remove(p)
		}
		// the merged run holds the oldest rows: it goes first, so that ties (equal keys) still
		// go to the rows that arrived first
		t.runs = append([]string{path}, t.runs[maxFanIn:]...)
	}
	return nil
}

// writeSorted validates rows and copies them into the region's sorter, spilling a run when the
// sorter holds the region's share of memory. r.mu is held on entry and released.
func (s *Sink) writeSorted(r *region, rows []pipeline.Row, idx []int32, rejects *[]RowReject) error {
	defer r.mu.Unlock()
	t := r.sorter
	before := t.mem
	n := int64(0)
	vc, _ := s.cfg.Format.(ValueChecker)
	for _, i := range idx {
		err := CheckRow(s.cfg.Schema, rows[i].Values)
		if err == nil && vc != nil {
			err = vc.CheckValues(s.cfg.Schema, rows[i].Values)
		}
		if err != nil {
			*rejects = append(*rejects, RowReject{Index: int(i), Err: err})
			continue
		}
		t.add(rows[i].Values)
		n++
	}
	r.rows.Add(n)
	t.mem = t.memory()
	s.addMem(t.mem - before)
	if t.mem >= s.limit {
		before = t.mem
		if err := t.spill(r.dir); err != nil {
			return s.fail(err)
		}
		t.mem = t.memory()
		s.addMem(t.mem - before)
	}
	return nil
}

// mergeRegion writes the region's runs and rows in memory, merged in key order, through the
// format buffer into files rolled at MaxFileSize. Returns the files it rolled.
func (s *Sink) mergeRegion(ctx context.Context, r *region) ([]*file, error) {
	r.mu.Lock()
	t := r.sorter
	if err := t.compactRuns(ctx, r.dir); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	if t.rows() == 0 && len(t.runs) == 0 {
		r.mu.Unlock()
		return s.flushRegion(ctx, r)
	}
	t.sortRows()
	srcs := make([]rowSource, 0, len(t.runs)+1)
	for _, p := range t.runs {
		rr, err := openRun(p, t.ncols)
		if err != nil {
			closeAll(srcs)
			r.mu.Unlock()
			return nil, err
		}
		srcs = append(srcs, rr)
	}
	srcs = append(srcs, &memSource{t: t})
	r.mu.Unlock()

	var rolled []*file
	m, err := newMerger(s.cfg.Schema, srcs)
	if err == nil {
		err = m.each(func(row []pipeline.Value) error {
			r.mu.Lock()
			if aerr := r.buf.Append(row); aerr != nil {
				r.mu.Unlock()
				return fmt.Errorf("files: region %d: sorted row no longer fits: %w", r.idx, aerr)
			}
			s.updateBufMem(r)
			var j *job
			if s.shouldCut(r) {
				// a region's merge writes all its rows since the last Commit: a cancelled run
				// (a hard stop) ends it at the next chunk, not at the region's last row
				if err := ctx.Err(); err != nil {
					r.mu.Unlock()
					return err
				}
				j = s.cut(r)
				if j.f.rolled {
					rolled = append(rolled, j.f)
				}
			}
			r.mu.Unlock()
			if j != nil {
				return s.run(ctx, j)
			}
			return nil
		})
	}
	err = errors.Join(err, closeAll(srcs))
	if err != nil {
		return rolled, err
	}
	more, err := s.flushRegion(ctx, r)
	rolled = append(rolled, more...)
	if err != nil {
		return rolled, err
	}
	r.mu.Lock()
	before := t.mem
	err = t.removeRuns()
	t.mem = t.memory()
	s.addMem(t.mem - before)
	r.mu.Unlock()
	return rolled, err
}
