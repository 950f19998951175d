package transform

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
)

// DesignRule is one of Lindorm's table design rules (the wide-table and primary-key design
// guides) that a mapping does not follow. Code is stable and machine-readable.
type DesignRule struct {
	Code    string
	Error   bool // the target cannot hold the data; otherwise a warning
	Path    string
	Message string
}

// Design rule codes.
const (
	RuleKeyOnlyTarget   = "key_only_target"
	RuleMonotonicFirst  = "monotonic_first_key"
	RuleCollectionInKey = "collection_in_key"
	RuleNoRegions       = "no_regions"
	RuleSaltedKey       = "salted_key"
	RuleTrailingSalt    = "trailing_salt"
	RuleKeyCodeMerges   = "key_code_merges"
	RuleKeyConcatMerges = "key_concat_merges"
	RuleSplitKeysUneven = "split_keys_uneven"
	RuleConstantKey     = "constant_key_column"
)

// KeyOnly says whether every target column is in the primary key: Lindorm cannot write a row that
// holds only its primary key, so such a target cannot receive a single row.
func (p *Program) KeyOnly() bool { return p.target.KeyLen == len(p.target.Columns) }

// CarriedAs is the target column that holds source column src as it is (possibly cast), ""
// when none does (the column is excluded, or only computed into other columns): what a
// secondary index on the source column would index.
func (p *Program) CarriedAs(src string) string {
	for _, col := range p.cols {
		if i := p.bareSource(col); i >= 0 && strings.EqualFold(p.source[i].Name, src) {
			return col.name
		}
	}
	return ""
}

// KeyOnlyMessage says why a key-only target is refused and what to do.
func (p *Program) KeyOnlyMessage() string {
	return "every target column of table " + p.table + " is in the primary key: Lindorm \"cannot write a row of data " +
		"that contains only the primary key\" (wide-table design guide): add a value column to the mapping: a source " +
		"column left out of the key, or a constant target.columns entry (present: \"1\") when the source has no other column"
}

// SaltColumns lists the key columns (0-based, in key order) computed with random(n), and n for
// each: salts the client cannot compute from a row's identity.
func (p *Program) SaltColumns() (at []int, n []int64) {
	for i, col := range p.cols[:p.target.KeyLen] {
		if col.expr == nil {
			continue
		}
		col.expr.walk(func(t *texpr) {
			if t.op == opRandom && (len(at) == 0 || at[len(at)-1] != i) {
				v, _ := t.args[0].isConstInt()
				at, n = append(at, i), append(n, v)
			}
		})
	}
	return at, n
}

// SaltCost is what a salt of n values costs the reads and a replication, in the guide's words:
// the primary-key guide says to salt "only when write distribution is more critical than read
// simplicity".
func SaltCost(n int64) string {
	return "reads: a GET of one row becomes " + strconv.FormatInt(n, 10) + " lookups, one per salt value, and a SCAN " +
		strconv.FormatInt(n, 10) + " scans merged by the client (the primary-key guide: \"Reads for a single [userId][orderid] " +
		"require scanning across multiple salt values. Use this pattern only when write distribution is more critical than " +
		"read simplicity\"); replication: random(n) hashes the row's values, so an update writes the row under a new key " +
		"and leaves the old row behind, and rekey replicate rejects deletes (the key of the row to delete cannot be computed)"
}

// DesignRules checks the mapping against the design guides' static rules, in a stable order.
// regionsGiven says the region count comes from elsewhere (--regions).
func (p *Program) DesignRules(regionsGiven bool) []DesignRule {
	var rules []DesignRule
	if p.KeyOnly() {
		rules = append(rules, DesignRule{Code: RuleKeyOnlyTarget, Error: true, Path: "target", Message: p.KeyOnlyMessage()})
	}
	first := p.cols[0]
	if why := p.monotonic(first); why != "" {
		rules = append(rules, DesignRule{Code: RuleMonotonicFirst, Path: first.path, Message: "the first key column " +
			first.name + " is " + why + ": its values grow with time, so every write goes to the last region (a write hotspot); " +
			"put a hash prefix first (md5(x).substr(0,4) + x) or a modulo bucket column (x % 16) before it"})
	}
	if at, n := p.SaltColumns(); len(at) > 0 {
		if at[0] > 0 {
			col := p.cols[at[0]]
			rules = append(rules, DesignRule{Code: RuleTrailingSalt, Path: col.path, Message: "key column " + col.name +
				" is a salt behind " + p.cols[0].name + ": it spreads nothing, since Lindorm places a row by its key from the first column " +
				"on (wide-table guide: \"data is distributed based on the columns in a left-to-right order\"): the rows of one " +
				p.cols[0].name + " stay in its key range and only the reads pay for the salt; put a hash prefix of the first column " +
				"first (md5(x).substr(0,4) + x) or, if writes must spread whatever the reads cost, the salt first"})
		}
		rules = append(rules, DesignRule{Code: RuleSaltedKey, Path: p.cols[at[0]].path, Message: "the key has a salt (random(" +
			strconv.FormatInt(n[0], 10) + ")): " + SaltCost(n[0])})
	}
	for _, col := range p.cols[:p.target.KeyLen] {
		if src := p.bareSource(col); src >= 0 {
			if _, coll := lindormType(p.source[src].Type); coll {
				rules = append(rules, DesignRule{Code: RuleCollectionInKey, Path: col.path, Message: "key column " + col.name +
					" is the collection " + p.source[src].Type + " as JSON text: its encoding changes with element order " +
					"and makes long keys; key on a scalar column instead"})
			}
		}
	}
	for _, col := range p.cols[:p.target.KeyLen] {
		if col.expr == nil || !constantExpr(p.cols, col.expr) {
			continue
		}
		what := col.expr.String()
		if col.expr.op == opLit && col.expr.isVar {
			what = literalText(col.expr.lit) + ", the var " + col.expr.name
		}
		msg := "key column " + col.name + " is a constant (" + what + "): every row has this one value, so it tells no rows apart"
		if col.keyPos == 0 {
			msg += ", and as the first key column it puts every row in one region (a write hotspot)"
		}
		msg += "; leave it out of the key, or, if you meant a column computed from it (bucket: ts % numBuckets under target.columns), put that column in the key ([bucket])"
		rules = append(rules, DesignRule{Code: RuleConstantKey, Path: col.path, Message: msg})
	}
	for _, col := range p.cols[:p.target.KeyLen] {
		if msg := p.codeMerges(col); msg != "" {
			rules = append(rules, DesignRule{Code: RuleKeyCodeMerges, Path: col.path, Message: "key column " + col.name + " " + msg +
				": their rows get one key, and the last one written wins (the others are lost); give each value a code of its own"})
		}
	}
	for _, col := range p.cols[:p.target.KeyLen] {
		if msg := p.concatMerges(col); msg != "" {
			rules = append(rules, DesignRule{Code: RuleKeyConcatMerges, Path: col.path, Message: "key column " + col.name + " " + msg})
		}
	}
	if msg := p.splitKeysUneven(); msg != "" && !regionsGiven {
		rules = append(rules, DesignRule{Code: RuleSplitKeysUneven, Path: "regions.split_keys", Message: msg})
	}
	if p.regions == nil && !regionsGiven {
		rules = append(rules, DesignRule{Code: RuleNoRegions, Path: "regions", Message: "no regions: section: the table " +
			"gets one region and the bulk load goes into it; the guide recommends regions = data size in GB / 8 for a bulk " +
			"load (regions: {size: 8GiB} computes it from the data size, sampled with --source; or regions: {count: N})"})
	}
	return rules
}

// constantExpr says whether every row gives t one value: it reads no source column (through
// target.columns entries, cols) and no salt.
func constantExpr(cols []colDef, t *texpr) bool {
	switch t.op {
	case opLit:
		return true
	case opSrc, opRandom:
		return false
	case opTgt:
		return cols[t.idx].expr != nil && constantExpr(cols, cols[t.idx].expr)
	}
	for _, a := range t.args {
		if !constantExpr(cols, a) {
			return false
		}
	}
	return true
}

// TimeKey says why the rows written at one time sort side by side in key column i, in words
// that follow "it" ("" when nothing says they do): a TIMESTAMP or DATE, a timestamp, date or
// timeuuid source column carried as it is or cast, or reverse() of a timeuuid. The report judges
// such a column incremental whatever order it read the rows in: a sample spread over days
// cannot show in its windows what a timeuuid does within seconds.
func (p *Program) TimeKey(i int) string {
	if i < 0 || i >= p.target.KeyLen {
		return ""
	}
	col := p.cols[i]
	if why := p.monotonic(col); strings.Contains(why, "timeuuid") {
		return "is " + why + ", whose text begins with the low bits of its time: the rows written in the same seconds sort side by side"
	} else if why != "" {
		return "is " + why + ", and times only grow"
	}
	if col.expr != nil && col.expr.op == opReverse {
		if src := p.bareSource(colDef{expr: col.expr.args[0]}); src >= 0 && pipeline.NormalizeSourceType(p.source[src].Type) == "timeuuid" {
			return "is a reversed timeuuid (source column " + p.source[src].Name + "), whose text begins with its node and clock sequence, " +
				"the same for every row one writer makes, then the high bits of its time: the rows written in the same minutes sort side by side"
		}
	}
	return ""
}

// monotonic says why a key column's values grow with time ("" when they need not): a TIMESTAMP
// or DATE, or a timestamp, date or timeuuid source column carried as it is or cast.
func (p *Program) monotonic(col colDef) string {
	switch col.typ.T {
	case pipeline.TypeTimestamp:
		return "a TIMESTAMP"
	case pipeline.TypeDate:
		return "a DATE"
	}
	if src := p.bareSource(col); src >= 0 {
		t := pipeline.NormalizeSourceType(p.source[src].Type)
		if i := strings.IndexByte(t, '('); i >= 0 {
			t = t[:i] // timestamp(us): the unit its integers are read in, still a timestamp
		}
		switch t {
		case "timestamp", "date", "timeuuid":
			return "a " + t + " (source column " + p.source[src].Name + ")"
		}
	}
	return ""
}

// bareSource is the source column a target column carries as it is (possibly cast), or -1.
func (p *Program) bareSource(col colDef) int {
	if col.expr == nil {
		if col.origin == originSource {
			return col.src
		}
		return -1
	}
	t := col.expr
	for t.op == opCast || t.op == opStr || t.op == opLong || t.op == opInt {
		t = t.args[0]
	}
	switch t.op {
	case opSrc:
		return t.idx
	case opTgt:
		return p.bareSource(p.cols[t.idx])
	}
	return -1
}

// codeMerges says how key column col merges source values ("" when it does not): it reads
// code(x, dict) (directly or through target.columns entries) of a dictionary that gives several
// values one code, and the key does not also hold x as it is.
func (p *Program) codeMerges(col colDef) string {
	if col.expr == nil {
		return ""
	}
	var msg string
	var visit func(t *texpr)
	visit = func(t *texpr) {
		t.walk(func(t *texpr) {
			switch {
			case msg != "":
			case t.op == opTgt:
				if e := p.cols[t.idx].expr; e != nil {
					visit(e)
				}
			case t.op == opCode && !p.keyHoldsWhole(t.args[0]):
				if vals, code := t.dict.merged(); vals != nil {
					msg = "reads code(" + t.args[0].String() + ", " + t.dict.name + "), and dictionary " + t.dict.name + " gives " +
						strconv.Quote(vals[0]) + " and " + strconv.Quote(vals[1]) + " one code, " + strconv.Quote(code)
				}
			}
		})
	}
	visit(col.expr)
	return msg
}

// keyHoldsWhole says whether a key column carries the source column that x is as it is.
func (p *Program) keyHoldsWhole(x *texpr) bool {
	if x.op != opSrc {
		return false
	}
	for _, col := range p.cols[:p.target.KeyLen] {
		if p.bareSource(col) == x.idx {
			return true
		}
	}
	return false
}

// merged is two keys of the dictionary that have one code, and that code (nil when every key
// has its own).
func (d *dictionary) merged() ([]string, string) {
	for i, code := range d.vals {
		if of := d.codeOf[code]; of != d.keys[i] {
			return []string{of, d.keys[i]}, code
		}
	}
	return nil, ""
}

// concatMerges says how key column col can merge source rows by concatenation ("" when it cannot):
// it concatenates two or more parts whose lengths vary and that no key column holds as they are,
// so the boundary between them is not in the key ("ab" + "c" and "a" + "bc" are one key). A part
// of a fixed number of characters (a digest, substr(a, b), a literal, a code of a dictionary
// whose codes have one length) or held whole by a key column fixes its boundaries; the guide's
// hash prefix, md5(x).substr(0,4) + x, has one varying part only.
func (p *Program) concatMerges(col colDef) string {
	expr := col.expr
	for expr != nil && expr.op == opTgt && p.cols[expr.idx].expr != nil {
		expr = p.cols[expr.idx].expr
	}
	if expr == nil {
		return ""
	}
	var msg string
	expr.walk(func(t *texpr) {
		if msg != "" || t.op != opConcat {
			return
		}
		var loose []string
		for _, part := range concatParts(t) {
			if p.fixedChars(part) < 0 && !p.keyHoldsPart(part) {
				loose = append(loose, part.String())
			}
		}
		if len(loose) >= 2 {
			msg = "concatenates " + strings.Join(loose, " and ") + ", whose lengths vary, and no key column holds them as they are: " +
				"rows whose values split differently (\"ab\" + \"c\", \"a\" + \"bc\") get one key, and the last one written wins " +
				"(the others are lost); put them in key columns of their own ([" + strings.Join(loose, "][") + "]), or give all of them but one " +
				"a fixed length"
		}
	})
	return msg
}

// concatParts lists a concatenation's parts, left to right.
func concatParts(t *texpr) []*texpr {
	if t.op != opConcat {
		return []*texpr{t}
	}
	return append(concatParts(t.args[0]), concatParts(t.args[1])...)
}

// fixedChars is the number of characters every value of t has, or -1 when it varies (or a row
// may take another length rather than being rejected).
func (p *Program) fixedChars(t *texpr) int {
	switch t.op {
	case opLit:
		if t.isVar {
			return -1
		}
		return utf8.RuneCount(t.lit.AppendCanonical(nil))
	case opMD5, opSHA1, opSHA256:
		return digestLen(t.op)
	case opSubstr:
		a, aConst := t.args[1].isConstInt()
		if len(t.args) == 3 && aConst {
			if b, ok := t.args[2].isConstInt(); ok && b >= a {
				return int(b - a) // out of range rejects the row
			}
		}
	case opCode:
		if p.keepMissing {
			return -1 // a value missing from the dictionary is kept as it is
		}
		n := -1
		for i, v := range t.dict.vals {
			if c := utf8.RuneCountInString(v); i == 0 {
				n = c
			} else if c != n {
				return -1
			}
		}
		return n
	case opStr, opCast:
		if t.args[0].typ.T == pipeline.TypeVarchar || t.args[0].op == opLit {
			return p.fixedChars(t.args[0])
		}
	case opTgt:
		if e := p.cols[t.idx].expr; e != nil {
			return p.fixedChars(e)
		}
	case opConcat:
		l, r := p.fixedChars(t.args[0]), p.fixedChars(t.args[1])
		if l >= 0 && r >= 0 {
			return l + r
		}
	}
	return -1
}

// keyHoldsPart says whether a key column holds a concatenation's part as it is: the source column
// it is (possibly as text), or a key column it names.
func (p *Program) keyHoldsPart(t *texpr) bool {
	for t.op == opStr || t.op == opCast {
		t = t.args[0]
	}
	if t.op == opTgt {
		return t.idx < p.target.KeyLen
	}
	return p.keyHoldsWhole(t)
}

// splitKeysUneven says how regions.split_keys cut a hex hash prefix first key column unevenly
// ("" when they do not, or the column is no such prefix): the digest spreads rows evenly over the
// prefix's hex space, so a region's share of the rows is its share of that space; the busiest
// over twice the even share is named.
func (p *Program) splitKeysUneven() string {
	first := p.cols[0]
	if p.regions == nil || len(p.splits) == 0 || first.desc {
		return ""
	}
	if _, _, ok := hexPrefixWidth(first, p.cols); !ok {
		return ""
	}
	pos := make([]float64, 0, len(p.splits)+2)
	pos = append(pos, 0, 1)
	for _, v := range p.splits {
		pos = append(pos, hexPosition(v.Str))
	}
	slices.Sort(pos)
	n := len(p.splits) + 1
	best, at := -1.0, 0
	for i := 1; i < len(pos); i++ {
		if w := pos[i] - pos[i-1]; w > best {
			best, at = w, i-1
		}
	}
	if best <= 2/float64(n) {
		return ""
	}
	bound := func(i int) string {
		switch {
		case i < 0:
			return "-inf"
		case i >= len(p.splits):
			return "+inf"
		}
		return strconv.Quote(p.splits[i].Str)
	}
	return fmt.Sprintf("regions.split_keys cut the hex hash prefix of %s unevenly: region %d [%s, %s) takes %.1f%% of the prefix's hex space, and so of the rows (even: %.1f%%, %.1fx): split keys of a hex prefix are hex digits (0-9 then a-f); regions: {count: %d} gives %d equal slices of the hex space",
		first.name, at, bound(at-1), bound(at), 100*best, 100/float64(n), best*float64(n), n, n)
}

// hexPosition is the share of the lowercase hex strings that sort before s.
func hexPosition(s string) float64 {
	pos, scale := 0.0, 1.0
	for i := 0; i < len(s); i++ {
		c := s[i]
		below := 0 // hex digits below c
		switch {
		case c >= '0' && c <= '9':
			below = int(c - '0')
		case c >= 'a' && c <= 'f':
			below = int(c-'a') + 10
		case c > '9' && c < 'a':
			below = 10
		case c > 'f':
			below = 16
		}
		pos += float64(below) * scale / 16
		if below == 16 || !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			break
		}
		scale /= 16
	}
	return pos
}
