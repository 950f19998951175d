package parquet

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// physical is how a column's values are kept in memory.
type physical uint8

const (
	physBytes physical = iota // VARCHAR, JSON, VARBINARY: data + ends
	physInt64                 // BIGINT, TIMESTAMP
	physInt32                 // INTEGER, SMALLINT, TINYINT, DATE
	physBool
	physFloat32
	physFloat64
	physDecimal // FIXED_LEN_BYTE_ARRAY big-endian, width bytes each, in data
)

// colSpec is the static description of a column.
type colSpec struct {
	col      pipeline.Column
	phys     physical
	nullable bool
	width    int // decimal byte width
	dict     bool
	utf8     bool // a STRING column (VARCHAR, JSON): values must be valid UTF-8
	// timestamp: a TIMESTAMP column (its values are bounded by what Spark reads)
	timestamp bool
	// decMax is 10^precision of a DECIMAL of up to 18 digits (0 otherwise): a decimal whose
	// cached unscaled value is at the column's scale and below it in magnitude fits as it is
	decMax uint64
}

// colData is one column's rows of a chunk. Only non-null values are stored, in order; def has
// one level per row for nullable columns (1 present, 0 null), or is nil while every row so far
// has a value. In dictionary mode the values are idx (one per row, 0 for nulls) into the
// dictionary dvals/dends instead of data/ends (or i64, i32, data for numbers): a dictionary entry
// holds a number's bytes as the plain form would (int64 and int32 little-endian, a decimal's
// big-endian width bytes).
type colData struct {
	def   []int16
	i64   []int64
	i32   []int32
	bools []bool
	f32   []float32
	f64   []float64
	data  []byte
	ends  []uint32

	nulls int // null rows so far

	dictMode bool
	idx      []int32
	dvals    []byte
	dends    []uint32
}

// addEntry appends s to the column's dictionary bytes and returns its index (the caller adds it
// to the dictionary's table).
func (c *colData) addEntry(s string) int32 {
	k := int32(len(c.dends))
	c.dvals = append(c.dvals, s...)
	c.dends = append(c.dends, uint32(len(c.dvals)))
	return k
}

// entry is dictionary entry k (its capacity ends with it).
func (c *colData) entry(k int32) []byte {
	start := uint32(0)
	if k > 0 {
		start = c.dends[k-1]
	}
	return c.dvals[start:c.dends[k]:c.dends[k]]
}

func (c *colData) used() int64 {
	return int64(len(c.def))*2 + int64(len(c.i64))*8 + int64(len(c.i32))*4 + int64(len(c.bools)) +
		int64(len(c.f32))*4 + int64(len(c.f64))*8 + int64(len(c.data)) + int64(len(c.ends))*4 +
		int64(len(c.idx))*4 + int64(len(c.dvals)) + int64(len(c.dends))*4
}

func (c *colData) mem() int64 {
	return int64(cap(c.def))*2 + int64(cap(c.i64))*8 + int64(cap(c.i32))*4 + int64(cap(c.bools)) +
		int64(cap(c.f32))*4 + int64(cap(c.f64))*8 + int64(cap(c.data)) + int64(cap(c.ends))*4 +
		int64(cap(c.idx))*4 + int64(cap(c.dvals)) + int64(cap(c.dends))*4
}

// slot is one converted value between validation and append.
type slot struct {
	null bool
	hit  bool  // s is dictionary entry k already (found while validating)
	miss bool  // s was looked up while validating and is not in the dictionary
	k    int32 // the entry, when hit
	i    int64
	f    float64
	s    string
	d    files.Dec128
}

type buffer struct {
	f     *Format
	specs []colSpec
	cols  []colData
	slots []slot
	rows  int

	dicts    []*dictTable // per dictionary column: value -> index (this chunk)
	verdicts *dictVerdicts
	last     []colLens // sizes of the last chunk, to presize
	lastRows int
	// the chunk the sink cuts (ExpectChunk): by rows (0: no bound) or bytes used (0: unknown)
	expectRows int
	expectUsed int64
	// chunkRows is the rows the chunk being filled is expected to reach (0: unknown), to size
	// the definition levels a column starts at its first null
	chunkRows int
}

func specsOf(f *Format, schema pipeline.TargetSchema) ([]colSpec, error) {
	specs := make([]colSpec, len(schema.Columns))
	for i, col := range schema.Columns {
		if _, err := Node(col); err != nil {
			return nil, err
		}
		sp := colSpec{col: col, nullable: !col.IsKey(), dict: f.dictEligible(col)}
		switch col.Type {
		case pipeline.TypeVarchar, pipeline.TypeJSON, pipeline.TypeVarbinary:
			sp.phys = physBytes
			sp.utf8 = col.Type != pipeline.TypeVarbinary
		case pipeline.TypeBigint, pipeline.TypeTimestamp:
			sp.phys = physInt64
			sp.timestamp = col.Type == pipeline.TypeTimestamp
		case pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint, pipeline.TypeDate:
			sp.phys = physInt32
		case pipeline.TypeBoolean:
			sp.phys = physBool
		case pipeline.TypeFloat:
			sp.phys = physFloat32
		case pipeline.TypeDouble:
			sp.phys = physFloat64
		case pipeline.TypeDecimal:
			sp.phys = physDecimal
			sp.width = decimalSize(col.Precision)
			if col.Precision <= 18 {
				sp.decMax = 1
				for range col.Precision {
					sp.decMax *= 10
				}
			}
		}
		specs[i] = sp
	}
	return specs, nil
}

// NewBuffer returns an empty row buffer.
func (f *Format) NewBuffer(schema pipeline.TargetSchema) (files.Buffer, error) {
	specs, err := specsOf(f, schema)
	if err != nil {
		return nil, err
	}
	b := &buffer{f: f, specs: specs, cols: make([]colData, len(specs)), slots: make([]slot, len(specs)),
		dicts: make([]*dictTable, len(specs)), verdicts: &dictVerdicts{giveUps: make([]atomic.Int32, len(specs)), plain: make([]atomic.Bool, len(specs))},
		last: make([]colLens, len(specs))}
	b.startDicts()
	return b, nil
}

// dictVerdicts is what a buffer and its siblings learn together about their dictionary columns:
// a column whose dictionary was given up in two chunks in a row (a chunk that kept its
// dictionary in between starts the count again) is plain from then on, in every chunk of them.
// Siblings may be filled by different goroutines (a migrate's regions), hence the atomics.
type dictVerdicts struct {
	giveUps  []atomic.Int32
	plain    []atomic.Bool
	siblings bool // the verdicts are shared (Sibling was called, before any Append)
}

// Sibling returns an empty buffer of the same schema that shares b's dictionary verdicts: a
// column one of them found not worth a dictionary (timestamps, amounts) starts plain in the
// others' chunks, instead of each chunk of each buffer finding it out again over thousands of
// rows. Each buffer is used by one goroutine at a time; siblings may be used concurrently.
func (b *buffer) Sibling() files.Buffer {
	s := &buffer{f: b.f, specs: b.specs, cols: make([]colData, len(b.specs)), slots: make([]slot, len(b.specs)),
		dicts: make([]*dictTable, len(b.specs)), verdicts: b.verdicts, last: make([]colLens, len(b.specs))}
	b.verdicts.siblings = true
	s.startDicts()
	return s
}

// startDicts puts the next chunk's dictionary columns in dictionary mode, except those found
// not worth one.
func (b *buffer) startDicts() {
	for i, sp := range b.specs {
		if sp.dict {
			if b.dicts[i] == nil {
				b.dicts[i] = newDictTable()
			}
			b.cols[i].dictMode = !b.verdicts.plain[i].Load()
		}
	}
}

func (b *buffer) Rows() int { return b.rows }

func (b *buffer) Used() int64 {
	var m int64
	for i := range b.cols {
		m += b.cols[i].used()
	}
	return m
}

func (b *buffer) Mem() int64 {
	var m int64
	for i := range b.cols {
		m += b.cols[i].mem()
	}
	for _, d := range b.dicts {
		if d != nil {
			m += d.mem()
		}
	}
	return m
}

// convert validates value v of column sp (data c, dictionary d) into its slot s.
func convert(sp *colSpec, s *slot, c *colData, d *dictTable, v *pipeline.Value) *pipeline.RowError {
	if v.Kind == pipeline.KindNull {
		if !sp.nullable {
			return files.NullKeyError(sp.col)
		}
		s.null = true
		return nil
	}
	s.null = false
	var err *pipeline.RowError
	switch sp.phys {
	case physBytes:
		s.hit, s.miss = false, false
		if v.Kind == pipeline.KindText || v.Kind == pipeline.KindBytes {
			s.s = v.Str
			if sp.utf8 {
				// One invalid STRING value makes readers refuse the whole file. A dictionary
				// entry was checked when it was added: look it up now, and append by index
				// (a miss is remembered too: appending adds the value without a second lookup).
				if c.dictMode {
					s.k, s.hit = d.find(v.Str, c)
					s.miss = !s.hit
				}
				if !s.hit && !validText(v.Str) {
					return files.EncodingError(sp.col, v.Str)
				}
			}
			return nil
		}
		s.s, err = files.TextValue(sp.col, *v)
	case physInt64:
		if v.Kind == pipeline.KindInt && (sp.col.Type != pipeline.TypeTimestamp || v.Num >= files.MinTimestamp && v.Num <= files.MaxTimestamp) {
			s.i = v.Num
			return nil
		}
		s.i, err = files.IntValue(sp.col, *v)
	case physInt32:
		s.i, err = files.IntValue(sp.col, *v)
	case physBool:
		var bv bool
		bv, err = files.BoolValue(sp.col, *v)
		s.i = 0
		if bv {
			s.i = 1
		}
	case physFloat32, physFloat64:
		if v.Kind == pipeline.KindFloat && sp.phys == physFloat64 {
			s.f = v.Float()
			return nil
		}
		s.f, err = files.FloatValue(sp.col, *v)
	case physDecimal:
		s.d, err = files.DecimalValue(sp.col, *v)
	default:
		err = files.TypeError(sp.col, "unsupported type %s", sp.col.Type)
	}
	return err
}

// Append validates the whole row first, so that a bad value leaves the buffer untouched.
func (b *buffer) Append(values []pipeline.Value) error {
	if len(values) != len(b.specs) {
		return &pipeline.RowError{Code: pipeline.CodeType, Message: fmt.Sprintf("row has %d values, want %d", len(values), len(b.specs))}
	}
	if b.rows == 0 && b.lastRows > 0 {
		b.presize()
	} else if (b.rows == firstProbeRows || b.rows == secondProbeRows) && b.lastRows == 0 && b.expectUsed > 0 {
		b.presizeFirst()
	}
	if err := b.convertRow(values); err != nil {
		return err
	}
	b.appendRow()
	b.rows++
	return nil
}

// convertRow converts a row's values into the slots, or says why the row is refused.
func (b *buffer) convertRow(values []pipeline.Value) *pipeline.RowError {
	// pointers into slices resliced to one length: no bounds checks and no copies of the
	// column descriptions and values per cell
	specs := b.specs
	values, slots, cols, dicts := values[:len(specs)], b.slots[:len(specs)], b.cols[:len(specs)], b.dicts[:len(specs)]
	for i := range specs {
		// the common cells, as convert takes them, here without the call: an integer that fits
		// its column as it is (ids, epoch timestamps), a decimal with its number at the
		// column's scale, text for a STRING column
		sp, v, s := &specs[i], &values[i], &slots[i]
		switch {
		case v.Kind == pipeline.KindInt && sp.phys == physInt64 &&
			(!sp.timestamp || v.Num >= files.MinTimestamp && v.Num <= files.MaxTimestamp):
			s.null, s.i = false, v.Num
			continue
		case v.Kind == pipeline.KindDecimal && sp.phys == physDecimal && int(v.DecScale) == sp.col.Scale+1 &&
			absU64(v.Num) < sp.decMax: // files.DecimalValue's result for it, without the scaling
			s.null, s.d = false, files.Dec128{Hi: v.Num >> 63, Lo: uint64(v.Num)}
			continue
		case v.Kind == pipeline.KindText && sp.phys == physBytes && sp.utf8:
			s.null, s.s, s.hit, s.miss = false, v.Str, false, false
			if c := &cols[i]; c.dictMode {
				s.k, s.hit = dicts[i].find(v.Str, c)
				s.miss = !s.hit
			}
			if !s.hit && !validText(v.Str) {
				return files.EncodingError(sp.col, v.Str)
			}
			continue
		case v.Kind == pipeline.KindNull && sp.nullable: // half the cells of a sparse table
			s.null = true
			continue
		}
		if err := convert(sp, s, &cols[i], dicts[i], v); err != nil {
			return err
		}
	}
	return nil
}

// appendRow appends the converted slots to the columns.
func (b *buffer) appendRow() {
	specs, p := b.specs, b.f.pools
	slots, cols := b.slots[:len(specs)], b.cols[:len(specs)]
	for i := range specs {
		c, s := &cols[i], &slots[i]
		// the common cells of a column without levels (no null in the chunk so far) and with
		// room for one more value: appended here, without the call
		if !s.null && c.def == nil {
			if c.dictMode {
				if s.hit && len(c.idx) < cap(c.idx) { // a value the dictionary has
					c.idx = append(c.idx, s.k)
					continue
				}
			} else if sp := &specs[i]; sp.phys == physInt64 && len(c.i64) < cap(c.i64) {
				c.i64 = append(c.i64, s.i)
				continue
			} else if sp.phys == physDecimal && sp.width <= 8 && cap(c.data)-len(c.data) >= 8 {
				// the value's last width bytes of big-endian two's complement, as putBE
				// writes them: its low word's
				var be [8]byte
				binary.BigEndian.PutUint64(be[:], s.d.Lo)
				c.data = append(c.data, be[8-sp.width:]...)
				continue
			}
		}
		// a null of a column that has levels already and room for one more (half the cells of
		// a sparse table): its level (and index) here, without the call
		if s.null && len(c.def) < cap(c.def) && (!c.dictMode || len(c.idx) < cap(c.idx)) {
			c.def = append(c.def, 0)
			c.nulls++
			if c.dictMode {
				c.idx = append(c.idx, 0)
			}
			continue
		}
		b.append(i, &specs[i], c, s, p)
	}
}

// append appends converted slot s to column i (spec sp, data c).
func (b *buffer) append(i int, sp *colSpec, c *colData, s *slot, p *pools) {
	if sp.nullable {
		// definition levels are kept only once the chunk has a null in this column: until
		// then every row is present and the writer uses a shared run of ones
		if s.null {
			if c.def == nil {
				c.def = p.i16.get(max(b.rows+1, b.chunkRows))[:b.rows]
				for r := range c.def {
					c.def[r] = 1
				}
			}
			if len(c.def) == cap(c.def) {
				c.def = grow(&p.i16, c.def, 1)
			}
			c.def = append(c.def, 0)
			c.nulls++
			if c.dictMode {
				if len(c.idx) == cap(c.idx) {
					c.idx = grow(&p.i32, c.idx, 1)
				}
				c.idx = append(c.idx, 0)
			}
			return
		}
		if c.def != nil {
			if len(c.def) == cap(c.def) {
				c.def = grow(&p.i16, c.def, 1)
			}
			c.def = append(c.def, 1)
		}
	}
	if c.dictMode && sp.phys != physBytes {
		var key [16]byte
		b.appendDict(i, numberBytes(sp, s, &key), false)
		return
	}
	switch sp.phys {
	case physBytes:
		if c.dictMode {
			if s.hit {
				if len(c.idx) == cap(c.idx) {
					c.idx = grow(&p.i32, c.idx, 1)
				}
				c.idx = append(c.idx, s.k)
				return
			}
			b.appendDict(i, s.s, s.miss)
			return
		}
		b.appendPlain(c, s.s)
	case physInt64:
		if len(c.i64) == cap(c.i64) {
			c.i64 = grow(&p.i64, c.i64, 1)
		}
		c.i64 = append(c.i64, s.i)
	case physInt32:
		if len(c.i32) == cap(c.i32) {
			c.i32 = grow(&p.i32, c.i32, 1)
		}
		c.i32 = append(c.i32, int32(s.i))
	case physBool:
		if len(c.bools) == cap(c.bools) {
			c.bools = grow(&p.bools, c.bools, 1)
		}
		c.bools = append(c.bools, s.i != 0)
	case physFloat32:
		if len(c.f32) == cap(c.f32) {
			c.f32 = grow(&p.f32, c.f32, 1)
		}
		c.f32 = append(c.f32, float32(s.f))
	case physFloat64:
		if len(c.f64) == cap(c.f64) {
			c.f64 = grow(&p.f64, c.f64, 1)
		}
		c.f64 = append(c.f64, s.f)
	case physDecimal:
		if cap(c.data)-len(c.data) < sp.width {
			c.data = grow(&p.bytes, c.data, sp.width)
		}
		var be [16]byte
		putBE(be[:], s.d)
		c.data = append(c.data, be[16-sp.width:]...)
	}
}

// numberBytes writes the dictionary form of a number into key and returns it (in key).
func numberBytes(sp *colSpec, s *slot, key *[16]byte) string {
	switch sp.phys {
	case physInt64:
		binary.LittleEndian.PutUint64(key[:], uint64(s.i))
		return unsafe.String(&key[0], 8)
	case physInt32:
		binary.LittleEndian.PutUint32(key[:], uint32(int32(s.i)))
		return unsafe.String(&key[0], 4)
	}
	putBE(key[:], s.d) // physDecimal: the last width bytes
	return unsafe.String(&key[16-sp.width], sp.width)
}

// appendNumber appends the plain form of a number given as its dictionary bytes.
func (b *buffer) appendNumber(sp *colSpec, c *colData, v []byte) {
	p := b.f.pools
	switch sp.phys {
	case physInt64:
		if len(c.i64) == cap(c.i64) {
			c.i64 = grow(&p.i64, c.i64, 1)
		}
		c.i64 = append(c.i64, int64(binary.LittleEndian.Uint64(v)))
	case physInt32:
		if len(c.i32) == cap(c.i32) {
			c.i32 = grow(&p.i32, c.i32, 1)
		}
		c.i32 = append(c.i32, int32(binary.LittleEndian.Uint32(v)))
	case physDecimal:
		if cap(c.data)-len(c.data) < len(v) {
			c.data = grow(&p.bytes, c.data, len(v))
		}
		c.data = append(c.data, v...)
	}
}

func (b *buffer) appendPlain(c *colData, s string) {
	p := b.f.pools
	if cap(c.data)-len(c.data) < len(s) {
		c.data = grow(&p.bytes, c.data, len(s))
	}
	c.data = append(c.data, s...)
	if len(c.ends) == cap(c.ends) {
		c.ends = grow(&p.u32, c.ends, 1)
	}
	c.ends = append(c.ends, uint32(len(c.data)))
}

func absU64(x int64) uint64 {
	if x < 0 {
		return uint64(-x) // MinInt64 too: its magnitude as a uint64
	}
	return uint64(x)
}

// putBE writes d as 16 bytes of big-endian two's complement.
func putBE(dst []byte, d files.Dec128) {
	binary.BigEndian.PutUint64(dst[:8], uint64(d.Hi))
	binary.BigEndian.PutUint64(dst[8:16], d.Lo)
}

// dictProbeRows is the row count at which a chunk's dictionary must have proved itself.
const dictProbeRows = 4096

// Siblings' chunks are small (a partition's rows spread over the regions) and their verdict is
// shared: from earlyProbeRows rows on, a column of nearly distinct values (over 90% of the values
// so far) gives its dictionary up before dictProbeRows.
const earlyProbeRows = 1024

// appendDict appends a value's dictionary index, adding the value to the dictionary; when the
// dictionary grows past the limit the column switches to plain values for the rest of the chunk.
// missed tells that s was looked up in this dictionary since its last change and not found.
func (b *buffer) appendDict(i int, s string, missed bool) {
	c, d, p := &b.cols[i], b.dicts[i], b.f.pools
	if len(c.idx) == cap(c.idx) {
		c.idx = grow(&p.i32, c.idx, 1)
	}
	if !missed {
		if k, ok := d.find(s, c); ok {
			c.idx = append(c.idx, k)
			return
		}
	}
	// give up when the dictionary grows too large, or when the column looks mostly distinct
	// (more entries than half the values so far, from dictProbeRows rows on), or when a
	// sibling's chunks found the column not worth one. Distinctness counts values, not rows: a
	// column of distinct values null in half the rows has entries for half its rows.
	rows := len(c.idx)
	vals := rows - c.nulls
	giveUp := len(c.dvals)+len(s) > b.f.dictMax || d.len() >= 1<<15 || (rows >= dictProbeRows && 2*d.len() > vals) ||
		(b.verdicts.siblings && rows >= earlyProbeRows && 10*d.len() > 9*vals)
	if giveUp || b.verdicts.plain[i].Load() {
		if v := b.verdicts; giveUp && v.giveUps[i].Add(1) >= 2 {
			v.plain[i].Store(true)
		}
		b.toPlain(i)
		if sp := &b.specs[i]; sp.phys != physBytes {
			b.appendNumber(sp, c, unsafe.Slice(unsafe.StringData(s), len(s)))
			return
		}
		b.appendPlain(c, s)
		return
	}
	k := c.addEntry(s)
	d.insert(s)
	c.idx = append(c.idx, k)
}

// toPlain materializes the dictionary-encoded values of column i as plain values.
func (b *buffer) toPlain(i int) {
	c, p := &b.cols[i], b.f.pools
	if b.chunkRows > len(c.idx) {
		b.presizePlain(i, b.chunkRows)
	}
	nullable := b.specs[i].nullable
	for r, k := range c.idx {
		if nullable && c.def != nil && c.def[r] == 0 {
			continue
		}
		v := c.entry(k)
		if sp := &b.specs[i]; sp.phys != physBytes {
			b.appendNumber(sp, c, v)
			continue
		}
		b.appendPlain(c, unsafe.String(unsafe.SliceData(v), len(v)))
	}
	c.dictMode = false
	p.i32.put(c.idx)
	p.bytes.put(c.dvals)
	p.u32.put(c.dends)
	c.idx, c.dvals, c.dends = nil, nil, nil
	b.dicts[i].release()
}

// presize gives the column slices the capacity the last chunk needed (+1/8), from the pools,
// sparing regrowth.
func (b *buffer) presize() {
	p := b.f.pools
	n := b.lastRows + b.lastRows/8
	b.chunkRows = n
	for i := range b.cols {
		c, l := &b.cols[i], &b.last[i]
		if c.dictMode {
			c.idx = p.i32.get(n)
			continue
		}
		c.reserve(p, b.specs[i].phys, l.values+l.values/8, l.data+l.data/8)
	}
}

// ExpectChunk takes the size of the chunks the sink cuts, for the first chunk's presizeFirst.
func (b *buffer) ExpectChunk(rows int, used int64) { b.expectRows, b.expectUsed = rows, used }

// firstProbeRows and secondProbeRows are the rows of a buffer's first chunk at which
// presizeFirst sizes its columns: again once the columns not worth a dictionary gave it up (by
// dictProbeRows), which changes the bytes a row takes.
const firstProbeRows, secondProbeRows = 1024, 2 * dictProbeRows

// presizeFirst sizes the first chunk's column slices, from what its first rows used, for the
// rows the sink will cut it at (+1/8): grown by doubling instead, the first chunk of each region
// was copied once more, into fresh memory (7% of a migrate's CPU on the orders CSV). What the
// columns take then is what a later chunk's presize gives them anyway.
func (b *buffer) presizeFirst() {
	perRow := b.Used() / int64(b.rows)
	if perRow == 0 {
		return
	}
	// the cut of files.Sink.shouldCut: at expectUsed bytes, or at expectRows rows once an eighth
	// of them is used
	n := int(b.expectUsed / perRow)
	if b.expectRows > 0 {
		n = min(n, max(b.expectRows, int(b.expectUsed/8/perRow)))
	}
	if n <= b.rows || n+n/8 <= b.chunkRows {
		return
	}
	b.chunkRows = n + n/8
	scale := func(l int) int { return l * b.chunkRows / b.rows }
	p := b.f.pools
	for i := range b.cols {
		c := &b.cols[i]
		if c.def != nil {
			c.def = grow(&p.i16, c.def, b.chunkRows-len(c.def))
		}
		if c.dictMode {
			c.idx = grow(&p.i32, c.idx, b.chunkRows-len(c.idx))
			continue
		}
		lens := c.lens()
		c.reserve(p, b.specs[i].phys, scale(lens.values), scale(lens.data))
	}
}

// lens are the column's values and data bytes so far (plain form).
func (c *colData) lens() colLens {
	return colLens{values: max(len(c.i64), len(c.i32), len(c.bools), len(c.f32), len(c.f64), len(c.ends), len(c.idx)), data: len(c.data)}
}

// reserve gives the column's plain slices of a value kept as phys room for values values and
// data bytes in all (TEXT: its bytes; DECIMAL: its width bytes each), keeping what they hold.
func (c *colData) reserve(p *pools, phys physical, values, data int) {
	switch phys {
	case physBytes:
		c.data = grow(&p.bytes, c.data, data-len(c.data))
		c.ends = grow(&p.u32, c.ends, values-len(c.ends))
	case physInt64:
		c.i64 = grow(&p.i64, c.i64, values-len(c.i64))
	case physInt32:
		c.i32 = grow(&p.i32, c.i32, values-len(c.i32))
	case physBool:
		c.bools = grow(&p.bools, c.bools, values-len(c.bools))
	case physFloat32:
		c.f32 = grow(&p.f32, c.f32, values-len(c.f32))
	case physFloat64:
		c.f64 = grow(&p.f64, c.f64, values-len(c.f64))
	case physDecimal:
		c.data = grow(&p.bytes, c.data, data-len(c.data))
	}
}

// presizePlain gives column i, in dictionary mode, plain slices with room for n values, before
// toPlain moves it to them: the chunk's values, which would otherwise be grown from nothing.
func (b *buffer) presizePlain(i, n int) {
	c := &b.cols[i]
	avg := len(c.dvals)/max(len(c.dends), 1) + 1 // an entry's bytes (a decimal's: its width)
	c.reserve(b.f.pools, b.specs[i].phys, n, n*avg)
}

// colLens are the sizes a column needed in the last chunk.
type colLens struct{ values, data int }

type chunk struct {
	rows  int
	cols  []colData
	mem   int64
	pools *pools
}

func (c *chunk) Rows() int  { return c.rows }
func (c *chunk) Mem() int64 { return c.mem }

// Release recycles the chunk's memory. Call it only after the chunk's row group is written.
func (c *chunk) Release() {
	if c.pools != nil {
		for i := range c.cols {
			c.pools.release(&c.cols[i])
		}
	}
	c.cols, c.pools = nil, nil
}

// Cut detaches the buffered rows; the buffer starts over with empty slices (presized on the
// next Append) and fresh dictionaries.
func (b *buffer) Cut() files.Chunk {
	var mem int64 // the column slices move to the chunk; the dictionary tables stay
	for i := range b.cols {
		mem += b.cols[i].mem()
	}
	ch := &chunk{rows: b.rows, mem: mem, cols: b.cols, pools: b.f.pools}
	b.cols = make([]colData, len(b.specs))
	for i := range ch.cols {
		c := &ch.cols[i]
		b.last[i] = c.lens()
		if d := b.dicts[i]; d != nil {
			d.reset(16*d.mem() <= mem) // at most 1/16 of the chunk: worth keeping for the next
			if c.dictMode {
				b.verdicts.giveUps[i].Store(0)
			}
		}
	}
	b.startDicts()
	b.lastRows = b.rows
	b.rows, b.chunkRows = 0, 0
	return ch
}
