package verify

import (
	"fmt"

	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/formats"
)

// readBatch is the rows read from a data file between two updates of the progress counter.
const readBatch = 4 << 10

// folderFormat is the format of the folder's data files, which reads them back.
func folderFormat(fo *Folder) (files.Format, error) {
	f, ok := formats.Get(fo.Format)
	if !ok {
		return nil, fmt.Errorf("%s: data files in format %q, verify reads %s", fo.Location, fo.Format, formats.Names("and"))
	}
	return f, nil
}

// targetReader is a files.RowReceiver: it takes the rows of the data file being read (fileIdx)
// in their stored form, key columns into key, the others into row, and files each row (put).
var _ files.RowReceiver = (*targetReader)(nil)

// dst is the buffer column c's value goes to: the key's or the row's.
func (t *targetReader) dst(c int) *[]byte {
	if c < t.keyLen {
		return &t.key
	}
	return &t.row
}

func (t *targetReader) Null(c int)               { d := t.dst(c); *d = append(*d, tagNull) }
func (t *targetReader) Bytes(c int, b []byte)    { d := t.dst(c); *d = appendBytes(*d, b) }
func (t *targetReader) Int(c int, v int64)       { d := t.dst(c); *d = appendInt(*d, v) }
func (t *targetReader) Bool(c int, v bool)       { d := t.dst(c); *d = appendBool(*d, v) }
func (t *targetReader) Float32(c int, v float32) { d := t.dst(c); *d = appendFloat32(*d, v) }
func (t *targetReader) Float64(c int, v float64) { d := t.dst(c); *d = appendFloat64(*d, v) }
func (t *targetReader) Decimal(c int, hi int64, lo uint64) {
	d := t.dst(c)
	*d = appendDecimal(*d, hi, lo)
}

// EndRow files the row and starts the next; the progress counter moves a batch at a time.
func (t *targetReader) EndRow(pos int64) {
	t.put(t.fileIdx, pos)
	t.key, t.row = t.key[:0], t.row[:0]
	if t.unsent++; t.unsent == readBatch {
		t.c.RowsIn.Add(readBatch)
		t.unsent = 0
	}
}

// flushCount adds the rows read since the last batch to the progress counter.
func (t *targetReader) flushCount() {
	t.c.RowsIn.Add(t.unsent)
	t.unsent = 0
}
