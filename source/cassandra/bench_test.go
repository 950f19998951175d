package cassandra_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
)

// The Cassandra source against a bare gocql scan of the same ranges, in one process with the
// in-process test server (the whole migration, next to the bare scan in separate processes, is
// bench/cassandra, run by bench/run.sh):
//
//	go test -run XXX -bench BenchmarkSourceOnly -benchtime 3x ./source/cassandra/
//
// REKEY_BENCH_ROWS sets the table size (default 1,000,000).

func seedOrders(b testing.TB, c *cassandratest.Cluster, n int) {
	b.Helper()
	must(b, cassandratest.SeedOrders(c, n))
	if c.Server != nil {
		c.Server.Rows("shop", "orders") // sort now, outside the timed part
	}
}

// bareScan reads every range with plain gocql (cassandratest.BareScan).
func bareScan(b testing.TB, c *cassandratest.Cluster, ranges []cassandra.Range, workers, pageSize int) int64 {
	b.Helper()
	n, err := cassandratest.BareScan(c.Hosts(), ranges, workers, pageSize)
	must(b, err)
	return n
}

func benchRows() int {
	if v, err := strconv.Atoi(os.Getenv("REKEY_BENCH_ROWS")); err == nil && v > 0 {
		return v
	}
	return 1000000
}

// report prints and records the median rates of the runs (bare and measured alternate, so the
// medians are taken under the same load) and their ratio.
func report(b *testing.B, what string, n, ranges, workers int, bare, got []float64) {
	med := func(x []float64) float64 {
		s := append([]float64(nil), x...)
		sort.Float64s(s)
		return s[len(s)/2]
	}
	mb, mg := med(bare), med(got)
	b.ReportMetric(mb, "bare-rows/s")
	b.ReportMetric(mg, what+"-rows/s")
	b.ReportMetric(mg/mb, what+"/bare")
	b.ReportMetric(0, "ns/op")
	fmt.Printf("\n%d rows, %d ranges, %d workers, median of %d runs: bare gocql scan %.0f rows/s, %s %.0f rows/s, ratio %.2f\n",
		n, ranges, workers, len(bare), mb, what, mg, mg/mb)
}

// BenchmarkSourceOnly is the source alone (decode into records, no transform or files) against
// the bare scan: the overhead of the Cassandra source itself.
func BenchmarkSourceOnly(b *testing.B) {
	n := benchRows()
	c := cassandratest.Open(b)
	seedOrders(b, c, n)
	workers := runtime.GOMAXPROCS(0) * 2
	params := fmt.Sprintf("workers=%d&page_size=5000", workers)
	var bareRates, srcRates []float64
	nranges := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src := open(b, c, "shop", "orders", params)
		nranges = len(src.AllRanges())
		start := time.Now()
		if got := bareScan(b, c, src.AllRanges(), workers, 5000); got != int64(n) {
			b.Fatalf("bare scan read %d rows", got)
		}
		bareRates = append(bareRates, float64(n)/time.Since(start).Seconds())
		start = time.Now()
		out := make(chan pipeline.Batch, 8)
		var rows int64
		done := make(chan struct{})
		go func() {
			for bt := range out {
				rows += int64(len(bt.Records))
			}
			close(done)
		}()
		must(b, src.Run(context.Background(), nil, out))
		close(out)
		<-done
		srcRates = append(srcRates, float64(n)/time.Since(start).Seconds())
		if rows != int64(n) {
			b.Fatalf("source read %d rows", rows)
		}
		src.Close()
	}
	b.StopTimer()
	report(b, "source", n, nranges, workers, bareRates, srcRates)
}
