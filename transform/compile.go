package transform

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
)

// MaxKeyColumns is Lindorm's limit on primary-key columns.
const MaxKeyColumns = 5

// MaxKeyBytes is the longest encoded primary key Apply accepts. Lindorm's quotas-and-limits page
// (alibabacloud.com/help/en/lindorm/latest/quotas-and-limits) limits the TOTAL length of all
// primary-key values to 2 KB; the design guides' "each column within 2 KB" is a recommendation
// the total already implies.
const MaxKeyBytes = 2048

// MaxValueBytes is the longest non-key value Apply accepts: the same page limits a non-primary
// key column's value to 2 MB (read as MiB, as the key's 2 KB is read as 2,048 bytes).
const MaxValueBytes = 2 << 20

type op uint8

const (
	opLit op = iota
	opSrc
	opTgt
	opMD5
	opSHA1
	opSHA256
	opCRC32
	opMurmur3
	opSubstr
	opReverse
	opConcat
	opAdd
	opMul
	opDiv
	opMod
	opLong
	opInt
	opStr
	opCode
	opRandom
	opCast
)

// texpr is a resolved, typed expression.
type texpr struct {
	op    op
	typ   colType
	lit   pipeline.Value // opLit
	isVar bool           // opLit from vars:
	name  string         // opSrc/opTgt column name, opLit var name
	idx   int            // opSrc: source index; opTgt: target index
	args  []*texpr
	dict  *dictionary // opCode
}

func (t *texpr) isConstInt() (int64, bool) {
	if t.op == opLit && t.lit.Kind == pipeline.KindInt {
		return t.lit.Num, true
	}
	return 0, false
}

type fnSpec struct {
	op       op
	min, max int
	usage    string
}

var functions = map[string]fnSpec{
	"md5":       {opMD5, 1, 1, "md5(x)"},
	"hash":      {opMD5, 1, 1, "hash(x)"},
	"sha1":      {opSHA1, 1, 1, "sha1(x)"},
	"sha256":    {opSHA256, 1, 1, "sha256(x)"},
	"crc32":     {opCRC32, 1, 1, "crc32(x)"},
	"murmur3":   {opMurmur3, 1, 1, "murmur3(x)"},
	"substr":    {opSubstr, 2, 3, "x.substr(begin[, end])"},
	"substring": {opSubstr, 2, 3, "x.substring(begin[, end])"},
	"reverse":   {opReverse, 1, 1, "reverse(x)"},
	"long":      {opLong, 1, 1, "long(x)"},
	"int":       {opInt, 1, 1, "int(x)"},
	"str":       {opStr, 1, 1, "str(x)"},
	"code":      {opCode, 2, 2, "code(x, dictionary)"},
	"random":    {opRandom, 1, 1, "random(n)"},
}

// fnList is the function names in order; fnNames the same, as text.
var fnList = func() []string {
	var n []string
	for k := range functions {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}()

var fnNames = strings.Join(fnList, ", ")

// canonical function names for printing
var opNames = map[op]string{opMD5: "md5", opSHA1: "sha1", opSHA256: "sha256", opCRC32: "crc32",
	opMurmur3: "murmur3", opSubstr: "substr", opReverse: "reverse", opLong: "long", opInt: "int",
	opStr: "str", opCode: "code", opRandom: "random"}

// dictionary is a compiled target.codes entry: sorted keys for lookups without maps.
type dictionary struct {
	name string
	keys []string
	vals []string
	tags []uint32 // len<<8 | first byte, to skip most comparisons in small dictionaries
	// words are the keys of up to 8 bytes as shortWord gives them: with the length in the tag,
	// a key compared without a call (codes, statuses, channel names)
	words []uint64
	// codeOf maps each code to a key that has it: a value kept by on_missing_code: keep must not
	// be one, or it would be that key once written
	codeOf map[string]string
}

// le32s is the four bytes of s at i, read in place.
func le32s(s string, i int) uint32 {
	return binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(s[i:]), 4))
}

// shortWord packs a string of up to 8 bytes into a word that, with its length, is the string:
// two overlapping 4-byte loads from 4 bytes on, the first, middle and last byte below.
func shortWord(s string) uint64 {
	n := len(s)
	switch {
	case n >= 4:
		return uint64(le32s(s, 0)) | uint64(le32s(s, n-4))<<32
	case n > 0:
		return uint64(s[0]) | uint64(s[n>>1])<<8 | uint64(s[n-1])<<16
	}
	return 0
}

func dictTag(s string) uint32 {
	if s == "" {
		return 0
	}
	return uint32(len(s))<<8 | uint32(s[0])
}

func (d *dictionary) lookup(k string) (string, bool) {
	if len(d.keys) <= 8 {
		tag := dictTag(k)
		if len(k) <= 8 {
			w := shortWord(k)
			for i, t := range d.tags {
				if t == tag && d.words[i] == w {
					return d.vals[i], true
				}
			}
			return "", false
		}
		for i, t := range d.tags {
			if t == tag && d.keys[i] == k {
				return d.vals[i], true
			}
		}
		return "", false
	}
	lo, hi := 0, len(d.keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if d.keys[m] < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(d.keys) && d.keys[lo] == k {
		return d.vals[lo], true
	}
	return "", false
}

type origin uint8

const (
	originKeyExpr origin = iota // an expression key element
	originEntry                 // a target.columns entry (maybe also a key column)
	originSource                // a source column carried over (maybe also a key column)
)

// colDef describes one target column.
type colDef struct {
	name       string
	typ        colType
	origin     origin
	node       *node  // parsed expression (key element or entry)
	text       string // expression as written
	expr       *texpr // typed expression; nil for source columns
	src        int    // source index (originSource)
	path       string // where it is defined
	keyPos     int
	desc       bool
	entry      int // index in Target.Columns (originEntry), else -1
	deps       []int
	collection bool // a CQL collection carried as JSON text
	derived    bool // name derived from the expression
}

type compiler struct {
	m        *Mapping
	ps       *problems
	src      pipeline.SourceSchema
	srcTypes []colType
	srcColl  []bool
	vars     map[string]Var
	dicts    map[string]*dictionary
	elems    []keyElem
	cols     []colDef
	entryCol []int // entry index -> cols index, -1 if unparsed
	state    []int // cols typing state: 0 new, 1 in progress, 2 done
	saltUsed bool
	excluded map[string]bool
	splits   []pipeline.Value
	broken   bool // a problem prevents building a program
	declared bool // the source schema is the mapping's source.columns
}

func newCompiler(m *Mapping, src pipeline.SourceSchema, ps *problems) *compiler {
	return &compiler{m: m, ps: ps, src: src}
}

func (c *compiler) fail(path string, format string, args ...any) {
	c.ps.add(path, 0, format, args...)
	c.broken = true
}

// Compile resolves a decoded mapping against the source schema and builds the evaluator's
// program. With src nil the mapping's source.columns are the source schema; otherwise src (as read
// from the source, e.g. Cassandra's schema) is, and every column the mapping lists must be in it
// with the same CQL type. Problems are reported together as a *MappingError.
func Compile(m *Mapping, src pipeline.SourceSchema) (*Program, error) {
	if m == nil {
		return nil, errors.New("transform: nil mapping")
	}
	ps := &problems{lines: m.lines}
	c := newCompiler(m, src, ps)
	p := c.run()
	if len(ps.list) > 0 {
		return nil, &MappingError{Problems: ps.list}
	}
	return p, nil
}

func (c *compiler) run() *Program {
	m := c.m
	c.sourceSchema()
	if col := m.Source.WriteOrder; col != "" && c.src != nil {
		if err := CheckWriteOrder(col, c.src); err != nil {
			c.fail("source.write_order", "%s", err.Error())
		}
	}
	c.varsAndDicts()
	c.layout()
	if c.broken && len(c.cols) == 0 {
		return nil
	}
	c.typeAll()
	c.unitApplies()
	c.names()
	c.keyRules()
	c.regionKeys()
	c.checkQueries()
	if c.broken || len(c.ps.list) > 0 {
		return nil
	}
	return c.program(m)
}

func (c *compiler) sourceSchema() {
	m := c.m
	unit := m.Source.TimestampUnit
	declared := m.Source.Columns
	if unit != "" {
		declared = make(pipeline.SourceSchema, len(m.Source.Columns))
		for i, col := range m.Source.Columns {
			declared[i] = pipeline.SourceColumn{Name: col.Name, Type: withTimestampUnit(col.Type, unit)}
		}
	}
	if c.src == nil {
		if len(declared) == 0 {
			c.fail("source.columns", "empty: list the source columns with their CQL types (or read them from the source)")
			return
		}
		c.src = declared
		c.declared = true
	} else {
		for i, col := range declared {
			j := c.src.Index(col.Name)
			path := "source.columns." + col.Name
			if j < 0 {
				c.fail(path, "column %q is not in the source (its columns: %s)", col.Name, strings.Join(c.src.Names(), ", "))
				continue
			}
			// as written, or with the mapping's unit (a schema this mapping compiled to)
			if !sameCQL(m.Source.Columns[i].Type, c.src[j].Type) && !sameCQL(col.Type, c.src[j].Type) {
				c.fail(path, "declared as %s but the source has %s", col.Type, c.src[j].Type)
			}
		}
		if unit != "" && unit != "ms" {
			// The source gives its own schema (Cassandra): its timestamps are epoch
			// milliseconds on the wire, whatever the mapping says.
			for _, col := range c.src {
				if withTimestampUnit(col.Type, unit) != col.Type {
					c.fail("source.timestamp_unit", "column %q comes from the source's own schema, whose timestamps are epoch milliseconds (Cassandra's wire format): remove source.timestamp_unit", col.Name)
					break
				}
			}
		}
	}
	for _, col := range c.src {
		t, coll := lindormType(col.Type)
		c.srcTypes = append(c.srcTypes, t)
		c.srcColl = append(c.srcColl, coll)
	}
}

func (c *compiler) varsAndDicts() {
	m := c.m
	c.vars = map[string]Var{}
	for _, v := range m.Vars {
		if c.src.Index(v.Name) >= 0 {
			c.fail("vars."+v.Name, "var %q has the name of a source column; rename it", v.Name)
		}
		c.vars[v.Name] = v
	}
	c.dicts = map[string]*dictionary{}
	for _, d := range m.Target.Codes {
		dict := &dictionary{name: d.Name, codeOf: map[string]string{}}
		idx := make([]int, len(d.Entries))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return d.Entries[idx[a]][0] < d.Entries[idx[b]][0] })
		for _, i := range idx {
			dict.keys = append(dict.keys, d.Entries[i][0])
			dict.vals = append(dict.vals, d.Entries[i][1])
			dict.tags = append(dict.tags, dictTag(d.Entries[i][0]))
			var w uint64
			if k := d.Entries[i][0]; len(k) <= 8 {
				w = shortWord(k)
			}
			dict.words = append(dict.words, w)
			if _, ok := dict.codeOf[d.Entries[i][1]]; !ok {
				dict.codeOf[d.Entries[i][1]] = d.Entries[i][0]
			}
		}
		c.dicts[d.Name] = dict
	}
	c.excluded = map[string]bool{}
	for i, x := range m.Target.Exclude {
		path := "target.exclude[" + strconv.Itoa(i) + "]"
		if c.src.Index(x) < 0 {
			c.fail(path, "%q is not a source column%s (source columns: %s; a name is matched exactly here)", x, didYouMean(x, c.src.Names()), strings.Join(c.src.Names(), ", "))
			continue
		}
		c.excluded[x] = true
	}
}

// layout decides the target columns and their order: key columns, target.columns entries, then
// carried-over source columns.
func (c *compiler) layout() {
	m := c.m
	entryNodes := make([]*node, len(m.Target.Columns))
	entryByName := map[string]int{}
	c.entryCol = make([]int, len(m.Target.Columns))
	for i, e := range m.Target.Columns {
		c.entryCol[i] = -1
		path := "target.columns." + e.Name
		entryByName[e.Name] = i
		if _, ok := c.vars[e.Name]; ok {
			c.fail(path, "target column %q has the name of a var; rename one of them", e.Name)
		}
		n, err := parseExpression(e.Expr)
		if err != nil {
			c.fail(path, "%s in %s%s", err.Error(), quoteString(e.Expr), c.quoteHint(e.Expr))
			continue
		}
		entryNodes[i] = n
	}
	if m.Target.PrimaryKey == "" {
		c.broken = true
		return
	}
	elems, outer := parseKey(m.Target.PrimaryKey)
	c.elems = elems
	if outer != nil {
		c.fail("target.primary_key", "%s in %q%s", outer.Error(), m.Target.PrimaryKey, c.quoteHint(m.Target.PrimaryKey))
	}
	if len(elems) > MaxKeyColumns {
		c.fail("target.primary_key", "%d key columns: Lindorm allows at most %d (the design guide recommends 1-3)", len(elems), MaxKeyColumns)
	}
	keyEntry := map[int]int{}  // entry index -> element
	keySource := map[int]int{} // source index -> element
	for i, el := range elems {
		path := "target.primary_key[" + strconv.Itoa(i) + "]"
		if el.err != nil {
			c.fail(path, "%s in %q%s", el.err.Error(), m.Target.PrimaryKey, c.quoteHint(el.text))
			continue
		}
		col := colDef{keyPos: i, desc: el.desc, path: path, node: el.expr, text: strings.TrimSpace(el.text), entry: -1, src: -1}
		if el.as != "" {
			col.name = el.as
		}
		if el.bare {
			r, msg := c.resolve(el.expr.sval, el.expr.quoted, true, -1)
			switch {
			case msg != "":
				c.fail(path, "%s", msg)
				continue
			case r.kind == refEntry && (el.as == "" || el.as == r.name):
				if prev, dup := keyEntry[r.idx]; dup {
					c.fail(path, "column %q is already key element %d", r.name, prev)
					continue
				}
				keyEntry[r.idx] = i
				col.origin, col.entry, col.name = originEntry, r.idx, r.name
				col.path = "target.columns." + r.name
				col.node, col.text = entryNodes[r.idx], m.Target.Columns[r.idx].Expr
				if col.node == nil {
					c.broken = true
					continue
				}
			case r.kind == refSource && (el.as == "" || el.as == r.name):
				if prev, dup := keySource[r.idx]; dup {
					c.fail(path, "column %q is already key element %d", r.name, prev)
					continue
				}
				if c.excluded[r.name] {
					c.fail(path, "key column %q is listed in target.exclude", r.name)
				}
				keySource[r.idx] = i
				col.origin, col.src, col.name = originSource, r.idx, r.name
				col.typ, col.collection = c.srcTypes[r.idx], c.srcColl[r.idx]
			default:
				col.origin = originKeyExpr
			}
		} else {
			col.origin = originKeyExpr
		}
		c.cols = append(c.cols, col)
	}
	for i, e := range m.Target.Columns {
		if el, ok := keyEntry[i]; ok {
			for j := range c.cols {
				if c.cols[j].keyPos == el {
					c.entryCol[i] = j
				}
			}
			continue
		}
		if entryNodes[i] == nil {
			continue
		}
		c.entryCol[i] = len(c.cols)
		c.cols = append(c.cols, colDef{name: e.Name, origin: originEntry, node: entryNodes[i], text: e.Expr,
			path: "target.columns." + e.Name, keyPos: -1, entry: i, src: -1})
	}
	for j, sc := range c.src {
		if _, ok := keySource[j]; ok || c.excluded[sc.Name] {
			continue
		}
		if _, ok := entryByName[sc.Name]; ok {
			continue // replaced by the target.columns entry of the same name
		}
		c.cols = append(c.cols, colDef{name: sc.Name, typ: c.srcTypes[j], origin: originSource, src: j,
			path: "source.columns." + sc.Name, keyPos: -1, entry: -1, collection: c.srcColl[j]})
	}
	c.state = make([]int, len(c.cols))
}

// quoteHint says to back-quote a column that text, an expression that did not parse, writes
// bare although its name holds characters a name does not take (a space: `order id`); "" when
// it finds none.
func (c *compiler) quoteHint(text string) string {
	names := c.src.Names()
	for _, e := range c.m.Target.Columns {
		names = append(names, e.Name)
	}
	for _, n := range names {
		if len(n) >= 2 && strings.Trim(n, "0123456789") != "" && needsQuote(n) && strings.Contains(text, n) && !strings.Contains(text, quoteName(n)) {
			return ": column " + strconv.Quote(n) + " holds characters a name does not take: write it back-quoted, " + quoteName(n)
		}
	}
	return ""
}

// unitApplies refuses a source.timestamp_unit that would change nothing: the mapping's source
// columns hold no timestamp, and no expression casts text to TIMESTAMP. (A source that gives its
// own schema is checked in sourceSchema.)
func (c *compiler) unitApplies() {
	unit := c.m.Source.TimestampUnit
	if unit == "" || !c.declared || c.broken {
		return
	}
	for _, col := range c.m.Source.Columns {
		if withTimestampUnit(col.Type, unit) != col.Type {
			return
		}
	}
	intCast := ""
	for _, col := range c.cols {
		if col.expr == nil {
			continue
		}
		applies := false
		col.expr.walk(func(t *texpr) {
			if t.op != opCast || t.typ.T != pipeline.TypeTimestamp {
				return
			}
			switch x := t.args[0]; {
			case x.typ.T == pipeline.TypeVarchar:
				applies = true
			case isIntegral(x.typ.T) && x.typ.T != pipeline.TypeTimestamp && intCast == "":
				intCast = ": " + col.path + " casts the " + x.typ.String() + " " + x.String() + " to TIMESTAMP, which reads it as epoch milliseconds whatever the unit: declare " +
					x.String() + ": timestamp in source.columns (and write " + col.name + ": " + x.String() + ") for the unit to apply"
			}
		})
		if applies {
			return
		}
	}
	if intCast == "" {
		intCast = ": declare the epoch columns as timestamp in source.columns, or remove source.timestamp_unit"
	}
	c.fail("source.timestamp_unit", "%s applies to timestamp columns and to integer text cast to TIMESTAMP, and this mapping has neither%s", unit, intCast)
}

type refKind uint8

const (
	refSource refKind = iota
	refEntry
	refVar
)

type ref struct {
	kind refKind
	idx  int // source index or entry index
	name string
}

// resolve finds what a name in an expression means. In the primary key, target.columns entries
// come first, then source columns, then vars; in target.columns expressions, source columns come
// first (so `channel: code(channel, channels)` reads the source's channel), then other entries,
// then vars. An unquoted name without an exact match falls back to a case-insensitive match when
// it is unique.
func (c *compiler) resolve(name string, quoted bool, inKey bool, selfEntry int) (ref, string) {
	entries := c.m.Target.Columns
	type cand struct {
		r   ref
		cat int
	}
	lookup := func(eq func(a, b string) bool) []cand {
		var out []cand
		catEntry, catSource := 0, 1
		if !inKey {
			catEntry, catSource = 1, 0
		}
		for i, e := range entries {
			if i != selfEntry && eq(e.Name, name) {
				out = append(out, cand{ref{refEntry, i, e.Name}, catEntry})
			}
		}
		for i, s := range c.src {
			if eq(s.Name, name) {
				out = append(out, cand{ref{refSource, i, s.Name}, catSource})
			}
		}
		for _, v := range c.m.Vars {
			if eq(v.Name, name) {
				out = append(out, cand{ref{refVar, 0, v.Name}, 2})
			}
		}
		sort.SliceStable(out, func(a, b int) bool { return out[a].cat < out[b].cat })
		if len(out) > 1 && out[0].cat == out[1].cat {
			return out[:2]
		}
		return out
	}
	if m := lookup(func(a, b string) bool { return a == b }); len(m) > 0 {
		return m[0].r, ""
	}
	if !quoted {
		m := lookup(strings.EqualFold)
		if len(m) == 2 && m[0].cat == m[1].cat {
			return ref{}, "name " + strconv.Quote(name) + " matches both " + strconv.Quote(m[0].r.name) + " and " + strconv.Quote(m[1].r.name) + " ignoring case; write the exact name"
		}
		if len(m) > 0 {
			return m[0].r, ""
		}
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	names = append(names, c.src.Names()...)
	for _, v := range c.m.Vars {
		names = append(names, v.Name)
	}
	msg := "unknown column " + strconv.Quote(name) + didYouMean(name, names) + " (not a target.columns entry, a source column or a var"
	if strings.Contains(name, "-") {
		msg += "; '-' is part of names, subtraction is not supported"
	}
	return ref{}, msg + ")"
}

// typeAll types every computed column, entries first on demand (they may depend on each other).
func (c *compiler) typeAll() {
	for i := range c.cols {
		c.typeCol(i, nil)
	}
}

func (c *compiler) typeCol(i int, chain []string) bool {
	col := &c.cols[i]
	switch c.state[i] {
	case 2:
		return col.typ.T != pipeline.TypeInvalid
	case 1:
		c.fail(col.path, "circular definition: %s", strings.Join(append(chain, col.name), " -> "))
		col.typ = colType{}
		return false
	}
	c.state[i] = 1
	if col.origin == originSource {
		c.state[i] = 2
		return true
	}
	self := -1
	if col.origin == originEntry {
		self = col.entry
	}
	ctx := &exprCtx{path: col.path, inKey: col.origin == originKeyExpr, self: self, col: i, chain: append(chain, col.name)}
	col.expr = c.typeExpr(col.node, ctx)
	if col.expr != nil {
		col.typ = col.expr.typ
		col.deps = ctx.deps
	} else {
		c.broken = true
	}
	c.state[i] = 2
	return col.expr != nil
}

type exprCtx struct {
	path  string
	inKey bool
	self  int // entry index being defined, or -1
	col   int
	chain []string
	deps  []int
}

func (c *compiler) typeExpr(n *node, ctx *exprCtx) *texpr {
	if n == nil {
		return nil
	}
	switch n.kind {
	case nInt:
		return &texpr{op: opLit, typ: tBigint, lit: pipeline.Int(n.ival)}
	case nStr:
		return &texpr{op: opLit, typ: tVarchar, lit: pipeline.Text(n.sval)}
	case nName:
		r, msg := c.resolve(n.sval, n.quoted, ctx.inKey, ctx.self)
		if msg != "" {
			c.fail(ctx.path, "%s", msg)
			return nil
		}
		switch r.kind {
		case refVar:
			v := c.vars[r.name]
			t := tBigint
			if v.Value.Kind == pipeline.KindText {
				t = tVarchar
			}
			return &texpr{op: opLit, typ: t, lit: v.Value, isVar: true, name: r.name}
		case refSource:
			return &texpr{op: opSrc, typ: c.srcTypes[r.idx], idx: r.idx, name: r.name}
		default:
			ci := c.entryCol[r.idx]
			if ci < 0 {
				c.broken = true // the entry did not parse; already reported
				return nil
			}
			if !c.typeCol(ci, ctx.chain) {
				return nil
			}
			ctx.deps = append(ctx.deps, ci)
			return &texpr{op: opTgt, typ: c.cols[ci].typ, idx: ci, name: c.cols[ci].name}
		}
	case nCast:
		x := c.typeExpr(n.args[0], ctx)
		t, p, s, err := pipeline.ParseType(n.sval)
		if err != nil {
			c.fail(ctx.path, "%v", err)
			return nil
		}
		if x == nil {
			return nil
		}
		if !convertible(x.typ.T, t) {
			c.fail(ctx.path, "cannot convert %s to %s", x.typ, colType{t, p, s})
			return nil
		}
		return &texpr{op: opCast, typ: colType{t, p, s}, args: []*texpr{x}}
	case nBin:
		l, r := c.typeExpr(n.args[0], ctx), c.typeExpr(n.args[1], ctx)
		if l == nil || r == nil {
			return nil
		}
		if n.sval == "+" {
			isText := func(t pipeline.Type) bool { return t == pipeline.TypeVarchar || t == pipeline.TypeJSON }
			switch {
			case isIntegral(l.typ.T) && isIntegral(r.typ.T):
				return &texpr{op: opAdd, typ: tBigint, args: []*texpr{l, r}}
			case isText(l.typ.T) || isText(r.typ.T):
				return &texpr{op: opConcat, typ: tVarchar, args: []*texpr{l, r}}
			}
			c.fail(ctx.path, "operator + adds integers or concatenates text, found %s + %s (wrap a side in str() to concatenate)", l.typ, r.typ)
			return nil
		}
		names := map[string]op{"*": opMul, "/": opDiv, "%": opMod}
		for side, x := range []*texpr{l, r} {
			if !isIntegral(x.typ.T) {
				c.fail(ctx.path, "operator %s needs integers, but its %s side is %s (use long(x) to parse text)", n.sval, []string{"left", "right"}[side], x.typ)
				return nil
			}
		}
		if v, ok := r.isConstInt(); ok && v == 0 && n.sval != "*" {
			c.fail(ctx.path, "division by zero in %s", n.String())
			return nil
		}
		return &texpr{op: names[n.sval], typ: tBigint, args: []*texpr{l, r}}
	case nCall:
		return c.typeCall(n, ctx)
	}
	return nil
}

func (c *compiler) typeCall(n *node, ctx *exprCtx) *texpr {
	fname := strings.ToLower(n.sval)
	spec, ok := functions[fname]
	if !ok {
		c.fail(ctx.path, "unknown function %q%s (functions: %s)", n.sval, didYouMean(n.sval, fnList), fnNames)
		return nil
	}
	if len(n.args) < spec.min || len(n.args) > spec.max {
		c.fail(ctx.path, "%s: wrong number of arguments, want %s", n.sval, spec.usage)
		return nil
	}
	t := &texpr{op: spec.op}
	switch spec.op {
	case opCode:
		dn := n.args[1]
		if dn.kind != nName {
			c.fail(ctx.path, "code(x, dictionary): the second argument names a dictionary under target.codes")
			return nil
		}
		d := c.dicts[dn.sval]
		if d == nil && !dn.quoted {
			for k, v := range c.dicts {
				if strings.EqualFold(k, dn.sval) {
					d = v
				}
			}
		}
		if d == nil {
			var names []string
			for k := range c.dicts {
				names = append(names, k)
			}
			sort.Strings(names)
			c.fail(ctx.path, "unknown dictionary %q in code() (target.codes has: %s)", dn.sval, strings.Join(names, ", "))
			return nil
		}
		x := c.typeExpr(n.args[0], ctx)
		if x == nil {
			return nil
		}
		t.dict, t.args, t.typ = d, []*texpr{x}, tVarchar
		return t
	case opRandom:
		x := c.typeExpr(n.args[0], ctx)
		if x == nil {
			return nil
		}
		v, ok := x.isConstInt()
		if !ok || v < 1 {
			c.fail(ctx.path, "random(n): n must be a positive integer constant (a number or a var)")
			return nil
		}
		c.saltUsed = true
		t.args, t.typ = []*texpr{x}, tBigint
		return t
	}
	for _, a := range n.args {
		x := c.typeExpr(a, ctx)
		if x == nil {
			return nil
		}
		t.args = append(t.args, x)
	}
	x := t.args[0]
	switch spec.op {
	case opMD5, opSHA1, opSHA256, opReverse, opStr:
		t.typ = tVarchar
	case opCRC32, opMurmur3:
		t.typ = tBigint
	case opSubstr:
		t.typ = tVarchar
		for _, a := range t.args[1:] {
			if !isIntegral(a.typ.T) {
				c.fail(ctx.path, "%s: the indexes must be integers, found %s", n.sval, a.typ)
				return nil
			}
		}
		if len(t.args) == 3 {
			a, ok1 := t.args[1].isConstInt()
			b, ok2 := t.args[2].isConstInt()
			if ok1 && ok2 && (a < 0 || b < a) {
				c.fail(ctx.path, "%s(%d, %d): want 0 <= begin <= end", n.sval, a, b)
				return nil
			}
		} else if a, ok := t.args[1].isConstInt(); ok && a < 0 {
			c.fail(ctx.path, "%s(%d): want begin >= 0", n.sval, a)
			return nil
		}
		// past the end of a value of one length (a digest), every row would be rejected
		if l := (&Program{cols: c.cols, keepMissing: c.m.Target.OnMissingCode == "keep"}).fixedChars(x); l >= 0 {
			a, _ := t.args[1].isConstInt()
			b, ok := int64(-1), false
			if len(t.args) == 3 {
				b, ok = t.args[2].isConstInt()
			}
			if a > int64(l) || ok && b > int64(l) {
				idx := strconv.FormatInt(a, 10)
				if len(t.args) == 3 {
					idx += ", " + t.args[2].String()
				}
				c.fail(ctx.path, "%s(%s): %s always has %d characters, so every row would be rejected (an index past the end): want indexes from 0 to %d",
					n.sval, idx, x, l, l)
				return nil
			}
		}
	case opLong, opInt:
		switch {
		case isIntegral(x.typ.T), x.typ.T == pipeline.TypeVarchar, x.typ.T == pipeline.TypeDecimal:
		default:
			c.fail(ctx.path, "%s(x) parses text or converts an integer, found %s", fname, x.typ)
			return nil
		}
		t.typ = tBigint
		if spec.op == opInt {
			t.typ = tInteger
		}
	}
	return t
}

// names derives the names of expression key elements written without AS, then checks that all
// target column names are distinct (ignoring case, as Lindorm SQL does).
func (c *compiler) names() {
	taken := map[string]bool{}
	for _, col := range c.cols {
		if col.name != "" {
			taken[strings.ToLower(col.name)] = true
		}
	}
	for i := range c.cols {
		col := &c.cols[i]
		if col.name != "" || col.expr == nil {
			continue
		}
		name := sanitizeName(deriveName(col.expr))
		if name == "" || taken[strings.ToLower(name)] {
			name = "k" + strconv.Itoa(col.keyPos)
			for n := 2; taken[strings.ToLower(name)]; n++ {
				name = "k" + strconv.Itoa(col.keyPos) + "_" + strconv.Itoa(n)
			}
		}
		col.name, col.derived = name, true
		taken[strings.ToLower(name)] = true
	}
	seen := map[string]int{}
	for i, col := range c.cols {
		if col.name == "" {
			continue
		}
		if n := utf8.RuneCountInString(col.name); n > 255 {
			c.fail(col.path, "target column name of %d characters: Lindorm's column names have at most 255; name it shorter (AS, or a target.columns entry)", n)
		}
		k := strings.ToLower(col.name)
		if j, dup := seen[k]; dup {
			c.fail(col.path, "duplicate target column name %q (also from %s); use AS, rename the entry or add the source column to target.exclude", col.name, c.cols[j].path)
			continue
		}
		seen[k] = i
	}
}

func deriveName(t *texpr) string {
	switch t.op {
	case opSrc, opTgt:
		return t.name
	case opLit:
		if t.isVar {
			return t.name
		}
		if t.lit.Kind == pipeline.KindInt {
			if t.lit.Num < 0 {
				return "m" + strconv.FormatInt(-t.lit.Num, 10)
			}
			return strconv.FormatInt(t.lit.Num, 10)
		}
		return "lit"
	case opCast:
		return deriveName(t.args[0])
	case opSubstr:
		base := deriveName(t.args[0])
		a, ok1 := t.args[1].isConstInt()
		if len(t.args) == 2 {
			if ok1 {
				return base + "_from" + strconv.FormatInt(a, 10)
			}
			return base + "_substr"
		}
		b, ok2 := t.args[2].isConstInt()
		switch {
		case ok1 && ok2 && a == 0:
			return base + "_" + strconv.FormatInt(b, 10)
		case ok1 && ok2:
			return base + "_" + strconv.FormatInt(a, 10) + "_" + strconv.FormatInt(b, 10)
		}
		return base + "_substr"
	case opConcat, opAdd:
		return deriveName(t.args[0]) + "_" + deriveName(t.args[1])
	case opMul:
		return deriveName(t.args[0]) + "_mul_" + deriveName(t.args[1])
	case opDiv:
		return deriveName(t.args[0]) + "_div_" + deriveName(t.args[1])
	case opMod:
		return deriveName(t.args[0]) + "_mod_" + deriveName(t.args[1])
	case opRandom:
		return "random_" + deriveName(t.args[0])
	}
	return deriveName(t.args[0]) + "_" + opNames[t.op]
}

func sanitizeName(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch == '_' || ch == '-' || ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			b[i] = '_'
		}
	}
	s = strings.Trim(string(b), "_-")
	if len(s) > 48 {
		s = strings.TrimRight(s[:48], "_-")
	}
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return ""
	}
	return s
}

func (c *compiler) keyRules() {
	// a key of constants alone gives every row one key: all but the last row written would be lost
	var constants []string
	for _, col := range c.cols {
		if col.keyPos >= 0 && col.expr != nil && constantExpr(c.cols, col.expr) {
			constants = append(constants, col.name)
		}
	}
	if len(c.elems) > 0 && len(constants) == len(c.elems) {
		c.fail("target.primary_key", "every key column is a constant (%s): every row would get one key, and the last one written would be the table's only row; key on the source columns that tell the rows apart",
			strings.Join(constants, ", "))
	}
	for _, col := range c.cols {
		if col.keyPos < 0 || col.typ.T == pipeline.TypeInvalid {
			continue
		}
		switch col.typ.T {
		case pipeline.TypeJSON:
			c.fail(col.path, "key column %q is JSON: Lindorm does not allow JSON in a primary key", col.name)
		case pipeline.TypeVarbinary:
			if col.keyPos != len(c.elems)-1 {
				c.fail(col.path, "key column %q is VARBINARY: Lindorm allows VARBINARY only as the last key column", col.name)
			}
		}
	}
}

// regionKeys parses regions.split_keys with the first key column's type.
func (c *compiler) regionKeys() {
	r := c.m.Regions
	if r == nil || len(r.SplitKeys) == 0 || len(c.cols) == 0 || c.cols[0].keyPos != 0 || c.cols[0].typ.T == pipeline.TypeInvalid {
		return
	}
	first := c.cols[0]
	for i, s := range r.SplitKeys {
		path := "regions.split_keys[" + strconv.Itoa(i) + "]"
		lit := s
		if first.typ.T == pipeline.TypeVarbinary {
			// in hex, as SPLITKEYS, the manifest and rekey report write a VARBINARY split key
			b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
			if err != nil || len(b) == 0 {
				c.fail(path, "%q is not hex: the split keys of the VARBINARY first key column %q are its bytes in hex, as ddl.sql's SPLITKEYS writes them (\"00ff\" is the bytes 00 ff)", s, first.name)
				continue
			}
			lit = string(b)
		}
		v, err := parseLiteral(lit, first.typ)
		if err != nil {
			c.fail(path, "%q is not a %s value of the first key column %q: %v", s, first.typ, first.name, err)
			continue
		}
		if len(c.splits) > 0 {
			cmp := pipeline.Compare(first.typ.T, c.splits[len(c.splits)-1], v)
			if first.desc {
				cmp = -cmp
			}
			if cmp >= 0 {
				order := "increasing"
				if first.desc {
					order = "decreasing (the first key column is DESC)"
				}
				c.fail(path, "split keys must be strictly %s: %q follows %q", order, s, r.SplitKeys[i-1])
			}
		}
		c.splits = append(c.splits, v)
	}
}
