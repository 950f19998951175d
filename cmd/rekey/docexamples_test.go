package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// Every example in a command's --help that needs no server, bucket or shared folder runs as
// written, each in a folder holding the repository's mappings and what the README's quick start
// made there (orders.csv, out/orders): an example naming a file no documented command makes
// (users.csv, readings.yaml) fails here. Before, check, ddl, migrate and report showed such
// examples, which a new user could only run into "file users.csv not found".
func TestHelpExamplesRun(t *testing.T) {
	mappings, err := filepath.Abs("../../mappings")
	if err != nil {
		t.Fatal(err)
	}
	quickStart := func(command string) {
		t.Chdir(t.TempDir())
		if err := os.Symlink(mappings, "mappings"); err != nil {
			t.Fatal(err)
		}
		steps := [][]string{{"gen", "orders", "--rows", "20000", "--out", "orders.csv"}}
		if command == "verify" { // the output it checks; migrate's examples make their own
			steps = append(steps, []string{"migrate", "-m", "mappings/orders.yaml", "--source", "file:orders.csv", "--out", "out/orders", "--progress", "never"})
		}
		for _, args := range steps {
			if code, stdout, stderr := runCLI(t, args...); code != 0 {
				t.Fatalf("rekey %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
			}
		}
	}
	needsServer := regexp.MustCompile(`(kafka|cassandra|lindorm|mysql|s3|oss)://|^/`)
	n := 0
	for _, cmd := range newRootCmd(&invocation{}).Commands() {
		for _, line := range strings.Split(strings.ReplaceAll(cmd.Example, "\\\n", " "), "\n") {
			for _, c := range commandsIn("rekey "+cmd.Name()+" --help", line) {
				if slices.ContainsFunc(c.args, needsServer.MatchString) {
					continue
				}
				n++
				quickStart(cmd.Name())
				args := slices.Clone(c.args)
				if args[0] == "gen" { // the same rows as millions, fewer of them
					if i := slices.Index(args, "--rows"); i >= 0 && i+1 < len(args) {
						args[i+1] = "20000"
					} else {
						args = append(args, "--rows", "20000")
					}
				}
				code, stdout, stderr := runCLI(t, args...)
				// a report's or a verify's verdict exits 2 too: it ran
				if code > 1 && !strings.Contains(stdout, "VERDICT") && !strings.Contains(stdout, "DIFFERENT") {
					t.Errorf("%s: rekey %s: exit %d\n%s", c.where, strings.Join(c.args, " "), code, stderr)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("ran only %d help examples: is the extraction broken?", n)
	}
}
