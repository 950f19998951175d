package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// PlainSQLText tells whether s can be written as the SQL literal 's' (quotes doubled) and read
// back as s by any MySQL-protocol client and server: valid UTF-8 with no backslash and no control
// character. A backslash is an escape unless the session has NO_BACKSLASH_ESCAPES, so a literal
// of a backslash followed by a doubled quote is complete under one rule and open under the
// other; the mysql client refuses a NUL outside --binary-mode. Otherwise it says what s holds
// that cannot be.
func PlainSQLText(s string) (ok bool, why string) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			return false, "a backslash"
		case c < 0x20 || c == 0x7f:
			return false, fmt.Sprintf("the control character %U", rune(c))
		case c < utf8.RuneSelf:
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return false, "bytes that are not UTF-8"
		}
		i += n
	}
	return true, ""
}

// SplitTextProblem says why the text split value s cannot be a point of Lindorm's
// SPLITKEYS='v1,v2,...' ("" when it can): the option is one quoted string whose points are
// separated by commas, with no escape for a comma, and ddl.sql must read the same under any
// client's escape rules (PlainSQLText).
func SplitTextProblem(s string) string {
	if strings.Contains(s, ",") {
		return "a comma (SPLITKEYS separates its points with commas and has no escape for one)"
	}
	if ok, why := PlainSQLText(s); !ok {
		return why + " (SPLITKEYS is a quoted string, which must read the same with and without backslash escapes)"
	}
	return ""
}

// SplitValue renders a split value typed like the first key column, as SPLITKEYS and the
// manifest write it: integers in decimal, VARCHAR as is, VARBINARY in lowercase hex, DECIMAL as
// its text, DOUBLE/FLOAT in shortest form, BOOLEAN true/false, DATE yyyy-mm-dd, TIMESTAMP
// "yyyy-mm-dd hh:mm:ss.SSS" (UTC). UNCERTAIN: the literal forms Lindorm expects in SPLITKEYS
// for VARBINARY, DATE and TIMESTAMP first columns.
func SplitValue(t Type, v Value) string {
	if v.IsNull() {
		return ""
	}
	switch t {
	case TypeVarbinary:
		return fmt.Sprintf("%x", v.Str)
	case TypeDate:
		if v.Kind == KindInt {
			return time.Unix(v.Num*86400, 0).UTC().Format("2006-01-02")
		}
	case TypeTimestamp:
		if v.Kind == KindInt {
			return time.UnixMilli(v.Num).UTC().Format("2006-01-02 15:04:05.000")
		}
	case TypeFloat, TypeDouble:
		if v.Kind == KindInt {
			return strconv.FormatInt(v.Num, 10)
		}
	}
	return v.String()
}
