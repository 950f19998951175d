package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/sourcetest"
)

// conformanceRows writes n rows in format, one of them undecodable (a reject the source still sends).
func conformanceRows(format string, n, bad int) string {
	var b strings.Builder
	if format == "csv" {
		b.WriteString("id,name\n")
	}
	for i := 0; i < n; i++ {
		switch {
		case i == bad && format == "csv":
			fmt.Fprintf(&b, "x%d,bad\n", i)
		case i == bad:
			fmt.Fprintf(&b, "{\"id\": \"x%d\"\n", i)
		case format == "csv":
			fmt.Fprintf(&b, "%d,\"name, %d\"\n", i, i)
		default:
			fmt.Fprintf(&b, "{\"id\": %d, \"name\": \"name %d\"}\n", i, i)
		}
	}
	return b.String()
}

var conformanceSchema = pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "name", Type: "text"}}

// Every file format, a part of a file (a byte range of it: JSON Lines, CSV with multiline=false),
// and a directory read as one source with a stream per file, resumes after any batch without
// losing or repeating a row, and says which file (name, size, time) it read.
func TestSourceConformance(t *testing.T) {
	for _, name := range []string{"csv", "jsonl", "csv.gz", "jsonl.gz", "csv part", "jsonl part"} {
		t.Run(name, func(t *testing.T) {
			format, part := strings.CutSuffix(name, " part")
			plain := strings.TrimSuffix(format, ".gz")
			path := writeFile(t, "in."+format, conformanceRows(plain, 60, 17))
			cfg := Config{Path: path, Schema: conformanceSchema, BatchSize: 7, ChunkSize: 64, Workers: 2}
			if part {
				cfg.Part = pipeline.Shard{Index: 1, Count: 3}
				cfg.CSV.SingleLine = format == "csv"
				cfg.BatchSize = 3
			}
			open := opener(func() (pipeline.Source, error) { return New(cfg, nil) })
			sourcetest.Run(t, sourcetest.Case{
				Open: open,
				OpenChanged: func(t *testing.T) pipeline.Source {
					changed := writeFile(t, "in."+format, conformanceRows(plain, 61, 17))
					if err := os.Rename(changed, path); err != nil {
						t.Fatal(err)
					}
					return open(t)
				},
			})
		})
	}
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		for i, f := range []string{"a.csv", "b.jsonl", "c.csv"} {
			content := conformanceRows(strings.TrimSuffix(filepath.Ext(f), "")[1:], 20+i*5, 3+i)
			if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		open := opener(func() (pipeline.Source, error) {
			return Open(context.Background(), Spec{Path: dir}, Config{Schema: conformanceSchema, BatchSize: 6, Workers: 2}, nil)
		})
		sourcetest.Run(t, sourcetest.Case{
			Open: open,
			OpenChanged: func(t *testing.T) pipeline.Source {
				if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(conformanceRows("jsonl", 26, 3)), 0o644); err != nil {
					t.Fatal(err)
				}
				return open(t)
			},
		})
	})
}

func opener(open func() (pipeline.Source, error)) func(t *testing.T) pipeline.Source {
	return func(t *testing.T) pipeline.Source {
		t.Helper()
		src, err := open()
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
}
