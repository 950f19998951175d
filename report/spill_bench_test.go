package report

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// BenchmarkSpill is the collision check's cost per row: a row's text (salt, 7 column hashes, its
// origin) added by one writer, then the bucket pass over all of them.
func BenchmarkSpill(b *testing.B) {
	s, err := newSpill(b.TempDir(), 256)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	sw := s.writer()
	id := s.streamID("orders.csv")
	cols := make([]uint64, 7)
	src := []pipeline.Value{pipeline.Text("user-000123456")}
	var text []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := mix64(uint64(i), 1)
		for c := range cols {
			cols[c] = mix64(uint64(i), uint64(c))
		}
		text = appendRowInfo(text[:0], k%16, cols, len(cols))
		text = appendOrigin(text, id, int64(i), nil, []int{0}, src)
		sw.add(k, mix64(k, 2), text)
	}
	sw.flush()
	res, err := s.count(countSpec{maxExamples: 3, maxOrigins: 4, pairs: true, cols: len(cols)})
	if err != nil || res.Keys != int64(b.N) {
		b.Fatalf("%d keys of %d rows: %v", res.Keys, b.N, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
