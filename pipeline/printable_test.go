package pipeline

import "testing"

// Data shown on a terminal cannot drive it: escape sequences (retitle, recolour, clear), C1
// controls, bidi overrides, newlines and invalid UTF-8 are shown escaped.
func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, quoted, inline string }{
		{"plain text", "plain text", "plain text"},
		{"送达 ü \ufffd", "送达 ü \ufffd", "送达 ü \ufffd"},
		{"", "", ""},
		{"\x1b]0;pwned\x07title", `"\x1b]0;pwned\atitle"`, `\x1b]0;pwned\atitle`},
		{"red \x1b[31mX", `"red \x1b[31mX"`, `red \x1b[31mX`},
		{"two\nlines", `"two\nlines"`, `two\nlines`},
		{"tab\there", `"tab\there"`, `tab\there`},
		{"\u202eevil", `"\u202eevil"`, `\u202eevil`}, // right-to-left override
		{"bad \xff byte", `"bad \xff byte"`, `bad \xff byte`},
		{"c1 \u009b31m", `"c1 \u009b31m"`, `c1 \u009b31m`},
	} {
		if got := Printable(c.in); got != c.quoted {
			t.Errorf("Printable(%q) = %s, want %s", c.in, got, c.quoted)
		}
		if got := EscapeControls(c.in); got != c.inline {
			t.Errorf("EscapeControls(%q) = %s, want %s", c.in, got, c.inline)
		}
	}
}
