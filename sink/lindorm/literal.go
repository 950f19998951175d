package lindorm

import "github.com/rekey/rekey/pipeline"

// AppendString appends s as a string literal for the SQL files rekey writes for a person or a
// client to run (replicate's deletes/*.sql), one that means s whatever the client's escape
// rules: 'text' with quotes doubled when pipeline.PlainSQLText, else X'hex' (MySQL and MariaDB
// read X'..' as the string of those bytes in a text column).
// UNCERTAIN: whether Lindorm SQL reads X'..' as a VARCHAR; a statement it refuses fails loudly
// in the client, it cannot run anything else.
func AppendString(dst []byte, s string) []byte {
	if ok, _ := pipeline.PlainSQLText(s); !ok {
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
