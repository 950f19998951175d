package replicate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/benchcpu"
	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/transform"
)

// BenchmarkReplicate drains b.N orders messages (about 150 bytes of JSON) from an in-process
// Kafka into Parquet with mappings/orders.yaml: messages/s from the first fetch to the last
// commit. go test ./replicate -run XXX -bench Replicate -benchtime 500000x
func BenchmarkReplicate(b *testing.B) {
	c := kafkatest.Start(b)
	topic := c.CreateTopic(b, "bench", 6)
	w := c.Writer(topic)
	w.Balancer = &kafkago.Hash{}
	w.BatchSize, w.RequiredAcks = 5000, kafkago.RequireOne
	rng := rand.New(rand.NewPCG(1, 2))
	var batch []kafkago.Message
	for i := 0; i < b.N; i++ {
		user := fmt.Sprintf("user%07d", rng.IntN(500000))
		v := fmt.Sprintf(`{"userid":%q,"orderid":%d,"channel":"taobao","ts":"2024-05-01T10:00:%02d.000Z","status":"paid","location":"city-%03d","amount":"%d.%02d"}`,
			user, 1000000000+i, i%60, rng.IntN(1000), rng.IntN(5000), rng.IntN(100))
		batch = append(batch, kafkago.Message{Key: []byte(user), Value: []byte(v)})
		if len(batch) == 10000 || i == b.N-1 {
			if err := w.WriteMessages(context.Background(), batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	w.Close()
	m, err := transform.Load("../mappings/orders.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := config(b, c, topic, "bench", "json", b.TempDir())
	cfg.Program = p
	cfg.Plan, _ = p.PlanRegions(transform.RegionRequest{})
	cfg.RollInterval = time.Minute
	cfg.Memory = 0
	cfg.Logger = zap.NewNop()
	b.ResetTimer()
	t0, cpu0 := time.Now(), benchcpu.Now()
	rn := start(b, cfg)
	wait.For(b, func() bool { return rn.r.Metrics().MessagesIn.Load() >= int64(b.N) }, "every message read")
	if err := rn.shutdown(b); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "msgs/s")
	// the process's CPU time per message, the in-process broker's included: on a shared machine
	// steadier than the wall time
	b.ReportMetric(float64(benchcpu.Now()-cpu0)/float64(b.N), "cpu-ns/msg")
}

// BenchmarkCounterAdd is the per-row cost of a counter: Metrics keeps atomic.Int64 fields that
// /metrics reads at scrape time, rather than prometheus.Counter, because the status line and the
// summary read them too; this shows adding to either costs the same, alone and from every core.
// go test ./replicate -run XXX -bench CounterAdd
func BenchmarkCounterAdd(b *testing.B) {
	var a atomic.Int64
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "c_total", Help: "h"})
	for _, bc := range []struct {
		name string
		add  func()
	}{
		{"atomic.Int64", func() { a.Add(1) }},
		{"prometheus.Counter.Inc", c.Inc},
		{"prometheus.Counter.Add", func() { c.Add(1) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.add()
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bc.add()
				}
			})
		})
	}
}
