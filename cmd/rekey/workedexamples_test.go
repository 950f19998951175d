package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportWorkedExamples runs the worked examples of docs/report.md (the design guides' own
// tables) from the repository's root and checks that every line the page shows is what the
// command prints: each run of lines between "..." is a contiguous part of the output, in order,
// and the exit code is the one the VERDICT line (or the absence of errors) says.
func TestReportWorkedExamples(t *testing.T) {
	section := docSection(t, "docs/report.md", "## Worked examples: the guides' own tables")
	t.Chdir("../..")
	blocks := strings.Split(section, "\n```\n")
	ran := 0
	for k := 1; k < len(blocks); k += 2 { // the fenced blocks
		lines := strings.Split(strings.TrimSuffix(blocks[k], "\n"), "\n")
		cmd, ok := strings.CutPrefix(lines[0], "$ rekey ")
		if !ok {
			t.Fatalf("a worked example does not start with $ rekey: %q", lines[0])
		}
		ran++
		code, stdout, stderr := runCLI(t, shellWords(cmd)...)
		want := 0
		if strings.Contains(blocks[k], "-> exit 2\n") || strings.Contains(stdout, "  ERROR ") {
			want = 2
		}
		if code != want {
			t.Errorf("rekey %s: exit %d, want %d\n%s", cmd, code, want, stderr)
		}
		out := strings.Split(stdout, "\n")
		at := 0
		var seg []string
		check := func() {
			if len(seg) == 0 {
				return
			}
			found := -1
			for i := at; i+len(seg) <= len(out); i++ {
				match := true
				for j, l := range seg {
					if out[i+j] != l {
						match = false
						break
					}
				}
				if match {
					found = i
					break
				}
			}
			if found < 0 {
				t.Errorf("rekey %s: the page shows lines it does not print (after output line %d):\n%s\n\nit prints:\n%s", cmd, at, strings.Join(seg, "\n"), stdout)
			} else {
				at = found + len(seg)
			}
			seg = nil
		}
		for _, l := range lines[1:] {
			if l == "..." {
				check()
				continue
			}
			seg = append(seg, l)
		}
		check()
	}
	if ran == 0 {
		t.Fatal("no worked example ran")
	}
}

// docSection is the text under heading (a whole "## ..." line) in the repository's file path, up
// to the next "## " heading.
func docSection(t *testing.T, path, heading string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("../..", path))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", path, heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	return section
}
