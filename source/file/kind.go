package file

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
)

// Kind is the file source for the command line: file:PATH, a bare path that exists, or files
// in a bucket (s3://BUCKET/PATH, oss://...).
var Kind = source.Kind{
	Prefix:   "file:",
	Match:    IsObjectURI,
	Paths:    true,
	Help:     help + "                     " + strings.ReplaceAll(URIParams, "\n", "\n                     ") + bucketHelp,
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

// bucketHelp is the paragraph of files in a bucket.
const bucketHelp = `
  s3://BUCKET/PATH[?PARAM=VALUE&...], oss://BUCKET/PATH?region=R[&...]
                     the same files in a bucket: a prefix (its data files), a pattern
                     ('s3://b/export/*.csv') or one object, streamed with ranged reads;
                     credentials and endpoint=, region=, path_style= as for --out; the file
                     parameters above in the same query`

// RecordMemoryShare: --max-record-size may be at most this fraction of --memory. A record is
// held several times over: its chunk while the reader's buffer grows to it (the old buffer and
// the new), its values, the file's buffers; a migration of one 190 MiB row peaked at 1.06 GiB
// resident.
const RecordMemoryShare = 8

// sampleMemoryShare: the sample that places quantile region splits holds at most this fraction
// of --memory (Config.SampleBytes); the mapping's rows made of it take as much again.
const sampleMemoryShare = 16

// flags are the file source's flags.
type flags struct {
	maxRecordSize string
	given         bool // --max-record-size was on the command line
}

func (f *flags) Add(fs *pflag.FlagSet, _ source.Use) {
	f.maxRecordSize = "16MiB"
	fs.Var(&givenString{&f.maxRecordSize, &f.given}, "max-record-size",
		"file sources: the largest CSV row or JSON line, less than 2GiB and at most an eighth of --memory; a longer one is rejected, and a CSV quote not closed within it is taken for a stray one that rejects only its own line")
}

// flagSize writes n bytes as a size flag takes it, in whole KiB below a MiB and whole MiB
// above, rounded up or down.
func flagSize(n int64, up bool) string {
	unit, name := int64(1<<20), "MiB"
	if n < 1<<20 {
		unit, name = 1<<10, "KiB"
	}
	q := n / unit
	if up && n%unit != 0 {
		q++
	}
	return strconv.FormatInt(q, 10) + name
}

// givenString is a string flag that remembers being given: every command binds the kinds'
// flags to its own flag set, so which set to ask would depend on the command.
type givenString struct {
	p     *string
	given *bool
}

func (g *givenString) String() string { return *g.p }
func (g *givenString) Type() string   { return "string" }
func (g *givenString) Set(v string) error {
	*g.p, *g.given = v, true
	return nil
}

// Refuse refuses --max-record-size, when given, for a source that is not files: it would bound
// nothing.
func (f *flags) Refuse(uri string) error {
	if !f.given {
		return nil
	}
	what := "no --source"
	if uri != "" {
		what = "the source " + sourceuri.Redact(uri)
	}
	return fmt.Errorf("--max-record-size: file sources only (file:, a path, s3://, oss://), and %s is not one: leave it out", what)
}

// open opens a file: URI, a bare path, or files in a bucket (with the credentials and endpoint
// rules of --out).
func open(ctx context.Context, uri string, in source.Input) (pipeline.Source, error) {
	f := in.Flags.(*flags)
	limit, err := in.ParseSize(f.maxRecordSize)
	if err != nil {
		return nil, fmt.Errorf("--max-record-size: %w", err)
	}
	if limit <= 0 {
		return nil, errors.New("--max-record-size must be positive")
	}
	if limit > math.MaxInt32 {
		return nil, fmt.Errorf("--max-record-size %s: less than 2GiB (2047MiB at most)", f.maxRecordSize)
	}
	if f.given && in.Memory > 0 && limit > in.Memory/RecordMemoryShare {
		return nil, fmt.Errorf("--max-record-size %s: a record that long can take %d times its size in memory (read, parsed, written), more than --memory %s holds: "+
			"raise --memory to %s or more, or lower --max-record-size to %s or less",
			f.maxRecordSize, RecordMemoryShare, flagSize(in.Memory, false), flagSize(limit*RecordMemoryShare, true), flagSize(in.Memory/RecordMemoryShare, false))
	}
	var spec Spec
	if IsObjectURI(uri) {
		storeURI, pattern, fileURI, err := SplitObjectURI(uri)
		if err != nil {
			return nil, err
		}
		if spec, err = ParseURI(fileURI); err != nil {
			return nil, err
		}
		if spec.Store, err = store.Open(ctx, storeURI, in.Getenv); err != nil {
			return nil, fmt.Errorf("--source %s: %w", sourceuri.Redact(uri), err)
		}
		spec.Pattern = pattern
	} else if spec, err = ParseURI(strings.TrimPrefix(uri, "file:")); err != nil {
		return nil, err
	}
	spec.Shard = in.Shard
	cfg := Config{Schema: in.Schema, MaxRecordSize: int(limit), CellWriteTimes: in.CellWriteTimes}
	if in.Memory > 0 {
		cfg.SampleBytes = in.Memory / sampleMemoryShare
	}
	if spec.Path == "-" {
		if in.StdinTerminal {
			return nil, errors.New("--source file:- reads stdin, which is a terminal here: pipe the data in (zcat rows.csv.gz | rekey ... --source 'file:-?format=csv')")
		}
		cfg.Stdin = in.Stdin
	}
	return Open(ctx, spec, cfg, in.Logger.Named("source.file"))
}
