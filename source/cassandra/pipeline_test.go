package cassandra_test

import (
	"context"
	"fmt"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/store"
	"math/big"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/transform"
)

// runOpts are the knobs of one pipeline run in tests.
type runOpts struct {
	ctx             context.Context
	stop            <-chan struct{}
	resume          bool
	checkpointEvery time.Duration
	workers         int
	logger          *zap.Logger
}

// compile compiles a mapping (YAML text) against the source's schema, as rekey does.
func compile(t testing.TB, schema pipeline.SourceSchema, mapping string) *transform.Program {
	t.Helper()
	m, err := transform.Decode([]byte(mapping), "test-mapping.yaml")
	must(t, err)
	prog, err := transform.Compile(m, schema)
	must(t, err)
	return prog
}

// migrate runs the real pipeline (Runner + transform + files sink + Parquet) from src to out.
func migrate(t testing.TB, src pipeline.Source, prog *transform.Program, out string, o runOpts) (pipeline.Result, error) {
	t.Helper()
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	if o.logger == nil {
		o.logger = zap.NewNop()
	}
	st, err := store.NewLocal(out)
	if err != nil {
		return pipeline.Result{}, err
	}
	opened, err := output.Open(o.ctx, st, output.Spec{Dir: out, Fingerprint: prog.Fingerprint(), Format: "parquet",
		Source: src, Resume: o.resume, Verify: parquet.New()}, o.logger)
	if err != nil {
		return pipeline.Result{}, err
	}
	defer opened.Close()
	journal, err := opened.Journal(src, prog.Source())
	if err != nil {
		return pipeline.Result{}, err
	}
	defer journal.Close()
	resume := opened.Checkpoint
	var plan pipeline.RegionPlan
	if resume != nil {
		plan = resume.Plan
	} else {
		sample, err := sampleTargets(o.ctx, src, prog, 2000)
		if err != nil {
			return pipeline.Result{}, err
		}
		if plan, err = prog.PlanRegions(transform.RegionRequest{Sample: sample}); err != nil {
			return pipeline.Result{}, err
		}
	}
	sink, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, out), Schema: prog.Target(), Plan: plan, Format: parquet.New()}, o.logger)
	if err != nil {
		return pipeline.Result{}, err
	}
	runner, err := runner.New(runner.Config{
		Source:          src,
		NewTransformer:  func() runner.Transformer { return prog.NewEvaluator() },
		Target:          prog.Target(),
		Plan:            plan,
		Sink:            sink,
		Journal:         journal,
		Fingerprint:     prog.Fingerprint(),
		Workers:         o.workers,
		CheckpointEvery: o.checkpointEvery,
		Logger:          o.logger,
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	return runner.Run(o.ctx, o.stop, resume)
}

// sampleTargets reads a sample and applies the mapping, as rekey does to place quantile splits.
func sampleTargets(ctx context.Context, src pipeline.Source, prog *transform.Program, n int) ([][]pipeline.Value, error) {
	s, ok := src.(pipeline.Sampler)
	if !ok {
		return nil, nil
	}
	recs, err := s.Sample(ctx, n)
	if err != nil {
		return nil, err
	}
	ev := prog.NewEvaluator()
	b := &pipeline.Batch{Stream: "sample"}
	var out [][]pipeline.Value
	for i := range recs {
		row := make([]pipeline.Value, len(prog.Target().Columns))
		if recs[i].Err != nil || ev.Apply(b, &recs[i], row) != nil {
			continue
		}
		for j := range row {
			row[j].Str = strings.Clone(row[j].Str)
		}
		out = append(out, row)
	}
	ev.Reset()
	return out, nil
}

// canonOut is a comparable text of a target value as its column stores it.
func canonOut(col pipeline.Column, v pipeline.Value) string {
	if v.IsNull() {
		return "NULL"
	}
	switch col.Type {
	case pipeline.TypeFloat:
		return strconv.FormatFloat(float64(float32(v.Float())), 'g', -1, 32)
	case pipeline.TypeDouble:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case pipeline.TypeDecimal:
		r, ok := new(big.Rat).SetString(v.String())
		if !ok {
			return "BAD " + v.String()
		}
		return r.RatString()
	case pipeline.TypeVarbinary:
		return fmt.Sprintf("%x", v.Str)
	case pipeline.TypeBoolean:
		return strconv.FormatBool(v.Num != 0)
	}
	return v.String()
}

func canonRow(schema pipeline.TargetSchema, vals []pipeline.Value) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = canonOut(schema.Columns[i], v)
	}
	return strings.Join(parts, "|")
}

// readOutput reads every committed Parquet file of a run with parquet-go (an independent
// reader) and returns the rows in canonical text form, sorted, and the rows per region.
func readOutput(t testing.TB, dir string, schema pipeline.TargetSchema, plan pipeline.RegionPlan) []string {
	t.Helper()
	cp, err := outputtest.Checkpoint(dir)
	must(t, err)
	if cp == nil {
		t.Fatalf("%s has no checkpoint", dir)
	}
	var rows []string
	for _, f := range cp.Files {
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		got := readParquet(t, path, schema)
		if int64(len(got)) != f.Rows {
			t.Fatalf("%s holds %d rows, the checkpoint says %d", f.Path, len(got), f.Rows)
		}
		for _, vals := range got {
			if r := plan.Route(vals[0]); r != f.Region {
				t.Fatalf("%s (region %d) holds a row of region %d", f.Path, f.Region, r)
			}
			rows = append(rows, canonRow(schema, vals))
		}
	}
	sort.Strings(rows)
	return rows
}

func readParquet(t testing.TB, path string, schema pipeline.TargetSchema) [][]pipeline.Value {
	t.Helper()
	pf, err := sinktest.ReadParquet(path, schema)
	must(t, err)
	return pf.Values
}
