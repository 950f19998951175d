package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// docCommand is one `rekey ...` command line found in the documentation.
type docCommand struct {
	where   string   // file:line
	args    []string // what follows "rekey"
	heading string   // the Markdown heading it stands under ("## Quick start")
	fenced  bool     // in a code block, not an inline code span
}

// TestDocCommandsParse checks every rekey command line in README.md and docs/: its subcommand
// exists and cobra accepts its flags and arguments, so a renamed or removed flag cannot linger in
// the manual.
func TestDocCommandsParse(t *testing.T) {
	t.Parallel()
	files := []string{"../../README.md"}
	for _, pattern := range []string{"../../docs/*.md", "../../docs/cli/*.md"} {
		more, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	total := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(strings.TrimPrefix(f, "../../"), string(text)) {
			total++
			if err := parseDocCommand(c.args); err != nil {
				t.Errorf("%s: rekey %s: %v", c.where, strings.Join(c.args, " "), err)
			}
		}
	}
	t.Logf("%d rekey command lines parse", total)
	if total < 50 {
		t.Fatalf("found only %d rekey command lines in the docs: the extraction is broken", total)
	}
}

// parseDocCommand runs cobra's parsing of args against a fresh command tree, without running
// the command.
func parseDocCommand(args []string) error {
	root := newRootCmd(&invocation{})
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root {
		return errors.New("no subcommand")
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return err
	}
	return cmd.ValidateFlagGroups()
}

func isSubcommand(root *cobra.Command, name string) bool {
	for _, c := range root.Commands() {
		if c.Name() == name {
			return true
		}
	}
	return false
}

var (
	inlineCode  = regexp.MustCompile("`([^`]+)`")
	placeholder = regexp.MustCompile(`(^|\s)[A-Z][A-Z_]*(\s|$)`) // -m MAPPING, --rows N
)

// docCommands finds the rekey command lines of a Markdown file: the lines of its shell code
// blocks (continuations joined; in the generated CLI pages, the Examples) and its inline code
// spans. Spans holding placeholders of a synopsis ("...", "[--flag]", "-m MAPPING") are not
// commands.
func docCommands(name, text string) []docCommand {
	var out []docCommand
	lines := strings.Split(text, "\n")
	fence, heading := "", ""
	examplesOnly := strings.HasPrefix(name, "docs/cli/") // generated pages: only their examples are commands
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		where := name + ":" + strconv.Itoa(i+1)
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "```") {
			if fence == "" {
				fence = strings.TrimPrefix(trimmed, "```")
				if fence == "" {
					fence = "text"
				}
			} else {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(line, "#") && fence == "" {
			heading = line
			continue
		}
		if fence != "" {
			if fence != "sh" && fence != "text" && fence != "bash" {
				continue // yaml, json: not command lines
			}
			if examplesOnly && heading != "### Examples" {
				continue // a command's help text, its synopsis: prose and placeholders
			}
			for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, "\\") + " " + lines[i]
			}
			for _, c := range commandsIn(where, line) {
				c.heading, c.fenced = heading, true
				out = append(out, c)
			}
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			span := strings.ReplaceAll(m[1], `\|`, "|") // a pipe escaped in a table cell
			if strings.Contains(span, "...") || strings.Contains(span, "[") || placeholder.MatchString(span) {
				continue
			}
			for _, c := range commandsIn(where, span) {
				c.heading = heading
				out = append(out, c)
			}
		}
	}
	return out
}

// commandsIn returns the rekey commands of one shell line: each starts at a "rekey" (or
// "./rekey", "go run ./cmd/rekey") word followed by a subcommand and ends at a shell operator,
// a redirection or a comment.
func commandsIn(where, line string) []docCommand {
	words := shellWords(line)
	root := newRootCmd(&invocation{})
	var out []docCommand
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "go" && i+2 < len(words) && words[i+1] == "run" && words[i+2] == "./cmd/rekey" {
			i += 2
			w = "rekey"
		}
		if (w != "rekey" && w != "./rekey") || i+1 >= len(words) || !isSubcommand(root, words[i+1]) {
			continue
		}
		var args []string
		for i++; i < len(words) && !endsCommand(words[i]); i++ {
			args = append(args, words[i])
		}
		out = append(out, docCommand{where: where, args: args})
	}
	return out
}

func endsCommand(w string) bool {
	switch w {
	case "|", "||", "&&", ";", "&", "2>&1":
		return true
	}
	return strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "2>") ||
		strings.HasPrefix(w, "#")
}

// shellWords splits a line into words as a POSIX shell does for quotes and backslashes; $VAR and
// $(...) stay as they are (a placeholder value is as good as any for parsing flags). A word's
// trailing ";" becomes a word of its own.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			w := cur.String()
			if strings.HasSuffix(w, ";") && len(w) > 1 {
				words = append(words, strings.TrimSuffix(w, ";"), ";")
			} else {
				words = append(words, w)
			}
		}
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '\'':
			inWord = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`+"`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
		case c == '\\' && i+1 < len(line):
			inWord = true
			i++
			cur.WriteByte(line[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	flush()
	return words
}
