package parquet

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
