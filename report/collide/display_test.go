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
