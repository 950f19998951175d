package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/gen"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

var sourceHelp = `where rows come from:
  file:PATH[?PARAM=VALUE&...]
                     CSV (.csv, .tsv) with a header line, or JSON Lines (.jsonl, .ndjson), each
                     optionally .gz; values are parsed by the mapping's source.columns types.
                     PATH is a file, a directory (its data files in name order, as dsbulk unload
                     leaves output-000001.csv ...), a glob ('exports/*.csv'), several of these
                     separated by commas (file:a.csv,b.csv), or - for stdin (file:-?format=csv).
                     Each file is its own stream: resumed, and checked on --resume, on its own.
` + fileParamsHelp + `
  s3://BUCKET/PATH[?PARAM=VALUE&...], oss://BUCKET/PATH?region=R[&...]
                     the same files in a bucket: a prefix (its data files), a pattern
                     ('s3://b/export/*.csv') or one object, streamed with ranged reads;
                     credentials and endpoint=, region=, path_style= as for --out; the file
                     parameters above in the same query
  gen:NAME?rows=N&seed=S
                     synthetic data for demos and benchmarks (orders, logs)` + cassandraSourceHelp + kafkaSourceHelp

// sourceOpenExit gives an error opening --source its exit code: damaged input and credentials a
// server refused are failures of the run (3); anything else (a path, a URI, a flag) is invalid
// use (2).
func sourceOpenExit(err error) error {
	if errors.Is(err, pipeline.ErrDamagedInput) || errors.Is(err, kafka.ErrAuthentication) {
		return runFailed(err)
	}
	return usageError(err)
}

// openSource turns a --source URI into a pipeline.Source reading the mapping's source columns.
func (inv *invocation) openSource(ctx context.Context, uri string, schema pipeline.SourceSchema, logger *zap.Logger) (pipeline.Source, error) {
	switch {
	case uri == "":
		return nil, fmt.Errorf("--source is required:\n%s", sourceHelp)
	case strings.HasPrefix(uri, "gen:"):
		cfg, err := gen.ParseURI(uri)
		if err != nil {
			return nil, err
		}
		return gen.New(cfg, schema, logger.Named("source.gen"))
	case isCassandraURI(uri):
		return inv.openCassandra(uri, schema, logger)
	case isKafkaURI(uri):
		return inv.openKafka(uri, schema, logger)
	case strings.HasPrefix(uri, "file:"):
		return inv.openFile(ctx, strings.TrimPrefix(uri, "file:"), schema, logger)
	case file.IsObjectURI(uri):
		return inv.openBucketFiles(ctx, uri, schema, logger)
	case !strings.Contains(uri, "://"):
		if _, err := os.Stat(uri); err == nil { // a bare path is a file
			return inv.openFile(ctx, uri, schema, logger)
		}
	}
	return nil, fmt.Errorf("--source %q: unknown kind of source\n%s", sourceuri.Redact(uri), sourceHelp)
}

// fileFlags are the flags of the file source.
type fileFlags struct {
	maxRecordSize string
}

// addFileFlags registers the flags of the file source on a command's flag set.
func (inv *invocation) addFileFlags(fs *pflag.FlagSet) {
	fs.StringVar(&inv.file.maxRecordSize, "max-record-size", "16MiB",
		"file sources: the largest CSV row or JSON line; a longer one is rejected, and a CSV quote not closed within it is taken for a stray one that rejects only its own line")
}

// fileParamsHelp is file.URIParams indented for --help.
var fileParamsHelp = "                     " + strings.ReplaceAll(file.URIParams, "\n", "\n                     ")

// openFile opens a file: URI (without its scheme).
func (inv *invocation) openFile(ctx context.Context, uri string, schema pipeline.SourceSchema, logger *zap.Logger) (pipeline.Source, error) {
	spec, err := file.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	return inv.openFileSpec(ctx, spec, schema, logger)
}

// openBucketFiles opens files in a bucket (s3://BUCKET/PATH or oss://...), with the credentials and
// endpoint rules of --out.
func (inv *invocation) openBucketFiles(ctx context.Context, uri string, schema pipeline.SourceSchema, logger *zap.Logger) (pipeline.Source, error) {
	storeURI, pattern, fileURI, err := file.SplitObjectURI(uri)
	if err != nil {
		return nil, err
	}
	spec, err := file.ParseURI(fileURI)
	if err != nil {
		return nil, err
	}
	if spec.Store, err = store.Open(ctx, storeURI, inv.getenv); err != nil {
		return nil, fmt.Errorf("--source %s: %w", sourceuri.Redact(uri), err)
	}
	spec.Pattern = pattern
	return inv.openFileSpec(ctx, spec, schema, logger)
}

func (inv *invocation) openFileSpec(ctx context.Context, spec file.Spec, schema pipeline.SourceSchema, logger *zap.Logger) (pipeline.Source, error) {
	limit, err := parseSize("--max-record-size", inv.file.maxRecordSize)
	if err != nil {
		return nil, err
	}
	if limit > math.MaxInt32 {
		return nil, fmt.Errorf("--max-record-size %s: at most 2GiB", inv.file.maxRecordSize)
	}
	cfg := file.Config{Schema: schema, MaxRecordSize: int(limit)}
	if spec.Path == "-" {
		if isTerminal(inv.stdin) {
			return nil, errors.New("--source file:- reads stdin, which is a terminal here: pipe the data in (zcat rows.csv.gz | rekey ... --source 'file:-?format=csv')")
		}
		cfg.Stdin = inv.stdin
	}
	return file.Open(ctx, spec, cfg, logger.Named("source.file"))
}

// sampleRows reads a spread sample from the source, when it can, and applies the mapping to it.
// Region plans place quantile split keys and estimate data sizes from it.
func sampleRows(ctx context.Context, src pipeline.Source, prog *transform.Program, n int) ([][]pipeline.Value, error) {
	if _, ok := src.(*file.Stdin); ok {
		// called only when the region plan needs a sample: stdin can be read only once
		return nil, usageError(errors.New("region plan: stdin (file:-) cannot be sampled before it is read, and this plan needs a sample " +
			"(quantile split keys on the first key column, or regions.size): save the input to a file and give that, " +
			"set regions.split_keys in the mapping, or pass --regions 1"))
	}
	s, ok := src.(pipeline.Sampler)
	if !ok {
		return nil, nil
	}
	recs, err := s.Sample(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("sample the source: %w", err)
	}
	return prog.SampleRows(recs), nil
}

// estimateBytes extrapolates the target data size from a sample and the source's row estimate.
func estimateBytes(src pipeline.Source, prog *transform.Program, sample [][]pipeline.Value) int64 {
	sz, ok := src.(pipeline.Sizer)
	if !ok || len(sample) == 0 {
		return 0
	}
	rows := sz.EstimatedRows()
	if rows <= 0 {
		return 0
	}
	var total int64
	for _, r := range sample {
		total += int64(prog.RowBytes(r))
	}
	return total / int64(len(sample)) * rows
}
