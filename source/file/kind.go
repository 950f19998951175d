package file

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source"
)

// Kind is the file source for the command line: file:PATH, or a bare path that exists.
var Kind = source.Kind{
	Prefix:   "file:",
	Paths:    true,
	Help:     help + "                     " + strings.ReplaceAll(URIParams, "\n", "\n                     "),
	NewFlags: func() source.Flags { return &flags{} },
	Open:     open,
}

// help is the --source help's paragraph, the URI parameters (URIParams) after it.
const help = `  file:PATH[?PARAM=VALUE&...]
                     CSV (.csv, .tsv) with a header line, or JSON Lines (.jsonl, .ndjson), each
                     optionally .gz; values are parsed by the mapping's source.columns types.
                     PATH is a file, a directory (its data files in name order, as dsbulk unload
                     leaves output-000001.csv ...), a glob ('exports/*.csv'), several of these
                     separated by commas (file:a.csv,b.csv), or - for stdin (file:-?format=csv).
                     Each file is its own stream: resumed, and checked on --resume, on its own.
`

// flags are the file source's flags.
type flags struct {
	maxRecordSize string
}

func (f *flags) Add(fs *pflag.FlagSet, _ source.Use) {
	fs.StringVar(&f.maxRecordSize, "max-record-size", "16MiB",
		"file sources: the largest CSV row or JSON line; a longer one is rejected, and a CSV quote not closed within it is taken for a stray one that rejects only its own line")
}

// Refuse refuses nothing: --max-record-size has a default, so whether it was given is not told.
func (f *flags) Refuse(string) error { return nil }

// open opens a file: URI, or a bare path.
func open(_ context.Context, uri string, in source.Input) (pipeline.Source, error) {
	f := in.Flags.(*flags)
	limit, err := in.ParseSize(f.maxRecordSize)
	if err != nil {
		return nil, fmt.Errorf("--max-record-size: %w", err)
	}
	if limit <= 0 {
		return nil, errors.New("--max-record-size must be positive")
	}
	if limit > math.MaxInt32 {
		return nil, fmt.Errorf("--max-record-size %s: at most 2GiB", f.maxRecordSize)
	}
	spec, err := ParseURI(strings.TrimPrefix(uri, "file:"))
	if err != nil {
		return nil, err
	}
	cfg := Config{Schema: in.Schema, MaxRecordSize: int(limit)}
	if spec.Path == "-" {
		if in.StdinTerminal {
			return nil, errors.New("--source file:- reads stdin, which is a terminal here: pipe the data in (zcat rows.csv.gz | rekey ... --source 'file:-?format=csv')")
		}
		cfg.Stdin = in.Stdin
	}
	return Open(spec, cfg, in.Logger.Named("source.file"))
}
