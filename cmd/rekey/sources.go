package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/gen"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/sourceuri"
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

// openSource turns a --source URI into a pipeline.Source reading the mapping's source columns
// (and its source.table of a topic of change events): the source loadProgramFor opened to read
// its schema, or the source its kind opens.
func (inv *invocation) openSource(ctx context.Context, uri string, prog *transform.Program, logger *zap.Logger) (pipeline.Source, error) {
	schema := prog.Source()
	if src := inv.opened[uri]; src != nil {
		delete(inv.opened, uri)
		if t := prog.SourceTable(); t != "" {
			closeSource(src)
			return nil, fmt.Errorf("--source %q: the mapping's source.table (%s) names the table to read of a topic of Debezium change events (kafka://...?format=debezium), "+
				"and this source is no such topic: drop source.table from the mapping", sourceuri.Redact(uri), t)
		}
		return checkedSchema(uri, src, schema)
	}
	in := inv.sourceInput(schema, 0, logger)
	in.SourceTable = prog.SourceTable()
	src, err := inv.sources.Open(ctx, uri, in)
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
		Workers: workers, WriteTimes: inv.sourceWriteTimes, CellWriteTimes: inv.sourceCellTimes, ShardFlag: inv.sourceShards,
		ParseSize: transform.ParseSize, Memory: inv.sourceMemory, Logger: logger}
}

// planRegions computes the region plan, sampling the source when one is given and the plan
// needs it (migrate.PlanRegions); stdin cannot be sampled before it is read.
func planRegions(ctx context.Context, prog *transform.Program, src pipeline.Source, regions int) (pipeline.RegionPlan, [][]pipeline.Value, error) {
	if _, ok := src.(*file.Stdin); ok && prog.PlanNeedsSample(regions) {
		return pipeline.RegionPlan{}, nil, usageError(errors.New("region plan: stdin (file:-) cannot be sampled before it is read, and this plan needs a sample " +
			"(quantile split keys on the first key column, or regions.size): save the input to a file and give that, " +
			"set regions.split_keys in the mapping, or pass --regions 1"))
	}
	plan, sample, err := migrate.PlanRegions(ctx, prog, src, regions, sampleSize)
	var refused *migrate.Refused
	if errors.As(err, &refused) {
		return plan, sample, usageError(refused.Err)
	}
	return plan, sample, err
}

// refuseSourceInOut refuses a local --out that holds a file src reads (the rejected rows a run
// left there, fixed): --overwrite or --resume removes rekey's files in --out, that one among them,
// before the rows are read.
func refuseSourceInOut(src pipeline.Source, source, out string) error {
	if strings.Contains(out, "://") {
		return nil
	}
	return refuseSourceIn(src, source, out, "--out "+out)
}

// refuseSourceIn refuses a source reading a file inside dir, the folder a run writes (named by
// what): see refuseSourceInOut.
func refuseSourceIn(src pipeline.Source, source, dir, what string) error {
	lp, ok := src.(interface{ LocalPaths() []string })
	if !ok {
		return nil
	}
	in := resolvedPath(dir)
	for _, p := range lp.LocalPaths() {
		if rel, err := filepath.Rel(in, resolvedPath(p)); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return usageError(fmt.Errorf("--source %s: %s lies inside %s, whose files this run replaces (or removes, to resume): "+
				"move it out of there first (mv %s .) and give it from there", sourceuri.Redact(source), p, what, p))
		}
	}
	return nil
}

// resolvedPath is path made absolute, its symbolic links resolved where it exists.
func resolvedPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path
}
