package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"

	"github.com/rekey/rekey/pipeline"
)

// each runs job(j) for j in [0, n) on par comparers, each with budget bytes and counting into
// c; the first error cancels the rest.
func (v *run) each(ctx context.Context, par int, budget int64, c *pipeline.Counters, n int,
	job func(ctx context.Context, cmp *comparer, j int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmp := &comparer{v: v, budget: budget, c: c}
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if err := job(ctx, cmp, j); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	for j := 0; j < n; j++ {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

type comparer struct {
	v      *run
	budget int64
	c      *pipeline.Counters
	es     []srcEntry
	ds     []digestEntry
	ix     keyIndex
	keys   [][]pipeline.Value
	todo   []int32 // the entries matchLookup looks up
	// extraSeen are the keys of the bucket's scanned table rows that the source has not (a row
	// given twice is one extra row)
	extraSeen map[string]struct{}
	// given are the key and row hashes of every source row of the bucket's keys the source
	// gives more than once: a target row of such a key must be one of them
	given map[[2]uint64]struct{}
	// srcBuf and dstBuf are reused to read spilled buckets (the previous bucket's entries are
	// no longer referenced by then: examples are rendered into strings)
	srcBuf, dstBuf []byte
}

// srcEntry is a source key: its last row, and what the target holds under it.
type srcEntry struct {
	h        uint64
	ord      uint64 // of the last row
	key, row []byte
	n        int32 // source rows with this key
	nt       int32 // target rows with this key
	matched  bool  // one of them equals the last source row
	foreign  bool  // one of them is none of the source's rows of the key (trow)
	trow     []byte
	tord     uint64
}

// bucketSplits counts buckets split for being over the budget (tests read it).
var bucketSplits atomic.Int64

// maxSplitShift bounds how far buckets are split: past it a bucket is compared whole, however
// large (only a key repeated that often can fill one).
const maxSplitShift = 56

// bucket compares bucket b of src (and dst, for a folder target), splitting it first when it is
// larger than the budget.
func (c *comparer) bucket(ctx context.Context, src, dst *parts, b, depth int, emit func(*bucketResult)) error {
	size := src.size(b)
	if dst != nil {
		size += dst.size(b)
	}
	shift := src.shift + uint(log2(src.n))
	if size > c.budget && shift <= maxSplitShift {
		bucketSplits.Add(1)
		var used atomic.Int64
		const n = 16
		s2 := newParts(src.dir, fmt.Sprintf("%s.%d", src.name, b), n, shift, &used, c.budget)
		defer s2.close()
		if err := split(src, b, s2); err != nil {
			return err
		}
		var d2 *parts
		if dst != nil {
			d2 = newParts(dst.dir, fmt.Sprintf("%s.%d", dst.name, b), n, shift, &used, c.budget)
			defer d2.close()
			if err := split(dst, b, d2); err != nil {
				return err
			}
		}
		for sb := 0; sb < n; sb++ {
			if err := c.bucket(ctx, s2, d2, sb, depth+1, emit); err != nil {
				return err
			}
		}
		return nil
	}
	if c.v.state {
		return c.stateBucket(ctx, src, dst, b, emit)
	}
	data, buf, err := src.load(b, c.srcBuf)
	c.srcBuf = keepBuf(buf, c.budget)
	if err != nil {
		return err
	}
	r := &bucketResult{differ1: map[int]int64{}}
	if err := c.index(data, r); err != nil {
		return err
	}
	if dst != nil {
		tdata, buf, err := dst.load(b, c.dstBuf)
		c.dstBuf = keepBuf(buf, c.budget)
		if err != nil {
			return err
		}
		max := c.v.sampleMax
		match := c.matchTarget
		if c.v.scanned {
			match = c.matchScanned
			clear(c.extraSeen)
			if c.extraSeen == nil {
				c.extraSeen = map[string]struct{}{}
			}
		}
		if err := eachEntry(tdata, func(e entry) error {
			if e.h <= max {
				match(e, r)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if c.v.cfg.Lookup != nil {
		if err := c.matchLookup(ctx, r); err != nil {
			return err
		}
	}
	if err := c.judge(r); err != nil {
		return err
	}
	emit(r)
	if c.c != nil {
		c.c.RowsIn.Add(r.checked)
	}
	return nil
}

// keepBuf keeps a read buffer for the next bucket unless it is over the budget (a bucket of
// one key repeated that cannot be split): that one is let go.
func keepBuf(buf []byte, budget int64) []byte {
	if int64(cap(buf)) > budget {
		return nil
	}
	return buf
}

func log2(n int) int {
	k := 0
	for ; n > 1; n >>= 1 {
		k++
	}
	return k
}

// split moves bucket b of p into q's buckets (q partitions by the next hash bits).
func split(p *parts, b int, q *parts) error {
	w := q.writer()
	add := func(e entry) { w.add(e.h, e.ord, e.key, e.row) }
	if f := p.files[b]; f != nil {
		r := bufio.NewReaderSize(io.NewSectionReader(f, 0, p.sizes[b]), 1<<20)
		var buf []byte
		for {
			e, nb, err := readEntry(r, buf)
			if err == io.EOF {
				break
			} else if err != nil {
				return err
			}
			buf = nb
			add(e)
		}
		f.Close()
		os.Remove(f.Name())
		p.files[b] = nil
	}
	for _, m := range p.mem[b] {
		for len(m) > 0 {
			e, rest, err := nextEntry(m)
			if err != nil {
				return err
			}
			add(e)
			m = rest
		}
	}
	p.used.Add(-p.memN[b])
	p.mem[b], p.memN[b] = nil, 0
	w.flush()
	return q.failed()
}

// readEntry reads one entry from a temp file; key and row point into buf (reused).
func readEntry(r *bufio.Reader, buf []byte) (entry, []byte, error) {
	var e entry
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			return e, buf, io.EOF
		}
		return e, buf, errDamagedSpill
	}
	e.h = binary.LittleEndian.Uint64(h[:])
	var err error
	if e.ord, err = binary.ReadUvarint(r); err != nil {
		return e, buf, errDamagedSpill
	}
	buf = buf[:0]
	var lens [2]int
	for i := range lens {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > 1<<31 {
			return e, buf, errDamagedSpill
		}
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return e, buf, errDamagedSpill
		}
		lens[i] = int(n)
	}
	e.key, e.row = buf[:lens[0]:lens[0]], buf[lens[0]:]
	return e, buf, nil
}

// index builds the bucket's index of source keys; each key keeps its last row (highest ord).
func (c *comparer) index(chunks [][]byte, r *bucketResult) error {
	c.es = c.es[:0]
	var size int
	for _, ch := range chunks {
		size += len(ch)
	}
	c.ix.reset(size / 64) // about the bytes of an entry of a few short columns
	max := c.v.sampleMax
	before := r.overwritten
	err := eachEntry(chunks, func(e entry) error {
		if e.h > max {
			return nil
		}
		r.checked++
		i, slot := c.find(e.h, e.key)
		if i >= 0 {
			s := &c.es[i]
			s.n++
			r.overwritten++
			if e.ord > s.ord {
				s.ord, s.row = e.ord, e.row
			}
			return nil
		}
		c.es = append(c.es, srcEntry{h: e.h, ord: e.ord, key: e.key, row: e.row, n: 1})
		c.ix.insert(slot, int32(len(c.es)-1), c.entryHash)
		r.keys++
		return nil
	})
	if err != nil || r.overwritten == before {
		return err
	}
	c.given = resetGiven(c.given)
	err = eachEntry(chunks, func(e entry) error {
		if e.h > max {
			return nil
		}
		if i, _ := c.find(e.h, e.key); i >= 0 && c.es[i].n > 1 {
			c.given[[2]uint64{e.h, xxh3.Hash(e.row)}] = struct{}{}
		}
		return nil
	})
	// the distinct rows of the keys given more than once, but the one each key keeps: rows whose
	// values no target row holds
	repeated := 0
	for _, e := range c.es {
		if e.n > 1 {
			repeated++
		}
	}
	r.lost += int64(len(c.given) - repeated)
	return err
}

// resetGiven empties the set of a bucket's repeated keys' source rows.
func resetGiven(m map[[2]uint64]struct{}) map[[2]uint64]struct{} {
	if m == nil {
		return map[[2]uint64]struct{}{}
	}
	clear(m)
	return m
}

// eachEntry calls fn with every entry of a bucket's chunks.
func eachEntry(chunks [][]byte, fn func(entry) error) error {
	for _, data := range chunks {
		for len(data) > 0 {
			e, rest, err := nextEntry(data)
			if err != nil {
				return err
			}
			data = rest
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// find returns the index in c.es of the source key, or -1 and the slot to insert it in.
func (c *comparer) find(h uint64, key []byte) (int32, int) {
	return c.ix.probe(h, func(i int32) bool { e := &c.es[i]; return e.h == h && bytes.Equal(e.key, key) })
}

func (c *comparer) entryHash(i int32) uint64 { return c.es[i].h }

// matchTarget counts one target row against the source keys.
func (c *comparer) matchTarget(e entry, r *bucketResult) {
	r.targetRows++
	i, _ := c.find(e.h, e.key)
	if i < 0 {
		r.extra++
		if c.v.cfg.Repair != nil {
			r.extraKeys = append(r.extraKeys, c.wholeKeyCells(e.key))
		}
		r.ex.Extra = offer(r.ex.Extra, e.h, func() Example {
			return Example{Key: c.keyCells(e.key), Columns: c.rowCells(e.row), Where: c.v.targetWhere(e.ord)}
		})
		return
	}
	s := &c.es[i]
	s.nt++
	s.tord = e.ord
	switch {
	case bytes.Equal(e.row, s.row):
		s.matched = true
	case s.n > 1 && !s.foreign:
		// the bulk load may keep any of a key's rows: one the source never gave is a difference
		if _, ok := c.given[[2]uint64{e.h, xxh3.Hash(e.row)}]; !ok {
			s.foreign, s.trow = true, append(s.trow[:0], e.row...)
		} else if s.trow == nil {
			s.trow = append([]byte(nil), e.row...)
		}
	case s.trow == nil:
		s.trow = append([]byte(nil), e.row...) // e.row may be a reused buffer
	}
}

// matchScanned counts one row of a table read by key range against the source keys, as a
// lookup of its key would have; a row of a key the source has not is extra, and a row given
// again (ranges that overlap) counts once.
func (c *comparer) matchScanned(e entry, r *bucketResult) {
	i, _ := c.find(e.h, e.key)
	if i < 0 {
		if _, seen := c.extraSeen[string(e.key)]; !seen {
			c.extraSeen[string(e.key)] = struct{}{}
			c.matchTarget(e, r)
		}
		return
	}
	if c.es[i].nt > 0 {
		return
	}
	s := &c.es[i]
	s.nt = 1
	r.targetRows++
	if bytes.Equal(e.row, s.row) {
		s.matched = true
	} else {
		s.trow = append([]byte(nil), e.row...) // e.row may be a reused buffer
	}
}

// matchLookup looks up in the target the bucket's keys not found yet, MaxKeys at a time.
func (c *comparer) matchLookup(ctx context.Context, r *bucketResult) error {
	t := c.v.cfg.Lookup
	max := t.MaxKeys()
	if max <= 0 {
		max = 1
	}
	v := c.v
	cols := len(v.schema.Columns)
	c.todo = c.todo[:0]
	for i := range c.es {
		if c.es[i].nt == 0 {
			c.todo = append(c.todo, int32(i))
		}
	}
	var parts [][]byte
	for start := 0; start < len(c.todo); start += max {
		end := min(start+max, len(c.todo))
		c.keys = c.keys[:0]
		for _, i := range c.todo[start:end] {
			var ok bool
			parts, ok = splitValues(v.keyCols, c.es[i].key, parts[:0])
			if !ok {
				return errDamagedSpill
			}
			key := make([]pipeline.Value, len(parts))
			for k, p := range parts {
				key[k] = decodeValue(v.keyCols[k], p)
			}
			c.keys = append(c.keys, key)
		}
		rows, err := t.Lookup(ctx, c.keys)
		if err != nil {
			return fmt.Errorf("look up %d keys in the target: %w", len(c.keys), err)
		}
		if len(rows) != len(c.keys) {
			return fmt.Errorf("look up %d keys in the target: it returned %d rows", len(c.keys), len(rows))
		}
		for k, row := range rows {
			if row == nil {
				continue
			}
			if len(row) != cols {
				return fmt.Errorf("look up in the target: a row of %d values, the table %s has %d columns", len(row), v.schema.Table, cols)
			}
			s := &c.es[c.todo[start+k]]
			s.nt = 1
			r.targetRows++
			var enc []byte
			for j, col := range v.rowCols {
				var e *pipeline.RowError
				if enc, e = appendStored(enc, col, row[v.schema.KeyLen+j]); e != nil {
					return fmt.Errorf("the target's value of column %s does not fit its type %s (%s): is the table's definition the mapping's?", col.Name, col.SQLType(), e.Message)
				}
			}
			if bytes.Equal(enc, s.row) {
				s.matched = true
			} else {
				s.trow = enc
			}
		}
	}
	return nil
}

// judge counts, per source key, what the target holds.
func (c *comparer) judge(r *bucketResult) error {
	v := c.v
	var a, b [][]byte
	for i := range c.es {
		s := &c.es[i]
		switch {
		case s.nt == 0:
			r.missing++
			if v.cfg.Repair != nil {
				r.repair = append(r.repair, string(s.key)) // s.key lives in a reused buffer
			}
			r.ex.Missing = offer(r.ex.Missing, s.h, func() Example {
				return Example{Key: c.keyCells(s.key), Where: v.sourceWhere(s.ord)}
			})
			continue
		case !s.matched || s.foreign:
			r.differ++
			if v.cfg.Repair != nil {
				r.repair = append(r.repair, string(s.key))
			}
			var okA, okB bool
			a, okA = splitValues(v.rowCols, s.row, a[:0])
			b, okB = splitValues(v.rowCols, s.trow, b[:0])
			if !okA || !okB {
				return errDamagedSpill
			}
			for k := range v.rowCols {
				if !bytes.Equal(a[k], b[k]) {
					r.differ1[k]++
				}
			}
			r.ex.Differ = offer(r.ex.Differ, s.h, func() Example {
				var diffs []Diff
				for k, col := range v.rowCols {
					if !bytes.Equal(a[k], b[k]) {
						diffs = append(diffs, Diff{Column: col.Name, Source: render(col, a[k]), Target: render(col, b[k])})
					}
				}
				where := v.sourceWhere(s.ord)
				if v.cfg.Folder != nil {
					where += "; target " + v.targetWhere(s.tord)
				}
				return Example{Key: c.keyCells(s.key), Columns: diffs, Where: where}
			})
		}
		if v.cfg.Folder != nil && s.nt > s.n { // a row written more often than the source has it
			r.extra += int64(s.nt - s.n)
			r.ex.Extra = offer(r.ex.Extra, s.h, func() Example {
				return Example{Key: c.keyCells(s.key),
					Where: fmt.Sprintf("%s (the target has %d rows of this key, the source %d)", v.targetWhere(s.tord), s.nt, s.n)}
			})
		}
	}
	return nil
}

// offer keeps a bucket's examples of the smallest key hashes, building (rendering) only those
// that may be kept.
func offer(ex []Example, h uint64, build func() Example) []Example {
	if len(ex) >= maxExamples {
		top := ex[0].hash
		for _, e := range ex[1:] {
			top = max(top, e.hash)
		}
		if h >= top {
			return ex
		}
	}
	e := build()
	e.hash = h
	return keepSmallest(append(ex, e))
}

func (c *comparer) keyCells(key []byte) []Cell { return c.cells(key, render) }

// wholeKeyCells is keyCells with every value whole (renderWhole): the extra keys --repair lists
// for deleting by hand.
func (c *comparer) wholeKeyCells(key []byte) []Cell { return c.cells(key, renderWhole) }

func (c *comparer) cells(key []byte, show func(pipeline.Column, []byte) string) []Cell {
	cols := c.v.keyCols
	parts, ok := splitValues(cols, key, nil)
	if !ok {
		return nil
	}
	out := make([]Cell, len(cols))
	for i, col := range cols {
		out[i] = Cell{Column: col.Name, Value: show(col, parts[i])}
	}
	return out
}

func (c *comparer) rowCells(row []byte) []Diff {
	cols := c.v.rowCols
	parts, ok := splitValues(cols, row, nil)
	if !ok {
		return nil
	}
	out := make([]Diff, len(cols))
	for i, col := range cols {
		out[i] = Diff{Column: col.Name, Target: render(col, parts[i])}
	}
	return out
}
