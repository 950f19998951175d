package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

//go:generate go test -run ^TestCLIReference$ -update-cli-docs .

var updateCLIDocs = flag.Bool("update-cli-docs", false, "rewrite docs/cli from the --help text")

// cliDocsDir is the CLI reference, one page per command, generated from the same cobra tree that
// prints --help.
const cliDocsDir = "../../docs/cli"

// writeCLIReference renders every command's help into dir as Markdown.
func writeCLIReference(t *testing.T, dir string) {
	t.Helper()
	root := newRootCmd(&invocation{})
	root.DisableAutoGenTag = true // no date: the pages change only when the help does
	perCPU := cpuDependentFlags()
	visitCommands(root, func(c *cobra.Command) {
		// the long help is laid out for a terminal: keep its lines and indentation as they are
		if c.Long != "" {
			c.Long = "```\n" + strings.TrimRight(c.Long, "\n") + "\n```"
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if perCPU[c.CommandPath()+" --"+f.Name] {
				f.DefValue = "the number of CPUs"
			}
		})
	})
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatalf("generating the CLI reference: %v", err)
	}
}

// cpuDependentFlags names the flags whose default is the machine's CPU count (--workers), found by
// building the tree under two GOMAXPROCS values, so that the pages read the same on every machine.
func cpuDependentFlags() map[string]bool {
	defaults := func(procs int) map[string]string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		out := map[string]string{}
		visitCommands(newRootCmd(&invocation{}), func(c *cobra.Command) {
			c.Flags().VisitAll(func(f *pflag.Flag) { out[c.CommandPath()+" --"+f.Name] = f.DefValue })
		})
		return out
	}
	one, three := defaults(1), defaults(3)
	differ := map[string]bool{}
	for name, v := range one {
		if three[name] != v {
			differ[name] = true
		}
	}
	return differ
}

func visitCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		visitCommands(sub, fn)
	}
}

// TestCLIReference fails when docs/cli no longer matches the --help text. `go generate
// ./cmd/rekey` rewrites it.
func TestCLIReference(t *testing.T) {
	if *updateCLIDocs {
		old, _ := filepath.Glob(filepath.Join(cliDocsDir, "*.md"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		writeCLIReference(t, cliDocsDir)
	}
	fresh := t.TempDir()
	writeCLIReference(t, fresh)
	want := readMarkdownDir(t, fresh)
	got := readMarkdownDir(t, cliDocsDir)
	var names []string
	for name := range want {
		names = append(names, name)
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		w, inWant := want[name]
		g, inGot := got[name]
		switch {
		case !inGot:
			t.Errorf("docs/cli/%s is missing: run go generate ./cmd/rekey", name)
		case !inWant:
			t.Errorf("docs/cli/%s documents no command: run go generate ./cmd/rekey", name)
		case !bytes.Equal(w, g):
			t.Errorf("docs/cli/%s differs from the --help text: run go generate ./cmd/rekey", name)
		}
	}
}

func readMarkdownDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}
