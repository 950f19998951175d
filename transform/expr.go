package transform

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the key-expression language's syntax: a lexer, a recursive-descent parser
// producing an untyped tree (node), the primary-key bracket notation, and a printer.
//
//	key      := element+                       "[md5(userid).substr(0,4) AS h][userid][ts DESC]"
//	element  := '[' expr [AS name] [ASC|DESC] ']'
//	expr     := sum ('::' type)*               the cast applies to everything on its left
//	sum      := product ('+' product)*
//	product  := postfix (('*' | '/' | '%') postfix)*
//	postfix  := primary ('.' name '(' [args] ')')*     x.f(a) is f(x, a)
//	primary  := int | '-' int | 'string' | '(' expr ')' | name '(' [args] ')' | name
//	type     := name ['(' int [',' int] ')']   a Lindorm type: BIGINT, VARCHAR, DECIMAL(20,4)
//	name     := letter (letter | digit | '_' | '-' letter-or-digit)* | `back-quoted`

type tokKind uint8

const (
	tEOF tokKind = iota
	tInt
	tStr
	tName
	tLParen
	tRParen
	tComma
	tDot
	tPlus
	tMinus
	tStar
	tSlash
	tPercent
	tCast
	tBad
)

type token struct {
	kind   tokKind
	off    int    // byte offset in the full text
	text   string // raw text as written
	val    string // name or unquoted string literal
	quoted bool   // back-quoted name
	err    string // for tBad
}

// syntaxError locates a problem in an expression: Col is 1-based, in characters.
type syntaxError struct {
	Col int
	Msg string
}

func (e *syntaxError) Error() string { return "at column " + strconv.Itoa(e.Col) + ": " + e.Msg }

func colOf(text string, off int) int {
	if off > len(text) {
		off = len(text)
	}
	return utf8.RuneCountInString(text[:off]) + 1
}

func isNameStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isNamePart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// lex splits text[start:end] into tokens; offsets are relative to text.
func lex(text string, start, end int) []token {
	var toks []token
	i := start
	for i < end {
		r, w := utf8.DecodeRuneInString(text[i:end])
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			i += w
			continue
		case r >= '0' && r <= '9':
			j := i
			for j < end && text[j] >= '0' && text[j] <= '9' {
				j++
			}
			if j < end {
				if r2, _ := utf8.DecodeRuneInString(text[j:end]); isNamePart(r2) {
					toks = append(toks, token{kind: tBad, off: i, text: text[i:j], err: "a name must start with a letter or '_' (back-quote it: `" + text[i:j] + "...`)"})
					return append(toks, token{kind: tEOF, off: end})
				}
			}
			toks = append(toks, token{kind: tInt, off: i, text: text[i:j]})
			i = j
			continue
		case isNameStart(r):
			j := i + w
			for j < end {
				r2, w2 := utf8.DecodeRuneInString(text[j:end])
				if isNamePart(r2) {
					j += w2
					continue
				}
				if r2 == '-' && j+1 < end {
					if r3, _ := utf8.DecodeRuneInString(text[j+1 : end]); isNamePart(r3) {
						j++
						continue
					}
				}
				break
			}
			toks = append(toks, token{kind: tName, off: i, text: text[i:j], val: text[i:j]})
			i = j
			continue
		case r == '`' || r == '\'':
			var sb strings.Builder
			j := i + 1
			closed := false
			for j < end {
				if text[j] == byte(r) {
					if j+1 < end && text[j+1] == byte(r) { // doubled quote escapes itself
						sb.WriteByte(byte(r))
						j += 2
						continue
					}
					closed = true
					j++
					break
				}
				sb.WriteByte(text[j])
				j++
			}
			if !closed {
				what := "string literal: missing closing '"
				if r == '`' {
					what = "back-quoted name: missing closing `"
				}
				toks = append(toks, token{kind: tBad, off: i, text: text[i:end], err: "unterminated " + what})
				return append(toks, token{kind: tEOF, off: end})
			}
			if r == '`' {
				if sb.Len() == 0 {
					toks = append(toks, token{kind: tBad, off: i, text: "``", err: "empty back-quoted name"})
					return append(toks, token{kind: tEOF, off: end})
				}
				toks = append(toks, token{kind: tName, off: i, text: text[i:j], val: sb.String(), quoted: true})
			} else {
				toks = append(toks, token{kind: tStr, off: i, text: text[i:j], val: sb.String()})
			}
			i = j
			continue
		}
		k := tBad
		switch r {
		case '(':
			k = tLParen
		case ')':
			k = tRParen
		case ',':
			k = tComma
		case '.':
			k = tDot
		case '+':
			k = tPlus
		case '-':
			k = tMinus
		case '*':
			k = tStar
		case '/':
			k = tSlash
		case '%':
			k = tPercent
		case ':':
			if i+1 < end && text[i+1] == ':' {
				toks = append(toks, token{kind: tCast, off: i, text: "::"})
				i += 2
				continue
			}
		}
		t := token{kind: k, off: i, text: text[i : i+w]}
		if k == tBad {
			switch r {
			case '"':
				t.err = `unexpected '"': string literals use single quotes ('abc') and names back-quotes (` + "`a b`" + `)`
			case ':':
				t.err = "unexpected ':' (a type override is written `expr :: TYPE`)"
			case '[', ']':
				t.err = "unexpected '" + string(r) + "' inside a key element"
			default:
				t.err = "unexpected character " + strconv.QuoteRune(r)
			}
			toks = append(toks, t)
			return append(toks, token{kind: tEOF, off: end})
		}
		toks = append(toks, t)
		i += w
	}
	return append(toks, token{kind: tEOF, off: end})
}

type nodeKind uint8

const (
	nInt nodeKind = iota
	nStr
	nName
	nCall
	nBin
	nCast
)

// node is the untyped syntax tree of an expression.
type node struct {
	kind   nodeKind
	off    int    // byte offset in the text it was parsed from
	ival   int64  // nInt
	sval   string // nStr value, nName name, nCall function name as written, nBin operator, nCast type
	quoted bool   // nName: back-quoted
	method bool   // nCall: written x.f(...)
	args   []*node
}

type parser struct {
	text string
	toks []token
	i    int
	err  *syntaxError
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func describeTok(t token) string {
	switch t.kind {
	case tEOF:
		return "the end"
	case tBad:
		return strconv.Quote(t.text)
	case tStr:
		return "string " + t.text
	case tInt:
		return "number " + t.text
	case tName:
		return "name " + strconv.Quote(t.val)
	}
	return "'" + t.text + "'"
}

func (p *parser) fail(t token, msg string) {
	if p.err != nil {
		return
	}
	if t.kind == tBad {
		msg = t.err
	}
	p.err = &syntaxError{Col: colOf(p.text, t.off), Msg: msg}
}

func (p *parser) expect(k tokKind, what string) (token, bool) {
	t := p.next()
	if t.kind != k {
		p.fail(t, "expected "+what+", found "+describeTok(t))
		return t, false
	}
	return t, true
}

// parseExpr parses an expression; the caller checks what follows.
func (p *parser) parseExpr() *node {
	n := p.parseSum()
	for p.err == nil && p.peek().kind == tCast {
		t := p.next()
		typ := p.parseTypeName()
		if p.err != nil {
			return nil
		}
		n = &node{kind: nCast, off: t.off, sval: typ, args: []*node{n}}
	}
	return n
}

func (p *parser) parseTypeName() string {
	t, ok := p.expect(tName, "a type name after '::' (BIGINT, VARCHAR, DECIMAL(20,4), ...)")
	if !ok {
		return ""
	}
	s := strings.ToUpper(t.val)
	if p.peek().kind == tLParen {
		p.next()
		a, ok := p.expect(tInt, "a precision")
		if !ok {
			return ""
		}
		s += "(" + a.text
		if p.peek().kind == tComma {
			p.next()
			b, ok := p.expect(tInt, "a scale")
			if !ok {
				return ""
			}
			s += "," + b.text
		}
		if _, ok := p.expect(tRParen, "')'"); !ok {
			return ""
		}
		s += ")"
	}
	return s
}

func (p *parser) parseSum() *node {
	n := p.parseProduct()
	for p.err == nil && p.peek().kind == tPlus {
		t := p.next()
		r := p.parseProduct()
		n = &node{kind: nBin, off: t.off, sval: "+", args: []*node{n, r}}
	}
	if p.err == nil && p.peek().kind == tMinus {
		p.fail(p.peek(), "subtraction is not supported ('-' is allowed inside names such as log-event; write them without spaces)")
	}
	return n
}

func (p *parser) parseProduct() *node {
	n := p.parsePostfix()
	for p.err == nil {
		t := p.peek()
		if t.kind != tStar && t.kind != tSlash && t.kind != tPercent {
			break
		}
		p.next()
		r := p.parsePostfix()
		n = &node{kind: nBin, off: t.off, sval: t.text, args: []*node{n, r}}
	}
	return n
}

func (p *parser) parsePostfix() *node {
	n := p.parsePrimary()
	for p.err == nil && p.peek().kind == tDot {
		p.next()
		name, ok := p.expect(tName, "a function name after '.'")
		if !ok {
			return nil
		}
		if _, ok := p.expect(tLParen, "'(' after "+strconv.Quote(name.val)); !ok {
			return nil
		}
		args := append([]*node{n}, p.parseArgs()...)
		n = &node{kind: nCall, off: name.off, sval: name.val, method: true, args: args}
	}
	return n
}

// parseArgs parses the arguments after '(' up to and including ')'.
func (p *parser) parseArgs() []*node {
	var args []*node
	if p.peek().kind == tRParen {
		p.next()
		return args
	}
	for p.err == nil {
		args = append(args, p.parseExpr())
		if p.err != nil {
			return nil
		}
		t := p.next()
		if t.kind == tRParen {
			return args
		}
		if t.kind != tComma {
			p.fail(t, "expected ',' or ')' in the argument list, found "+describeTok(t))
		}
	}
	return nil
}

func (p *parser) parseInt(t token, neg bool) *node {
	s := t.text
	if neg {
		s = "-" + s
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.fail(t, "integer "+s+" is out of the 64-bit range")
		return nil
	}
	return &node{kind: nInt, off: t.off, ival: v}
}

func (p *parser) parsePrimary() *node {
	t := p.next()
	switch t.kind {
	case tInt:
		return p.parseInt(t, false)
	case tMinus:
		if p.peek().kind == tInt {
			n := p.parseInt(p.next(), true)
			if n != nil {
				n.off = t.off
			}
			return n
		}
		p.fail(t, "unexpected '-': subtraction is not supported (only negative integer literals such as -5)")
		return nil
	case tStr:
		return &node{kind: nStr, off: t.off, sval: t.val}
	case tLParen:
		n := p.parseExpr()
		if p.err != nil {
			return nil
		}
		if _, ok := p.expect(tRParen, "')'"); !ok {
			return nil
		}
		return n
	case tName:
		if p.peek().kind == tLParen && !t.quoted {
			p.next()
			args := p.parseArgs()
			if p.err != nil {
				return nil
			}
			return &node{kind: nCall, off: t.off, sval: t.val, args: args}
		}
		return &node{kind: nName, off: t.off, sval: t.val, quoted: t.quoted}
	}
	p.fail(t, "expected a value (a name, a number, a 'string', a function call or '('), found "+describeTok(t))
	return nil
}

// parseExpression parses a whole expression (a target.columns entry).
func parseExpression(text string) (*node, *syntaxError) {
	if strings.TrimSpace(text) == "" {
		return nil, &syntaxError{Col: 1, Msg: "empty expression"}
	}
	p := &parser{text: text, toks: lex(text, 0, len(text))}
	n := p.parseExpr()
	if p.err == nil && p.peek().kind != tEOF {
		t := p.peek()
		msg := "expected an operator (+ * / % ::) or the end of the expression, found " + describeTok(t)
		if t.kind == tName && !t.quoted && (strings.EqualFold(t.val, "DESC") || strings.EqualFold(t.val, "ASC")) {
			msg += ": ASC and DESC order key columns: write the order on the column's key element in target.primary_key ([name DESC])"
		}
		p.fail(t, msg)
	}
	if p.err != nil {
		return nil, p.err
	}
	return n, nil
}

// keyElem is one bracketed element of a primary key.
type keyElem struct {
	expr  *node
	as    string // AS name, "" when not written
	desc  bool
	text  string // the text between the brackets
	off   int    // byte offset of '['
	err   *syntaxError
	bare  bool // the expression is a lone name
	order bool // ASC or DESC was written
}

// parseKey splits a primary_key string into its elements and parses each one. Syntax errors are
// reported per element (so one bad element does not hide the others); an error outside any
// element is returned as outer.
func parseKey(text string) (elems []keyElem, outer *syntaxError) {
	i := 0
	for {
		for i < len(text) && strings.IndexByte(" \t\r\n", text[i]) >= 0 {
			i++
		}
		if i >= len(text) {
			break
		}
		if text[i] != '[' {
			r, _ := utf8.DecodeRuneInString(text[i:])
			msg := "expected '[' to start a key element, found " + strconv.QuoteRune(r)
			if r == ',' {
				msg = "expected '[' to start a key element, found ','; key elements are written one after another: [a][b]"
			}
			return elems, &syntaxError{Col: colOf(text, i), Msg: msg}
		}
		// find the matching ']' outside quotes
		j := i + 1
		var quote byte
		quoteAt := 0
		for j < len(text) {
			c := text[j]
			if quote != 0 {
				if c == quote {
					if j+1 < len(text) && text[j+1] == quote {
						j += 2
						continue
					}
					quote = 0
				}
				j++
				continue
			}
			if c == '\'' || c == '`' {
				quote, quoteAt = c, j
			} else if c == ']' || c == '[' {
				break
			}
			j++
		}
		if j >= len(text) || text[j] == '[' {
			e := keyElem{off: i, text: text[i+1 : j]}
			e.err = &syntaxError{Col: colOf(text, i), Msg: "unterminated key element: missing ']'"}
			switch {
			case quote == '\'':
				e.err = &syntaxError{Col: colOf(text, quoteAt), Msg: "unterminated string literal: missing closing '"}
			case quote == '`':
				e.err = &syntaxError{Col: colOf(text, quoteAt), Msg: "unterminated back-quoted name: missing closing `"}
			}
			return append(elems, e), nil
		}
		elems = append(elems, parseElement(text, i, j))
		i = j + 1
	}
	if len(elems) == 0 {
		return nil, &syntaxError{Col: 1, Msg: "empty primary key: write at least one element, e.g. [userid]"}
	}
	return elems, nil
}

// parseElement parses text[open+1:close] where text[open] == '[' and text[close] == ']'.
func parseElement(text string, open, close int) keyElem {
	e := keyElem{off: open, text: text[open+1 : close]}
	if strings.TrimSpace(e.text) == "" {
		e.err = &syntaxError{Col: colOf(text, open), Msg: "empty key element []"}
		return e
	}
	p := &parser{text: text, toks: lex(text, open+1, close)}
	e.expr = p.parseExpr()
	if p.err == nil {
		t := p.peek()
		if t.kind == tName && !t.quoted && strings.EqualFold(t.val, "AS") {
			p.next()
			if n, ok := p.expect(tName, "a column name after AS"); ok {
				e.as = n.val
			}
		}
	}
	if p.err == nil {
		t := p.peek()
		if t.kind == tName && !t.quoted && (strings.EqualFold(t.val, "ASC") || strings.EqualFold(t.val, "DESC")) {
			p.next()
			e.order = true
			e.desc = strings.EqualFold(t.val, "DESC")
		}
	}
	if p.err == nil && p.peek().kind != tEOF {
		t := p.peek()
		msg := "expected an operator, AS name, ASC, DESC or ']', found " + describeTok(t)
		if t.kind == tName && !t.quoted && strings.EqualFold(t.val, "AS") {
			msg = "AS must come before ASC/DESC: [expr AS name DESC]"
		}
		p.fail(t, msg)
	}
	if p.err != nil {
		e.err = p.err
		e.expr = nil
		return e
	}
	e.bare = e.expr.kind == nName
	return e
}

// ---- printing ----

func needsQuote(name string) bool {
	if name == "" {
		return true
	}
	toks := lex(name, 0, len(name))
	return len(toks) != 2 || toks[0].kind != tName || toks[0].quoted || toks[0].val != name
}

func quoteName(name string) string {
	if !needsQuote(name) {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func precedence(n *node) int {
	switch n.kind {
	case nCast:
		return 0
	case nBin:
		if n.sval == "+" {
			return 1
		}
		return 2
	}
	return 3
}

// String prints the node in the language's syntax (as parsed, names unresolved).
func (n *node) String() string {
	var sb strings.Builder
	n.print(&sb)
	return sb.String()
}

func (n *node) print(sb *strings.Builder) {
	switch n.kind {
	case nInt:
		sb.WriteString(strconv.FormatInt(n.ival, 10))
	case nStr:
		sb.WriteString(quoteString(n.sval))
	case nName:
		sb.WriteString(quoteName(n.sval))
	case nCast:
		n.args[0].print(sb)
		sb.WriteString(" :: ")
		sb.WriteString(n.sval)
	case nBin:
		l, r := n.args[0], n.args[1]
		printOperand(sb, l, precedence(l) < precedence(n))
		sb.WriteString(" " + n.sval + " ")
		printOperand(sb, r, precedence(r) <= precedence(n))
	case nCall:
		args := n.args
		if n.method {
			printOperand(sb, args[0], precedence(args[0]) < 3)
			sb.WriteString(".")
			args = args[1:]
		}
		sb.WriteString(n.sval)
		sb.WriteString("(")
		for i, a := range args {
			if i > 0 {
				sb.WriteString(", ")
			}
			a.print(sb)
		}
		sb.WriteString(")")
	}
}

func printOperand(sb *strings.Builder, n *node, paren bool) {
	if paren {
		sb.WriteString("(")
	}
	n.print(sb)
	if paren {
		sb.WriteString(")")
	}
}

func (e keyElem) String() string {
	if e.expr == nil {
		return "[?]"
	}
	s := "[" + e.expr.String()
	if e.as != "" {
		s += " AS " + quoteName(e.as)
	}
	if e.desc {
		s += " DESC"
	}
	return s + "]"
}
