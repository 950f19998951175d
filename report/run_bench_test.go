package report

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/source/cqlvalue"
	"github.com/rekey/rekey/transform"
)

// ordersRows are n rows shaped like `rekey gen orders` (mappings/orders.yaml's source): users
// repeat, order ids and times rise, few channels, statuses and cities, decimal amounts. The
// values of 100,000 rows are made once and reused with other ids and times.
func ordersRows(tb testing.TB, n int) *samplingSource {
	dec, err := cqlvalue.ParseType("decimal")
	if err != nil {
		tb.Fatal(err)
	}
	channels := []string{"taobao", "alipay", "wechat", "jd", "pdd"}
	statuses := []string{"PAID", "SHIPPED", "DELIVERED", "CANCELLED", "REFUNDED"}
	cities := []string{"Shanghai", "Beijing", "Shenzhen", "Guangzhou", "Hangzhou", "Chengdu", "Wuhan", "Xian"}
	base := make([][]pipeline.Value, min(n, 100000))
	for i := range base {
		h := collide.Mix64(uint64(i), 7)
		amount, err := dec.ParseText(fmt.Sprintf("%d.%02d", h%10000, h>>20%100))
		if err != nil {
			tb.Fatal(err)
		}
		base[i] = []pipeline.Value{
			pipeline.Text(fmt.Sprintf("u%010d", (h>>8)%1000000*6364136223%10000000000)),
			{}, // orderid
			pipeline.Text(channels[h>>32%5]),
			{}, // ts
			pipeline.Text(statuses[h>>40%5]),
			pipeline.Text(cities[h>>48%8]),
			amount,
		}
	}
	return &samplingSource{memSource{n: n, batch: 4096, make: func(i int) []pipeline.Value {
		row := append([]pipeline.Value(nil), base[i%len(base)]...)
		row[1] = pipeline.Int(1000000000 + int64(i))
		row[3] = pipeline.Int(1704067200000 + int64(i)*4 + int64(collide.Mix64(uint64(i), 9)>>61))
		return row
	}}}
}

// ordersMapping is mappings/orders.yaml, compiled.
func ordersMapping(tb testing.TB) (*transform.Program, *transform.Mapping) {
	m, err := transform.Load("../mappings/orders.yaml")
	if err == nil {
		var p *transform.Program
		if p, err = transform.Compile(m, nil); err == nil {
			return p, m
		}
	}
	tb.Fatal(err)
	return nil, nil
}

// BenchmarkRunOrders is `rekey report` with mappings/orders.yaml on one worker, per row: the
// mapping, the sketches, the collision check's temp files and their count. The advisor's
// subsample is kept small so that its fixed cost (BenchmarkAdvisorOrders) does not weigh in.
func BenchmarkRunOrders(b *testing.B) {
	const rows = 1000000
	src := ordersRows(b, rows)
	p, m := ordersMapping(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		rep, err := Run(context.Background(), Config{Program: p, Mapping: m, Source: src, SourceURI: "mem", TmpDir: b.TempDir(), Workers: 1, SubsampleMax: 2000})
		if err != nil || rep.Totals.RowsOK != rows {
			b.Fatalf("%v rows: %v", rep.Totals.RowsOK, err)
		}
	}
	// CPU time, not wall: the machines this runs on are shared
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*rows), "cpu-ns/row")
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAdvisorOrders is the advisor's fixed cost: its designs evaluated on a subsample of
// 78,000 rows, as a 5M-row input leaves (one worker).
func BenchmarkAdvisorOrders(b *testing.B) {
	const rows = 78000
	src := ordersRows(b, rows)
	p, m := ordersMapping(b)
	r := &runner{cfg: withDefaults(Config{Program: p, Mapping: m, Source: src, Workers: 1}), prog: p, every: 1}
	if _, _, err := r.plan(p.SampleRows(src.sampleRecs(20000))); err != nil {
		b.Fatal(err)
	}
	recs := src.sampleRecs(rows)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		res, errs := r.adv.Evaluate(recs, r.adv.Specs, true)
		if len(res) != len(r.adv.Specs)+1 || errs[0] != nil {
			b.Fatalf("%d results: %v", len(res), errs)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

func (s *samplingSource) sampleRecs(n int) []pipeline.Record {
	recs, _ := s.Sample(context.Background(), n)
	return recs
}
