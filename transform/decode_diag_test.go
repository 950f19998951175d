package transform

import (
	"strings"
	"testing"
)

// A file of two YAML documents (two mappings pasted into one, or a '---' line left in) is
// refused naming the line where the second begins. Before, Decode read the first document and
// silently dropped the rest: target: sections, regions: or codes written after the '---' were
// never applied.
func TestDecodeRefusesASecondDocument(t *testing.T) {
	yml := "version: 1\nsource:\n  columns: {a: text, b: int}\ntarget:\n  table: t\n  primary_key: \"[a]\"\n---\nregions:\n  count: 16\n"
	me := decodeErr(t, yml)
	if len(me.Problems) != 1 || me.Problems[0].Line != 7 || !strings.Contains(me.Problems[0].Message, "more than one YAML document") ||
		!strings.Contains(me.Problems[0].Message, "one mapping per file") {
		t.Fatalf("problems: %v", me)
	}
	// reported with the first document's own problems
	wantProblems(t, decodeErr(t, strings.Replace(yml, "table: t", "table: t\n  colums: {}", 1)), [][2]string{
		{"", "more than one YAML document"},
		{"target.colums", "unknown field"},
	})
	// a leading '---', and a trailing one with nothing after it, leave one document
	if _, err := Decode([]byte("---\nversion: 1\nsource:\n  columns: {a: text, b: int}\ntarget:\n  table: t\n  primary_key: \"[a]\"\n---\n# end\n"), "m.yaml"); err != nil {
		t.Fatalf("one document between '---' lines: %v", err)
	}
}
