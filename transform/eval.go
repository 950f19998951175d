package transform

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform/murmur3"
)

// evalFn evaluates one compiled expression for a record. out holds the target columns computed
// so far (expressions read other target.columns entries from there).
type evalFn func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError)

// step computes one target column.
type step struct {
	dst   int
	src   int    // source index when fn is nil (a carried-over or bare key column)
	fn    evalFn // the column's expression
	kind  pipeline.Kind
	fast  bool // a value of kind needs no conversion or check
	typ   colType
	key   bool
	field string
	// inputs are the source columns a key column's expression reads (through other target
	// columns too): a null key then names the null source column that caused it.
	inputs []int
	// reads are the source columns the column reads, for every column (a copy reads its source
	// column): which target columns a partial record sets.
	reads []int
}

// Evaluator applies a Program to records. It is not safe for concurrent use: make one per
// goroutine with Program.NewEvaluator. Strings it produces live in its arena until Reset.
//
// Each goroutine's evaluator is written for every row, and evaluators are often allocated one
// after the other: the pads keep two of them off one cache line, which otherwise bounces between
// the cores (measured: a tenth of a report's time).
type Evaluator struct {
	_       cpu.CacheLinePad
	p       *Program
	a       arena
	scratch []byte
	saltBuf []byte
	batch   *pipeline.Batch
	salt    uint64
	saltOK  bool
	digests []digestMemo // per digest call site
	lanes   []*md5Lanes  // per digest call site that hashes a source column as it is (MD5 only)
	md5     *md5Scratch
	_       cpu.CacheLinePad
}

// digestMemo remembers a digest call site's last input and its digest. Rows often repeat the
// previous row's input: a Cassandra scan reads a partition's rows one after the other, and a
// hash prefix is usually a digest of the partition key.
type digestMemo struct {
	in  []byte
	sum [32]byte
	ok  bool
	// misses counts the lookups in a row that missed; past memoMisses the memo is left alone
	// (no comparison, no copy of the input) for memoRest rows, counted down in rest, and then
	// tried again: inputs that never repeat (a key of unique ids) cost only the digest
	misses, rest int32
}

// memoMisses and memoRest: the misses after which a memo rests, and for how many rows.
const memoMisses, memoRest = 64, 1024

// maxMemoInput bounds the inputs a memo keeps (longer ones are hashed every time).
const maxMemoInput = 128

// NewEvaluator returns an evaluator for one goroutine.
func (p *Program) NewEvaluator() *Evaluator {
	return &Evaluator{p: p, scratch: make([]byte, 0, 64), saltBuf: make([]byte, 0, 256),
		digests: make([]digestMemo, p.digests)}
}

// SampleRows applies the program to records (a sample) with a new evaluator and returns the
// target rows, detached from its arena; records that fail to decode or map are skipped.
func (p *Program) SampleRows(recs []pipeline.Record) [][]pipeline.Value {
	ev := p.NewEvaluator()
	ncol := len(p.Target().Columns)
	b := &pipeline.Batch{Stream: "sample"}
	out := make([][]pipeline.Value, 0, len(recs))
	for i := range recs {
		if recs[i].Err != nil {
			continue
		}
		row := make([]pipeline.Value, ncol)
		if ev.Apply(b, &recs[i], row) != nil {
			continue
		}
		for j := range row {
			row[j].Str = strings.Clone(row[j].Str)
		}
		out = append(out, row)
	}
	ev.Reset()
	return out
}

// Reset makes the arena reusable: strings returned by earlier Apply calls become invalid. The
// pipeline calls it after the sink consumed the batch.
func (e *Evaluator) Reset() { e.a.reset() }

// Apply computes the target row of r into out (len(out) == len(Target().Columns)), or says why
// the record is rejected: null_key, key_too_long, key_only_row, type, dict_miss or eval. Records
// with r.Err set must not be passed. Output strings may point into r's values or into the
// evaluator's arena (valid until Reset).
func (e *Evaluator) Apply(b *pipeline.Batch, r *pipeline.Record, out []pipeline.Value) *pipeline.RowError {
	if rerr := e.ApplyKey(b, r, out); rerr != nil {
		return rerr
	}
	if rerr := e.CheckValues(out); rerr != nil {
		return rerr
	}
	return e.keyOnlyRow(out)
}

// CheckValues rejects a row whose non-key value is longer than Lindorm stores (MaxValueBytes):
// its bulk load or upsert would fail. Apply and ApplyPartial check it; a caller of ApplyKey that
// writes the row's values (replicate's whole changes) calls it.
func (e *Evaluator) CheckValues(out []pipeline.Value) *pipeline.RowError {
	keyLen := e.p.target.KeyLen
	for i := range out[keyLen:] {
		// only texts, blobs and decimals have a Str; a decimal's is never this long
		if n := len(out[keyLen+i].Str); n > MaxValueBytes {
			return &pipeline.RowError{Code: pipeline.CodeValueTooLong, Field: e.p.target.Columns[keyLen+i].Name,
				Message: "the value is " + strconv.Itoa(n) + " bytes, Lindorm allows " + strconv.Itoa(MaxValueBytes) + " in a non-key column: keep such values elsewhere (an object store) with a reference in the row, or leave the column out (target.exclude)"}
		}
	}
	return nil
}

// keyOnlyRow rejects a row whose non-key values are all null: Lindorm "cannot write a row of
// data that contains only the primary key", so it would store nothing and the counts would not
// match. A target without non-key columns passes: it is refused as a whole (Program.KeyOnly) by
// migrate and check, rather than row by row.
func (e *Evaluator) keyOnlyRow(out []pipeline.Value) *pipeline.RowError {
	keyLen := e.p.target.KeyLen
	if keyLen == len(out) || !pipeline.AllNull(out[keyLen:]) {
		return nil
	}
	return &pipeline.RowError{Code: pipeline.CodeKeyOnlyRow, Field: e.p.target.Columns[0].Name,
		Message: "every non-key column is null: Lindorm cannot write a row that contains only the primary key"}
}

// ApplyKey is Apply without the key-only row check: for records whose non-key values may well
// all be null (a delete, the before image of an update, a change that nulls every cell).
func (e *Evaluator) ApplyKey(b *pipeline.Batch, r *pipeline.Record, out []pipeline.Value) *pipeline.RowError {
	p := e.p
	if len(out) != len(p.target.Columns) {
		panic("transform: Apply: out has " + strconv.Itoa(len(out)) + " values, the target schema " + strconv.Itoa(len(p.target.Columns)))
	}
	if r.Set != nil {
		return &pipeline.RowError{Code: pipeline.CodePartialUpdate, Message: "the change sets some columns only: a whole row would null the others"}
	}
	if len(r.Values) < len(p.source) {
		return &pipeline.RowError{Code: pipeline.CodeParse, Message: "the record has " + strconv.Itoa(len(r.Values)) +
			" values, the source schema " + strconv.Itoa(len(p.source))}
	}
	e.batch, e.saltOK = b, false
	// locals: the steps' calls could change what e.p and r point to, so fields would be
	// loaded again on every step
	steps, values := p.steps, r.Values
	for i := range steps[:p.copyFrom] {
		st := &steps[i]
		var v pipeline.Value
		if st.fn == nil {
			v = values[st.src]
		} else {
			var rerr *pipeline.RowError
			if v, rerr = st.fn(e, r, out); rerr != nil {
				if rerr.Field == "" {
					rerr.Field = st.field
				}
				return rerr
			}
		}
		if v.Kind == st.kind && st.fast {
			out[st.dst] = v
			continue
		}
		if rerr := e.settle(st, v, r, out); rerr != nil {
			return rerr
		}
	}
	for i, cp := range p.copies {
		// a null is as common as a value in a sparse table's columns: copied here too, without
		// the general step's call
		if v := &values[cp.src]; v.Kind == cp.kind || v.Kind == pipeline.KindNull && cp.null {
			out[cp.dst] = *v
			continue
		}
		if rerr := e.settle(&steps[p.copyFrom+i], values[cp.src], r, out); rerr != nil {
			return rerr
		}
	}
	if n := p.KeyBytes(out); n > MaxKeyBytes {
		return &pipeline.RowError{Code: pipeline.CodeKeyTooLong, Field: p.target.Columns[0].Name,
			Message: "the encoded primary key is " + strconv.Itoa(n) + " bytes, Lindorm allows " + strconv.Itoa(MaxKeyBytes)}
	}
	return nil
}

// settle stores step st's value v into out when it is not of the column's kind or the column's
// type needs a check: converted to the type, a null refused in a key column.
func (e *Evaluator) settle(st *step, v pipeline.Value, r *pipeline.Record, out []pipeline.Value) *pipeline.RowError {
	if v.Kind != st.kind || !st.fast {
		if v.Kind == pipeline.KindNull {
			if st.key {
				return e.nullKey(st, r)
			}
		} else {
			var rerr *pipeline.RowError
			if v, rerr = e.convert(v, st.typ); rerr != nil {
				rerr.Field = st.field
				return rerr
			}
		}
	}
	out[st.dst] = v
	return nil
}

// CellTimes fills times (one per target column) with the write time of each non-key column's
// cell, in epoch milliseconds: the newest write time of the source cells it is computed from
// (r.Times), 0 for key columns and where the record carries none. The newest, because a value
// computed from several cells is as new as its latest input.
func (e *Evaluator) CellTimes(r *pipeline.Record, times []int64) {
	clear(times)
	if r.Times == nil {
		return
	}
	for i := range e.p.steps {
		st := &e.p.steps[i]
		if st.key {
			continue
		}
		var t int64
		for _, c := range st.reads {
			t = max(t, r.Times[c])
		}
		times[st.dst] = t
	}
}

// ApplyPartial computes the target row of a partial record (r.Set not nil) into out, and which
// target columns it sets into set (len(set) == len(out)): a column is set when every source
// column it reads is set, unset (left null, and left as it is in the table) when none is. A key
// column that reads an unset column is refused (unset_key), as is a column reading both set and
// unset columns (unset_input): neither can be computed from the cells the change carries.
func (e *Evaluator) ApplyPartial(b *pipeline.Batch, r *pipeline.Record, out []pipeline.Value, set []bool) *pipeline.RowError {
	p := e.p
	if len(r.Set) < len(p.source) || len(set) != len(p.target.Columns) {
		panic("transform: ApplyPartial: the set masks do not fit the schemas")
	}
	if p.saltUsed {
		return &pipeline.RowError{Code: pipeline.CodeUnsetKey, Field: p.target.Columns[0].Name,
			Message: "the key uses random(n), whose salt hashes the whole row: a change that sets some columns only cannot give the row's key"}
	}
	full := &pipeline.Record{Values: r.Values, Seq: r.Seq, Raw: r.Raw}
	for i := range 2 * len(p.steps) {
		// key columns first: an unset key refuses the change whatever its other columns
		st := &p.steps[i%len(p.steps)]
		if st.key != (i < len(p.steps)) {
			continue
		}
		var unset []string
		for _, c := range st.reads {
			if !r.Set[c] {
				unset = append(unset, p.source[c].Name)
			}
		}
		switch {
		case len(unset) == 0:
			set[st.dst] = true
		case st.key:
			return &pipeline.RowError{Code: pipeline.CodeUnsetKey, Field: unset[0], Message: "key column " + st.field +
				" is computed from " + strings.Join(unset, ", ") + ", which this change does not set (it sets some columns only): the row's key cannot be computed"}
		case len(unset) < len(st.reads):
			return &pipeline.RowError{Code: pipeline.CodeUnsetInput, Field: unset[0], Message: "column " + st.field +
				" is computed from columns this change sets and from " + strings.Join(unset, ", ") + ", which it does not set: its new value cannot be computed"}
		default:
			set[st.dst] = false
		}
	}
	// the unset columns' values are null in the record: their results are computed and dropped
	if rerr := e.ApplyKey(b, full, out); rerr != nil {
		return rerr
	}
	for i, ok := range set {
		if !ok {
			out[i] = pipeline.Null
		}
	}
	return e.CheckValues(out)
}

// nullKey explains a null key column by the null source columns it is computed from.
func (e *Evaluator) nullKey(st *step, r *pipeline.Record) *pipeline.RowError {
	var null []string
	for _, i := range st.inputs {
		if r.Values[i].IsNull() {
			null = append(null, e.p.source[i].Name)
		}
	}
	msg := "key column " + st.field + " is null"
	switch {
	case len(null) == 1:
		return &pipeline.RowError{Code: pipeline.CodeNullKey, Field: null[0], Message: msg + ": it is computed from source column " + null[0] + ", which is null (missing) in this row"}
	case len(null) > 1:
		return &pipeline.RowError{Code: pipeline.CodeNullKey, Field: null[0], Message: msg + ": it is computed from source columns " + strings.Join(null, ", ") + ", which are null (missing) in this row"}
	}
	return &pipeline.RowError{Code: pipeline.CodeNullKey, Field: st.field, Message: msg}
}

// ---- arena ----

const arenaChunk = 64 << 10

// arena hands out strings carved from reusable chunks. A chunk is never reallocated once strings
// point into it; Reset recycles all chunks.
type arena struct {
	buf  []byte
	used [][]byte
	free [][]byte
}

func (a *arena) reserve(n int) {
	if cap(a.buf)-len(a.buf) < n {
		a.grow(n)
	}
}

func (a *arena) grow(n int) {
	if a.buf != nil {
		a.used = append(a.used, a.buf)
	}
	for i := len(a.free) - 1; i >= 0; i-- {
		if cap(a.free[i]) >= n {
			a.buf = a.free[i][:0]
			a.free[i] = a.free[len(a.free)-1]
			a.free = a.free[:len(a.free)-1]
			return
		}
	}
	size := arenaChunk
	if n > size {
		size = n
	}
	a.buf = make([]byte, 0, size)
}

func (a *arena) reset() {
	for _, c := range a.used {
		a.free = append(a.free, c[:0])
	}
	a.used = a.used[:0]
	if a.buf != nil {
		a.buf = a.buf[:0]
	}
}

// atEnd tells whether v is a string kind whose text ends the arena's current chunk: appending to
// the chunk then extends it in place.
func (a *arena) atEnd(v pipeline.Value) bool {
	n := len(v.Str)
	return n > 0 && n <= len(a.buf) && isStringKind(v.Kind) && unsafe.StringData(v.Str) == &a.buf[len(a.buf)-n]
}

// since returns the bytes appended after start as a string sharing the arena's memory.
func (a *arena) since(start int) string {
	n := len(a.buf) - start
	if n == 0 {
		return ""
	}
	return unsafe.String(&a.buf[start], n)
}

// ---- helpers ----

func isStringKind(k pipeline.Kind) bool {
	return k == pipeline.KindText || k == pipeline.KindBytes || k == pipeline.KindDecimal
}

// canon returns the canonical bytes of v without allocating: string kinds are viewed in place,
// others are formatted into the evaluator's scratch buffer (valid until the next canon call).
func (e *Evaluator) canon(v pipeline.Value) []byte {
	if isStringKind(v.Kind) {
		return unsafe.Slice(unsafe.StringData(v.Str), len(v.Str))
	}
	e.scratch = v.AppendCanonical(e.scratch[:0])
	return e.scratch
}

// canonString is the canonical form as a string; non-string kinds are formatted into the arena.
func (e *Evaluator) canonString(v pipeline.Value) string {
	if isStringKind(v.Kind) {
		return v.Str
	}
	e.a.reserve(32)
	start := len(e.a.buf)
	e.a.buf = v.AppendCanonical(e.a.buf)
	return e.a.since(start)
}

const hexDigits = "0123456789abcdef"

func evalErr(msg string) *pipeline.RowError {
	return &pipeline.RowError{Code: pipeline.CodeEval, Message: msg}
}

func typeErr(msg string) *pipeline.RowError {
	return &pipeline.RowError{Code: pipeline.CodeType, Message: msg}
}

// blobText checks text s made from a blob's raw bytes (blob: the input was one): a VARCHAR must
// be UTF-8, or the Parquet file that holds it cannot be read. Text values are UTF-8 already (the
// sources reject anything else) and every function keeps them so, so only blobs are checked.
func blobText(what string, blob bool, s string) *pipeline.RowError {
	if !blob {
		return nil
	}
	i := pipeline.InvalidUTF8At(s)
	if i < 0 {
		return nil
	}
	return &pipeline.RowError{Code: pipeline.CodeEncoding, Message: what + ": the blob is not UTF-8 text (invalid byte 0x" +
		strconv.FormatUint(uint64(s[i]), 16) + " at byte " + strconv.Itoa(i) + ") and a VARCHAR must be UTF-8: keep the blob in a VARBINARY column, or hash it (md5(x))"}
}

// siteSum returns the digest of v at call site slot (valid until the site's next call): from the
// site's lanes when it hashes source column src (>= 0) of r as it is with MD5, else through its
// memo.
func (e *Evaluator) siteSum(slot int, o op, src int, r *pipeline.Record, v pipeline.Value) *[32]byte {
	if src >= 0 {
		if sum, ok := e.laneSum(slot, src, r, v); ok {
			return sum
		}
	}
	return e.digestSum(slot, o, e.canon(v))
}

// laneSource is the source column a digest call site may compute ahead in lanes (MD5 of a
// source column as it is), or -1.
func laneSource(o op, arg *texpr) int {
	if o == opMD5 && arg.op == opSrc {
		return arg.idx
	}
	return -1
}

// digestSum returns the digest of b through the memo of call site slot (valid until its next
// call).
func (e *Evaluator) digestSum(slot int, o op, b []byte) *[32]byte {
	m := &e.digests[slot]
	if m.rest > 0 {
		m.rest--
		m.sum, m.ok = digest(o, b), false
		return &m.sum
	}
	if m.ok && string(m.in) == string(b) {
		m.misses = 0
		return &m.sum
	}
	if m.misses++; m.misses > memoMisses {
		m.misses, m.rest = 0, memoRest
	}
	m.sum = digest(o, b)
	m.ok = len(b) <= maxMemoInput
	if m.ok {
		m.in = append(m.in[:0], b...)
	}
	return &m.sum
}

// appendHex appends characters [from, to) of the lowercase hex form of sum to dst, straight from
// the digest's bytes: a hash prefix is a few characters, written without a buffer of them all.
func appendHex(dst []byte, sum *[32]byte, from, to int) []byte {
	for k := from; k < to; k++ {
		c := sum[(k>>1)&31]
		if k&1 == 0 {
			c >>= 4
		}
		dst = append(dst, hexDigits[c&15])
	}
	return dst
}

func digest(o op, b []byte) (sum [32]byte) {
	switch o {
	case opMD5:
		var s [16]byte
		if len(b) <= md5ShortMax {
			s = md5Short(b)
		} else {
			s = md5.Sum(b)
		}
		copy(sum[:], s[:])
	case opSHA1:
		s := sha1.Sum(b)
		copy(sum[:], s[:])
	default:
		sum = sha256.Sum256(b)
	}
	return sum
}

// asInt reads an integer operand: integers as they are; text and decimals parsed (a varint out of
// the int64 range fails).
func asInt(v pipeline.Value, what string) (int64, *pipeline.RowError) {
	switch v.Kind {
	case pipeline.KindInt:
		return v.Num, nil
	case pipeline.KindText, pipeline.KindDecimal:
		i, err := strconv.ParseInt(v.Str, 10, 64)
		if err != nil {
			return 0, typeErr(what + ": " + strconv.Quote(v.Str) + " is not a 64-bit integer")
		}
		return i, nil
	}
	return 0, typeErr(what + ": a " + v.Kind.String() + " value is not an integer")
}

// substrBounds finds the byte offsets of characters [begin, end) of s with Java's rules: an index
// out of range is an error (Java throws). Characters are Unicode code points (Java counts UTF-16
// units, which differs only for characters outside the BMP, such as emoji).
func substrBounds(s string, begin, end int64, hasEnd bool) (int, int, string) {
	if begin < 0 {
		return 0, 0, "begin index " + strconv.FormatInt(begin, 10) + " is negative"
	}
	if hasEnd && end < begin {
		return 0, 0, "end index " + strconv.FormatInt(end, 10) + " is before begin index " + strconv.FormatInt(begin, 10)
	}
	// ASCII fast path
	if hasEnd && end <= int64(len(s)) {
		ascii := true
		for i := 0; i < int(end); i++ {
			if s[i] >= utf8.RuneSelf {
				ascii = false
				break
			}
		}
		if ascii {
			return int(begin), int(end), ""
		}
	}
	var idx int64
	bi, bstart, bend := 0, -1, -1
	for {
		if idx == begin {
			bstart = bi
		}
		if hasEnd && idx == end {
			bend = bi
			break
		}
		if bi >= len(s) {
			break
		}
		if s[bi] < utf8.RuneSelf {
			bi++
		} else {
			_, w := utf8.DecodeRuneInString(s[bi:])
			bi += w
		}
		idx++
	}
	if !hasEnd {
		bend = len(s)
		if bstart < 0 {
			return 0, 0, "begin index " + strconv.FormatInt(begin, 10) + " is beyond the " + strconv.FormatInt(idx, 10) + " characters of the value"
		}
		return bstart, bend, ""
	}
	if bend < 0 {
		return 0, 0, "end index " + strconv.FormatInt(end, 10) + " is beyond the " + strconv.FormatInt(idx, 10) + " characters of the value"
	}
	return bstart, bend, ""
}

// ---- building closures ----

func (p *Program) build(t *texpr) evalFn {
	switch t.op {
	case opLit:
		v := t.lit
		return func(*Evaluator, *pipeline.Record, []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
			return v, nil
		}
	case opSrc:
		i := t.idx
		return func(_ *Evaluator, r *pipeline.Record, _ []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
			return r.Values[i], nil
		}
	case opTgt:
		i := t.idx
		return func(_ *Evaluator, _ *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
			return out[i], nil
		}
	case opMD5, opSHA1, opSHA256:
		return p.buildDigest(t)
	case opCRC32:
		x := p.build(t.args[0])
		return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
			v, err := x(e, r, out)
			if err != nil || v.Kind == pipeline.KindNull {
				return v, err
			}
			return pipeline.Int(int64(crc32.ChecksumIEEE(e.canon(v)))), nil
		}
	case opMurmur3:
		x := p.build(t.args[0])
		return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
			v, err := x(e, r, out)
			if err != nil || v.Kind == pipeline.KindNull {
				return v, err
			}
			return pipeline.Int(murmur3.Token(e.canon(v))), nil
		}
	case opSubstr:
		return p.buildSubstr(t)
	case opReverse:
		return p.buildReverse(t)
	case opConcat:
		return p.buildConcat(t)
	case opAdd, opMul, opDiv, opMod:
		return p.buildArith(t)
	case opLong, opInt:
		return p.buildInteger(t)
	case opStr:
		return p.buildStr(t)
	case opCode:
		return p.buildCode(t)
	case opRandom:
		n, _ := t.args[0].isConstInt()
		un := uint64(n)
		return func(e *Evaluator, r *pipeline.Record, _ []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
			return pipeline.Int(int64(e.recordSalt(r) % un)), nil
		}
	case opCast:
		x := p.build(t.args[0])
		to := t.typ
		// a DATE counts days, a TIMESTAMP milliseconds: between them the unit changes (the
		// date's midnight, the date an instant falls on, both UTC), never just the type
		switch from := t.args[0].typ.T; {
		case from == pipeline.TypeDate && to.T == pipeline.TypeTimestamp:
			return unitCast(x, to, func(_ *Evaluator, days int64) (pipeline.Value, *pipeline.RowError) {
				if days < math.MinInt32 || days > math.MaxInt32 {
					return pipeline.Int(days), typeErr(strconv.FormatInt(days, 10) + " days is out of the DATE range")
				}
				return pipeline.Int(days * msPerDay), nil
			})
		case from == pipeline.TypeTimestamp && to.T == pipeline.TypeDate:
			return unitCast(x, to, func(e *Evaluator, ms int64) (pipeline.Value, *pipeline.RowError) {
				d := ms / msPerDay
				if ms%msPerDay < 0 {
					d-- // before 1970: the day that holds the instant, not the next one
				}
				return e.convert(pipeline.Int(d), to) // within the DATE range
			})
		}
		return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
			v, err := x(e, r, out)
			if err != nil || v.Kind == pipeline.KindNull {
				return v, err
			}
			return e.convert(v, to)
		}
	}
	panic("transform: unknown op " + strconv.Itoa(int(t.op)))
}

// msPerDay converts between DATE (days since 1970-01-01) and TIMESTAMP (epoch milliseconds).
const msPerDay = 86_400_000

// buildReverse is reverse(x): the text of x, character by character from its end.
func (p *Program) buildReverse(t *texpr) evalFn {
	x := p.build(t.args[0])
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		v, err := x(e, r, out)
		if err != nil || v.Kind == pipeline.KindNull {
			return v, err
		}
		s := e.canonString(v)
		if rerr := blobText("reverse(x)", v.Kind == pipeline.KindBytes, s); rerr != nil {
			return v, rerr
		}
		e.a.reserve(len(s))
		start := len(e.a.buf)
		for end := len(s); end > 0; {
			if c := s[end-1]; c < utf8.RuneSelf {
				e.a.buf = append(e.a.buf, c)
				end--
				continue
			}
			_, w := utf8.DecodeLastRuneInString(s[:end])
			e.a.buf = append(e.a.buf, s[end-w:end]...)
			end -= w
		}
		return pipeline.Text(e.a.since(start)), nil
	}
}

// buildConcat is operator +: the texts of its operands one after the other.
func (p *Program) buildConcat(t *texpr) evalFn {
	l, rt := p.build(t.args[0]), p.build(t.args[1])
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		a, err := l(e, r, out)
		if err != nil || a.Kind == pipeline.KindNull {
			return a, err
		}
		b, err := rt(e, r, out)
		if err != nil || b.Kind == pipeline.KindNull {
			return b, err
		}
		var start int
		if e.a.atEnd(a) && cap(e.a.buf)-len(e.a.buf) >= len(b.Str)+64 {
			// a is the arena's last string (a hash prefix just computed): b goes after it
			start = len(e.a.buf) - len(a.Str)
		} else {
			e.a.reserve(len(a.Str) + len(b.Str) + 64)
			start = len(e.a.buf)
			e.a.buf = a.AppendCanonical(e.a.buf)
		}
		e.a.buf = b.AppendCanonical(e.a.buf)
		s := e.a.since(start)
		if rerr := blobText("operator +", a.Kind == pipeline.KindBytes || b.Kind == pipeline.KindBytes, s); rerr != nil {
			return a, rerr
		}
		return pipeline.Text(s), nil
	}
}

// buildInteger is long(x) and int(x): x as an integer (of 32 bits for int), text parsed.
func (p *Program) buildInteger(t *texpr) evalFn {
	x := p.build(t.args[0])
	isInt := t.op == opInt
	name := opNames[t.op]
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		v, err := x(e, r, out)
		if err != nil || v.Kind == pipeline.KindNull {
			return v, err
		}
		i := v.Num
		if v.Kind != pipeline.KindInt {
			if !isStringKind(v.Kind) {
				return v, evalErr(name + "(x): a " + v.Kind.String() + " value is not an integer")
			}
			var perr error
			if i, perr = strconv.ParseInt(v.Str, 10, 64); perr != nil {
				return v, evalErr(name + "(" + strconv.Quote(v.Str) + "): not a 64-bit integer")
			}
		}
		if isInt && (i < math.MinInt32 || i > math.MaxInt32) {
			return v, evalErr("int(x): " + strconv.FormatInt(i, 10) + " is out of the 32-bit range")
		}
		return pipeline.Int(i), nil
	}
}

// buildStr is str(x): the text of x.
func (p *Program) buildStr(t *texpr) evalFn {
	x := p.build(t.args[0])
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		v, err := x(e, r, out)
		if err != nil || v.Kind == pipeline.KindNull || v.Kind == pipeline.KindText {
			return v, err
		}
		s := e.canonString(v)
		if rerr := blobText("str(x)", v.Kind == pipeline.KindBytes, s); rerr != nil {
			return v, rerr
		}
		return pipeline.Text(s), nil
	}
}

func (p *Program) buildDigest(t *texpr) evalFn {
	x := p.build(t.args[0])
	o := t.op
	slot := p.digests
	p.digests++
	src := laneSource(o, t.args[0])
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		v, err := x(e, r, out)
		if err != nil || v.Kind == pipeline.KindNull {
			return v, err
		}
		n := digestLen(o)
		sum := e.siteSum(slot, o, src, r, v)
		e.a.reserve(n)
		start := len(e.a.buf)
		e.a.buf = appendHex(e.a.buf, sum, 0, n)
		return pipeline.Text(e.a.since(start)), nil
	}
}

func (p *Program) buildSubstr(t *texpr) evalFn {
	a, aConst := t.args[1].isConstInt()
	hasEnd := len(t.args) == 3
	var b int64
	bConst := true
	if hasEnd {
		b, bConst = t.args[2].isConstInt()
	}
	name := "substr(" + t.args[1].String()
	if hasEnd {
		name += ", " + t.args[2].String()
	}
	name += ")"
	// digest(x).substr(a, b) with constant bounds inside the digest: only the slice's hex
	// characters are written.
	if d := t.args[0]; aConst && bConst && hasEnd && (d.op == opMD5 || d.op == opSHA1 || d.op == opSHA256) && b <= int64(digestLen(d.op)) {
		x := p.build(d.args[0])
		o := d.op
		ai, bi := int(a), int(b)
		slot := p.digests
		p.digests++
		src := laneSource(o, d.args[0])
		return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
			v, err := x(e, r, out)
			if err != nil || v.Kind == pipeline.KindNull {
				return v, err
			}
			sum := e.siteSum(slot, o, src, r, v)
			e.a.reserve(bi - ai)
			start := len(e.a.buf)
			e.a.buf = appendHex(e.a.buf, sum, ai, bi)
			return pipeline.Text(e.a.since(start)), nil
		}
	}
	x := p.build(t.args[0])
	var af, bf evalFn
	if !aConst {
		af = p.build(t.args[1])
	}
	if hasEnd && !bConst {
		bf = p.build(t.args[2])
	}
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		v, err := x(e, r, out)
		if err != nil || v.Kind == pipeline.KindNull {
			return v, err
		}
		begin, end := a, b
		if af != nil {
			iv, err := af(e, r, out)
			if err != nil || iv.Kind == pipeline.KindNull {
				return iv, err
			}
			if begin, err = asInt(iv, name); err != nil {
				return v, err
			}
		}
		if bf != nil {
			iv, err := bf(e, r, out)
			if err != nil || iv.Kind == pipeline.KindNull {
				return iv, err
			}
			if end, err = asInt(iv, name); err != nil {
				return v, err
			}
		}
		s := e.canonString(v)
		i, j, msg := substrBounds(s, begin, end, hasEnd)
		if msg != "" {
			return v, evalErr(name + ": " + msg + " (" + strconv.Quote(truncate(s, 64)) + ")")
		}
		if rerr := blobText(name, v.Kind == pipeline.KindBytes, s[i:j]); rerr != nil {
			return v, rerr
		}
		return pipeline.Text(s[i:j]), nil
	}
}

// truncate cuts s to at most n bytes for a message, at the start of a character (a blob's bytes
// that are not UTF-8 are cut where they are).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for k := n; k > 0 && k > n-utf8.UTFMax; k-- {
		if utf8.RuneStart(s[k]) {
			return s[:k] + "..."
		}
	}
	return s[:n] + "..."
}

func digestLen(o op) int {
	switch o {
	case opMD5:
		return 32
	case opSHA1:
		return 40
	}
	return 64
}

func (p *Program) buildArith(t *texpr) evalFn {
	l, rt := p.build(t.args[0]), p.build(t.args[1])
	o := t.op
	sym := map[op]string{opAdd: "+", opMul: "*", opDiv: "/", opMod: "%"}[o]
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		av, err := l(e, r, out)
		if err != nil || av.Kind == pipeline.KindNull {
			return av, err
		}
		bv, err := rt(e, r, out)
		if err != nil || bv.Kind == pipeline.KindNull {
			return bv, err
		}
		a, b := av.Num, bv.Num
		if av.Kind != pipeline.KindInt {
			if a, err = asInt(av, "operator "+sym); err != nil {
				return av, err
			}
		}
		if bv.Kind != pipeline.KindInt {
			if b, err = asInt(bv, "operator "+sym); err != nil {
				return bv, err
			}
		}
		switch o {
		case opAdd:
			s := a + b
			if (s > a) != (b > 0) {
				return av, evalErr("integer overflow in " + strconv.FormatInt(a, 10) + " + " + strconv.FormatInt(b, 10))
			}
			return pipeline.Int(s), nil
		case opMul:
			hi, lo := bits.Mul64(uint64(abs64(a)), uint64(abs64(b)))
			neg := (a < 0) != (b < 0)
			if hi != 0 || lo > math.MaxInt64 && !(neg && lo == 1<<63) || a == math.MinInt64 && b != 1 && b != 0 || b == math.MinInt64 && a != 1 && a != 0 {
				return av, evalErr("integer overflow in " + strconv.FormatInt(a, 10) + " * " + strconv.FormatInt(b, 10))
			}
			return pipeline.Int(a * b), nil
		case opDiv:
			if b == 0 {
				return av, evalErr("division by zero")
			}
			if a == math.MinInt64 && b == -1 {
				return av, evalErr("integer overflow in " + strconv.FormatInt(a, 10) + " / -1")
			}
			q := a / b
			if (a%b != 0) && ((a < 0) != (b < 0)) {
				q--
			}
			return pipeline.Int(q), nil
		default:
			if b == 0 {
				return av, evalErr("modulo by zero")
			}
			if b == math.MinInt64 {
				if a < 0 && a != math.MinInt64 {
					// |b| does not fit; a + |b| = a - MinInt64
					return pipeline.Int(a - math.MinInt64), nil
				}
				if a == math.MinInt64 {
					return pipeline.Int(0), nil
				}
				return pipeline.Int(a), nil
			}
			if b < 0 {
				b = -b
			}
			m := a % b
			if m < 0 {
				m += b
			}
			return pipeline.Int(m), nil
		}
	}
}

func abs64(a int64) int64 {
	if a < 0 {
		return -a // MinInt64 stays MinInt64, handled by the caller
	}
	return a
}

func (p *Program) buildCode(t *texpr) evalFn {
	x := p.build(t.args[0])
	d := t.dict
	keep := p.keepMissing
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		v, err := x(e, r, out)
		if err != nil || v.Kind == pipeline.KindNull {
			return v, err
		}
		var k string
		if isStringKind(v.Kind) {
			k = v.Str
		} else {
			b := e.canon(v)
			k = unsafe.String(unsafe.SliceData(b), len(b))
		}
		if to, ok := d.lookup(k); ok {
			return pipeline.Text(to), nil
		}
		if keep {
			of, ok := d.codeOf[k]
			if !ok {
				return v, nil
			}
			// kept, the value would read as (and key the same row as) the value it is the code of
			return v, &pipeline.RowError{Code: pipeline.CodeDictMiss,
				Message: "value " + strconv.Quote(truncate(k, 200)) + " is not in dictionary " + strconv.Quote(d.name) + " but is the code of " +
					strconv.Quote(truncate(of, 200)) + ": kept as it is (target.on_missing_code: keep) it would be that value, two source values one; add it to the dictionary"}
		}
		return v, &pipeline.RowError{Code: pipeline.CodeDictMiss,
			Message: "value " + strconv.Quote(truncate(k, 200)) + " is not in dictionary " + strconv.Quote(d.name) + " (target.on_missing_code: reject)"}
	}
}

// recordSalt is the record's salt hash, computed once per Apply. See README.md "random(n)".
func (e *Evaluator) recordSalt(r *pipeline.Record) uint64 {
	if e.saltOK {
		return e.salt
	}
	e.salt, e.saltBuf = SaltToken(e.saltBuf, e.batch, r, e.p.saltOrder)
	e.saltOK = true
	return e.salt
}

// SaltToken is the hash random(n) takes modulo n for record r of batch b (nil: no origin): a
// Murmur3 token of its source values in the order of order, Program.SaltOrder (kind, then the
// integer or the length-prefixed bytes; an index beyond the record is left out) and, when the
// batch sets SaltOrigin, its stream and Seq. buf is scratch space, returned for reuse. The report
// recomputes salts with it, so both always agree.
func SaltToken(buf []byte, b *pipeline.Batch, r *pipeline.Record, order []int) (uint64, []byte) {
	buf = buf[:0]
	for _, i := range order {
		if i >= len(r.Values) {
			continue
		}
		v := r.Values[i]
		buf = append(buf, byte(v.Kind))
		switch v.Kind {
		case pipeline.KindNull:
		case pipeline.KindInt, pipeline.KindFloat, pipeline.KindBool:
			buf = binary.BigEndian.AppendUint64(buf, uint64(v.Num))
		default:
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(v.Str)))
			buf = append(buf, v.Str...)
		}
	}
	if b != nil && b.SaltOrigin {
		buf = append(buf, 0xff)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(b.Stream)))
		buf = append(buf, b.Stream...)
		buf = binary.BigEndian.AppendUint64(buf, uint64(r.Seq))
	}
	return uint64(murmur3.Token(buf)), buf
}

// unitCast is a cast between DATE and TIMESTAMP: an integer (days, milliseconds) goes through
// conv; a null stays null, and any other value is converted as by any cast.
func unitCast(x evalFn, to colType, conv func(e *Evaluator, n int64) (pipeline.Value, *pipeline.RowError)) evalFn {
	return func(e *Evaluator, r *pipeline.Record, out []pipeline.Value) (pipeline.Value, *pipeline.RowError) {
		v, err := x(e, r, out)
		if err != nil || v.Kind == pipeline.KindNull {
			return v, err
		}
		if v.Kind != pipeline.KindInt {
			return e.convert(v, to)
		}
		return conv(e, v.Num)
	}
}
