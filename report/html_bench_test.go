package report

import (
	"fmt"
	"io"
	"testing"

	"github.com/rekey/rekey/report/render"
)

// BenchmarkWriteHTML renders the largest page the report draws: 300 regions (the heatmap's 128
// row groups) against 256 time slices, every alternative's small charts.
func BenchmarkWriteHTML(b *testing.B) {
	rep := runReport(b, fmt.Sprintf(eventsYAML, "[ts][id]"), events(100000), func(c *Config) { c.Regions = 300 })
	var size countingWriter
	if err := render.WriteHTML(&size, rep); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := render.WriteHTML(io.Discard, rep); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "page-bytes")
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
