package verify

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// A folder target is verified in two passes. The first compares digests, not values: each
// source row becomes a record of its key hash, a second 32-bit key hash, a hash of its row and
// its place in the source; each target row the same without the place. Records are filed by
// key hash like the exact pass's entries but are a third of their size and fixed, so a source
// of a few million rows stays in memory and a bucket is compared in cache. That pass is what an
// equal target costs. A key is told apart by 96 bits of xxh3 and a row by 64: a difference the
// digests miss needs a collision (odds below 2^-60 for a billion rows). Every difference they
// find is then compared value by value (detailPass): the exact comparison over only the keys
// that differ, reading both sides again, which names the columns and gives the examples.

const (
	sourceDigestSize = 28 // key hash 8 | second key hash 4 | row hash 8 | ord 8
	targetDigestSize = 20 // key hash 8 | second key hash 4 | row hash 8

)

// maxDetailKeys bounds the keys the detail pass is told to compare (8 bytes each); past it the
// detail pass compares every key. A variable for the tests.
var maxDetailKeys = 1 << 20

// sourceDigest appends a source row's record: its key's hashes (keyHashes), its row's hash and
// its place in the source.
func sourceDigest(dst []byte, h uint64, k2 uint32, row []byte, ord uint64) []byte {
	dst = targetDigest(dst, h, k2, row)
	return binary.LittleEndian.AppendUint64(dst, ord)
}

// targetDigest appends a target row's record: its key's hashes and its row's hash.
func targetDigest(dst []byte, h uint64, k2 uint32, row []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, h)
	dst = binary.LittleEndian.AppendUint32(dst, k2)
	return binary.LittleEndian.AppendUint64(dst, xxh3.Hash(row))
}

// has tells whether the sorted keys hold h.
func has(keys []uint64, h uint64) bool {
	_, ok := slices.BinarySearch(keys, h)
	return ok
}

// digestPass is the first pass over a folder target. It fills the result's counts and returns
// the hashes of the keys that differ, or all = true when there are more than maxDetailKeys.
func (v *run) digestPass(ctx context.Context) (diff []uint64, all bool, err error) {
	cfg := v.cfg
	v.digests = true
	defer func() { v.digests = false }()
	// digests are compared a small bucket at a time: most of the budget holds them
	hold, budget := cfg.Memory*7/8, cfg.Memory/8/int64(cfg.Workers)
	v.src = newParts(v.dir, "source-digests", topBuckets, 0, &v.used, hold)
	defer v.src.close()
	dst := newParts(v.dir, "target-digests", topBuckets, 0, &v.used, hold)
	defer dst.close()
	var read pipeline.Counters
	done := v.phase("reading source", estimatedRows(cfg.Source), &read)
	err = v.readSource(ctx, &read)
	done()
	if err != nil {
		return nil, false, err
	}
	var readT pipeline.Counters
	done = v.phase("reading target", cfg.Folder.Rows, &readT)
	err = v.readTarget(ctx, dst, &readT, v.sampleMax)
	done()
	if err != nil {
		return nil, false, err
	}
	var counters pipeline.Counters
	done = v.phase("comparing", -1, &counters)
	defer done()
	var mu sync.Mutex
	res := v.res
	err = v.each(ctx, cfg.Workers, budget, &counters, v.src.n, func(ctx context.Context, cmp *comparer, b int) error {
		return cmp.digestBucket(v.src, dst, b, func(r *digestResult) {
			mu.Lock()
			defer mu.Unlock()
			res.addCounts(r.counts)
			if !all && len(diff)+len(r.diff) <= maxDetailKeys {
				diff = append(diff, r.diff...)
			} else {
				all, diff = true, nil
			}
		})
	})
	if err != nil {
		return nil, false, err
	}
	slices.Sort(diff)
	diff = slices.Compact(diff)
	cfg.Logger.Info("digests compared", zap.Int64("keys", res.KeysChecked), zap.Int64("missing", res.Missing),
		zap.Int64("differ", res.Differ), zap.Int64("extra", *res.Extra))
	return diff, all, nil
}

// detailPass compares the keys that differ value by value (all of them when all is set) and
// takes the differences, their columns and examples from that comparison.
func (v *run) detailPass(ctx context.Context, diff []uint64, all bool) error {
	cfg := v.cfg
	cfg.Sample.Rows = 0 // the first pass chose the sample: sampleMax
	d := &run{cfg: cfg, schema: v.schema, keyCols: v.keyCols, rowCols: v.rowCols, dir: v.dir, res: newResult(cfg),
		sampleMax: v.sampleMax, phasePrefix: "differences: "}
	what := "every key"
	if !all {
		d.only = diff
		what = fmt.Sprintf("%d keys", len(diff))
	}
	cfg.Logger.Info("comparing the differences value by value", zap.String("keys", what))
	if err := d.exact(ctx); err != nil {
		return fmt.Errorf("compare the differences (%s): %w", what, err)
	}
	r, e := v.res, d.res
	if found, want := e.Missing+e.Differ+*e.Extra, r.Missing+r.Differ+*r.Extra; found == 0 && want > 0 {
		// what the digests saw is gone: neither pass saw a settled source and target
		r.Unsettled = fmt.Sprintf("the digests found %d %s, comparing their values %d: the source or the target changed while verify ran; run verify again once neither changes",
			want, plural(int(want), "difference", "differences"), found)
	} else if found != want {
		r.Notes = append(r.Notes, fmt.Sprintf("the digests found %d differences, comparing their values %d: did the source or the target change while verify ran?", want, found))
	}
	r.Missing, r.Differ, r.Extra, r.differ, r.Examples = e.Missing, e.Differ, e.Extra, e.differ, e.Examples
	r.repairKeys, r.ExtraKeys = e.repairKeys, e.ExtraKeys
	for _, n := range e.Notes { // the files read again repeat the first pass's notes
		if !slices.Contains(r.Notes, n) {
			r.Notes = append(r.Notes, n)
		}
	}
	return nil
}

// digestEntry is a source key in the digest comparison.
type digestEntry struct {
	h, rowHash, ord uint64
	k2              uint32
	n, nt           int32 // source rows, target rows with this key
	matched         bool  // a target row's hash equals the last source row's
	foreign         bool  // a target row's hash is none of the key's source rows'
}

// digestResult is one bucket's counts and the hashes of its keys that differ.
type digestResult struct {
	counts
	diff []uint64
}

// digestBucket compares bucket b of the source and target digests, splitting it first when it
// is larger than the budget.
func (c *comparer) digestBucket(src, dst *parts, b int, emit func(*digestResult)) error {
	size := src.size(b) + dst.size(b)
	if shift := src.shift + uint(log2(src.n)); size > c.budget && shift <= maxSplitShift {
		return c.splitBucket(src, dst, b, shift, emit)
	}
	r := &digestResult{}
	if err := c.indexSource(src, b, r); err != nil {
		return err
	}
	if err := c.matchTargetDigests(dst, b, r); err != nil {
		return err
	}
	c.tally(r)
	emit(r)
	if c.c != nil {
		c.c.RowsIn.Add(r.checked)
	}
	return nil
}

// splitBucket compares bucket b, too large for the budget, as 16 buckets of the next bits of
// the key hash, each split again if it is still too large.
func (c *comparer) splitBucket(src, dst *parts, b int, shift uint, emit func(*digestResult)) error {
	bucketSplits.Add(1)
	var used atomic.Int64
	const n = 16
	s2 := newParts(src.dir, fmt.Sprintf("%s.%d", src.name, b), n, shift, &used, c.budget)
	defer s2.close()
	d2 := newParts(dst.dir, fmt.Sprintf("%s.%d", dst.name, b), n, shift, &used, c.budget)
	defer d2.close()
	if err := splitRecords(src, b, s2, sourceDigestSize); err != nil {
		return err
	}
	if err := splitRecords(dst, b, d2, targetDigestSize); err != nil {
		return err
	}
	for sb := 0; sb < n; sb++ {
		if err := c.digestBucket(s2, d2, sb, emit); err != nil {
			return err
		}
	}
	return nil
}

// indexSource loads the source digests of bucket b into c.ds, one entry per key (in the
// sample): the newest row of a key overwritten in the source stands for it.
func (c *comparer) indexSource(src *parts, b int, r *digestResult) error {
	sdata, buf, err := src.load(b, c.srcBuf)
	c.srcBuf = keepBuf(buf, c.budget)
	if err != nil {
		return err
	}
	es := c.ds[:0]
	c.ix.reset(int(src.size(b)) / sourceDigestSize)
	hashOf := func(i int32) uint64 { return es[i].h }
	max := c.v.sampleMax
	le := binary.LittleEndian
	err = eachRecord(sdata, sourceDigestSize, func(rec []byte) {
		h := le.Uint64(rec)
		if h > max {
			return
		}
		r.checked++
		k2, rowHash, ord := le.Uint32(rec[8:]), le.Uint64(rec[12:]), le.Uint64(rec[20:])
		i, slot := c.ix.probe(h, func(i int32) bool { return es[i].h == h && es[i].k2 == k2 })
		if i >= 0 {
			e := &es[i]
			e.n++
			r.overwritten++
			if ord > e.ord {
				e.ord, e.rowHash = ord, rowHash
			}
			return
		}
		es = append(es, digestEntry{h: h, k2: k2, rowHash: rowHash, ord: ord, n: 1})
		c.ix.insert(slot, int32(len(es)-1), hashOf)
		r.keys++
	})
	c.ds = es
	if err != nil || r.overwritten == 0 {
		return err
	}
	// the rows of keys given more than once: a target row of such a key must be one of them
	c.given = resetGiven(c.given)
	err = eachRecord(sdata, sourceDigestSize, func(rec []byte) {
		h := le.Uint64(rec)
		if h > max {
			return
		}
		k2 := le.Uint32(rec[8:])
		if i, _ := c.ix.probe(h, func(i int32) bool { return es[i].h == h && es[i].k2 == k2 }); i >= 0 && es[i].n > 1 {
			c.given[[2]uint64{h, le.Uint64(rec[12:])}] = struct{}{}
		}
	})
	// the distinct rows of the keys given more than once, but the one each key keeps: rows whose
	// values no target row holds
	repeated := 0
	for _, e := range es {
		if e.n > 1 {
			repeated++
		}
	}
	r.lost += int64(len(c.given) - repeated)
	return err
}

// matchTargetDigests looks the target digests of bucket b up among the source's (indexSource): a key
// the source lacks is extra; a source key counts its target rows and whether one matches.
func (c *comparer) matchTargetDigests(dst *parts, b int, r *digestResult) error {
	tdata, buf, err := dst.load(b, c.dstBuf)
	c.dstBuf = keepBuf(buf, c.budget)
	if err != nil {
		return err
	}
	es := c.ds
	max := c.v.sampleMax
	le := binary.LittleEndian
	return eachRecord(tdata, targetDigestSize, func(rec []byte) {
		h := le.Uint64(rec)
		if h > max {
			return
		}
		r.targetRows++
		k2 := le.Uint32(rec[8:])
		i, _ := c.ix.probe(h, func(i int32) bool { return es[i].h == h && es[i].k2 == k2 })
		if i < 0 {
			r.extra++
			r.diff = append(r.diff, h)
			return
		}
		e := &es[i]
		e.nt++
		if rh := le.Uint64(rec[12:]); rh == e.rowHash {
			e.matched = true
		} else if e.n > 1 {
			if _, ok := c.given[[2]uint64{h, rh}]; !ok {
				e.foreign = true
			}
		}
	})
}

// tally counts the source keys the target misses, holds differently or more than once, and
// lists each differing key once.
func (c *comparer) tally(r *digestResult) {
	es := c.ds
	for i := range es {
		e := &es[i]
		switch {
		case e.nt == 0:
			r.missing++
		case !e.matched || e.foreign:
			r.differ++
		case e.nt <= e.n:
			continue
		}
		if e.nt > e.n {
			r.extra += int64(e.nt - e.n)
		}
		r.diff = append(r.diff, e.h)
	}
	// once per key: many rows of one stray key must not pass maxDetailKeys
	slices.Sort(r.diff)
	r.diff = slices.Compact(r.diff)
}

// eachRecord calls fn with every fixed-size record of a bucket's chunks.
func eachRecord(chunks [][]byte, size int, fn func(rec []byte)) error {
	for _, ch := range chunks {
		if len(ch)%size != 0 {
			return errDamagedSpill
		}
		for off := 0; off < len(ch); off += size {
			fn(ch[off : off+size : off+size])
		}
	}
	return nil
}

// splitRecords moves bucket b of p, records of size bytes, into q's buckets (the next hash bits).
func splitRecords(p *parts, b int, q *parts, size int) error {
	w := q.writer()
	add := func(rec []byte) { w.addRecord(binary.LittleEndian.Uint64(rec), rec) }
	if f := p.files[b]; f != nil {
		r := bufio.NewReaderSize(io.NewSectionReader(f, 0, p.sizes[b]), 1<<20)
		rec := make([]byte, size)
		for {
			if _, err := io.ReadFull(r, rec); err == io.EOF {
				break
			} else if err != nil {
				return errDamagedSpill
			}
			add(rec)
		}
		f.Close()
		os.Remove(f.Name())
		p.files[b] = nil
	}
	if err := eachRecord(p.mem[b], size, add); err != nil {
		return err
	}
	p.used.Add(-p.memN[b])
	p.mem[b], p.memN[b] = nil, 0
	w.flush()
	return q.failed()
}
