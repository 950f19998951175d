package lindorm

import (
	"fmt"
	"unicode/utf8"
)

// String literals in the SQL files rekey writes for a person or a client to run (ddl.sql,
// replicate's deletes/*.sql, `rekey ddl`) must mean the same text whatever the reading client
// and session do with backslashes: MySQL-protocol clients and servers take \ as an escape
// unless the session has NO_BACKSLASH_ESCAPES, so 'a\'' is a complete literal under one rule
// and an open one under the other. A literal with its quotes doubled and no backslash reads the
// same under both rules; so does X'hex'. Control characters go to hex too: the mysql client
// refuses a NUL outside --binary-mode and may rewrite line ends.

// PlainText tells whether s can be written as 'text' (quotes doubled) and read back the same
// under any escape rule: valid UTF-8 with no backslash and no control character. Otherwise it
// returns what s holds that cannot be.
func PlainText(s string) (ok bool, why string) {
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

// AppendString appends s as a string literal: 'text' with quotes doubled when PlainText, else
// X'hex' (MySQL and MariaDB read X'..' as the string of those bytes in a text column).
// UNCERTAIN: whether Lindorm SQL reads X'..' as a VARCHAR; a statement it refuses fails loudly
// in the client, it cannot run anything else.
func AppendString(dst []byte, s string) []byte {
	if ok, _ := PlainText(s); !ok {
		return AppendHex(dst, s)
	}
	dst = append(dst, '\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			dst = append(dst, '\'')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '\'')
}

// AppendHex appends X'hex' of s's bytes.
func AppendHex(dst []byte, s string) []byte {
	const digits = "0123456789abcdef"
	dst = append(dst, "X'"...)
	for i := 0; i < len(s); i++ {
		dst = append(dst, digits[s[i]>>4], digits[s[i]&0xf])
	}
	return append(dst, '\'')
}
