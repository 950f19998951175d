package report

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/pipeline"
)

// The advisor's subsample holds at most SubsampleBytes of records: large rows are kept fewer,
// still one in 2^level. Before, it kept SubsampleMax rows however large: a report of a 597 MB
// CSV of 2 MB rows with --memory 256MiB held every row (570 MB) and the advisor's key copies of
// them (900 MB), 1.5 GB resident.
func TestSubsampleStaysWithinSubsampleBytes(t *testing.T) {
	const n, size, budget = 600, 16 << 10, 1 << 20
	body := strings.Repeat("b", size)
	src := &memSource{n: n, batch: 50, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(body)}
	}}
	core, logs := observer.New(zap.InfoLevel)
	runReport(t, `
version: 1
source:
  name: ks.t
  columns: {id: bigint, body: text}
target:
  table: t
  primary_key: "[id]"
regions:
  count: 4
`, src, func(c *Config) { c.Logger, c.SubsampleBytes = zap.New(core), budget })
	found := logs.FilterMessage("advisor").All()
	if len(found) != 1 {
		t.Fatalf("%d advisor log lines, want 1", len(found))
	}
	kept := found[0].ContextMap()["subsample"].(int64)
	if kept < 8 || kept*size > budget+size {
		t.Fatalf("subsample of %d rows of %d bytes; want some, at most %d bytes", kept, size, budget)
	}
}
