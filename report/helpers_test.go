package report

import (
	"context"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// memSource sends records made by a function, in batches, in order.
type memSource struct {
	n     int
	batch int
	make  func(i int) []pipeline.Value
}

func (s *memSource) Run(ctx context.Context, _ map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	bs := s.batch
	if bs == 0 {
		bs = 1000
	}
	for i := 0; i < s.n; i += bs {
		var recs []pipeline.Record
		for k := i; k < min(i+bs, s.n); k++ {
			recs = append(recs, pipeline.Record{Values: s.make(k), Seq: int64(k + 1)})
		}
		select {
		case out <- pipeline.Batch{Stream: "mem", Records: recs}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *memSource) EstimatedRows() int64 { return int64(s.n) }

func compile(t testing.TB, yml string) (*transform.Program, *transform.Mapping) {
	t.Helper()
	m, err := transform.Decode([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p, m
}

func runReport(t testing.TB, yml string, src pipeline.Source, mod func(*Config)) *model.Report {
	t.Helper()
	p, m := compile(t, yml)
	cfg := Config{Program: p, Mapping: m, Source: src, SourceURI: "mem", TmpDir: t.TempDir(), Workers: 2}
	if mod != nil {
		mod(&cfg)
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	return rep
}

func findingOf(rep *model.Report, rule string) *model.Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Rule == rule {
			return &rep.Findings[i]
		}
	}
	return nil
}

func wantSeverity(t *testing.T, rep *model.Report, rule, sev string) *model.Finding {
	t.Helper()
	f := findingOf(rep, rule)
	if f == nil {
		t.Fatalf("no finding %s; findings: %+v", rule, rep.Findings)
	}
	if f.Severity != sev {
		t.Fatalf("finding %s is %s, want %s: %s", rule, f.Severity, sev, f.Message)
	}
	return f
}

// samplingSource is a memSource that can also sample (evenly spaced rows), like the file and
// gen sources: quantile splits then cover the whole input.
type samplingSource struct{ memSource }

func (s *samplingSource) Sample(_ context.Context, n int) ([]pipeline.Record, error) {
	if n > s.n {
		n = s.n
	}
	out := make([]pipeline.Record, 0, n)
	for k := 0; k < n; k++ {
		i := k * s.n / n
		out = append(out, pipeline.Record{Values: s.make(i), Seq: int64(i + 1)})
	}
	return out, nil
}
