package collide

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// DisplayValue escapes a backslash, so that a value holding one reads apart from a value whose
// control character it escapes: the text a\nb (a backslash and an n) showed as a line break does.
func TestDisplayValueTellsBackslashesFromEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"a\nb":  `a\nb`,
		`a\nb`:  `a\\nb`,
		"a\tb":  `a\tb`,
		`a\tb`:  `a\\tb`,
		"\x01":  `\x01`,
		`\x01`:  `\\x01`,
		"中\xe4": `中\xe4`,
		`中\xe4`: `中\\xe4`,
		`plain`: `plain`,
		`"q"`:   `"q"`,
	} {
		if got := DisplayValue(pipeline.Text(in), 80); got != want {
			t.Errorf("DisplayValue(%q) = %s, want %s", in, got, want)
		}
	}
}

// A value's bytes that are not UTF-8 (a blob key, a binary prefix) are shown as themselves,
// \xff for the byte 0xff. Before, each such byte was shown as \xfd (the low byte of U+FFFD, the
// replacement character decoding gave it), so the report named a key that does not exist:
// 0xff00e4b8 read as \xfd\x00\xfd\xfd; and a real U+FFFD in a text was shown as \xfd too.
func TestDisplayValueShowsTheBytes(t *testing.T) {
	for _, c := range []struct {
		v    pipeline.Value
		want string
	}{
		{pipeline.Bytes("\xff\x00\xe4\xb8"), `\xff\x00\xe4\xb8`},
		{pipeline.Text("a\xe4\xb8b"), `a\xe4\xb8b`},
		{pipeline.Text("城\x1b[31m"), `城\x1b[31m`},
		{pipeline.Text("bad \uFFFD char"), "bad \uFFFD char"},
		{pipeline.Text("line\nnext\ttab"), `line\nnext\ttab`},
	} {
		if got := DisplayValue(c.v, 80); got != c.want {
			t.Errorf("DisplayValue(%q) = %q, want %q", c.v.Str, got, c.want)
		}
	}
}
