package collide

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// BenchmarkSpill is the collision check's cost per row: a row's text (salt, 7 column hashes, its
// origin) added by one writer, then the bucket pass over all of them.
func BenchmarkSpill(b *testing.B) {
	s := openSpill(b, 256)
	sw := s.Writer()
	id := s.StreamID("orders.csv")
	cols := make([]uint64, 7)
	src := []pipeline.Value{pipeline.Text("user-000123456")}
	var text []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := Mix64(uint64(i), 1)
		for c := range cols {
			cols[c] = Mix64(uint64(i), uint64(c))
		}
		text = AppendRowInfo(text[:0], k%16, cols, len(cols), 0)
		text = AppendOrigin(text, id, int64(i), nil, []int{0}, src)
		sw.Add(k, Mix64(k, 2), text)
	}
	sw.Flush()
	b.ReportMetric(float64(spillBytes(b, s.dir))/float64(b.N), "disk-B/row")
	res, err := s.Count(CountSpec{MaxExamples: 3, MaxOrigins: 4, Pairs: true, Cols: len(cols)})
	if err != nil || res.Keys != int64(b.N) {
		b.Fatalf("%d keys of %d rows: %v", res.Keys, b.N, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// A bucket of 80,000 records, as the collision check sorts one at 20M rows.
func bucketRecs(n int, top uint) []SpillRec {
	recs := make([]SpillRec, n)
	for i := range recs {
		recs[i] = SpillRec{Key: Mix64(uint64(i), 3)>>top | 0xab<<56, Src: uint64(i), pos: uint64(i)}
	}
	return recs
}

func BenchmarkSortBucket(b *testing.B) {
	in := bucketRecs(80000, 8)
	recs, tmp := make([]SpillRec, len(in)), make([]SpillRec, len(in))
	for _, bc := range []struct {
		name string
		sort func(recs, tmp []SpillRec) ([]SpillRec, []SpillRec)
	}{
		{"radix", radixSort},
		{"byKey", func(recs, tmp []SpillRec) ([]SpillRec, []SpillRec) { return sortByKey(recs, tmp, 8) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				copy(recs, in)
				recs, tmp = bc.sort(recs, tmp)
			}
			b.ReportMetric(float64(b.N*len(in))/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// spillBytes is the size of the files in dir.
func spillBytes(tb testing.TB, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
