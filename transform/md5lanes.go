package transform

import (
	"encoding/binary"

	"github.com/rekey/rekey/internal/elemindex"
	"github.com/rekey/rekey/pipeline"
)

// md5Lanes holds the MD5 digests one call site computed ahead for the rows of a batch that
// follow the one it was asked for, eight at a time (md5x8: one message per lane of the AVX2
// registers, about a fifth of md5Short's instructions per digest). The steps of one digest are
// a chain, each waiting for the last; eight digests side by side fill the machine's adders.
// Only sites that hash a source column as it is look ahead: the rows' values are the inputs.
type md5Lanes struct {
	from int         // the record index of lane 0 in the batch the lanes were filled from
	n    [8]int8     // each lane's input length, -1 when the lane holds no digest
	blk  [8][64]byte // each lane's padded block: its input, 0x80, zeros, the bit length
	sum  [8][32]byte // each lane's digest (the first 16 bytes: digestSum's form)
}

// md5Scratch is md5x8's transposed words: one evaluator's, shared by its sites.
type md5Scratch struct{ words [16][8]uint32 }

// laneSum returns the MD5 digest of v, source column src of record r, from the lanes of call
// site slot, filling them from r on when they do not hold it; ok is false when lanes do not apply
// (no AVX2, r not among its batch's records, v not text of one block) and the digest is computed
// the usual way. A lane is used only when its block holds v's bytes: the digest depends on
// nothing else, so a batch whose records were reused since, or changed, is never served a stale
// one.
func (e *Evaluator) laneSum(slot, src int, r *pipeline.Record, v pipeline.Value) (sum *[32]byte, ok bool) {
	if !hasMD5x8 || !isStringKind(v.Kind) || len(v.Str) > md5ShortMax || e.batch == nil {
		return nil, false
	}
	recs := e.batch.Records
	i, ok := elemindex.Of(recs, r)
	if !ok {
		return nil, false
	}
	if e.lanes == nil {
		e.lanes = make([]*md5Lanes, len(e.digests))
		e.md5 = new(md5Scratch)
	}
	l := e.lanes[slot]
	if l == nil {
		l = new(md5Lanes)
		e.lanes[slot] = l
	}
	if k := i - l.from; k >= 0 && k < 8 && l.holds(k, v.Str) {
		return &l.sum[k], true
	}
	l.fill(e.md5, recs, i, src)
	if !l.holds(0, v.Str) { // cannot happen: lane 0 is r's value
		return nil, false
	}
	return &l.sum[0], true
}

// holds says whether lane k holds the digest of s.
func (l *md5Lanes) holds(k int, s string) bool {
	return int(l.n[k]) == len(s) && string(l.blk[k][:len(s)]) == s
}

// fill computes the digests of source column src of records from..from+7 (those that hold text
// of one block; the others' lanes stay empty).
func (l *md5Lanes) fill(m *md5Scratch, recs []pipeline.Record, from, src int) {
	l.from = from
	for k := range l.blk {
		l.n[k] = -1
		j := from + k
		if j >= len(recs) || recs[j].Err != nil || len(recs[j].Values) <= src {
			continue
		}
		v := recs[j].Values[src]
		if !isStringKind(v.Kind) || len(v.Str) > md5ShortMax {
			continue
		}
		b := &l.blk[k]
		*b = [64]byte{}
		copy(b[:], v.Str)
		b[len(v.Str)] = 0x80
		binary.LittleEndian.PutUint64(b[56:], uint64(len(v.Str))<<3)
		l.n[k] = int8(len(v.Str))
	}
	md5x8(&l.blk, &l.sum, &m.words)
}
