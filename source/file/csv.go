package file

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// parseCSVRow parses the record at data[pos:] into vals (indexed by schema column). It returns
// the offset after the record, the newlines it consumed, whether the line was blank or a comment
// (no record), and the row's error if it could not be split or a field did not fit its type.
func (s *Source) parseCSVRow(data string, pos int, vals []pipeline.Value) (next, nl int, blank bool, rerr *pipeline.RowError) {
	if s.rfc {
		return s.parseRFCRow(data, pos, vals)
	}
	return s.parseDialectRow(s.recordData(data, pos), pos, vals)
}

// recordData is what the parser of the record at data[pos:] may read: with multiline=false, up to
// the end of its line, so that a quote left open there is a stray quote (the rule for a quote not
// closed within the limit) and the record is that line, however the file is cut into chunks or
// byte ranges.
func (s *Source) recordData(data string, pos int) string {
	if !s.csv.singleLine {
		return data
	}
	if e := strings.IndexByte(data[pos:], '\n'); e >= 0 {
		return data[:pos+e+1]
	}
	return data
}

// parseRFCRow is parseCSVRow for the default dialect (RFC 4180: ',', '"', "" escapes, no comments,
// no null text), with those characters as constants: the loop over an unquoted field then keeps
// its accumulator in a register. With the dialect's characters read from memory (or kept in
// locals, which spill it) the default path parsed 15-25% slower. parseDialectRow must read the
// same records and values for the default dialect: FuzzCSVSplitPoint compares the two.
func (s *Source) parseRFCRow(data string, pos int, vals []pipeline.Value) (next, nl int, blank bool, rerr *pipeline.RowError) {
	if next, nl, rerr, ok := s.parsePlainRow(data, pos, vals); ok {
		return next, nl, false, rerr
	}
	return s.parseRFCFields(data, pos, vals)
}

// parseRFCFields is parseRFCRow for any record: field by field.
func (s *Source) parseRFCFields(data string, pos int, vals []pipeline.Value) (next, nl int, blank bool, rerr *pipeline.RowError) {
	i := pos
	if i < len(data) {
		if data[i] == '\n' {
			return i + 1, 1, true, nil
		}
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			return i + 2, 1, true, nil
		}
	}
	field := 0
	for {
		var val string
		quoted := false
		hi := byte(utf8.RuneSelf) // an unquoted field's bytes ORed: below 0x80, it is ASCII
		if i < len(data) && data[i] == '"' {
			quoted = true
			j := i + 1
			escaped, closed := false, false
			for {
				k := strings.IndexByte(data[j:], '"')
				if k < 0 {
					break
				}
				j += k
				if j+1 < len(data) && data[j+1] == '"' {
					escaped = true
					j += 2
					continue
				}
				closed = true
				break
			}
			if !closed || j-pos >= s.cfg.MaxRecordSize {
				// A stray quote: the record ends with the quote's line (see splitPoint).
				rerr = s.unclosedQuote(field, nl)
				if e := strings.IndexByte(data[i+1:], '\n'); e >= 0 {
					return i + 1 + e + 1, nl + 1, false, rerr
				}
				return len(data), nl, false, rerr
			}
			val = data[i+1 : j]
			nl += strings.Count(val, "\n")
			if escaped {
				val = strings.ReplaceAll(val, `""`, `"`)
			}
			i = j + 1
			if i < len(data) && data[i] != ',' && data[i] != '\n' {
				if data[i] == '\r' && (i+1 == len(data) || data[i+1] == '\n') {
					i++
				} else {
					if rerr == nil || rerr.Code != pipeline.CodeParse {
						rerr = &pipeline.RowError{Code: pipeline.CodeParse, Field: s.headerName(field),
							Message: "unexpected character after a closing quote"}
						if strings.HasSuffix(val, `\`) {
							rerr.Message += bsQuoteHint
						}
					}
					for i < len(data) && data[i] != ',' && data[i] != '\n' {
						i++
					}
				}
			}
		} else {
			j, nonASCII := unquotedEnd(data, i)
			hi = 0
			if nonASCII {
				hi = utf8.RuneSelf
			}
			val = data[i:j]
			if (j == len(data) || data[j] == '\n') && len(val) > 0 && val[len(val)-1] == '\r' {
				val = val[:len(val)-1]
			}
			i = j
		}
		if field < s.nfields {
			if ci := s.colMap[field]; ci >= 0 && (quoted || val != "") {
				if hi < utf8.RuneSelf && s.kinds[ci] == cqlvalue.Text {
					vals[ci] = pipeline.Value{Str: val, Kind: pipeline.KindText} // the common case, kept inline
				} else if err := s.setCell(vals, ci, val, hi < utf8.RuneSelf); err != nil && rerr == nil {
					rerr = err
				}
			}
		}
		field++
		if i >= len(data) {
			break
		}
		if data[i] == ',' {
			i++
			continue
		}
		i++ // '\n'
		nl++
		break
	}
	if field != s.nfields {
		rerr = s.fieldCount(field, rerr)
	}
	return i, nl, false, rerr
}

// maxPlainFields is the most fields parsePlainRow takes: its field ends are kept on the stack.
const maxPlainFields = 64

// parsePlainRow is parseRFCRow for a plain record: its line holds no quote, no carriage return
// and no byte above 0x7f, the most common line of an export. One pass over the line's eight-byte
// words finds its end and its commas (plainFields), and then every field is set (where
// parseRFCFields scans and dispatches field by field, at ~200 instructions a field). ok is false,
// and nothing is set, for any other record (a blank line, a quote, a CR, non-ASCII bytes, more
// than maxPlainFields fields): parseRFCFields reads it. The two must read a plain record alike:
// FuzzPlainRow compares them.
func (s *Source) parsePlainRow(data string, pos int, vals []pipeline.Value) (next, nl int, rerr *pipeline.RowError, ok bool) {
	if pos >= len(data) || data[pos] == '\n' {
		return 0, 0, nil, false
	}
	var ends [maxPlainFields]int32 // each field's end: its comma, then the line's end
	nf, eol, ok := plainFields(data, pos, &ends)
	if !ok {
		return 0, 0, nil, false
	}
	base := unsafe.Pointer(unsafe.StringData(data))
	start := pos
	colMap, kinds := s.colMap[:min(nf, s.nfields)], s.kinds
	for f, ci := range colMap {
		end := int(ends[f&(maxPlainFields-1)])
		if ci >= 0 && end > start {
			// the field, within the line: no bounds to check
			val := unsafe.String((*byte)(unsafe.Add(base, start)), end-start)
			if kinds[ci] == cqlvalue.Text {
				vals[ci] = pipeline.Value{Str: val, Kind: pipeline.KindText}
			} else if v, err := s.types[ci].ParseText(val); err == nil {
				vals[ci] = v // setCell's path for an ASCII field of another type, without its call
			} else if rerr == nil {
				rerr = s.cellError(ci, err)
			}
		}
		start = end + 1
	}
	if nf != s.nfields {
		rerr = s.fieldCount(nf, rerr)
	}
	if eol < len(data) {
		return eol + 1, 1, rerr, true
	}
	return eol, 0, rerr, true
}

// plainFields finds the end of the record at data[pos:] (its newline, or the end of the data)
// and the ends of its fields (each comma, then eol) into ends, nf of them; ok is false when the
// line is not plain (a quote, a CR, a byte above 0x7f) or has more than maxPlainFields fields.
func plainFields(data string, pos int, ends *[maxPlainFields]int32) (nf, eol int, ok bool) {
	eol = len(data)
	i := pos
	var acc uint64 // the line's bytes ORed: a high bit tells a non-ASCII byte
	base := unsafe.Pointer(unsafe.StringData(data))
	for ; i+8 <= len(data); i += 8 {
		x := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(base, i))[:])
		commas, n := zeroBytes(x^(ones*',')), x^(ones*'\n')
		// the lowest newline is exact (a borrow marks only bytes after a zero one)
		line, stop := ^uint64(0), (n-ones)&^n&highs
		if stop != 0 {
			line = 1<<(bits.TrailingZeros64(stop)&^7) - 1 // the bytes before it
		}
		acc |= x & line
		// a byte below '#' (a quote, a CR, a space, a tab) makes the word looked at again for
		// the quote and the CR that send the record to parseRFCFields
		if (x-ones*'#')&^x&highs&line != 0 && (zeroBytes(x^(ones*'"'))|zeroBytes(x^(ones*'\r')))&line != 0 {
			return 0, 0, false
		}
		for commas &= line; commas != 0; commas &= commas - 1 {
			if nf == maxPlainFields-1 {
				return 0, 0, false
			}
			ends[nf] = int32(i + bits.TrailingZeros64(commas)/8)
			nf++
		}
		if stop != 0 {
			eol = i + bits.TrailingZeros64(stop)/8
			break
		}
	}
	if acc&highs != 0 {
		return 0, 0, false
	}
	if i+8 > len(data) { // the tail of the data, shorter than a word
		for ; i < len(data); i++ {
			c := data[i]
			if c == '\n' {
				eol = i
				break
			}
			if c == ',' {
				if nf == maxPlainFields-1 {
					return 0, 0, false
				}
				ends[nf] = int32(i)
				nf++
			} else if c == '"' || c == '\r' || c >= utf8.RuneSelf {
				return 0, 0, false
			}
		}
	}
	ends[nf] = int32(eol)
	return nf + 1, eol, true
}

// ones and highs are a byte's lowest and highest bit in each byte of a word.
const ones, highs = 0x0101010101010101, 0x8080808080808080

// zeroBytes has the high bit of each zero byte of x set, and no other bit: exact, where the
// borrow of (x-ones)&^x can also mark the byte after a zero one (',' then '-').
func zeroBytes(x uint64) uint64 {
	const lows = 0x7f7f7f7f7f7f7f7f
	return ^((x&lows + lows) | x | lows)
}

// unquotedEnd returns the offset of the first ',' or '\n' at or after i in data, or len(data), and
// whether a byte before it is not ASCII. It tests eight bytes at a time: byte by byte the scan
// of the unquoted fields took about 14 instructions a byte, the largest part of reading a CSV.
func unquotedEnd(data string, i int) (int, bool) {
	var acc uint64
	for ; i+8 <= len(data); i += 8 {
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(data[i:]), 8))
		c, n := x^(ones*','), x^(ones*'\n')
		// a byte's high bit is set where it is ',' or '\n'; a borrow can set it in a later byte
		// too, never in an earlier one: the lowest set bit is the first such byte
		if m := ((c-ones)&^c | (n-ones)&^n) & highs; m != 0 {
			k := bits.TrailingZeros64(m) / 8
			acc |= x & (1<<(8*k) - 1)
			return i + k, acc&highs != 0
		}
		acc |= x
	}
	nonASCII := acc&highs != 0
	for ; i < len(data); i++ {
		c := data[i]
		if c == ',' || c == '\n' {
			break
		}
		nonASCII = nonASCII || c >= utf8.RuneSelf
	}
	return i, nonASCII
}

// parseDialectRow is parseCSVRow for any dialect.
func (s *Source) parseDialectRow(data string, pos int, vals []pipeline.Value) (next, nl int, blank bool, rerr *pipeline.RowError) {
	i := pos
	if i < len(data) {
		switch c := data[i]; {
		case c == '\n':
			return i + 1, 1, true, nil
		case c == '\r' && i+1 < len(data) && data[i+1] == '\n':
			return i + 2, 1, true, nil
		case c == s.csv.comment && c != 0:
			if e := strings.IndexByte(data[i:], '\n'); e >= 0 {
				return i + e + 1, 1, true, nil
			}
			return len(data), 0, true, nil
		}
	}
	field := 0
	for {
		var val string
		quoted := false
		hi := byte(utf8.RuneSelf) // an unquoted field's bytes ORed: below 0x80, it is ASCII
		if i < len(data) && data[i] == s.csv.quote {
			quoted = true
			d := &s.csv
			quote, delim, qs := d.quote, d.delim, i
			var j int
			var escaped, closed bool
			if d.esc == quote {
				j = i + 1
				for {
					k := strings.IndexByte(data[j:], quote)
					if k < 0 {
						break
					}
					j += k
					if j+1 < len(data) && data[j+1] == quote {
						escaped = true
						j += 2
						continue
					}
					closed = true
					break
				}
			} else {
				j, escaped, closed = d.closeEscaped(data, i)
			}
			if !closed || j-pos >= s.cfg.MaxRecordSize {
				// A stray quote: the record ends with the quote's line (see splitPoint).
				rerr = s.unclosedQuote(field, nl)
				if e := strings.IndexByte(data[i+1:], '\n'); e >= 0 {
					return i + 1 + e + 1, nl + 1, false, rerr
				}
				return len(data), nl, false, rerr
			}
			val = data[i+1 : j]
			nl += strings.Count(val, "\n")
			if escaped {
				val = d.unescape(val)
			}
			i = j + 1
			if i < len(data) && data[i] != delim && data[i] != '\n' {
				if data[i] == '\r' && (i+1 == len(data) || data[i+1] == '\n') {
					i++
				} else {
					if rerr == nil || rerr.Code != pipeline.CodeParse {
						rerr = &pipeline.RowError{Code: pipeline.CodeParse, Field: s.headerName(field),
							Message: "unexpected character after a closing quote"}
						if d.esc == quote && j > qs+1 && data[j-1] == '\\' {
							rerr.Message += bsQuoteHint
						}
					}
					for i < len(data) && data[i] != delim && data[i] != '\n' {
						i++
					}
				}
			}
		} else {
			j := i
			hi = 0
			delim := s.csv.delim
			for j < len(data) {
				c := data[j]
				if c == delim || c == '\n' {
					break
				}
				hi |= c
				j++
			}
			val = data[i:j]
			if (j == len(data) || data[j] == '\n') && len(val) > 0 && val[len(val)-1] == '\r' {
				val = val[:len(val)-1]
			}
			i = j
		}
		if field < s.nfields {
			// an unquoted empty field, or one that is the null text, is null
			if ci := s.colMap[field]; ci >= 0 && (quoted || val != "" && val != s.csv.null) {
				if hi < utf8.RuneSelf && s.kinds[ci] == cqlvalue.Text {
					vals[ci] = pipeline.Value{Str: val, Kind: pipeline.KindText} // the common case, kept inline
				} else if err := s.setCell(vals, ci, val, hi < utf8.RuneSelf); err != nil && rerr == nil {
					rerr = err
				}
			}
		}
		field++
		if i >= len(data) {
			break
		}
		if data[i] != '\n' { // the delimiter: a field ends at one or at the end of its line
			i++
			continue
		}
		i++ // '\n'
		nl++
		break
	}
	if field != s.nfields {
		rerr = s.fieldCount(field, rerr)
	}
	return i, nl, false, rerr
}

// fieldCount is the error of a record with field fields, keeping the hint of an earlier error.
func (s *Source) fieldCount(field int, prev *pipeline.RowError) *pipeline.RowError {
	msg := "expected " + strconv.Itoa(s.nfields) + " fields, got " + strconv.Itoa(field)
	if prev != nil && strings.HasSuffix(prev.Message, bsQuoteHint) {
		msg += bsQuoteHint
	}
	return &pipeline.RowError{Code: pipeline.CodeParse, Message: msg}
}

// bsQuoteHint ends the error of a row whose quoted field seems to end at a \" : the escape of
// dsbulk unload (and other Java tools), which the default dialect reads as a closing quote.
const bsQuoteHint = ` (a quote escaped as \", as dsbulk unload writes it? add escape=\ to the --source URI)`

// unclosedQuote is the error of a record whose field (0-based) opens a quote that does not close
// within the limit; nl is the number of lines of the record before the quote's.
func (s *Source) unclosedQuote(field, nl int) *pipeline.RowError {
	where := "field " + strconv.Itoa(field+1)
	name := s.headerName(field)
	if name == "" && field < len(s.header) {
		where += " (" + strconv.Quote(s.header[field]) + ")"
	}
	if s.csv.singleLine {
		return &pipeline.RowError{Code: pipeline.CodeParse, Field: name,
			Message: "the quote that opens " + where + " is not closed on its line (multiline=false: each line is one record): " +
				"the record is rejected and reading goes on with the next line (a stray '\"' at the start of a field, " +
				"or a quoted field with a line break? then leave multiline=false out)"}
	}
	if nl > 0 {
		where += ", on line " + strconv.Itoa(nl+1) + " of the record,"
	}
	return &pipeline.RowError{Code: pipeline.CodeParse, Field: name,
		Message: "the quote that opens " + where + " is not closed within --max-record-size (" +
			formatBytes(s.cfg.MaxRecordSize) + ") or before the end of the file: the record is taken to end with that line " +
			"and reading goes on with the next one (a stray '\"' at the start of a field?)"}
}

// headerName names the CSV field at index i for error messages.
func (s *Source) headerName(i int) string {
	if i < len(s.colMap) && s.colMap[i] >= 0 {
		return s.names[s.colMap[i]]
	}
	return ""
}

// setCell converts one field's text into vals[ci] by the column's type. ascii says the split loop
// saw only ASCII bytes in it (so a VARCHAR needs no UTF-8 check). A refused value is a RowError
// naming the column: invalid UTF-8 in a VARCHAR would make the whole Parquet file unreadable.
func (s *Source) setCell(vals []pipeline.Value, ci int, val string, ascii bool) *pipeline.RowError {
	if s.kinds[ci] == cqlvalue.Text {
		if ascii || utf8.ValidString(val) {
			vals[ci] = pipeline.Value{Str: val, Kind: pipeline.KindText}
			return nil
		}
		return &pipeline.RowError{Code: pipeline.CodeEncoding, Field: s.names[ci], Message: cqlvalue.CheckUTF8(val).Error()}
	}
	v, err := s.types[ci].ParseText(val)
	if err != nil {
		return s.cellError(ci, err)
	}
	vals[ci] = v
	return nil
}

// cellError is the error of column ci's value that ParseText refused with err.
func (s *Source) cellError(ci int, err error) *pipeline.RowError {
	return &pipeline.RowError{Code: cqlvalue.ErrorCode(err), Field: s.names[ci], Message: err.Error()}
}
