package parquet

import (
	"fmt"
	"io"

	"github.com/rekey/rekey/pipeline"
)

// NewWithDictMax is New with a small dictionary limit, to exercise the fallbacks.
func NewWithDictMax(n int) *Format {
	f := New()
	f.dictMax = n
	return f
}

// Poison makes the recycling allocator fill released buffers with garbage, so that a use after
// release shows up as corrupt output.
func Poison(on bool) { recycler.poison = on }

// Poisoned runs the rest of the test with released arrow buffers poisoned.
func Poisoned(t interface{ Cleanup(func()) }) {
	Poison(true)
	t.Cleanup(func() { Poison(false) })
}

// DictMode tells whether column col of buf's current chunk is dictionary-encoded.
func DictMode(buf interface{}, col int) bool { return buf.(*buffer).cols[col].dictMode }

// ColumnWriterPageBuffers writes rows of schema as one row group and tells, for each typed
// column writer it got, whether its page buffers were found (and so lent).
func ColumnWriterPageBuffers(schema pipeline.TargetSchema, rows []pipeline.Row) (map[string]bool, error) {
	f := New()
	buf, err := f.NewBuffer(schema)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := buf.Append(r.Values); err != nil {
			return nil, err
		}
	}
	fw, err := f.NewWriter(io.Discard, schema)
	if err != nil {
		return nil, err
	}
	w := fw.(*writer)
	if err := w.start(buf.Cut().(*chunk)); err != nil {
		return nil, err
	}
	rgw := w.fw.AppendRowGroup()
	found := map[string]bool{}
	for range schema.Columns {
		cw, err := rgw.NextColumn()
		if err != nil {
			return nil, err
		}
		_, _, ok := pageBuffers(cw)
		found[fmt.Sprintf("%T", cw)] = ok
	}
	return found, nil
}

// LendPageBuffers turns the lending of page buffers to arrow's column writers on or off.
func LendPageBuffers(on bool) { lendPages = on }
