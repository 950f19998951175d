package report

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
)

// rereadSource is a memSource that says it can be read again, and counts its reads.
type rereadSource struct {
	*memSource
	runs atomic.Int32
}

func (s *rereadSource) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	s.runs.Add(1)
	return s.memSource.Run(ctx, resume, out)
}

func (s *rereadSource) Rereadable() bool { return true }

// reportJSON is a report as JSON, without the figures that vary by run.
func reportJSON(t *testing.T, rep *model.Report) string {
	t.Helper()
	rep.Totals.Seconds, rep.Totals.RowsPerSec = 0, 0
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// plantedRows: ids each through three channels (alipay and alipay_hk share a code), 37 rows
// sent twice, 11 with a channel the dictionary lacks.
func plantedRows(ids int) [][]pipeline.Value {
	var rows [][]pipeline.Value
	for i := 0; i < ids; i++ {
		for _, c := range []string{"alipay", "alipay_hk", "wechat"} {
			rows = append(rows, []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(c), pipeline.Text(fmt.Sprint("x", i%7))})
		}
	}
	for i := 0; i < 37; i++ {
		rows = append(rows, rows[i*3+2])
	}
	for i := 0; i < 11; i++ {
		rows = append(rows, []pipeline.Value{pipeline.Int(int64(ids + i)), pipeline.Text("unionpay"), pipeline.Text("x")})
	}
	return rows
}

// A source that can be read again has its rows' texts left out of the collision check's temp
// files, and is read a second time only when keys collide, for their rows: the report is the
// one a single read that keeps every text gives, whatever the keys, the sampling, and however
// many keys collide.
func TestSecondReadGivesTheSameReport(t *testing.T) {
	rows := plantedRows(3000)
	cases := []struct {
		key      string
		sample   model.Sample
		maxKeys  int
		wantRuns int32
	}{
		{key: "[code(channel, ch) AS c][id]", wantRuns: 2},
		{key: "[id]", wantRuns: 2},
		{key: "[code]", wantRuns: 2},
		{key: "[id][channel]", wantRuns: 1}, // duplicates only: nothing to read again
		{key: "[id]", sample: model.Sample{Fraction: 0.5}, wantRuns: 2},
		{key: "[code(channel, ch) AS c][id]", maxKeys: 100, wantRuns: 2}, // more colliding keys than looked for: every row
		{key: "[random(4)][id]", wantRuns: 1},                            // a salted key keeps its texts (the source key's check)
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %v %d", c.key, c.sample, c.maxKeys), func(t *testing.T) {
			if c.maxKeys > 0 {
				defer func(n int) { collide.MaxRecountKeys = n }(collide.MaxRecountKeys)
				collide.MaxRecountKeys = c.maxKeys
			}
			yml := fmt.Sprintf(ordersYAML, c.key)
			// one worker: heavy hitters that tie (every id holds 3 rows) are then listed alike
			mod := func(cfg *Config) { cfg.Sample, cfg.Workers = c.sample, 1 }
			once := &memSource{n: len(rows), batch: 333, make: func(i int) []pipeline.Value { return rows[i] }}
			twice := &rereadSource{memSource: &memSource{n: len(rows), batch: 333, make: func(i int) []pipeline.Value { return rows[i] }}}
			want := reportJSON(t, runReport(t, yml, once, mod))
			got := reportJSON(t, runReport(t, yml, twice, mod))
			if got != want {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				from := max(0, i-300)
				t.Errorf("the report of a source read again differs at byte %d:\n got ...%s\nwant ...%s", i, got[from:min(len(got), i+200)], want[from:min(len(want), i+200)])
			}
			if n := twice.runs.Load(); n != c.wantRuns {
				t.Errorf("the source was read %d times, want %d", n, c.wantRuns)
			}
		})
	}
}

// A source whose rows change between the two reads fails the report: its collisions cannot be
// told.
func TestSourceChangedBetweenReadsFails(t *testing.T) {
	rows := plantedRows(1000)
	src := &rereadSource{}
	src.memSource = &memSource{n: len(rows), make: func(i int) []pipeline.Value {
		if v := rows[i]; src.runs.Load() > 1 && i%3 == 1 {
			return []pipeline.Value{v[0], pipeline.Text("wechat"), v[2]} // alipay_hk is gone
		}
		return rows[i]
	}}
	p, m := compile(t, fmt.Sprintf(ordersYAML, "[code(channel, ch) AS c][id]"))
	_, err := Run(context.Background(), Config{Program: p, Mapping: m, Source: src, SourceURI: "mem", TmpDir: t.TempDir(), Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "the source changed between its two reads") {
		t.Fatalf("report of a changing source: %v", err)
	}
}

// sampledRereadSource is a rereadSource that samples: every k-th row.
type sampledRereadSource struct{ *rereadSource }

func (s sampledRereadSource) Sample(_ context.Context, n int) ([]pipeline.Record, error) {
	var recs []pipeline.Record
	for i := 0; i < s.n; i += max(1, s.n/n) {
		recs = append(recs, pipeline.Record{Values: s.make(i), Seq: int64(i + 1)})
	}
	return recs, nil
}

// Keys whose collisions show in the plan sample keep their texts in the first read: the source
// is read once, as a second read would be sure to follow.
func TestSampledCollisionsReadOnce(t *testing.T) {
	rows := plantedRows(3000)
	for key, wantRuns := range map[string]int32{"[id]": 1, "[id][channel]": 1, "[code(channel, ch) AS c][id]": 1} {
		src := sampledRereadSource{&rereadSource{memSource: &memSource{n: len(rows), make: func(i int) []pipeline.Value { return rows[i] }}}}
		rep := runReport(t, fmt.Sprintf(ordersYAML, key), src, nil)
		if n := src.runs.Load(); n != wantRuns {
			t.Errorf("%s: the source was read %d times, want %d", key, n, wantRuns)
		}
		if key == "[id]" && rep.Uniqueness.CollisionRows != 6000 {
			t.Errorf("%s: %d rows overwritten, want 6000", key, rep.Uniqueness.CollisionRows)
		}
	}
}
