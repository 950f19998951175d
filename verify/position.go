package verify

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/rekey/rekey/pipeline"
)

// positions names source rows by their ord as rejects do (pipeline.Batch.Position: the file and
// line, the partition and offset): one entry per batch, with its records' Seqs as deltas only
// when they do not follow one another (CSV records spanning lines, gaps in offsets).
type positions struct {
	streams []string
	index   map[string]int32
	batches []batchPos
}

type batchPos struct {
	firstOrd uint64
	stream   int32
	firstSeq int64
	n        int
	deltas   []byte // uvarint Seq[i]-Seq[i-1] for i >= 1; nil when every delta is 1
}

// add records the batch whose first record has ord firstOrd; batches come in ord order.
func (p *positions) add(b *pipeline.Batch, firstOrd uint64) {
	if len(b.Records) == 0 {
		return
	}
	if p.index == nil {
		p.index = map[string]int32{}
	}
	s, ok := p.index[b.Stream]
	if !ok {
		s = int32(len(p.streams))
		p.index[b.Stream] = s
		p.streams = append(p.streams, b.Stream)
	}
	bp := batchPos{firstOrd: firstOrd, stream: s, firstSeq: b.Records[0].Seq, n: len(b.Records)}
	for i := 1; i < len(b.Records); i++ {
		if b.Records[i].Seq != b.Records[i-1].Seq+1 {
			for j := 1; j < len(b.Records); j++ {
				bp.deltas = binary.AppendUvarint(bp.deltas, uint64(b.Records[j].Seq-b.Records[j-1].Seq))
			}
			break
		}
	}
	p.batches = append(p.batches, bp)
}

// where names the source row ord as a reject would ("orders.csv:500"); "" when it is not known.
func (p *positions) where(ord uint64) string {
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].firstOrd > ord }) - 1
	if i < 0 {
		return ""
	}
	bp := &p.batches[i]
	k := int(ord - bp.firstOrd)
	if k >= bp.n {
		return ""
	}
	seq := bp.firstSeq + int64(k)
	if bp.deltas != nil {
		seq = bp.firstSeq
		d := bp.deltas
		for ; k > 0; k-- {
			x, n := binary.Uvarint(d)
			seq, d = seq+int64(x), d[n:]
		}
	}
	b := pipeline.Batch{Stream: p.streams[bp.stream]}
	return b.Position(&pipeline.Record{Seq: seq})
}

// sourceWhere names source row ord: as rejects do, or by its place in the reading order.
func (v *run) sourceWhere(ord uint64) string {
	if w := v.positions.where(ord); w != "" {
		return w
	}
	return fmt.Sprintf("source row %d", ord+1)
}
