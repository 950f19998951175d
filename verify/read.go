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

func (t *targetReader) Null(c int) {
	if c < t.keyLen {
		t.key = append(t.key, tagNull)
	} else {
		t.row = append(t.row, tagNull)
	}
}

func (t *targetReader) Bytes(c int, b []byte) {
	if c < t.keyLen {
		t.key = appendBytes(t.key, b)
	} else {
		t.row = appendBytes(t.row, b)
	}
}

func (t *targetReader) Int(c int, v int64) {
	if c < t.keyLen {
		t.key = appendInt(t.key, v)
	} else {
		t.row = appendInt(t.row, v)
	}
}

func (t *targetReader) Bool(c int, v bool) {
	if c < t.keyLen {
		t.key = appendBool(t.key, v)
	} else {
		t.row = appendBool(t.row, v)
	}
}

func (t *targetReader) Float32(c int, v float32) {
	if c < t.keyLen {
		t.key = appendFloat32(t.key, v)
	} else {
		t.row = appendFloat32(t.row, v)
	}
}

func (t *targetReader) Float64(c int, v float64) {
	if c < t.keyLen {
		t.key = appendFloat64(t.key, v)
	} else {
		t.row = appendFloat64(t.row, v)
	}
}

func (t *targetReader) Decimal(c int, hi int64, lo uint64) {
	if c < t.keyLen {
		t.key = appendDecimal(t.key, hi, lo)
	} else {
		t.row = appendDecimal(t.row, hi, lo)
	}
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
