package file

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A sample holds at most Config.SampleBytes of records, still spread over the whole file: rows
// large enough that the sample's rows would not fit are sampled fewer. Before, a file of few
// rows was read whole into the sample (a 597 MB CSV of 2 MB rows made migrate --memory 256MiB
// peak at 1.3 GiB), and a larger one gave n rows however large (20,000 rows of 2 MB: 40 GB).
func TestSampleStaysWithinSampleBytes(t *testing.T) {
	const rows, size, budget = 400, 16 << 10, 512 << 10
	var b strings.Builder
	b.WriteString(ordersHeader)
	for i := range rows {
		fmt.Fprintf(&b, "%d,%s,2024-01-01T00:00:00Z,1.5\n", i, strings.Repeat("n", size))
	}
	path := writeFile(t, "big.csv", b.String())
	// 300 rows: the whole file is read (sequential); 40: rows at spread offsets
	for _, n := range []int{300, 40} {
		src := openSpec(t, Spec{Path: path}, Config{SampleBytes: budget})
		sample, err := src.(pipeline.Sampler).Sample(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		var first, last int64 = rows, -1
		for _, r := range sample {
			if r.Err != nil {
				t.Fatalf("n %d: sampled reject %v", n, r.Err)
			}
			for _, v := range r.Values {
				held += len(v.Str)
			}
			first, last = min(first, r.Values[0].Num), max(last, r.Values[0].Num)
		}
		if held > budget+size || len(sample) < 4 {
			t.Errorf("n %d: %d rows, %d bytes of values; want at most %d bytes, and some rows", n, len(sample), held, budget)
		}
		if first >= rows/4 || last < 3*rows/4 {
			t.Errorf("n %d: rows %d..%d sampled; want them spread over the file's 0..%d", n, first, last, rows-1)
		}
	}
}
