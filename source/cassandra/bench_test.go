package cassandra_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// The benchmark behind bench/run.sh's cassandra case:
//
//	go test -run XXX -bench BenchmarkCassandraToParquet -benchtime 1x ./source/cassandra/
//
// It seeds shop.orders (REKEY_BENCH_ROWS rows, default 1,000,000) in the in-process test server
// (or uses a real cluster with CASSANDRA_HOSTS), then measures, over the same token ranges with
// the same concurrency and page size:
//
//	bare   gocql alone: a token-range scan of every column into Go values, nothing else;
//	rekey  the whole migration: source -> mapping (mappings/orders.yaml) -> 16 regions of zstd
//	       Parquet files, committed and checkpointed.
//
// and reports both rates and rekey/bare, the share of the cluster's read rate that rekey keeps.
// The test server runs in the same process, so on a small machine it competes with the
// migration for the same cores.

var ordersCols = []cqltest.Column{
	{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"}, {Name: "channel", Type: "text"},
	{Name: "ts", Type: "timestamp"}, {Name: "status", Type: "text"}, {Name: "location", Type: "text"},
	{Name: "amount", Type: "decimal"},
}

func seedOrders(b testing.TB, c *cassandratest.Cluster, n int) {
	b.Helper()
	must(b, c.CreateTable("shop", "orders", ordersCols, []string{"userid"}, []string{"orderid"}))
	channels := []string{"taobao", "alipay", "wechat", "jd", "pdd", "web"}
	statuses := []string{"created", "paid", "shipped", "delivered", "refunded"}
	locations := []string{"Hangzhou", "Shanghai", "Beijing", "Shenzhen", "Chengdu", "Wuhan", "Xi'an"}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	decs := make([]*inf.Dec, 1000)
	for i := range decs {
		decs[i] = inf.NewDec(int64(i*97+1), 2)
	}
	must(b, c.InsertMany("shop", "orders", n, func(i int, r map[string]any) error {
		r["userid"] = "user" + strconv.Itoa(i/4)
		r["orderid"] = int64(i)
		r["channel"] = channels[i%len(channels)]
		r["ts"] = base + int64(i)*1000
		r["status"] = statuses[i%len(statuses)]
		r["location"] = locations[i%len(locations)]
		r["amount"] = decs[i%len(decs)]
		return nil
	}))
	if c.Server != nil {
		c.Server.Rows("shop", "orders") // sort now, outside the timed part
	}
}

// bareScan reads every range with plain gocql (auto-paging with prefetch), workers at a time.
func bareScan(b testing.TB, c *cassandratest.Cluster, ranges []cassandra.Range, workers, pageSize int) int64 {
	b.Helper()
	cl := gocql.NewCluster(c.Hosts()...)
	cl.ProtoVersion = 4
	cl.Timeout = 30 * time.Second
	cl.Consistency = gocql.LocalOne
	cl.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	sess, err := cl.CreateSession()
	must(b, err)
	defer sess.Close()
	const q = `SELECT userid, orderid, channel, ts, status, location, amount FROM shop.orders WHERE token(userid) > ? AND token(userid) <= ?`
	var total atomic.Int64
	jobs := make(chan cassandra.Range)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var userid, channel, status, location string
			var orderid int64
			var ts time.Time
			amount := new(inf.Dec)
			for r := range jobs {
				iter := sess.Query(q, r.Start, r.End).PageSize(pageSize).Iter()
				n := int64(0)
				for iter.Scan(&userid, &orderid, &channel, &ts, &status, &location, &amount) {
					n++
				}
				if err := iter.Close(); err != nil {
					b.Error(err)
				}
				total.Add(n)
			}
		}()
	}
	for _, r := range ranges {
		jobs <- r
	}
	close(jobs)
	wg.Wait()
	return total.Load()
}

func benchRows() int {
	if v, err := strconv.Atoi(os.Getenv("REKEY_BENCH_ROWS")); err == nil && v > 0 {
		return v
	}
	return 1000000
}

func BenchmarkCassandraToParquet(b *testing.B) {
	n := benchRows()
	c := cassandratest.Open(b)
	seedOrders(b, c, n)
	mapping, err := os.ReadFile(filepath.Join("..", "..", "mappings", "orders.yaml"))
	must(b, err)
	workers := runtime.GOMAXPROCS(0) * 2
	params := fmt.Sprintf("workers=%d&page_size=5000", workers)
	probe := open(b, c, "shop", "orders", params)
	prog := compile(b, probe.Schema(), string(mapping))
	ranges := probe.AllRanges()
	probe.Close()

	var bareRates, rekeyRates []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if got := bareScan(b, c, ranges, workers, 5000); got != int64(n) {
			b.Fatalf("bare scan read %d rows, want %d", got, n)
		}
		bareRates = append(bareRates, float64(n)/time.Since(start).Seconds())

		out := filepath.Join(b.TempDir(), "out")
		src := open(b, c, "shop", "orders", params)
		start = time.Now()
		res, err := migrate(b, src, prog, out, runOpts{})
		rekeyRates = append(rekeyRates, float64(n)/time.Since(start).Seconds())
		must(b, err)
		src.Close()
		if res.RowsWritten != int64(n) {
			b.Fatalf("rekey wrote %d rows, want %d", res.RowsWritten, n)
		}
		os.RemoveAll(out)
	}
	b.StopTimer()
	report(b, "rekey", n, len(ranges), workers, bareRates, rekeyRates)
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
