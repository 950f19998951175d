package pipeline

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable is how a data value is shown on a terminal: as it is when every character prints,
// else quoted with its control characters escaped as strconv.Quote does ("\x1b[2J"), so that
// data can neither retitle, recolour or clear the terminal nor fake lines of the output.
func Printable(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// EscapeControls escapes, as strconv.Quote does, the characters of s that do not print (control
// characters, newlines, invalid UTF-8) and leaves the rest: for text that embeds data values.
func EscapeControls(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && invalidAt(s, i):
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

func printable(s string) bool {
	for i, r := range s {
		if !strconv.IsPrint(r) || r == utf8.RuneError && invalidAt(s, i) {
			return false
		}
	}
	return true
}

// invalidAt tells whether the U+FFFD that ranging over s gave at i stands for an invalid byte.
func invalidAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 1
}
