package main

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/gen"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// newSourceSet lists the kinds of source rekey is built with, in the order --help shows them.
func newSourceSet() *source.Set {
	return source.NewSet(file.Kind, gen.Kind, cassandra.Kind, kafka.Kind)
}

// sourceOpenExit gives an error opening --source its exit code: damaged input, credentials a
// server refused and a server that could not be reached are failures of the run (3: a Job
// retries it); anything else (a path, a URI, a flag) is invalid use (2).
func sourceOpenExit(err error) error {
	if pipeline.Unreachable(err) {
		return runFailed(fmt.Errorf("%w\nthe source could not be reached: run the same command again once it answers", err))
	}
	if errors.Is(err, pipeline.ErrDamagedInput) || errors.Is(err, kafka.ErrAuthentication) {
		return runFailed(err)
	}
	return usageError(err)
}

// openSource turns a --source URI into a pipeline.Source reading the mapping's source columns:
// the source loadProgramFor opened to read its schema, or the source its kind opens.
func (inv *invocation) openSource(ctx context.Context, uri string, schema pipeline.SourceSchema, logger *zap.Logger) (pipeline.Source, error) {
	if src := inv.opened[uri]; src != nil {
		delete(inv.opened, uri)
		return checkedSchema(uri, src, schema)
	}
	src, err := inv.sources.Open(ctx, uri, inv.sourceInput(schema, 0, logger))
	if err != nil {
		return nil, err
	}
	if ss, ok := src.(source.SchemaSource); ok {
		return checkedSchema(uri, ss, schema)
	}
	return src, nil
}

// sourceInput is what a source opens with from the invocation: its environment, stdin, and
// the command's options.
func (inv *invocation) sourceInput(schema pipeline.SourceSchema, workers int, logger *zap.Logger) source.Input {
	return source.Input{Schema: schema, Getenv: inv.getenv, Stdin: inv.stdin, StdinTerminal: isTerminal(inv.stdin),
		Workers: workers, WriteTimes: inv.sourceWriteTimes, CellWriteTimes: inv.sourceCellTimes, ParseSize: transform.ParseSize, Memory: inv.sourceMemory, Logger: logger}
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
	if !ok {
		return 0
	}
	return prog.EstimateBytes(sample, sz.EstimatedRows())
}
