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

// csvSplitPoint returns the length of the longest prefix of b that ends at a record boundary
// (just after a '\n' outside quotes), or 0 if there is none. b starts at a record boundary.
func csvSplitPoint(b []byte) int {
	// Outside-quote segments as [start, end) pairs; the last newline of the last segment that
	// has one is the split point.
	var segsBuf [16]int
	segs := segsBuf[:0]
	i, segStart, open := 0, 0, false
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
		j := q + 1
		for {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 || j+k+1 == len(b) {
				// The field is still open at the end of b (or its closing quote is the last
				// byte, which might be the first half of an escaped "").
				open = true
				break
			}
			j += k
			if b[j+1] == '"' {
				j += 2
				continue
			}
			break
		}
		if open {
			break
		}
		i = j + 1
		segStart = i
	}
	if !open {
		segs = append(segs, segStart, len(b))
	}
	for p := len(segs) - 2; p >= 0; p -= 2 {
		if k := bytes.LastIndexByte(b[segs[p]:segs[p+1]], '\n'); k >= 0 {
			return segs[p] + k + 1
		}
	}
	return 0
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
			escaped := false
			for {
				k := strings.IndexByte(data[j:], '"')
				if k < 0 {
					return len(data), nl + strings.Count(data[i:], "\n"), false,
						&pipeline.RowError{Code: pipeline.CodeParse, Field: s.headerName(field), Message: "unterminated quoted field"}
				}
				j += k
				if j+1 < len(data) && data[j+1] == '"' {
					escaped = true
					j += 2
					continue
				}
				break
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

// headerName names the CSV field at index i for error messages.
func (s *Source) headerName(i int) string {
	if i < len(s.colMap) && s.colMap[i] >= 0 {
		return s.names[s.colMap[i]]
	}
	return ""
}
