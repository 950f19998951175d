package verify

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/files"
)

// A replication is verified by state: what each key holds once every change is applied in order
// (the last upsert, the columns later partial upserts set, nothing after a delete), on both
// sides. The source side is a replication's changes (Config.Changes); the target side a table,
// or a replicate output folder, whose segments (upserts, then deletes) are applied in the order
// manifest.json lists them. Entries carry a kind byte before the row:
//
//	stateUpsert  stored row                     the whole row
//	statePartial per row column: stored value, or tagUnset (the column keeps its value)
//	stateDelete  nothing                        the key is deleted
//
// A range delete (a Cassandra range tombstone) is kept in memory with its ord, and deletes
// every key it covers whose changes came before it.
const (
	stateUpsert  = 'U'
	statePartial = 'P'
	stateDelete  = 'D'
	tagUnset     = 3
)

// Change is one change a replication applies to its table, in target columns: the upsert of a
// row (Values: the target row), of the columns Set names only (the others keep their values), the
// delete of the key Values' first key columns give, or of a key Range.
type Change struct {
	Seq    int64 // where it is in its stream (the Kafka offset)
	Delete bool
	Values []pipeline.Value
	Set    []bool
	Range  *pipeline.KeyRange
}

// ChangeBatch is a run of one stream's changes, in order. Messages counts what was read;
// Rejects, by code, the messages that made no change (replicate rejected them too); Skipped, by
// code, the messages whose change neither replicate nor verify can apply (a truncate, a range
// delete the table's key cannot express): the target cannot be shown to hold the source.
type ChangeBatch struct {
	Stream   string
	Changes  []Change
	Messages int64
	Rejects  map[string]int64
	Skipped  map[string]int64
	// OtherTable counts the messages of other tables than the mapping's source.table, which
	// replicate does not apply: in Messages, not looked for (Result.RowsSkipped)
	OtherTable int64
}

// ReplicatedBatch is the batch of changes b, as replicate read them from stream (a Kafka
// partition), in verify's terms: each operation replicate would apply with its offset.
func ReplicatedBatch(stream string, b *replicate.ChangeBatch) *ChangeBatch {
	vb := &ChangeBatch{Stream: stream, Messages: b.Messages, Rejects: map[string]int64{}, Skipped: map[string]int64{}, OtherTable: int64(b.OtherTable)}
	for code, n := range b.Rejects {
		vb.Rejects[code] = int64(n)
	}
	for code, n := range b.Skipped {
		vb.Skipped[code] = int64(n)
	}
	vb.Changes = make([]Change, len(b.Ops))
	for i, op := range b.Ops {
		vb.Changes[i] = Change{Seq: b.Offsets[i], Delete: op.Delete, Values: op.Values, Set: op.Set, Range: op.Range}
	}
	return vb
}

// maxRanges bounds the range deletes held in memory (each is compared with every key).
const maxRanges = 1_000_000

type rangeDelete struct {
	ord uint64
	kr  pipeline.KeyRange
}

// readChanges files the changes of Config.Changes by key, as readSource files rows.
func (v *run) readChanges(ctx context.Context, counters *pipeline.Counters) error {
	values, err := v.valueChecker()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var next uint64
	var free []*changeWorker
	var all []*changeWorker
	err = v.cfg.Changes(ctx, func(b *ChangeBatch) error {
		mu.Lock()
		first := next
		next += uint64(len(b.Changes))
		recs := make([]pipeline.Record, len(b.Changes))
		for i := range b.Changes {
			recs[i].Seq = b.Changes[i].Seq
		}
		v.positions.add(&pipeline.Batch{Stream: b.Stream, Records: recs}, first)
		var w *changeWorker
		if n := len(free); n > 0 {
			w, free = free[n-1], free[:n-1]
		} else {
			w = &changeWorker{v: v, w: v.src.writer(), rejects: map[string]int64{}, skipped: map[string]int64{}, values: values}
			if n := v.cfg.Sample.Rows; n > 0 { // --sample N: the N smallest key hashes, as of a source's rows
				w.heap = &maxHeap{limit: int(n)}
			}
			all = append(all, w)
		}
		mu.Unlock()
		err := w.process(b, first, counters)
		mu.Lock()
		free = append(free, w)
		mu.Unlock()
		return err
	})
	for _, w := range all {
		w.w.flush()
	}
	if err != nil {
		return fmt.Errorf("read the changes: %w", err)
	}
	if err := v.src.failed(); err != nil {
		return err
	}
	if n := v.cfg.Sample.Rows; n > 0 {
		heaps := make([]*maxHeap, len(all))
		for i, w := range all {
			heaps[i] = w.heap
		}
		v.sampleMax = sampleThreshold(heaps, int(n))
	}
	for _, w := range all {
		v.res.RowsRead += w.read
		v.res.RowsRejected += w.rejected
		v.res.RowsSkipped += w.other
		for c, n := range w.rejects {
			v.res.RejectCodes[c] += n
		}
		for c, n := range w.skipped {
			v.res.ChangesSkipped += n
			v.res.SkippedCodes[c] += n
		}
	}
	sort.Slice(v.ranges, func(i, j int) bool { return v.ranges[i].ord < v.ranges[j].ord })
	v.cfg.Logger.Info("changes read", zap.Int64("messages", v.res.RowsRead), zap.Int64("rejected", v.res.RowsRejected), zap.Int("range_deletes", len(v.ranges)))
	return nil
}

type changeWorker struct {
	v        *run
	w        *writer
	key, row []byte
	heap     *maxHeap // --sample N: the smallest key hashes this worker saw
	read     int64
	rejected int64
	other    int64 // messages of other tables than source.table
	rejects  map[string]int64
	skipped  map[string]int64
	values   files.ValueChecker // the target's own refusals; nil when it has none
}

func (w *changeWorker) process(b *ChangeBatch, first uint64, c *pipeline.Counters) error {
	v := w.v
	var rejected int64
	for code, n := range b.Rejects {
		w.rejects[code] += n
		rejected += n
	}
	var skipped int64
	for code, n := range b.Skipped {
		w.skipped[code] += n
		skipped += n
	}
	var kept int64
	for i := range b.Changes {
		ch := &b.Changes[i]
		ord := first + uint64(i)
		if ch.Range != nil {
			v.rangesMu.Lock()
			if len(v.ranges) >= maxRanges {
				v.rangesMu.Unlock()
				return fmt.Errorf("over %d range deletes: verify holds them in memory; verify a sample of the keys or a shorter stretch of the topic", maxRanges)
			}
			v.ranges = append(v.ranges, rangeDelete{ord: ord, kr: cloneRange(ch.Range)})
			v.rangesMu.Unlock()
			kept++
			continue
		}
		if ch.Delete && w.refusedMove(b.Changes, i) {
			continue // replicate rejected the whole move: the next change counts it
		}
		var e *pipeline.RowError
		w.key = w.key[:0]
		for k := range v.keyCols {
			if w.key, e = appendStored(w.key, v.keyCols[k], ch.Values[k]); e != nil {
				break
			}
		}
		w.row = w.row[:0]
		switch {
		case e != nil:
		case ch.Delete:
			w.row = append(w.row, stateDelete)
		case ch.Set != nil:
			w.row = append(w.row, statePartial)
			for k := range v.rowCols {
				if !ch.Set[v.schema.KeyLen+k] {
					w.row = append(w.row, tagUnset)
				} else if w.row, e = appendStored(w.row, v.rowCols[k], ch.Values[v.schema.KeyLen+k]); e != nil {
					break
				}
			}
		default:
			w.row = append(w.row, stateUpsert)
			for k := range v.rowCols {
				if w.row, e = appendStored(w.row, v.rowCols[k], ch.Values[v.schema.KeyLen+k]); e != nil {
					break
				}
			}
		}
		if e == nil && !ch.Delete && w.values != nil {
			e = w.values.CheckValues(v.schema, ch.Values)
		}
		if e != nil { // the table would have refused it: replicate rejected it
			w.rejects[e.Code]++
			rejected++
			continue
		}
		h, _ := keyHashes(w.key)
		if h > v.sampleMax || (w.heap != nil && !w.heap.offer(h)) {
			continue
		}
		kept++
		w.w.add(h, ord, w.key, w.row)
	}
	w.read += b.Messages
	w.rejected += rejected
	w.other += b.OtherTable
	c.RowsIn.Add(b.Messages)
	c.RowsWritten.Add(kept)
	c.RowsRejected.Add(rejected + skipped) // the progress line: messages that made no change
	return nil
}

// refusedMove tells whether changes[i], a delete, is the old key's delete of an update that
// moves its row (the upsert of the same message follows it) whose new row the target refuses
// (the files' format, or the table before sending): replicate rejects such an update whole,
// deleting nothing.
func (w *changeWorker) refusedMove(changes []Change, i int) bool {
	if w.values == nil || i+1 >= len(changes) {
		return false
	}
	next := &changes[i+1]
	return next.Seq == changes[i].Seq && !next.Delete && next.Set == nil && next.Range == nil &&
		w.values.CheckValues(w.v.schema, next.Values) != nil
}

func cloneRange(kr *pipeline.KeyRange) pipeline.KeyRange {
	vals := func(vs []pipeline.Value) []pipeline.Value {
		out := make([]pipeline.Value, len(vs))
		for i, x := range vs {
			x.Str = strings.Clone(x.Str)
			out[i] = x
		}
		return out
	}
	return pipeline.KeyRange{Prefix: vals(kr.Prefix), Start: pipeline.KeyBound{Vals: vals(kr.Start.Vals), Inclusive: kr.Start.Inclusive},
		End: pipeline.KeyBound{Vals: vals(kr.End.Vals), Inclusive: kr.End.Inclusive}}
}

// covers tells whether the range holds the key (its columns' values), comparing as the SQL
// condition sqlsink writes for it does: the prefix equal, then the columns after it as tuples,
// a DESC column the other way round.
func (v *run) covers(kr *pipeline.KeyRange, key []pipeline.Value) bool {
	n := len(kr.Prefix)
	for i, p := range kr.Prefix {
		if compareValues(v.keyCols[i], key[i], p) != 0 {
			return false
		}
	}
	bound := func(kb *pipeline.KeyBound, after bool) bool {
		for j, b := range kb.Vals {
			c := compareValues(v.keyCols[n+j], key[n+j], b)
			if v.keyCols[n+j].Desc {
				c = -c
			}
			if !after {
				c = -c
			}
			if c != 0 {
				return c > 0
			}
		}
		return kb.Inclusive || len(kb.Vals) == 0
	}
	return bound(&kr.Start, true) && bound(&kr.End, false)
}

// compareValues orders two values of a column as the table does (pipeline.Compare: numbers by
// value, decimals too, whatever their text's scale; text and bytes by their bytes).
func compareValues(col pipeline.Column, a, b pipeline.Value) int {
	return pipeline.Compare(col.Type, a, b)
}

// keyState is what a key holds once its changes are applied: row (nil when it is absent).
type keyState struct {
	ord  uint64 // of the last change
	row  []byte // the stored row, or nil: no row
	n    int32  // changes applied
	vals []pipeline.Value
}

// apply applies one change (an entry's kind and payload) to the state; it reports whether the
// key holds a row after it.
func (c *comparer) applyChange(s *keyState, e entry) error {
	if len(e.row) == 0 {
		return errDamagedSpill
	}
	s.n++
	s.ord = e.ord
	switch e.row[0] {
	case stateDelete:
		s.row = nil
	case stateUpsert:
		s.row = e.row[1:]
	case statePartial:
		// an upsert of some columns: a key without a row gets one, its other columns null (and
		// none when every column is null, below)
		cols := c.v.rowCols
		var old [][]byte
		if s.row != nil {
			var ok bool
			if old, ok = splitValues(cols, s.row, nil); !ok {
				return errDamagedSpill
			}
		}
		p := e.row[1:]
		var row []byte
		for k, col := range cols {
			if len(p) > 0 && p[0] == tagUnset {
				p = p[1:]
				if old != nil {
					row = append(row, old[k]...)
				} else {
					row = append(row, tagNull)
				}
				continue
			}
			n := skipValue(col, p)
			if n <= 0 {
				return errDamagedSpill
			}
			row, p = append(row, p[:n]...), p[n:]
		}
		s.row = row
	default:
		return errDamagedSpill
	}
	if s.row != nil && len(s.row) == len(c.v.rowCols) && len(c.v.rowCols) > 0 {
		// every column null (one tagNull byte each; any value takes more): the key holds
		// nothing, and the table keeps no row of NULLs (replicate deletes it)
		s.row = nil
	}
	return nil
}

// fold applies a bucket's entries (sorted by ord here) to the keys' states, and the range
// deletes between them; it returns the keys in the order first seen.
func (c *comparer) fold(chunks [][]byte, ranges []rangeDelete) (map[string]*keyState, []string, error) {
	var es []entry
	max := c.v.sampleMax
	if err := eachEntry(chunks, func(e entry) error {
		if e.h <= max {
			es = append(es, e)
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].ord < es[j].ord })
	states := map[string]*keyState{}
	var order []string
	for _, e := range es {
		s := states[string(e.key)]
		if s == nil {
			s = &keyState{}
			states[string(e.key)] = s
			order = append(order, string(e.key))
		}
		if len(ranges) > 0 && s.n > 0 && c.rangeAfter(s, e.key, ranges, e.ord) {
			s.row = nil
		}
		if err := c.applyChange(s, e); err != nil {
			return nil, nil, err
		}
	}
	if len(ranges) > 0 {
		for _, k := range order {
			if s := states[k]; s.row != nil && c.rangeAfter(s, []byte(k), ranges, ^uint64(0)) {
				s.row = nil
			}
		}
	}
	return states, order, nil
}

// rangeAfter tells whether a range delete after the key's last change and before ord covers it.
func (c *comparer) rangeAfter(s *keyState, key []byte, ranges []rangeDelete, ord uint64) bool {
	i := sort.Search(len(ranges), func(i int) bool { return ranges[i].ord > s.ord })
	for ; i < len(ranges) && ranges[i].ord < ord; i++ {
		if s.vals == nil {
			parts, ok := splitValues(c.v.keyCols, key, nil)
			if !ok {
				return false
			}
			s.vals = make([]pipeline.Value, len(parts))
			for k, p := range parts {
				s.vals[k] = decodeValue(c.v.keyCols[k], p)
			}
		}
		if c.v.covers(&ranges[i].kr, s.vals) {
			return true
		}
	}
	return false
}

// stateBucket compares bucket b by state: the source's changes applied, against the target's
// (a folder's segments applied, or the table's rows looked up).
func (c *comparer) stateBucket(ctx context.Context, src, dst *parts, b int, emit func(*bucketResult)) error {
	v := c.v
	data, buf, err := src.load(b, c.srcBuf)
	c.srcBuf = keepBuf(buf, c.budget)
	if err != nil {
		return err
	}
	r := &bucketResult{differ1: map[int]int64{}}
	states, order, err := c.fold(data, v.ranges)
	if err != nil {
		return err
	}
	c.es = c.es[:0]
	for _, k := range order {
		s := states[k]
		r.checked += int64(s.n)
		r.overwritten += int64(s.n - 1)
		h, _ := keyHashes([]byte(k))
		c.es = append(c.es, srcEntry{h: h, ord: s.ord, key: []byte(k), row: s.row, n: 1})
	}
	if v.cfg.Changes == nil {
		// a source of rows (not changes): its distinct rows of a key but the last are lost, as
		// the comparison of a migrate output counts them
		if r.lost, err = c.lostRows(data, states); err != nil {
			return err
		}
	}
	if dst != nil {
		tdata, buf, err := dst.load(b, c.dstBuf)
		c.dstBuf = keepBuf(buf, c.budget)
		if err != nil {
			return err
		}
		// the target's changes carry no range deletes: a folder output refuses them
		tstates, torder, err := c.fold(tdata, nil)
		if err != nil {
			return err
		}
		for i := range c.es {
			se := &c.es[i]
			if t := tstates[string(se.key)]; t != nil {
				delete(tstates, string(se.key))
				if t.row != nil {
					c.matchState(se, t.row, t.ord, r)
				}
			}
		}
		for _, k := range torder {
			if t := tstates[k]; t != nil && t.row != nil {
				r.targetRows++
				c.extra(r, []byte(k), t.row, v.targetWhere(t.ord))
			}
		}
	} else if err := c.matchLookup(ctx, r); err != nil {
		return err
	}
	// a deleted key is checked absent; judge sees the keys that hold a row
	kept := c.es[:0]
	for _, se := range c.es {
		if se.row != nil {
			r.keys++
			kept = append(kept, se)
			continue
		}
		if v.cfg.Changes != nil { // a source of rows deletes nothing: a row of nulls only
			r.deleted++
		}
		if se.nt > 0 {
			c.extra(r, se.key, se.trow, "the changes delete this key")
		}
	}
	c.es = kept
	if err := c.judge(r); err != nil {
		return err
	}
	emit(r)
	if c.c != nil {
		c.c.RowsIn.Add(r.checked)
	}
	return nil
}

// lostRows counts the rows of a bucket's source keys given more than once that differ from
// the last one (each key's distinct rows but one), as index does.
func (c *comparer) lostRows(chunks [][]byte, states map[string]*keyState) (int64, error) {
	repeated := 0
	for _, s := range states {
		if s.n > 1 {
			repeated++
		}
	}
	if repeated == 0 {
		return 0, nil
	}
	c.given = resetGiven(c.given)
	max := c.v.sampleMax
	err := eachEntry(chunks, func(e entry) error {
		if s := states[string(e.key)]; e.h <= max && s != nil && s.n > 1 {
			c.given[[2]uint64{e.h, xxh3.Hash(e.row)}] = struct{}{}
		}
		return nil
	})
	return int64(len(c.given) - repeated), err
}

// matchState counts the target's row of a source key.
func (c *comparer) matchState(se *srcEntry, row []byte, ord uint64, r *bucketResult) {
	r.targetRows++
	se.nt, se.tord = 1, ord
	if se.row != nil && bytes.Equal(row, se.row) {
		se.matched = true
	} else {
		se.trow = row
	}
}

// extra counts a target row whose key the changes do not leave a row under.
func (c *comparer) extra(r *bucketResult, key, row []byte, where string) {
	r.extra++
	if c.v.cfg.Repair != nil {
		r.extraKeys = append(r.extraKeys, c.wholeKeyCells(key))
	}
	h, _ := keyHashes(key)
	r.ex.Extra = offer(r.ex.Extra, h, func() Example {
		return Example{Key: c.keyCells(key), Columns: c.rowCells(row), Where: where}
	})
}

// readDeletes reads a replicate output's delete file: each key it deletes is a stateDelete.
func (t *targetReader) readDeletes(ctx context.Context, fileIdx int) (int64, error) {
	fo := t.v.cfg.Folder
	data, err := fo.Objects.Get(ctx, fo.Files[fileIdx].Path)
	if err != nil {
		return 0, err
	}
	keys, err := replicate.ParseDeletes(data, t.v.schema)
	if err != nil {
		return 0, err
	}
	for i, k := range keys {
		t.key = t.key[:0]
		for c, col := range t.v.keyCols {
			var e *pipeline.RowError
			if t.key, e = appendStored(t.key, col, k[c]); e != nil {
				return int64(i), fmt.Errorf("key %d: %s", i+1, e.Message)
			}
		}
		t.row = append(t.row[:0], stateDelete)
		t.put(fileIdx, int64(i))
	}
	t.c.RowsIn.Add(int64(len(keys)))
	return int64(len(keys)), nil
}

// replicationFiles lists a replicate output's files in the order they apply: by region,
// partition and first offset, each segment's data file, then its delete file.
func replicationFiles(location string, r *replicate.Replication) ([]pipeline.FileInfo, []bool, int64, error) {
	segs := slices.Clone(r.Segments)
	replicate.SortSegments(segs)
	var files []pipeline.FileInfo
	var deletes []bool
	var rows int64
	for _, s := range segs {
		if s.Data != nil {
			if err := output.CheckRelPath(s.Data.Path); err != nil {
				return nil, nil, 0, fmt.Errorf("%s: %s: %w", location, output.ManifestFile, err)
			}
			files = append(files, pipeline.FileInfo{Region: s.Region, Path: s.Data.Path, Rows: s.Data.Rows, Bytes: s.Data.Bytes})
			deletes = append(deletes, false)
			rows += s.Data.Rows
		}
		if s.Deletes != nil {
			if err := output.CheckRelPathIn(s.Deletes.Path, output.DeletesDir); err != nil {
				return nil, nil, 0, fmt.Errorf("%s: %s: %w", location, output.ManifestFile, err)
			}
			files = append(files, pipeline.FileInfo{Region: s.Region, Path: s.Deletes.Path, Rows: s.Deletes.Keys, Bytes: s.Deletes.Bytes})
			deletes = append(deletes, true)
		}
	}
	return files, deletes, rows, nil
}
