package file

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// CSV rules, shared by the chunk splitter and the row parser so that both agree on where records
// end: fields are separated by ',' and records by '\n' (a '\r' before it is dropped). A field that
// starts with '"' is quoted: it may hold ',', '\n' and '""' (an escaped quote) and ends at the next
// lone '"'. A quote anywhere else is an ordinary character. An unquoted empty field is null; a
// quoted empty field is the empty string.
//
// A record must end within Config.MaxRecordSize bytes of its start. A quoted field whose closing
// quote is not within that limit (or that the file ends inside) is taken for a stray quote: its
// record ends with the line the quote opens on, and the next record starts on the line after.
// A record that still ends past the limit (a line longer than it) is rejected as too long. Both
// rules look at most limit+1 bytes past a record's start, which bounds the buffer a record needs,
// and both depend only on the bytes from the record's start, so that any chunking (and a resume
// from any record boundary) reads the same records.

// csvSplitPoint returns the length of the longest prefix of b that holds whole records; b starts
// at a record boundary and is not the end of the file. When b holds no whole record, cut is 0 and
// either head is 0 (the first record may end within the limit: read more) or head > 0: the first
// record runs past the limit and b holds no end of it, which is the first '\n' after b; b[:head]
// is its start.
func csvSplitPoint(b []byte, limit int) (cut, head int) {
	// Outside-quote segments as [start, end) pairs since the last known record boundary base;
	// the last newline in them is the last record boundary.
	var segsBuf [16]int
	segs := segsBuf[:0]
	base, i, segStart := 0, 0, 0
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			break
		}
		q := i + k
		if q > 0 && b[q-1] != ',' && b[q-1] != '\n' {
			i = q + 1 // a literal quote inside an unquoted field
			continue
		}
		segs = append(segs, segStart, q)
		c := closingQuote(b, q)
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

// closingQuote returns the index of the quote that closes the quoted field opening at b[q], or -1
// when b does not tell: no lone quote follows, or the only candidate is b's last byte (which may
// be the first half of an escaped "").
func closingQuote(b []byte, q int) int {
	j := q + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 || j+k+1 == len(b) {
			return -1
		}
		j += k
		if b[j+1] != '"' {
			return j
		}
		j += 2
	}
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

// splitHeader reads the header record at data[pos:]. It returns the fields, the offset after the
// record and the number of newlines it spans.
func splitHeader(data []byte, pos int) (fields []string, next, lines int, ok bool) {
	r := csv.NewReader(bytes.NewReader(data[pos:]))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	rec, err := r.Read()
	if err != nil {
		return nil, 0, 0, false
	}
	next = pos + int(r.InputOffset())
	return rec, next, bytes.Count(data[pos:next], []byte{'\n'}), true
}

// parseCSVRow parses the record at data[pos:] into vals (indexed by schema column). It returns
// the offset after the record, the newlines it consumed, whether the line was blank (no record),
// and the row's error if it could not be split or a field did not fit its type.
func (s *Source) parseCSVRow(data string, pos int, vals []pipeline.Value) (next, nl int, blank bool, rerr *pipeline.RowError) {
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
				// A stray quote: the record ends with the quote's line (see csvSplitPoint).
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
					}
					for i < len(data) && data[i] != ',' && data[i] != '\n' {
						i++
					}
				}
			}
		} else {
			j := i
			hi = 0
			for j < len(data) {
				c := data[j]
				if c == ',' || c == '\n' {
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
			if ci := s.colMap[field]; ci >= 0 && (quoted || val != "") {
				if s.kinds[ci] == cqlvalue.Text {
					// invalid UTF-8 in a VARCHAR makes the whole Parquet file unreadable; the
					// split loop already saw whether an unquoted field is ASCII
					if hi < utf8.RuneSelf || utf8.ValidString(val) {
						vals[ci] = pipeline.Value{S: val, K: pipeline.KindText}
					} else if rerr == nil {
						rerr = &pipeline.RowError{Code: pipeline.CodeEncoding, Field: s.names[ci], Message: cqlvalue.CheckUTF8(val).Error()}
					}
				} else if v, err := s.types[ci].ParseText(val); err == nil {
					vals[ci] = v
				} else if rerr == nil {
					rerr = &pipeline.RowError{Code: cqlvalue.ErrorCode(err), Field: s.names[ci], Message: err.Error()}
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
		rerr = &pipeline.RowError{Code: pipeline.CodeParse,
			Message: "expected " + strconv.Itoa(s.nfields) + " fields, got " + strconv.Itoa(field)}
	}
	return i, nl, false, rerr
}

// unclosedQuote is the error of a record whose field (0-based) opens a quote that does not close
// within the limit; nl is the number of lines of the record before the quote's.
func (s *Source) unclosedQuote(field, nl int) *pipeline.RowError {
	where := "field " + strconv.Itoa(field+1)
	name := s.headerName(field)
	if name == "" && field < len(s.header) {
		where += " (" + strconv.Quote(s.header[field]) + ")"
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
