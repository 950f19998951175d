package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The documented examples that need no server run as written: the code blocks under these
// headings, their rekey commands one after the other in a folder holding the repository's
// mappings, each exiting 0. A path the example does not create, a flag it lacks, or shard runs
// that cannot merge fail here.
func TestDocExamplesRun(t *testing.T) {
	mappings, err := filepath.Abs("../../mappings")
	if err != nil {
		t.Fatal(err)
	}
	examples := []struct{ file, heading string }{
		{"README.md", "## Quick start"},
		{"docs/sources.md", "## Files, directories, stdin"},
		{"docs/sources.md", "## Shards of files and gen"},
	}
	var cmds [][]docCommand
	for _, ex := range examples {
		text, err := os.ReadFile(filepath.Join("../..", ex.file))
		if err != nil {
			t.Fatal(err)
		}
		var block []docCommand
		for _, c := range docCommands(ex.file, string(text)) {
			if c.fenced && c.heading == ex.heading {
				block = append(block, c)
			}
		}
		if len(block) == 0 {
			t.Fatalf("%s %q: no command block", ex.file, ex.heading)
		}
		cmds = append(cmds, block)
	}
	t.Chdir(t.TempDir())
	if err := os.Symlink(mappings, "mappings"); err != nil {
		t.Fatal(err)
	}
	for _, block := range cmds {
		for _, c := range block {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != 0 {
				t.Fatalf("%s: rekey %s: exit %d\n%s%s", c.where, strings.Join(c.args, " "), code, stdout, stderr)
			}
			t.Logf("%s: rekey %s: exit 0", c.where, strings.Join(c.args, " "))
		}
	}
}
