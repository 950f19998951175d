package transform

import (
	"strconv"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

func benchRecords(n int) []pipeline.Record {
	channels := []string{"taobao", "alipay", "wechat", "jd", "pdd", "other"}
	recs := make([]pipeline.Record, n)
	for i := range recs {
		recs[i] = pipeline.Record{Seq: int64(i), Values: []pipeline.Value{
			pipeline.Text("user" + strconv.Itoa(i*7919%100000)),
			pipeline.Int(int64(1_000_000 + i)),
			pipeline.Text(channels[i%len(channels)]),
			pipeline.Int(1_700_000_000_000 + int64(i)*1000),
			pipeline.Text("paid"),
			pipeline.Text("hangzhou"),
			pipeline.Decimal(strconv.Itoa(i%10000) + ".25"),
		}}
	}
	return recs
}

// BenchmarkApply runs the benchmark mapping (mappings/orders.yaml:
// [md5(userid).substr(0,4)+userid AS pk1][orderid] plus carried-over columns) and resets the
// arena every 1024 rows, as the pipeline does per batch.
func BenchmarkApply(b *testing.B) {
	m, err := Load("../mappings/orders.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		b.Fatal(err)
	}
	recs := benchRecords(4096)
	e := p.NewEvaluator()
	out := make([]pipeline.Value, len(p.Target().Columns))
	batch := &pipeline.Batch{Stream: "bench"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rerr := e.Apply(batch, &recs[i&4095], out); rerr != nil {
			b.Fatal(rerr)
		}
		if i&1023 == 1023 {
			e.Reset()
		}
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, "ns/row")
	b.ReportMetric(1e9/ns, "rows/s")
}
