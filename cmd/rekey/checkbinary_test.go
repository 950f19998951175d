package main

import (
	"strings"
	"testing"
)

// check prints the split points of a VARBINARY first key column in hex, as the mapping's
// split_keys and ddl.sql's SPLITKEYS give them; it printed their bytes quoted ("\x00\xff"), a
// form split_keys does not take, beside the ddl that says 00ff.
func TestCheckPrintsBinarySplitsInHex(t *testing.T) {
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", "version: 1\nsource: {name: t, columns: {b: blob, v: text}}\ntarget: {table: t, primary_key: '[b]'}\nregions: {split_keys: ['00ff', '7f']}\n")
	code, out, errs := runCLI(t, "check", "-m", m)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{`region-0000  [-inf, "00ff")`, `region-0001  ["00ff", "7f")`, `region-0002  ["7f", +inf)`} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not print %s:\n%s", want, out)
		}
	}
}
