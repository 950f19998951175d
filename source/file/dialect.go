package file

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// CSVOptions are the CSV dialect's settings: the URI parameters of a file: source. The zero value
// is RFC 4180 with a header line.
type CSVOptions struct {
	// Delimiter separates fields; 0 means ',' (a tab for .tsv files).
	Delimiter byte
	// Quote opens and closes a quoted field; 0 means '"'.
	Quote byte
	// Escape makes the quote character that follows it part of a quoted field's value; 0 means
	// the quote itself (a doubled "" as in RFC 4180). Any other character, such as '\\' (what
	// `dsbulk unload` writes), also escapes itself (\\ is one \); before other characters it is
	// kept as it is.
	Escape byte
	// Comment, when not 0, starts a line that is skipped, where a record starts.
	Comment byte
	// NoHeader: the file has no header line; the fields follow the declared columns' order.
	NoHeader bool
	// Null is the text of an unquoted field that is null. An unquoted empty field is always
	// null; a quoted one is the empty string.
	Null string
	// SingleLine (multiline=false): each line is one record. A quoted field does not continue
	// past its line's end: a quote left open on its line is a stray quote (its record, that
	// line, is rejected). Every line end is then a record boundary, so a file can be split by
	// bytes (--shard).
	SingleLine bool
}

// dialect is the resolved CSV dialect shared by the chunk splitter, the header reader and the
// row parser, so that all three agree on where records end.
type dialect struct {
	delim, quote, esc, comment byte
	header                     bool
	null                       string
	singleLine                 bool // multiline=false: a record never spans lines
}

// defaultDialect is RFC 4180 with a header line.
var defaultDialect = dialect{delim: ',', quote: '"', esc: '"', header: true}

// isRFC tells whether records and values are read as in RFC 4180 (the header aside).
func (d dialect) isRFC() bool {
	return d.delim == ',' && d.quote == '"' && d.esc == '"' && d.comment == 0 && d.null == ""
}

// resolve fills in the defaults (tab for a .tsv file) and checks that the characters can be
// told apart.
func (o CSVOptions) resolve(tsv bool) (dialect, error) {
	d := defaultDialect
	if tsv {
		d.delim = '\t'
	}
	if o.Delimiter != 0 {
		d.delim = o.Delimiter
	}
	if o.Quote != 0 {
		d.quote = o.Quote
	}
	d.esc = d.quote
	if o.Escape != 0 {
		d.esc = o.Escape
	}
	d.comment = o.Comment
	d.header = !o.NoHeader
	d.null = o.Null
	d.singleLine = o.SingleLine
	for _, c := range []struct {
		name string
		c    byte
	}{{"delimiter", d.delim}, {"quote", d.quote}, {"escape", d.esc}, {"comment", d.comment}} {
		if c.c == '\n' || c.c == '\r' {
			return d, fmt.Errorf("%s= cannot be a line break", c.name)
		}
		if c.c >= 0x80 {
			return d, fmt.Errorf("%s= must be one ASCII character", c.name)
		}
	}
	switch {
	case d.delim == d.quote:
		return d, fmt.Errorf("delimiter= and quote= are both %s: they must differ", charName(d.delim))
	case d.esc == d.delim:
		return d, fmt.Errorf("escape= and delimiter= are both %s: they must differ", charName(d.delim))
	case d.comment != 0 && (d.comment == d.delim || d.comment == d.quote || d.comment == d.esc):
		return d, fmt.Errorf("comment= %s is also the delimiter, quote or escape character", charName(d.comment))
	}
	// null= is the text of an unquoted field: one that no such field can be would match nothing,
	// and the fields meant as null would be read as their text
	switch n := d.null; {
	case n == "":
	case n[0] == d.quote:
		return d, fmt.Errorf("null=%s starts with the quote character %s: such a field is quoted, and a quoted field is never null "+
			"(\"\" is the empty string): give the null text as it stands unquoted in the file (null=NULL, null=\\N), or leave null= out",
			strconv.Quote(n), charName(d.quote))
	case strings.IndexByte(n, d.delim) >= 0:
		return d, fmt.Errorf("null=%s holds the delimiter %s, which ends a field: no field can be that text; give the null text as it stands in the file",
			strconv.Quote(n), charName(d.delim))
	case strings.ContainsAny(n, "\r\n"):
		return d, fmt.Errorf("null=%s holds a line break, which ends a record: no field can be that text; give the null text as it stands in the file", strconv.Quote(n))
	}
	return d, nil
}

// charName writes a dialect character for messages.
func charName(c byte) string {
	if c == '\t' {
		return "tab"
	}
	return strconv.QuoteRune(rune(c))
}

// String writes the options that are set as URI parameters, "" when none is.
func (o CSVOptions) String() string {
	var parts []string
	for _, c := range []struct {
		name string
		c    byte
	}{{"delimiter", o.Delimiter}, {"quote", o.Quote}, {"escape", o.Escape}, {"comment", o.Comment}} {
		if c.c != 0 {
			parts = append(parts, c.name+"="+charName(c.c))
		}
	}
	if o.NoHeader {
		parts = append(parts, "header=false")
	}
	if o.Null != "" {
		parts = append(parts, "null="+strconv.Quote(o.Null))
	}
	if o.SingleLine {
		parts = append(parts, "multiline=false")
	}
	return strings.Join(parts, "&")
}

// CSV rules, shared by the chunk splitter and the row parser so that both agree on where records
// end: fields are separated by the delimiter and records by '\n' (a '\r' before it is dropped). A
// field that starts with the quote character is quoted: it may hold the delimiter, '\n' and
// escaped quotes (a doubled quote by default, or the escape character before it) and ends at the
// next quote that is not escaped. A quote anywhere else is an ordinary character. An unquoted
// empty field (or one equal to the null text) is null; a quoted empty field is the empty string.
// With a comment character, a line that starts with it where a record starts is skipped.
//
// A record must end within Config.MaxRecordSize bytes of its start. A quoted field whose closing
// quote is not within that limit (or that the file ends inside) is taken for a stray quote: its
// record ends with the line the quote opens on, and the next record starts on the line after.
// A record that still ends past the limit (a line longer than it, a comment line included) is
// rejected as too long. Both rules look at most limit+1 bytes past a record's start, which bounds
// the buffer a record needs, and both depend only on the bytes from the record's start, so that
// any chunking (and a resume from any record boundary) reads the same records.

// splitPoint returns the length of the longest prefix of b that holds whole records; b starts
// at a record boundary and is not the end of the file. When b holds no whole record, cut is 0 and
// either head is 0 (the first record may end within the limit: read more) or head > 0: the first
// record runs past the limit and b holds no end of it, which is the first '\n' after b; b[:head]
// is its start.
func (d *dialect) splitPoint(b []byte, limit int) (cut, head int) {
	// Outside-quote segments as [start, end) pairs since the last known record boundary base;
	// the last newline in them is the last record boundary.
	var segsBuf [16]int
	segs := segsBuf[:0]
	base, i, segStart := 0, 0, 0
	for {
		k := bytes.IndexByte(b[i:], d.quote)
		if k < 0 {
			break
		}
		q := i + k
		if q > 0 && b[q-1] != d.delim && b[q-1] != '\n' {
			i = q + 1 // a literal quote inside an unquoted field
			continue
		}
		if d.comment != 0 && d.inComment(b, base, segStart, q) {
			// A quote in a comment line opens nothing: go on after the line.
			e := bytes.IndexByte(b[q+1:], '\n')
			if e < 0 {
				break
			}
			i = q + 1 + e + 1
			continue
		}
		segs = append(segs, segStart, q)
		c := d.closingQuote(b, q)
		// c < limit closes within the limit whatever the record's start: the common case needs
		// no record start.
		if c < 0 || c >= limit {
			rs := lastBoundary(b, segs, base)
			switch {
			case c >= 0 && c < rs+limit:
				// closed within the limit
			case c < 0 && len(b) <= rs+limit:
				return rs, 0 // the quote may still close within the limit: read more
			default:
				// Not closed within the limit: the record ends with the quote's line.
				e := bytes.IndexByte(b[q+1:], '\n')
				if e < 0 {
					if rs > 0 {
						return rs, 0
					}
					return 0, q + 1
				}
				i = q + 1 + e + 1
				segStart, base = i, i
				segs = segs[:0]
				continue
			}
		}
		i = c + 1
		segStart = i
	}
	segs = append(segs, segStart, len(b))
	cut = lastBoundary(b, segs, base)
	if cut == 0 && len(b) > limit {
		return 0, limit + 1 // one line longer than the limit
	}
	return cut, 0
}

// inComment tells whether the field-starting quote at b[q] lies in a comment line: one that
// starts at a record boundary with the comment character. The segment b[segStart:q] is outside
// quotes: a newline in it starts a record; without one, the line starts at segStart only when no
// quoted field closed since the boundary base (segStart == base).
func (d *dialect) inComment(b []byte, base, segStart, q int) bool {
	ls := -1
	if k := bytes.LastIndexByte(b[segStart:q], '\n'); k >= 0 {
		ls = segStart + k + 1
	} else if segStart == base {
		ls = base
	}
	return ls >= 0 && ls < q && b[ls] == d.comment
}

// closingQuote returns the index of the quote that closes the quoted field opening at b[q], or -1
// when b does not tell: no closing quote follows, or the only candidate is b's last byte (which
// may be the first half of an escaped "").
func (d *dialect) closingQuote(b []byte, q int) int {
	j := q + 1
	if d.esc == d.quote {
		for {
			k := bytes.IndexByte(b[j:], d.quote)
			if k < 0 || j+k+1 == len(b) {
				return -1
			}
			j += k
			if b[j+1] != d.quote {
				return j
			}
			j += 2
		}
	}
	for {
		k := bytes.IndexByte(b[j:], d.quote)
		if k < 0 {
			return -1
		}
		j += k
		if escapesBefore(b, q, j, d.esc)%2 == 0 {
			return j
		}
		j++
	}
}

// escapesBefore counts the escape characters right before b[j], after the opening quote b[q]. An
// escape character escapes the next one too, so an odd count escapes b[j].
func escapesBefore[T string | []byte](b T, q, j int, esc byte) int {
	n := 0
	for p := j - 1; p > q && b[p] == esc; p-- {
		n++
	}
	return n
}

// closeEscaped finds the quote that closes the quoted field opening at data[q] when the escape
// character is not the quote: j is its index (len(data) when none), escaped whether the value
// holds an escape character to decode.
func (d *dialect) closeEscaped(data string, q int) (j int, escaped, closed bool) {
	j = q + 1
	for {
		k := strings.IndexByte(data[j:], d.quote)
		if k < 0 {
			return len(data), false, false
		}
		j += k
		if escapesBefore(data, q, j, d.esc)%2 == 0 {
			return j, strings.IndexByte(data[q+1:j], d.esc) >= 0, true
		}
		j++
	}
}

// unescape decodes a quoted field's value: the escape character before the quote or itself
// stands for that character, before anything else it is kept.
func (d *dialect) unescape(val string) string {
	if d.esc == d.quote {
		if d.quote == '"' {
			return strings.ReplaceAll(val, `""`, `"`)
		}
		q := string([]byte{d.quote})
		return strings.ReplaceAll(val, q+q, q)
	}
	var b strings.Builder
	b.Grow(len(val))
	for i := 0; i < len(val); i++ {
		c := val[i]
		if c == d.esc && i+1 < len(val) && (val[i+1] == d.quote || val[i+1] == d.esc) {
			i++
			c = val[i]
		}
		b.WriteByte(c)
	}
	return b.String()
}

// lastBoundary returns the offset after the last newline in the segments, or base if none has one.
func lastBoundary(b []byte, segs []int, base int) int {
	for p := len(segs) - 2; p >= 0; p -= 2 {
		if k := bytes.LastIndexByte(b[segs[p]:segs[p+1]], '\n'); k >= 0 {
			return segs[p] + k + 1
		}
	}
	return base
}

// headerStatus is what splitHeader found.
type headerStatus uint8

const (
	headerOK      headerStatus = iota
	headerMore                 // the header may end past the data: read more
	headerNone                 // no header line: the data ends before one (an empty file)
	headerInvalid              // the header line cannot be read
)

// splitHeader reads the header record at data[pos:], after blank and comment lines; eof says
// that data is all there is. It returns the fields, the offset after the record and the number
// of newlines up to there.
func (d *dialect) splitHeader(data string, pos int, eof bool) (fields []string, next, lines int, st headerStatus) {
	// skip blank and comment lines, as the row parser does
	for pos < len(data) {
		e := strings.IndexByte(data[pos:], '\n')
		line := data[pos:]
		if e >= 0 {
			line = data[pos : pos+e]
		}
		if strings.TrimSuffix(line, "\r") != "" && (d.comment == 0 || line[0] != d.comment) {
			break
		}
		if e < 0 {
			pos = len(data)
			break
		}
		pos += e + 1
		lines++
	}
	if pos == len(data) {
		if eof {
			return nil, pos, lines, headerNone
		}
		return nil, pos, lines, headerMore
	}
	skipped := lines
	i := pos
	for {
		if i < len(data) && data[i] == d.quote {
			var j int
			closed := false
			if d.esc == d.quote {
				j = i + 1
				for {
					k := strings.IndexByte(data[j:], d.quote)
					if k < 0 {
						break
					}
					j += k
					if j+1 < len(data) && data[j+1] == d.quote {
						j += 2
						continue
					}
					closed = j+1 < len(data) || eof
					break
				}
			} else {
				j, _, closed = d.closeEscaped(data, i)
			}
			if d.singleLine {
				// multiline=false: the header is one line too
				if e := strings.IndexByte(data[i+1:], '\n'); e >= 0 && (!closed || i+1+e < j) {
					return nil, 0, skipped, headerInvalid
				}
			}
			if !closed {
				if eof {
					return nil, 0, skipped, headerInvalid
				}
				return nil, 0, skipped, headerMore
			}
			fields = append(fields, d.unescape(data[i+1:j]))
			lines += strings.Count(data[i+1:j], "\n")
			i = j + 1
			if i < len(data) && data[i] == '\r' && (i+1 == len(data) || data[i+1] == '\n') {
				i++
			}
			if i < len(data) && data[i] != d.delim && data[i] != '\n' {
				return nil, 0, skipped, headerInvalid
			}
		} else {
			j := i
			for j < len(data) && data[j] != d.delim && data[j] != '\n' {
				j++
			}
			f := data[i:j]
			if j == len(data) || data[j] == '\n' {
				f = strings.TrimSuffix(f, "\r")
			}
			fields = append(fields, f)
			i = j
		}
		if i >= len(data) {
			if !eof {
				return nil, 0, skipped, headerMore
			}
			return fields, i, lines, headerOK
		}
		if data[i] == d.delim {
			i++
			continue
		}
		return fields, i + 1, lines + 1, headerOK
	}
}
