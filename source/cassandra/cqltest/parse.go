package cqltest

import (
	"fmt"
	"strings"
)

// The parser understands exactly the statements a driver and rekey send:
//
//	USE ks
//	SELECT [DISTINCT] * | item [AS alias], ... FROM [ks.]table
//	    [WHERE rel AND rel ...] [LIMIT n|?] [ALLOW FILTERING]
//
// where an item is a column, token(cols), writetime(col), ttl(col) or count(*), and a
// relation is `col = v`, `col op v` or `token(cols) op v` with op one of = < <= > >= and v a
// literal or a ? bind marker.

type tokenKind int

const (
	tkEOF tokenKind = iota
	tkIdent
	tkQuoted // "Quoted" identifier, case preserved
	tkString
	tkNumber
	tkSymbol
)

type token struct {
	kind tokenKind
	text string
}

func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\'':
			var sb strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated string literal")
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						sb.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				sb.WriteByte(s[j])
				j++
			}
			out = append(out, token{tkString, sb.String()})
			i = j + 1
		case c == '"':
			var sb strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated quoted identifier")
				}
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' {
						sb.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				sb.WriteByte(s[j])
				j++
			}
			out = append(out, token{tkQuoted, sb.String()})
			i = j + 1
		case isUUIDAt(s, i):
			out = append(out, token{tkIdent, strings.ToLower(s[i : i+36])})
			i += 36
		case c >= '0' && c <= '9' || (c == '-' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			if c == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') {
				j := i + 2
				for j < len(s) && isHex(s[j]) {
					j++
				}
				out = append(out, token{tkIdent, strings.ToLower(s[i:j])})
				i = j
				continue
			}
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			out = append(out, token{tkNumber, s[i:j]})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{tkIdent, strings.ToLower(s[i:j])})
			i = j
		case c == '<' || c == '>' || c == '!':
			if i+1 < len(s) && s[i+1] == '=' {
				out = append(out, token{tkSymbol, s[i : i+2]})
				i += 2
			} else {
				out = append(out, token{tkSymbol, s[i : i+1]})
				i++
			}
		case strings.IndexByte("(),.*=?;", c) >= 0:
			out = append(out, token{tkSymbol, s[i : i+1]})
			i++
		default:
			return nil, fmt.Errorf("unexpected character %q", c)
		}
	}
	return append(out, token{kind: tkEOF}), nil
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isUUIDAt(s string, i int) bool {
	if len(s)-i < 36 {
		return false
	}
	for k := 0; k < 36; k++ {
		c := s[i+k]
		if k == 8 || k == 13 || k == 18 || k == 23 {
			if c != '-' {
				return false
			}
		} else if !isHex(c) {
			return false
		}
	}
	return len(s)-i == 36 || !isHex(s[i+36]) && s[i+36] != '-'
}

// ---- AST ----

type stmtKind int

const (
	stmtSelect stmtKind = iota
	stmtUse
)

type selItem struct {
	fn    string   // "" (a column), "token", "writetime", "ttl", "count"
	args  []string // column names
	alias string
}

// operand is a literal or a bind marker.
type operand struct {
	bind int // index of the ? marker, or -1 for a literal
	lit  token
}

type relation struct {
	token bool     // token(cols) op v
	cols  []string // the column, or token()'s arguments
	op    string   // = < <= > >=
	val   operand
}

type statement struct {
	kind           stmtKind
	keyspace       string
	table          string
	distinct       bool
	star           bool
	items          []selItem
	where          []relation
	limit          *operand
	allowFiltering bool
	markers        int // number of ? markers
}

type parser struct {
	toks []token
	pos  int
	st   *statement
}

func parseStatement(q string) (*statement, error) {
	toks, err := lex(q)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, st: &statement{}}
	if err := p.statement(); err != nil {
		return nil, err
	}
	return p.st, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tkEOF {
		p.pos++
	}
	return t
}

func (p *parser) isKeyword(w string) bool {
	t := p.peek()
	return t.kind == tkIdent && t.text == w
}

func (p *parser) keyword(w string) error {
	if !p.isKeyword(w) {
		return p.errorf("expected %s", strings.ToUpper(w))
	}
	p.pos++
	return nil
}

func (p *parser) isSymbol(s string) bool {
	t := p.peek()
	return t.kind == tkSymbol && t.text == s
}

func (p *parser) symbol(s string) error {
	if !p.isSymbol(s) {
		return p.errorf("expected %q", s)
	}
	p.pos++
	return nil
}

func (p *parser) errorf(format string, args ...any) error {
	t := p.peek()
	near := t.text
	if t.kind == tkEOF {
		near = "<EOF>"
	}
	return fmt.Errorf("line 1: %s near %q", fmt.Sprintf(format, args...), near)
}

func (p *parser) ident() (string, error) {
	t := p.peek()
	if t.kind == tkIdent || t.kind == tkQuoted {
		p.pos++
		return t.text, nil
	}
	return "", p.errorf("expected identifier")
}

func (p *parser) statement() error {
	switch {
	case p.isKeyword("select"):
		p.pos++
		if err := p.selectStmt(); err != nil {
			return err
		}
	case p.isKeyword("use"):
		p.pos++
		p.st.kind = stmtUse
		ks, err := p.ident()
		if err != nil {
			return err
		}
		p.st.keyspace = ks
	default:
		return p.errorf("unsupported statement")
	}
	if p.isSymbol(";") {
		p.pos++
	}
	if p.peek().kind != tkEOF {
		return p.errorf("unexpected input")
	}
	return nil
}

func (p *parser) selectStmt() error {
	st := p.st
	st.kind = stmtSelect
	if p.isKeyword("distinct") {
		p.pos++
		st.distinct = true
	}
	if p.isSymbol("*") {
		p.pos++
		st.star = true
	} else {
		for {
			it, err := p.selItem()
			if err != nil {
				return err
			}
			st.items = append(st.items, it)
			if !p.isSymbol(",") {
				break
			}
			p.pos++
		}
	}
	if err := p.keyword("from"); err != nil {
		return err
	}
	name, err := p.ident()
	if err != nil {
		return err
	}
	if p.isSymbol(".") {
		p.pos++
		st.keyspace = name
		if name, err = p.ident(); err != nil {
			return err
		}
	}
	st.table = name
	if p.isKeyword("where") {
		p.pos++
		for {
			rel, err := p.relation()
			if err != nil {
				return err
			}
			st.where = append(st.where, rel)
			if !p.isKeyword("and") {
				break
			}
			p.pos++
		}
	}
	if p.isKeyword("limit") {
		p.pos++
		op, err := p.operand()
		if err != nil {
			return err
		}
		st.limit = &op
	}
	if p.isKeyword("allow") {
		p.pos++
		if err := p.keyword("filtering"); err != nil {
			return err
		}
		st.allowFiltering = true
	}
	return nil
}

func (p *parser) selItem() (selItem, error) {
	name, err := p.ident()
	if err != nil {
		return selItem{}, err
	}
	it := selItem{args: []string{name}}
	if p.isSymbol("(") && p.toks[p.pos-1].kind == tkIdent {
		p.pos++
		it.fn = name
		it.args = nil
		switch name {
		case "token", "writetime", "ttl", "count":
		default:
			return it, fmt.Errorf("unknown function %s", name)
		}
		if name == "count" && (p.isSymbol("*") || p.peek().kind == tkNumber) {
			p.pos++
		} else {
			for {
				a, err := p.ident()
				if err != nil {
					return it, err
				}
				it.args = append(it.args, a)
				if !p.isSymbol(",") {
					break
				}
				p.pos++
			}
		}
		if err := p.symbol(")"); err != nil {
			return it, err
		}
		if (name == "writetime" || name == "ttl") && len(it.args) != 1 {
			return it, fmt.Errorf("%s takes exactly one column", name)
		}
	}
	if p.isKeyword("as") {
		p.pos++
		if it.alias, err = p.ident(); err != nil {
			return it, err
		}
	}
	return it, nil
}

func (p *parser) relation() (relation, error) {
	var rel relation
	name, err := p.ident()
	if err != nil {
		return rel, err
	}
	if name == "token" && p.isSymbol("(") && p.toks[p.pos-1].kind == tkIdent {
		p.pos++
		rel.token = true
		for {
			a, err := p.ident()
			if err != nil {
				return rel, err
			}
			rel.cols = append(rel.cols, a)
			if !p.isSymbol(",") {
				break
			}
			p.pos++
		}
		if err := p.symbol(")"); err != nil {
			return rel, err
		}
	} else {
		rel.cols = []string{name}
	}
	t := p.next()
	switch {
	case t.kind == tkSymbol && (t.text == "=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">="):
		rel.op = t.text
	default:
		p.pos--
		return rel, p.errorf("unsupported relation operator")
	}
	rel.val, err = p.operand()
	return rel, err
}

func (p *parser) operand() (operand, error) {
	t := p.peek()
	switch {
	case t.kind == tkSymbol && t.text == "?":
		p.pos++
		op := operand{bind: p.st.markers}
		p.st.markers++
		return op, nil
	case t.kind == tkString || t.kind == tkNumber || t.kind == tkIdent:
		p.pos++
		return operand{bind: -1, lit: t}, nil
	}
	return operand{}, p.errorf("expected a value or ?")
}
