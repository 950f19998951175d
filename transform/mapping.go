// Package transform reads rekey's mapping files (YAML, decoded strictly), compiles the key
// expression language into closures, evaluates them per record without allocating, and plans the
// table's pre-split regions. It is pure: no I/O beyond reading the mapping file, no logging.
//
// See README.md in this folder for the mapping file, the language and the exact definitions
// (salts, derived names, region strategies).
package transform

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rekey/rekey/pipeline"
)

// Mapping is a decoded mapping file. Order is kept wherever the file's order matters (source
// columns, target columns, options).
type Mapping struct {
	File    string // the name given to Decode (the path, for Load); used in messages
	Version int
	Source  SourceSpec
	Vars    []Var
	Target  TargetSpec
	Regions *RegionsSpec // nil when the file has no regions: section
	Queries []Query      // the queries: section (access patterns for `rekey report`), in file order
	// Workload is how `rekey report` weighs the declared reads against write spread:
	// WorkloadReadsFirst ("" in the file: the default) or WorkloadWriteHeavy.
	Workload string

	lines map[string]int // path -> line in the file, for messages
}

// SourceSpec is the mapping's source: section.
type SourceSpec struct {
	Name    string                // keyspace.table, topic, or a label
	Columns pipeline.SourceSchema // in file order; types lowercased as written
	// TimestampUnit is how integer epochs in timestamp columns are read: "s", "ms", "us", "ns",
	// or "" (milliseconds, rejecting integers that look like another unit). Compile writes it
	// into the source schema's types ("timestamp(s)"), which carry it to the sources.
	TimestampUnit string
	// WriteOrder names the source column that holds a row's creation time (or a value that
	// rises with it, such as a sequence): `rekey report` judges hotspots in its order. "" when
	// the mapping does not say.
	WriteOrder string
	// Table is the table of a Debezium topic the mapping reads ("db.table", "schema.table",
	// "db.schema.table" or "keyspace.table", as the events' source names it): events of other
	// tables on the topic are counted and skipped. "" when the mapping does not say: the topic's
	// first event names the table, and an event of another table stops the read.
	Table string
}

// Var is a named constant usable in expressions (vars: section): an integer or a string.
type Var struct {
	Name  string
	Value pipeline.Value // KindInt or KindText
}

// ColumnExpr is one target.columns entry: a target column and the expression computing it.
type ColumnExpr struct {
	Name string
	Expr string
}

// Dict is one target.codes dictionary, entries in file order.
type Dict struct {
	Name    string
	Entries [][2]string // from, to
}

// TargetSpec is the mapping's target: section.
type TargetSpec struct {
	Table         string
	PrimaryKey    string
	Columns       []ColumnExpr
	Exclude       []string
	Codes         []Dict
	OnMissingCode string      // "reject" (default) or "keep"
	Options       [][2]string // copied into CREATE TABLE ... WITH (...), in file order
	// WriteTime (target.write_time: true) writes each cell with its source write time
	// (Cassandra's WRITETIME(), in milliseconds) as the Lindorm cell timestamp, instead of the
	// time of the copy. Off by default.
	WriteTime bool
}

// RegionsSpec is the mapping's regions: section; exactly one of the fields is set.
type RegionsSpec struct {
	Count     int
	Size      int64  // bytes
	SizeText  string // as written ("8GiB")
	SplitKeys []string
}

// Problem is one thing wrong with a mapping, located by its path in the file
// ("target.primary_key[1]") and, when known, its line.
type Problem struct {
	Path    string
	Line    int
	Message string
}

func (p Problem) String() string {
	s := p.Message
	if p.Path != "" {
		s = p.Path + ": " + s
	}
	if p.Line > 0 {
		s += " (line " + strconv.Itoa(p.Line) + ")"
	}
	return s
}

// MappingError lists every problem found in a mapping; Error prints one per line.
type MappingError struct {
	File     string
	Problems []Problem
}

func (e *MappingError) Error() string {
	prefix := ""
	if e.File != "" {
		prefix = e.File + ": "
	}
	if len(e.Problems) == 1 {
		return prefix + e.Problems[0].String()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s%d problems in the mapping:", prefix, len(e.Problems))
	for _, p := range e.Problems {
		sb.WriteString("\n  ")
		sb.WriteString(p.String())
	}
	return sb.String()
}

// problems collects Problems with their lines.
type problems struct {
	list  []Problem
	lines map[string]int
}

func (ps *problems) add(path string, line int, format string, args ...any) {
	if line == 0 && ps.lines != nil {
		// the closest enclosing path that has a line
		for p := path; p != ""; {
			if l, ok := ps.lines[p]; ok {
				line = l
				break
			}
			i := strings.LastIndexAny(p, ".[")
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	ps.list = append(ps.list, Problem{Path: path, Line: line, Message: msg})
}

// Load reads and strictly decodes a mapping file.
func Load(path string) (*Mapping, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("mapping file %s not found: check the -m/--mapping path (mappings/*.yaml in rekey's repository are examples): %w", path, err)
	}
	if err != nil {
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return nil, fmt.Errorf("mapping %s is a folder: -m/--mapping takes one mapping file%s (several -m fill several tables from one read of the source)", path, folderMappings(path))
		}
		return nil, fmt.Errorf("read mapping: %w", err)
	}
	return Decode(data, path)
}

// folderMappings names up to two mapping files in dir, as ", such as a.yaml or b.yaml" ("" when
// it holds none).
func folderMappings(dir string) string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) && len(names) < 2 {
			names = append(names, filepath.Join(dir, n))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return ", such as " + strings.Join(names, " or ")
}

// Decode strictly decodes a mapping: unknown fields, bad values, expressions that do not parse or
// type-check, unknown columns, functions, vars and dictionaries, and key rules (at most 5 key
// columns, VARBINARY only last, no JSON) are all reported together as a *MappingError. When the
// file lists source.columns, the mapping is fully compiled against them; otherwise the checks
// that need the source's columns wait for Compile.
func Decode(data []byte, name string) (*Mapping, error) {
	d := &decoder{m: &Mapping{File: name, lines: map[string]int{}}, lines: strings.Split(string(data), "\n")}
	d.ps.lines = d.m.lines
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, &MappingError{File: name, Problems: []Problem{{Message: yamlProblem(data, err)}}}
	}
	if len(doc.Content) == 0 {
		return nil, &MappingError{File: name, Problems: []Problem{{Message: "the mapping file is empty"}}}
	}
	// a second document (a '---' line, two mappings pasted into one file) would be dropped
	// unread, and whatever it sets with it
	var next yaml.Node
	if err := dec.Decode(&next); err != nil && err != io.EOF {
		return nil, &MappingError{File: name, Problems: []Problem{{Message: yamlProblem(data, err)}}}
	} else if err == nil && len(next.Content) > 0 && !isNull(next.Content[0]) {
		d.ps.add("", next.Line, "more than one YAML document: a '---' line starts another, which rekey would not read; "+
			"write one mapping per file (several -m fill several tables), or remove the '---' line to make the rest part of this mapping")
	}
	d.root(doc.Content[0])
	m := d.m
	if len(m.Source.Columns) > 0 {
		newCompiler(m, nil, &d.ps).run()
	} else {
		syntaxCheck(m, &d.ps)
	}
	if len(d.ps.list) > 0 {
		return nil, &MappingError{File: name, Problems: d.ps.list}
	}
	return m, nil
}

var yamlLine = regexp.MustCompile(`line (\d+):`)

// yamlProblem explains a YAML syntax error. The usual one in a mapping is an unquoted cast,
// `amount: amount :: DECIMAL(18,2)`: YAML reads the ': ' inside it as a second key.
func yamlProblem(data []byte, err error) string {
	msg := "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return msg
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return msg
	}
	if strings.Contains(msg, "found character that cannot start any token") {
		// a tab in the indentation, or a value that starts with a back-quoted name (or '@'),
		// which YAML reserves
		raw := lines[n-1]
		if indent := raw[:len(raw)-len(strings.TrimLeft(raw, " \t"))]; strings.Contains(indent, "\t") {
			return fmt.Sprintf("%s: line %d is indented with a tab: YAML indents with spaces only, replace the tab with spaces", msg, n)
		}
		key, value, ok := strings.Cut(strings.TrimSpace(raw), ": ")
		if value = strings.TrimLeft(value, " \t"); ok && value != "" && (value[0] == '`' || value[0] == '@') {
			expr, comment := splitComment(value)
			return fmt.Sprintf("%s: the value on line %d starts with '%c', which YAML reserves: quote the expression, %s: %q%s",
				msg, n, value[0], key, expr, comment)
		}
		return msg
	}
	if strings.Contains(msg, "found unexpected end of stream") {
		if why := openQuote(lines, n); why != "" {
			return msg + ": " + why
		}
		return msg
	}
	// YAML names the line where the enclosing section starts ("did not find expected key"), or
	// the line that reads as a key in a value: a line indented out of step is the usual cause
	switch {
	case strings.Contains(msg, "did not find expected"):
		if why := indentProblem(lines, n, len(lines)); why != "" {
			return msg + ": " + why
		}
		if why := bracketValue(lines, n); why != "" {
			return msg + ": " + why
		}
		return msg
	case !strings.Contains(msg, "mapping values are not allowed"):
		return msg
	}
	if why := indentProblem(lines, n, n); why != "" {
		return msg + ": " + why
	}
	line := strings.TrimSpace(lines[n-1])
	key, value, ok := strings.Cut(line, ": ")
	if !ok || !strings.Contains(value, ": ") && !strings.Contains(value, "::") {
		return msg + " (a value that contains ': ' must be quoted)"
	}
	expr, comment := splitComment(value)
	return fmt.Sprintf("%s: %q contains ': ', which YAML reads as another key: quote the expression, %s: %q%s",
		msg, line, key, expr, comment)
}

// indentProblem names the first line from line from to line to (1-based) whose indentation does
// not fit the block structure above it: deeper than a line that already has a value, or lined up
// with no section it could belong to. "" when it finds none. It reads block-style YAML as
// mappings are written; flow collections and block scalars are skipped.
func indentProblem(lines []string, from, to int) string {
	levels := []int{0} // the indentations of the open sections, innermost last
	open := false      // the line before is a key without a value: the next may go deeper
	flow := 0          // brackets of a flow collection left open by the lines before
	scalar := -1       // in a block scalar (| or >) of a key at this indentation
	prev, prevText := 0, ""
	for i, raw := range lines {
		n := i + 1
		if n > to {
			break
		}
		text := strings.TrimLeft(raw, " ")
		if text == "" || text[0] == '#' || text == "---" {
			continue
		}
		ind := len(raw) - len(text)
		text = strings.TrimRight(text, " \t\r")
		if scalar >= 0 && ind > scalar {
			continue
		}
		scalar = -1
		if flow > 0 {
			flow = max(flow+flowDepth(text), 0)
			continue
		}
		switch top := levels[len(levels)-1]; {
		case ind > top && open:
			levels = append(levels, ind)
		case ind > top:
			if n >= from {
				return fmt.Sprintf("line %d (%s) is indented by %d spaces, deeper than line %d (%s), which already has a value: indent it as the keys beside it",
					n, text, ind, prev, prevText)
			}
			continue // a plain value continued on the next line
		default:
			var at []string // the sections it could belong to, innermost first
			for j := len(levels) - 1; j >= 0; j-- {
				at = append(at, strconv.Itoa(levels[j]))
			}
			for len(levels) > 1 && levels[len(levels)-1] > ind {
				levels = levels[:len(levels)-1]
			}
			if levels[len(levels)-1] != ind && n >= from {
				list := at[0]
				if len(at) > 1 {
					list = strings.Join(at[:len(at)-1], ", ") + " or " + at[len(at)-1]
				}
				unit := "spaces"
				if ind == 1 {
					unit = "space"
				}
				return fmt.Sprintf("line %d (%s) is indented by %d %s, which lines up with no section above it (%s spaces): indent it as the keys beside it",
					n, text, ind, unit, list)
			}
		}
		prev, prevText = n, text
		// a list item's content is a section of its own: "- equal: [x]" then "  range: y"
		body := text
		for strings.HasPrefix(body, "- ") {
			rest := strings.TrimLeft(body[2:], " ")
			ind += len(body) - len(rest)
			body = rest
			if strings.Contains(body, ": ") || strings.HasSuffix(body, ":") {
				levels = append(levels, ind)
			}
		}
		value, _ := splitComment(body)
		open = strings.HasSuffix(value, ":") || body == "-"
		if strings.HasSuffix(value, "|") || strings.HasSuffix(value, ">") || strings.HasSuffix(value, "|-") || strings.HasSuffix(value, ">-") {
			scalar = ind
		}
		flow = max(flowDepth(value), 0)
	}
	return ""
}

// openQuote finds the first line from line from (1-based) whose value opens a quote that the
// line does not close ("" when none does): YAML then reads the rest of the file into it.
func openQuote(lines []string, from int) string {
	for i := max(from-1, 0); i < len(lines); i++ {
		text := strings.TrimSpace(lines[i])
		text = strings.TrimSpace(strings.TrimPrefix(text, "- "))
		if _, value, ok := strings.Cut(text, ": "); ok {
			text = strings.TrimSpace(value)
		}
		if text == "" || text[0] != '"' && text[0] != '\'' {
			continue
		}
		q, closed := text[0], false
		for j := 1; j < len(text); j++ {
			if text[j] == '\\' && q == '"' {
				j++
				continue
			}
			if text[j] == q {
				if q == '\'' && j+1 < len(text) && text[j+1] == '\'' {
					j++ // '' is a quote inside
					continue
				}
				closed = true
				break
			}
		}
		if !closed {
			return fmt.Sprintf("the value on line %d opens a quote, %c, that the line does not close (YAML read on to the end of the file for it): end the value with %c", i+1, q, q)
		}
	}
	return ""
}

// bracketValue finds the first line from line from (1-based) whose value starts with '[' and
// goes on after the bracket that closes it, as a primary key written without quotes does
// ([md5(userid).substr(0,4)][orderid]): YAML reads it as a list, then fails. "" when none does.
func bracketValue(lines []string, from int) string {
	for i := max(from-1, 0); i < len(lines); i++ {
		key, value, ok := strings.Cut(strings.TrimSpace(lines[i]), ": ")
		value = strings.TrimSpace(value)
		if !ok || !strings.HasPrefix(value, "[") {
			continue
		}
		expr, comment := splitComment(value)
		if end := strings.IndexByte(expr, ']'); end < 0 || end == len(expr)-1 {
			continue
		}
		return fmt.Sprintf("the value on line %d starts with '[', which YAML reads as a list: quote the key, %s: %q%s", i+1, key, expr, comment)
	}
	return ""
}

// flowDepth is the number of '[' and '{' a line opens, less the ']' and '}' it closes, outside
// quotes.
func flowDepth(s string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		}
	}
	return depth
}

// splitComment splits a YAML value as written into the value and a comment after it (from the
// blanks before its '#'), so that a suggestion to quote the value leaves the comment outside.
func splitComment(value string) (expr, comment string) {
	expr = value
	for i := 1; i < len(value); i++ {
		if value[i] == '#' && (value[i-1] == ' ' || value[i-1] == '\t') {
			expr = strings.TrimRight(value[:i], " \t")
			comment = value[len(expr):]
			break
		}
	}
	return strings.TrimSpace(expr), comment
}

type decoder struct {
	m     *Mapping
	ps    problems
	lines []string // the file's lines, for messages that quote them
}

type pair struct {
	key  string
	k, v *yaml.Node
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	}
	return "something else"
}

// pairs returns a mapping node's entries in order, reporting non-scalar and duplicate keys.
func (d *decoder) pairs(n *yaml.Node, path string) []pair {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.ps.add(path, n.Line, "want a mapping (name: value), found %s", kindName(n))
		return nil
	}
	seen := map[string]bool{}
	var out []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.ps.add(path, k.Line, "keys must be plain names, found %s", kindName(k))
			continue
		}
		p := join(path, k.Value)
		if seen[k.Value] {
			d.ps.add(p, k.Line, "duplicate key %q", k.Value)
			continue
		}
		seen[k.Value] = true
		d.m.lines[p] = k.Line
		out = append(out, pair{key: k.Value, k: k, v: v})
	}
	return out
}

// sections are the mapping's sections with their fields, for where a misplaced field belongs:
// the top level (""), source, target, regions and a queries entry.
var sections = []struct {
	name   string
	fields []string
}{
	{"", []string{"version", "source", "vars", "target", "regions", "queries", "workload"}},
	{"source", []string{"name", "table", "columns", "timestamp_unit", "write_order"}},
	{"target", []string{"table", "primary_key", "columns", "exclude", "codes", "on_missing_code", "options", "write_time"}},
	{"regions", []string{"count", "size", "split_keys"}},
	{"queries", []string{"equal", "range", "order"}},
}

// sectionFields are the fields of section name.
func sectionFields(name string) []string {
	for _, s := range sections {
		if s.name == name {
			return s.fields
		}
	}
	return nil
}

// place says where a section's fields go: "at the top level", "under target".
func place(path string) string {
	switch {
	case path == "":
		return "at the top level"
	case strings.HasPrefix(path, "queries["):
		return "in a queries entry"
	}
	return "under " + path
}

// belongs says where field key goes when the section at path does not hold it: "under
// target:", "at the top level (not indented)"; "" when no section holds it.
func belongs(key, path string) string {
	if strings.HasPrefix(path, "queries[") {
		path = "queries"
	}
	var at []string
	for _, s := range sections {
		if s.name != path && slices.Contains(s.fields, key) {
			switch s.name {
			case "":
				at = append(at, "at the top level (not indented)")
			case "queries":
				at = append(at, "in a queries: entry")
			default:
				at = append(at, "under "+s.name+":")
			}
		}
	}
	return strings.Join(at, " or ")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields decodes a mapping with a fixed set of fields; unknown ones are problems.
func (d *decoder) fields(n *yaml.Node, path string, allowed ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for _, p := range d.pairs(n, path) {
		ok := false
		for _, a := range allowed {
			if p.key == a {
				ok = true
			}
		}
		if !ok {
			if where := belongs(p.key, path); where != "" {
				d.ps.add(join(path, p.key), p.k.Line, "field %q does not go %s: it belongs %s (allowed here: %s)", p.key, place(path), where, strings.Join(allowed, ", "))
				continue
			}
			d.ps.add(join(path, p.key), p.k.Line, "unknown field %q%s (allowed here: %s)", p.key, didYouMean(p.key, allowed), strings.Join(allowed, ", "))
			continue
		}
		out[p.key] = p.v
	}
	return out
}

// didYouMean is ": did you mean x?" for the name among names nearest to s (ignoring case, at
// most 2 edits away and fewer than half its length: a misspelling), or "".
func didYouMean(s string, names []string) string {
	best, bestD := "", 3
	ls := strings.ToLower(s)
	for _, n := range names {
		if d := editDistance(ls, strings.ToLower(n)); d < bestD && 2*d < len([]rune(s)) {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return ": did you mean " + best + "?"
}

// editDistance is the Levenshtein distance between a and b, in characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := prev[j-1]
			if ra[i-1] != rb[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	n = deref(n)
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		d.ps.add(path, n.Line, "want a single value, found %s", kindName(n))
		return "", false
	}
	if n.Tag == "!!null" {
		return "", true
	}
	return n.Value, true
}

func (d *decoder) integer(n *yaml.Node, path string) (int64, bool) {
	s, ok := d.scalar(n, path)
	if !ok {
		return 0, false
	}
	v, why := decimalInt(deref(n), s)
	if why != "" {
		d.ps.add(path, deref(n).Line, "%s", why)
		return 0, false
	}
	return v, true
}

// decimalInt reads an integer scalar as written, in decimal; why says what is wrong otherwise:
// another notation YAML reads as an integer (1_000, 0x10), a number beyond 64 bits, or no
// integer at all.
func decimalInt(n *yaml.Node, s string) (v int64, why string) {
	v, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err == nil && n.Tag == "!!int":
		return v, ""
	case errors.Is(err, strconv.ErrRange) && n.Tag != "!!str":
		return 0, "integer " + s + " is out of the 64-bit range"
	case n.Tag == "!!int":
		return 0, "want a decimal integer (as 1000), found " + strconv.Quote(s)
	}
	return 0, "want an integer, found " + strconv.Quote(s)
}

func (d *decoder) root(n *yaml.Node) {
	if r := deref(n); !isNull(r) && r.Kind != yaml.MappingNode {
		d.ps.add("", r.Line, "the file holds %s at its top: a mapping file is a YAML mapping with version:, source: and target: at its top level, each at the start of its line (not after '- ')", kindName(r))
		return
	}
	f := d.fields(n, "", sectionFields("")...)
	if v, ok := f["version"]; !ok {
		d.ps.add("version", 0, "missing: write `version: 1` at the top of the mapping")
	} else if x, ok := d.integer(v, "version"); ok {
		if x != 1 {
			d.ps.add("version", deref(v).Line, "unsupported version %d: this rekey reads version 1", x)
		}
		d.m.Version = int(x)
	}
	if s, ok := f["source"]; ok {
		d.source(s)
	} else {
		d.ps.add("source", 0, "missing: the source section names the input and its columns")
	}
	if v, ok := f["vars"]; ok {
		d.vars(v)
	}
	if t, ok := f["target"]; ok {
		d.target(t)
	} else {
		d.ps.add("target", 0, "missing: the target section names the table and its primary_key")
	}
	if r, ok := f["regions"]; ok {
		d.regions(r)
	}
	if q, ok := f["queries"]; ok {
		d.queries(q)
	}
	if v, ok := f["workload"]; ok {
		if w, ok := d.scalar(v, "workload"); ok {
			if msg := CheckWorkload(w); msg != "" {
				d.ps.add("workload", deref(v).Line, "%s", msg)
			}
			d.m.Workload = w
		}
	}
}

// Workloads: how `rekey report` ranks key designs. Reads first is the guides' default: a salt or
// a bucket the client cannot compute multiplies every read, and the primary-key guide salts "only
// when write distribution is more critical than read simplicity". write_heavy says it is: the
// write spread ranks before the reads' cost.
const (
	WorkloadReadsFirst = "reads_first"
	WorkloadWriteHeavy = "write_heavy"
)

// CheckWorkload says what is wrong with a workload name ("" when nothing).
func CheckWorkload(w string) string {
	switch w {
	case WorkloadReadsFirst, WorkloadWriteHeavy:
		return ""
	}
	return "want " + WorkloadReadsFirst + " (the default: reads weigh more than write spread) or " + WorkloadWriteHeavy +
		" (write spread matters more than read simplicity: salts may rank first), found " + strconv.Quote(w)
}

func (d *decoder) source(n *yaml.Node) {
	f := d.fields(n, "source", sectionFields("source")...)
	if v, ok := f["name"]; ok {
		d.m.Source.Name, _ = d.scalar(v, "source.name")
	}
	if v, ok := f["write_order"]; ok {
		d.m.Source.WriteOrder, _ = d.scalar(v, "source.write_order")
	}
	if v, ok := f["table"]; ok {
		if t, ok := d.scalar(v, "source.table"); ok {
			if parts := strings.Split(t, "."); len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") || strings.TrimSpace(t) != t {
				d.ps.add("source.table", deref(v).Line, "want the table a Debezium topic carries as its events' source names it: db.table (MySQL), schema.table or db.schema.table (PostgreSQL, SQL Server, Oracle), keyspace.table (Cassandra), found %q", t)
			} else {
				d.m.Source.Table = t
			}
		}
	}
	if v, ok := f["timestamp_unit"]; ok {
		if u, ok := d.scalar(v, "source.timestamp_unit"); ok {
			switch u {
			case "s", "ms", "us", "ns":
				d.m.Source.TimestampUnit = u
			default:
				d.ps.add("source.timestamp_unit", deref(v).Line, "want s, ms, us or ns (the unit of integer epochs in timestamp columns), found %q", u)
			}
		}
	}
	if v, ok := f["columns"]; ok {
		seen := map[string]string{}
		for _, p := range d.pairs(v, "source.columns") {
			if p.key == "" {
				d.ps.add("source.columns", p.k.Line, "empty column name: give the column the name the source has for it")
				continue
			}
			path := "source.columns." + p.key
			t, ok := d.scalar(p.v, path)
			if !ok {
				continue
			}
			if msg := checkCQL(t); msg != "" {
				d.ps.add(path, p.v.Line, "%s%s", msg, sqlTypeHint(p.key, t))
				continue
			}
			if prev, dup := seen[strings.ToLower(p.key)]; dup {
				d.ps.add(path, p.k.Line, "column %q differs from column %q only in case", p.key, prev)
			}
			seen[strings.ToLower(p.key)] = p.key
			d.m.Source.Columns = append(d.m.Source.Columns, pipeline.SourceColumn{Name: p.key, Type: strings.ToLower(strings.TrimSpace(t))})
		}
	}
}

// sqlTypes are type names of SQL and Java that a source column is often given, with the CQL
// type that holds the same values.
var sqlTypes = map[string]string{"string": "text", "char": "text", "long": "bigint", "integer": "int",
	"bool": "boolean", "datetime": "timestamp", "numeric": "decimal", "number": "decimal",
	"binary": "blob", "bytes": "blob", "varbinary": "blob", "json": "text"}

// sqlTypeHint says what to write for a source column typed as SQL writes it: a CQL type with a
// size or precision (decimal(10,2), varchar(255)), or an SQL or Java type name. "" otherwise.
func sqlTypeHint(col, typ string) string {
	base, args, sized := strings.Cut(strings.TrimSpace(typ), "(")
	base = strings.ToLower(strings.TrimSpace(base))
	if sized && checkCQL(base) == "" {
		hint := ": source.columns take the source's CQL types, which have no size or precision: write " + col + ": " + base
		target := strings.ToUpper(base) + "(" + args
		if tt, _, _, err := pipeline.ParseType(target); err == nil && tt != pipeline.TypeVarchar {
			return hint + ", and give the target column its type in target.columns, " + col + ": " + strconv.Quote(col+" :: "+target)
		}
		t, _ := lindormType(base)
		return hint + " (read as Lindorm's " + t.String() + ")"
	}
	if base == "real" && !sized {
		// 4 bytes in PostgreSQL and SQL Server, a double in MySQL (unless REAL_AS_FLOAT)
		return ": the CQL type for it is float for a 4-byte REAL (PostgreSQL's, SQL Server's: " + col + ": float), double for MySQL's, which is 8 bytes (" + col + ": double)"
	}
	if cql, ok := sqlTypes[base]; ok && !sized {
		return ": the CQL type for it is " + cql + " (" + col + ": " + cql + ")"
	}
	return ""
}

func (d *decoder) vars(n *yaml.Node) {
	for _, p := range d.pairs(n, "vars") {
		path := "vars." + p.key
		if needsQuote(p.key) {
			d.ps.add(path, p.k.Line, "a var name must be a plain name (letters, digits, _ and -)")
			continue
		}
		s, ok := d.scalar(p.v, path)
		if !ok {
			continue
		}
		var val pipeline.Value
		i, why := decimalInt(deref(p.v), s)
		switch tag := deref(p.v).Tag; {
		case tag == "!!int" || strings.HasPrefix(why, "integer "):
			if why != "" {
				d.ps.add(path, p.v.Line, "%s", why)
				continue
			}
			val = pipeline.Int(i)
		case tag == "!!str":
			val = pipeline.Text(s)
		default:
			d.ps.add(path, p.v.Line, "a var is an integer or a string, found %q", s)
			continue
		}
		d.m.Vars = append(d.m.Vars, Var{Name: p.key, Value: val})
	}
}

func (d *decoder) target(n *yaml.Node) {
	t := &d.m.Target
	f := d.fields(n, "target", sectionFields("target")...)
	if v, ok := f["write_time"]; ok {
		switch s, _ := d.scalar(v, "target.write_time"); s {
		case "true":
			t.WriteTime = true
		case "false":
		default:
			d.ps.add("target.write_time", deref(v).Line, "want true or false, found %q", s)
		}
	}
	if v, ok := f["table"]; ok {
		t.Table, _ = d.scalar(v, "target.table")
		// Lindorm's table names: 1 to 255 characters, letters, digits, '-', '_' and '.' (which
		// its CREATE TABLE reference allows and its quotas page does not list: UNCERTAIN), not
		// starting with '.' or '-'; CREATE TABLE would refuse any other only after the migration
		switch {
		case len(t.Table) < 1 || len(t.Table) > 255:
			d.ps.add("target.table", deref(v).Line, "want a Lindorm table name of 1 to 255 characters, found %d", len(t.Table))
		case !lindormTableName.MatchString(t.Table):
			d.ps.add("target.table", deref(v).Line, "want a Lindorm table name (letters, digits, '-', '_' and '.', not starting with '-' or '.'; the namespace is --namespace, or the lindorm:// URI's database), found %q", t.Table)
		}
	} else {
		d.ps.add("target.table", 0, "missing: the Lindorm table to create and load")
	}
	if v, ok := f["primary_key"]; ok {
		if dv := deref(v); dv.Kind == yaml.SequenceNode {
			// [userid] unquoted, as the guide prints keys
			written := "[...]"
			if l := dv.Line; l >= 1 && l <= len(d.lines) {
				_, value, _ := strings.Cut(d.lines[l-1], ":")
				written, _ = splitComment(strings.TrimSpace(value))
			}
			d.ps.add("target.primary_key", dv.Line, "YAML reads %s as a list: quote the key, primary_key: %q", written, written)
		} else {
			t.PrimaryKey, _ = d.scalar(v, "target.primary_key")
			d.m.lines["target.primary_key"] = deref(v).Line
			if strings.TrimSpace(t.PrimaryKey) == "" {
				d.ps.add("target.primary_key", deref(v).Line, "empty: write the key as bracketed elements, e.g. \"[md5(userid).substr(0,4)][userid][orderid]\"")
			}
		}
	} else {
		d.ps.add("target.primary_key", 0, "missing: write the key as bracketed elements, e.g. \"[md5(userid).substr(0,4)][userid][orderid]\"")
	}
	if v, ok := f["columns"]; ok {
		for _, p := range d.pairs(v, "target.columns") {
			if p.key == "" {
				d.ps.add("target.columns", p.k.Line, "empty column name: name the target column the expression computes")
				continue
			}
			s, ok := d.scalar(p.v, "target.columns."+p.key)
			if !ok {
				continue
			}
			d.m.lines["target.columns."+p.key] = p.v.Line
			t.Columns = append(t.Columns, ColumnExpr{Name: p.key, Expr: s})
		}
	}
	if v, ok := f["exclude"]; ok && !isNull(v) {
		v = deref(v)
		if v.Kind != yaml.SequenceNode {
			d.ps.add("target.exclude", v.Line, "want a list of source column names, found %s", kindName(v))
		} else {
			for i, e := range v.Content {
				path := "target.exclude[" + strconv.Itoa(i) + "]"
				if s, ok := d.scalar(e, path); ok {
					d.m.lines[path] = deref(e).Line
					t.Exclude = append(t.Exclude, s)
				}
			}
		}
	}
	if v, ok := f["codes"]; ok {
		for _, p := range d.pairs(v, "target.codes") {
			dict := Dict{Name: p.key}
			for _, e := range d.pairs(p.v, "target.codes."+p.key) {
				path := "target.codes." + p.key + "." + e.key
				if isNull(e.v) {
					// taobao: with nothing after it would code every taobao as ''
					d.ps.add(path, e.k.Line, "no code for %q: write its code (the empty code as '')", e.key)
					continue
				}
				s, ok := d.scalar(e.v, path)
				if ok {
					dict.Entries = append(dict.Entries, [2]string{e.key, s})
				}
			}
			t.Codes = append(t.Codes, dict)
		}
	}
	t.OnMissingCode = "reject"
	if v, ok := f["on_missing_code"]; ok {
		s, _ := d.scalar(v, "target.on_missing_code")
		switch s {
		case "reject", "keep":
			t.OnMissingCode = s
		default:
			d.ps.add("target.on_missing_code", deref(v).Line, "want reject or keep, found %q", s)
		}
	}
	if v, ok := f["options"]; ok {
		seen := map[string]bool{}
		for _, p := range d.pairs(v, "target.options") {
			s, ok := d.scalar(p.v, "target.options."+p.key)
			if !ok {
				continue
			}
			if seen[strings.ToUpper(p.key)] {
				d.ps.add("target.options."+p.key, p.k.Line, "option %q is set twice", p.key)
			}
			seen[strings.ToUpper(p.key)] = true
			// ddl.sql writes the name bare, NAME='value': Lindorm's grammar takes an identifier
			// there, and a bare one is a letter, then letters, digits and underscores
			if !optionName.MatchString(p.key) {
				d.ps.add("target.options."+p.key, p.k.Line, "%q is not an option name ddl.sql can write: Lindorm's table options are identifiers (a letter, then letters, digits and '_'), as COMPRESSION, TTL, DYNAMIC_COLUMNS", p.key)
			}
			switch strings.ToUpper(p.key) {
			case "SPLITKEYS", "NUMREGIONS", "STARTKEY", "ENDKEY":
				d.ps.add("target.options."+p.key, p.k.Line, "%s comes from the regions: section (the region plan), not from options", p.key)
			}
			if strings.EqualFold(p.key, "TTL") {
				// Lindorm's TTL is in seconds, a whole number: "7d" or "30 days" would be refused by
				// CREATE TABLE only after the migration
				if n, err := strconv.ParseInt(s, 10, 64); err != nil || n < 1 {
					d.ps.add("target.options."+p.key, p.k.Line, "TTL is %q: Lindorm's TTL is a whole number of seconds, 1 or more (604800 for 7 days; leave TTL out to keep the rows forever)", s)
				}
			}
			if ok, why := pipeline.PlainSQLText(s); !ok {
				d.ps.add("target.options."+p.key, p.k.Line, "the value holds %s: ddl.sql writes option values as quoted strings, which must read the same with and without backslash escapes: write the value without it", why)
			}
			t.Options = append(t.Options, [2]string{p.key, s})
		}
	}
}

// optionName is a table option's name as ddl.sql writes it, bare.
var optionName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// lindormTableName is a name Lindorm takes for a table: letters, digits, '-', '_' and '.', not
// starting with '-' or '.'.
var lindormTableName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

func (d *decoder) regions(n *yaml.Node) {
	if isNull(n) {
		return
	}
	f := d.fields(n, "regions", sectionFields("regions")...)
	r := &RegionsSpec{}
	set := 0
	if v, ok := f["count"]; ok {
		set++
		if dv := deref(v); dv.Kind == yaml.ScalarNode && dv.Tag == "!!str" {
			// a var name: count: numBuckets
			for _, x := range d.m.Vars {
				if x.Name == dv.Value && x.Value.Kind == pipeline.KindInt {
					dv = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x.Value.Num, 10), Line: dv.Line}
				}
			}
			v = dv
		}
		if x, ok := d.integer(v, "regions.count"); ok {
			if x < 1 || x > 1<<20 {
				d.ps.add("regions.count", deref(v).Line, "want a number of regions from 1 to %d, found %d", 1<<20, x)
			}
			r.Count = int(x)
		}
	}
	if v, ok := f["size"]; ok {
		set++
		if s, ok := d.scalar(v, "regions.size"); ok {
			size, err := ParseSize(s)
			switch {
			case err != nil:
				d.ps.add("regions.size", deref(v).Line, "%v", err)
			case size <= 0:
				d.ps.add("regions.size", deref(v).Line, "the region size must be positive")
			}
			r.Size, r.SizeText = size, s
		}
	}
	if v, ok := f["split_keys"]; ok {
		set++
		v = deref(v)
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			d.ps.add("regions.split_keys", v.Line, "want a non-empty list of split values of the first key column")
		} else {
			for i, e := range v.Content {
				path := "regions.split_keys[" + strconv.Itoa(i) + "]"
				if s, ok := d.scalar(e, path); ok {
					d.m.lines[path] = deref(e).Line
					if why := pipeline.SplitTextProblem(s); why != "" {
						d.ps.add(path, deref(e).Line, "split key %q holds %s: choose a split value without it", s, why)
					}
					r.SplitKeys = append(r.SplitKeys, s)
				}
			}
		}
	}
	switch {
	case set > 1:
		d.ps.add("regions", deref(n).Line, "set only one of count, size and split_keys")
	case set == 0:
		return
	}
	d.m.Regions = r
}

// syntaxCheck reports what can be checked without the source's columns (a mapping that leaves
// them to the source schema): expression syntax, function names and argument counts.
func syntaxCheck(m *Mapping, ps *problems) {
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		if n == nil {
			return
		}
		if n.kind == nCall {
			spec, ok := functions[strings.ToLower(n.sval)]
			switch {
			case !ok:
				ps.add(path, 0, "unknown function %q%s (functions: %s)", n.sval, didYouMean(n.sval, fnList), fnNames)
			case len(n.args) < spec.min || len(n.args) > spec.max:
				ps.add(path, 0, "%s: wrong number of arguments, want %s", n.sval, spec.usage)
			}
		}
		if n.kind == nCast {
			if _, _, _, err := pipeline.ParseType(n.sval); err != nil {
				ps.add(path, 0, "%v", err)
			}
		}
		for _, a := range n.args {
			walk(a, path)
		}
	}
	for _, e := range m.Target.Columns {
		path := "target.columns." + e.Name
		n, err := parseExpression(e.Expr)
		if err != nil {
			ps.add(path, 0, "%s in %s", err.Error(), quoteString(e.Expr))
			continue
		}
		walk(n, path)
	}
	if m.Target.PrimaryKey == "" {
		return
	}
	elems, outer := parseKey(m.Target.PrimaryKey)
	if outer != nil {
		ps.add("target.primary_key", 0, "%s in %q", outer.Error(), m.Target.PrimaryKey)
	}
	if len(elems) > MaxKeyColumns {
		ps.add("target.primary_key", 0, "%d key columns: Lindorm allows at most %d (the design guide recommends 1-3)", len(elems), MaxKeyColumns)
	}
	for i, el := range elems {
		path := "target.primary_key[" + strconv.Itoa(i) + "]"
		if el.err != nil {
			ps.add(path, 0, "%s in %q", el.err.Error(), m.Target.PrimaryKey)
			continue
		}
		walk(el.expr, path)
	}
}
