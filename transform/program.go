package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

// Program is a compiled mapping: the resolved source and target schemas and the evaluation
// steps. It is immutable and safe for concurrent use; evaluate with one Evaluator per goroutine.
type Program struct {
	name, table string
	sourceTable string // the mapping's source.table
	file        string
	source      pipeline.SourceSchema
	target      pipeline.TargetSchema
	cols        []colDef
	steps       []step
	// copyFrom is where the steps that copy a source column as it is begin (they come last);
	// copies are those steps again, small: ApplyKey copies a value of the column's kind without
	// the general step's tests
	copyFrom    int
	copies      []copyStep
	options     [][2]string
	regions     *RegionsSpec
	splits      []pipeline.Value
	keepMissing bool
	saltUsed    bool
	nameLens    []int
	vars        []Var
	dicts       []Dict
	fingerprint string
	digests     int // digest call sites: each has a memo in every Evaluator
	writeTime   bool
	// timestampUnit is source.timestamp_unit: how an integer text cast to TIMESTAMP is read
	timestampUnit string
	// saltOrder lists the source columns in the order random(n) hashes them (saltOrderOf)
	saltOrder []int
}

// copyStep is a step that copies source column src to target column dst: a value of kind is
// copied as it is, and so is a null where null is set (not a key column); any other value (a
// kind to convert, a null key) goes through the general step.
type copyStep struct {
	src, dst int32
	kind     pipeline.Kind // copySlow when every value needs the general step (a type to check)
	null     bool
}

// copySlow is no value's kind.
const copySlow pipeline.Kind = 0xff

// KeyElement describes one primary-key column for `rekey check`.
type KeyElement struct {
	Name string
	Expr string // canonical expression text; a bare column is its name
	Type pipeline.Type
	Desc bool
}

func (c *compiler) program(m *Mapping) *Program {
	p := &Program{
		name:        m.Source.Name,
		sourceTable: m.Source.Table,
		table:       m.Target.Table,
		file:        m.File,
		source:      c.src,
		options:     m.Target.Options,
		regions:     m.Regions,
		splits:      c.splits,
		keepMissing: m.Target.OnMissingCode == "keep",
		saltUsed:    c.saltUsed,
		vars:        m.Vars,
		dicts:       m.Target.Codes,
		cols:        c.cols,
		writeTime:   m.Target.WriteTime,
		saltOrder:   saltOrderOf(m.Source.Columns, c.src),

		timestampUnit: m.Source.TimestampUnit,
	}
	if p.name == "" && m.File != "" {
		p.name = strings.TrimSuffix(filepath.Base(m.File), filepath.Ext(m.File))
	}
	p.target.Table = m.Target.Table
	for _, col := range c.cols {
		pc := pipeline.Column{Name: col.name, Type: col.typ.T, Precision: col.typ.P, Scale: col.typ.S, KeyPos: col.keyPos, Desc: col.desc}
		p.target.Columns = append(p.target.Columns, pc)
		if col.keyPos >= 0 {
			p.target.KeyLen++
		}
		p.nameLens = append(p.nameLens, len(col.name))
	}
	// steps: computed columns with their dependencies first (key columns lead), then copies
	done := make([]bool, len(c.cols))
	var visit func(i int)
	visit = func(i int) {
		if done[i] {
			return
		}
		done[i] = true
		for _, d := range c.cols[i].deps {
			visit(d)
		}
		p.steps = append(p.steps, p.newStep(i))
	}
	for i, col := range c.cols {
		if col.expr != nil {
			visit(i)
		}
	}
	p.copyFrom = len(p.steps)
	for i := range c.cols {
		if !done[i] {
			done[i] = true
			st := p.newStep(i)
			p.steps = append(p.steps, st)
			cp := copyStep{src: int32(st.src), dst: int32(st.dst), kind: st.kind, null: !st.key}
			if !st.fast {
				cp.kind = copySlow
			}
			p.copies = append(p.copies, cp)
		}
	}
	p.fingerprint = p.computeFingerprint()
	return p
}

func (p *Program) newStep(i int) step {
	col := p.cols[i]
	st := step{dst: i, src: col.src, typ: col.typ, key: col.keyPos >= 0, field: col.name, kind: kindOf(col.typ.T)}
	switch col.typ.T {
	case pipeline.TypeDecimal, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint, pipeline.TypeDate:
		st.fast = false
	default:
		st.fast = true
	}
	// a cast to the column's own type (amount :: DECIMAL(18,2)) has converted and checked the
	// value already: converting its result again is the same value
	if col.expr != nil && col.expr.op == opCast && col.expr.typ == col.typ {
		st.fast = true
	}
	if col.expr == nil && col.src >= 0 {
		st.reads = []int{col.src}
	} else if col.expr != nil {
		st.reads = p.sourceInputs(col.expr, nil)
		st.fn = p.build(col.expr)
		if st.key {
			st.inputs = p.sourceInputs(col.expr, nil)
		}
	}
	return st
}

// sourceInputs appends the source columns t reads, following target-column references to their
// own expressions, each once.
func (p *Program) sourceInputs(t *texpr, into []int) []int {
	switch t.op {
	case opSrc:
		if !slices.Contains(into, t.idx) {
			into = append(into, t.idx)
		}
	case opTgt:
		if c := p.cols[t.idx]; c.expr != nil {
			into = p.sourceInputs(c.expr, into)
		} else if c.origin == originSource && !slices.Contains(into, c.src) {
			into = append(into, c.src)
		}
	}
	for _, a := range t.args {
		into = p.sourceInputs(a, into)
	}
	return into
}

// saltOrderOf lists the indexes of the source columns src in the order random(n) hashes their
// values: the mapping's source.columns as listed (declared), then the other columns of src in
// its order. A Cassandra table gives its columns in its own order (partition key, clustering
// columns, then the others by name) and a file of its rows (an export, verify --repair's file) in
// the mapping's: hashed in src's order, one row got another salt, so another key, from each.
func saltOrderOf(declared, src pipeline.SourceSchema) []int {
	order := make([]int, 0, len(src))
	taken := make([]bool, len(src))
	for _, col := range declared {
		if i := src.Index(col.Name); i >= 0 && !taken[i] {
			order, taken[i] = append(order, i), true
		}
	}
	for i := range src {
		if !taken[i] {
			order = append(order, i)
		}
	}
	return order
}

// SaltOrder lists the source columns (indexes into Source) in the order random(n) hashes their
// values (SaltToken): the mapping's source.columns order, whatever order the source gives them in.
func (p *Program) SaltOrder() []int { return p.saltOrder }

// Source is the source schema records follow.
func (p *Program) Source() pipeline.SourceSchema { return p.source }

// Target is the target schema: key columns first in key order, then the target.columns entries
// in file order, then the carried-over source columns in source order.
func (p *Program) Target() pipeline.TargetSchema { return p.target }

// WriteTime tells whether the mapping carries the source's cell write times as the target's
// cell timestamps (target.write_time).
func (p *Program) WriteTime() bool { return p.writeTime }

// TakeTableTTL gives the target table the source table's TTL (seconds; Cassandra's
// default_time_to_live), as the option TTL, unless target.options sets TTL itself. Lindorm counts
// a table TTL from each cell's timestamp: with target.write_time the cells expire when they
// would have in the source, and the source judges the cells already expired by the source's
// TTL, so a mapping that sets another TTL with write_time is refused.
func (p *Program) TakeTableTTL(seconds int) error {
	if seconds <= 0 {
		return nil
	}
	for _, o := range p.options {
		if !strings.EqualFold(o[0], "TTL") {
			continue
		}
		if p.writeTime && strings.TrimSpace(o[1]) != strconv.Itoa(seconds) {
			return fmt.Errorf("target.options.%s is %q, and the source table's default_time_to_live is %d seconds: with target.write_time the cells expired by the source's TTL are left out, so the target's TTL must be the same: drop the option (rekey sets TTL=%d) or set it to %d", o[0], o[1], seconds, seconds, seconds)
		}
		return nil
	}
	p.options = append(slices.Clip(p.options), [2]string{"TTL", strconv.Itoa(seconds)})
	return nil
}

// TTLPlan says when the target's cells expire and which times they carry: "" when the mapping
// neither carries write times nor gives the table a TTL.
func (p *Program) TTLPlan() string {
	ttl := ""
	for _, o := range p.options {
		if strings.EqualFold(o[0], "TTL") {
			ttl = strings.TrimSpace(o[1])
		}
	}
	switch {
	case ttl != "" && p.writeTime:
		return "TTL plan: " + ttl + " s, counted by Lindorm from each cell's timestamp, the cell's source write time (target.write_time): " +
			"cells expire when the source's table TTL would have expired them (loaded from files, at most one --time-slice later: a slice's cells take its newest write time, at most the copy's start, from which the cells written during the copy count it); " +
			"cells already past it when read are left out and counted; cells with a TTL of their own expire at the table's (counted)."
	case ttl != "":
		return "TTL plan: " + ttl + " s, counted by Lindorm from each cell's timestamp, the time the cell is written (no target.write_time): " +
			"cells live up to " + ttl + " s from the copy, longer than in the source; set target.write_time: true (a lindorm:// target, or files loaded by time slice) to keep their expiry."
	case p.writeTime:
		return "TTL plan: no table TTL; cells carry their source write times (target.write_time)."
	}
	return ""
}

// Options are target.options in file order, for CREATE TABLE ... WITH (...).
func (p *Program) Options() [][2]string { return p.options }

// Name is the source's name (source.name, or the mapping file's base name).
func (p *Program) Name() string { return p.name }

// SourceTable is the mapping's source.table: the table of a Debezium topic it reads ("": not
// stated).
func (p *Program) SourceTable() string { return p.sourceTable }

// Table is the Lindorm table.
func (p *Program) Table() string { return p.table }

// UsesSalt tells whether the key uses random(n).
func (p *Program) UsesSalt() bool { return p.saltUsed }

// DefaultRegionSize is Lindorm's default region split threshold.
const DefaultRegionSize = 8 << 30

// RegionSize is the target region size: the mapping's regions.size, or Lindorm's default split
// threshold (8 GiB) when the mapping does not set one. Reports flag regions larger than this.
func (p *Program) RegionSize() int64 {
	if p.regions != nil && p.regions.Size > 0 {
		return p.regions.Size
	}
	return DefaultRegionSize
}

// KeyElements describes the primary-key columns in key order.
func (p *Program) KeyElements() []KeyElement {
	var out []KeyElement
	for _, col := range p.cols[:p.target.KeyLen] {
		out = append(out, KeyElement{Name: col.name, Expr: p.exprText(col, false), Type: col.typ.T, Desc: col.desc})
	}
	return out
}

func (p *Program) exprText(col colDef, values bool) string {
	if col.expr == nil {
		return quoteName(p.source[col.src].Name)
	}
	return col.expr.text(values)
}

// valueBytes is the stored size of a value of type t.
func valueBytes(t pipeline.Type, v pipeline.Value) int {
	if n := t.FixedSize(); n > 0 {
		return n
	}
	return len(v.Str)
}

// KeyBytes is the encoded primary-key length of a target row: fixed-width types at their width
// (BIGINT/TIMESTAMP/DOUBLE 8, INTEGER/FLOAT/DATE 4, SMALLINT 2, TINYINT/BOOLEAN 1), strings,
// bytes and decimals at their byte length. Apply rejects rows whose key exceeds 2048 bytes.
func (p *Program) KeyBytes(row []pipeline.Value) int {
	n := 0
	cols := p.target.Columns
	for i := 0; i < p.target.KeyLen; i++ {
		n += valueBytes(cols[i].Type, row[i])
	}
	return n
}

// cellOverhead is an HBase-style KeyValue's fixed bytes: key length (4), value length (4), row
// length (2), family length (1) and name (1), timestamp (8), type (1).
const cellOverhead = 21

// RowBytes estimates the stored (uncompressed) bytes of a target row as Lindorm's KeyValues:
// each non-null non-key column is a cell of key + column name + value + 21 bytes of overhead; a
// row with no such column still stores one cell.
func (p *Program) RowBytes(row []pipeline.Value) int {
	key := p.KeyBytes(row)
	n, cells := 0, 0
	cols := p.target.Columns
	for i := p.target.KeyLen; i < len(cols); i++ {
		if row[i].Kind == pipeline.KindNull {
			continue
		}
		n += key + p.nameLens[i] + valueBytes(cols[i].Type, row[i]) + cellOverhead
		cells++
	}
	if cells == 0 {
		n = key + cellOverhead
	}
	return n
}

// Describe is the resolved mapping in human-readable form, for `rekey check`.
func (p *Program) Describe() string {
	var sb strings.Builder
	w := func(s ...string) {
		for _, x := range s {
			sb.WriteString(x)
		}
	}
	w("Mapping ", p.file, ": ", p.name, " -> table ", p.table, "\n")
	if p.sourceTable != "" {
		w("Reads source.table ", p.sourceTable, " of its Debezium topic: events of other tables are skipped and counted\n")
	}
	w("\nSource columns (", strconv.Itoa(len(p.source)), "):\n")
	for _, c := range p.source {
		w("  ", c.Name, " ", c.Type, "\n")
	}
	p.describeKey(w)
	w("\nColumns (", strconv.Itoa(len(p.cols)-p.target.KeyLen), " besides the key):\n")
	for _, col := range p.cols[p.target.KeyLen:] {
		w("  ", col.name, " ", col.typ.String())
		if col.origin == originSource {
			w(" <- source column ", quoteName(p.source[col.src].Name))
			if col.collection {
				w(" (", p.source[col.src].Type, " as JSON text)")
			}
		} else {
			w(" = ", p.exprText(col, false))
		}
		w("\n")
	}
	p.describeSettings(w)
	w("\nRegions: ")
	switch r := p.regions; {
	case r == nil:
		w("not set (1 region unless --regions is given)")
	case r.Count > 0:
		w("count ", strconv.Itoa(r.Count))
	case r.Size > 0:
		w("size ", r.SizeText, " (", strconv.FormatInt(r.Size, 10), " bytes per region)")
	default:
		w("split_keys ", strings.Join(r.SplitKeys, ", "))
	}
	w("\nFingerprint: ", p.fingerprint)
	return sb.String()
}

// describeKey writes Describe's primary key: as the DDL declares it, then each column's
// expression.
func (p *Program) describeKey(w func(...string)) {
	w("\nPrimary key:")
	for _, col := range p.cols[:p.target.KeyLen] {
		w(" [", quoteName(col.name))
		if col.desc {
			w(" DESC")
		}
		w("]")
	}
	w("\n")
	for _, col := range p.cols[:p.target.KeyLen] {
		w("  ", strconv.Itoa(col.keyPos), ". ", col.name, " ", col.typ.String())
		if col.desc {
			w(" DESC")
		}
		w(" = ", p.exprText(col, false))
		if col.derived {
			w("   (name derived from the expression; set one with AS)")
		}
		w("\n")
	}
}

// describeSettings writes what Describe shows only when the mapping has it: vars, codes, the
// salts' note, table options and the TTL plan.
func (p *Program) describeSettings(w func(...string)) {
	if len(p.vars) > 0 {
		w("\nVars:")
		for _, v := range p.vars {
			w(" ", v.Name, "=", literalText(v.Value))
		}
		w("\n")
	}
	if len(p.dicts) > 0 {
		w("\nCodes (on_missing_code: ")
		if p.keepMissing {
			w("keep")
		} else {
			w("reject")
		}
		w("):\n")
		for _, d := range p.dicts {
			w("  ", d.Name, ":")
			for _, e := range d.Entries {
				w(" ", e[0], "->", e[1])
			}
			w("\n")
		}
	}
	if p.saltUsed {
		w("\nrandom(n) salts hash every source value of the record (and, for Kafka, its topic/partition/offset): re-runs give the same salt.\n")
	}
	if len(p.options) > 0 {
		w("\nOptions:")
		for _, o := range p.options {
			w(" ", o[0], "='", o[1], "'")
		}
		w("\n")
	}
	if plan := p.TTLPlan(); plan != "" {
		w("\n", plan, "\n")
	}
}

// Fingerprint is a stable hash of the resolved mapping: the source schema, the target schema, each
// column's expression with vars substituted, the dictionaries, on_missing_code and the regions
// section. Options, labels and formatting do not count. resume and merge refuse mismatches.
func (p *Program) Fingerprint() string { return p.fingerprint }

func (p *Program) computeFingerprint() string {
	var sb strings.Builder
	sb.WriteString("rekey-mapping-v1\n")
	for _, c := range p.source {
		sb.WriteString("src " + strconv.Quote(c.Name) + " " + pipeline.NormalizeSourceType(c.Type) + "\n")
	}
	if p.sourceTable != "" {
		// which events of a Debezium topic are applied: another table's rows are another job's
		sb.WriteString("source table " + strconv.Quote(p.sourceTable) + "\n")
	}
	sb.WriteString("table " + strconv.Quote(p.table) + "\n")
	for _, col := range p.cols {
		sb.WriteString("col " + strconv.Quote(col.name) + " " + col.typ.String() + " key=" + strconv.Itoa(col.keyPos))
		if col.desc {
			sb.WriteString(" desc")
		}
		sb.WriteString(" = " + p.exprText(col, true) + "\n")
	}
	used := map[string]bool{}
	for _, col := range p.cols {
		if col.expr != nil {
			col.expr.walk(func(t *texpr) {
				if t.dict != nil {
					used[t.dict.name] = true
				}
			})
		}
	}
	for _, d := range p.dicts {
		if !used[d.Name] {
			continue
		}
		sb.WriteString("dict " + strconv.Quote(d.Name))
		entries := append([][2]string(nil), d.Entries...)
		sort.Slice(entries, func(i, j int) bool { return entries[i][0] < entries[j][0] })
		for _, e := range entries {
			sb.WriteString(" " + strconv.Quote(e[0]) + ":" + strconv.Quote(e[1]))
		}
		sb.WriteString("\n")
	}
	if len(used) > 0 {
		sb.WriteString("missing keep=" + strconv.FormatBool(p.keepMissing) + "\n")
	}
	if r := p.regions; r != nil {
		sb.WriteString("regions count=" + strconv.Itoa(r.Count) + " size=" + strconv.FormatInt(r.Size, 10))
		for _, s := range r.SplitKeys {
			sb.WriteString(" " + strconv.Quote(s))
		}
		sb.WriteString("\n")
	}
	if p.saltUsed && !slices.IsSorted(p.saltOrder) {
		// salts hashed in the source's order before: a run begun so is not resumed with these
		sb.WriteString("salt order")
		for _, i := range p.saltOrder {
			sb.WriteString(" " + strconv.Quote(p.source[i].Name))
		}
		sb.WriteString("\n")
	}
	if p.writeTime {
		sb.WriteString("write_time\n")
	}
	sum := sha256.Sum256([]byte(sb.String()))
	return hex.EncodeToString(sum[:])
}

func (t *texpr) walk(f func(*texpr)) {
	f(t)
	for _, a := range t.args {
		a.walk(f)
	}
}

func literalText(v pipeline.Value) string {
	if v.Kind == pipeline.KindInt {
		return strconv.FormatInt(v.Num, 10)
	}
	return quoteString(v.Str)
}

// String is the canonical text of the expression (vars by name).
func (t *texpr) String() string { return t.text(false) }

// text prints the expression canonically: resolved names, lowercase function names (hash is md5,
// substring is substr), substr as a method; values substitutes vars by their values.
func (t *texpr) text(values bool) string {
	var sb strings.Builder
	t.print(&sb, values)
	return sb.String()
}

func (t *texpr) prec() int {
	switch t.op {
	case opCast:
		return 0
	case opAdd, opConcat:
		return 1
	case opMul, opDiv, opMod:
		return 2
	}
	return 3
}

func (t *texpr) printOperand(sb *strings.Builder, values bool, paren bool) {
	if paren {
		sb.WriteString("(")
	}
	t.print(sb, values)
	if paren {
		sb.WriteString(")")
	}
}

func (t *texpr) print(sb *strings.Builder, values bool) {
	switch t.op {
	case opLit:
		if t.isVar && !values {
			sb.WriteString(quoteName(t.name))
			return
		}
		sb.WriteString(literalText(t.lit))
	case opSrc, opTgt:
		sb.WriteString(quoteName(t.name))
	case opCast:
		t.args[0].print(sb, values)
		sb.WriteString(" :: " + t.typ.String())
	case opAdd, opConcat, opMul, opDiv, opMod:
		sym := map[op]string{opAdd: "+", opConcat: "+", opMul: "*", opDiv: "/", opMod: "%"}[t.op]
		l, r := t.args[0], t.args[1]
		l.printOperand(sb, values, l.prec() < t.prec())
		sb.WriteString(" " + sym + " ")
		r.printOperand(sb, values, r.prec() <= t.prec())
	case opSubstr:
		t.args[0].printOperand(sb, values, t.args[0].prec() < 3)
		sb.WriteString(".substr(")
		for i, a := range t.args[1:] {
			if i > 0 {
				sb.WriteString(", ")
			}
			a.print(sb, values)
		}
		sb.WriteString(")")
	case opCode:
		sb.WriteString("code(")
		t.args[0].print(sb, values)
		sb.WriteString(", " + quoteName(t.dict.name) + ")")
	default:
		sb.WriteString(opNames[t.op] + "(")
		for i, a := range t.args {
			if i > 0 {
				sb.WriteString(", ")
			}
			a.print(sb, values)
		}
		sb.WriteString(")")
	}
}
