package replicate

import (
	"context"
	"os"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/benchcpu"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkademo"
	"github.com/rekey/rekey/transform"
)

// BenchmarkWorkers is rekey's own per-message cost of replicating to Parquet, Kafka left out:
// b.N orders messages (kafkademo, about 150 bytes of JSON) already fetched, in batches of 1024,
// through six partitions' workers (decode, map, buffer, encode, roll close) as `rekey replicate`
// runs them with its default --memory, mappings/orders.yaml and 16 regions.
// go test ./replicate -run XXX -bench Workers -benchtime 1000000x
func BenchmarkWorkers(b *testing.B) {
	const partitions, batch = 6, 1024
	r := ordersReplicator(b, b.TempDir())
	defer r.man.close()
	// every partition's messages, made before the clock starts
	gen := kafkademo.NewOrders(1)
	msgs := make([][]kafkago.Message, partitions)
	for i := range msgs {
		msgs[i] = make([]kafkago.Message, 0, b.N/partitions+1)
	}
	for i := 0; i < b.N; i++ {
		part := i % partitions
		m := gen.Next()
		m.Partition, m.Offset = part, int64(len(msgs[part]))
		msgs[part] = append(msgs[part], m)
	}
	ws := make([]*worker, partitions)
	for i := range ws {
		ws[i] = r.detachedWorker(i, partitions)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchcpu.Now()
	for at := 0; ; at += batch {
		more := false
		for i, w := range ws {
			if at >= len(msgs[i]) {
				continue
			}
			more = true
			if err := w.processMessages(msgs[i][at:min(at+batch, len(msgs[i]))]); err != nil {
				b.Fatal(err)
			}
		}
		if !more {
			break
		}
	}
	for _, w := range ws {
		if err := w.closeRoll("stop"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	// the CPU time per message: on a shared machine steadier than the wall time
	b.ReportMetric(float64(benchcpu.Now()-cpu0)/float64(b.N), "cpu-ns/msg")
}

// ordersReplicator replicates orders messages (kafkademo) with mappings/orders.yaml, 16 regions
// and the default memory budget of `rekey replicate` into dir, as Parquet; no broker behind it.
func ordersReplicator(tb testing.TB, dir string) *Replicator {
	tb.Helper()
	m, err := transform.Load("../mappings/orders.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return folderReplicator(tb, m, "kafka://127.0.0.1:9/orders?group=bench&format=json", dir, 512<<20/4)
}

// folderReplicator replicates the topic of kafkaURI with mapping m into the folder dir as Parquet
// (rolls of 64 MiB or an hour), with memory bytes; no broker behind it.
func folderReplicator(tb testing.TB, m *transform.Mapping, kafkaURI, dir string, memory int64) *Replicator {
	tb.Helper()
	p, err := transform.Compile(m, nil)
	if err != nil {
		tb.Fatal(err)
	}
	kc, err := kafka.ParseURI(kafkaURI, os.Getenv)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := Config{Kafka: kc, Program: p, Format: parquet.New(), Store: sinktest.Folder(tb, dir), Out: dir,
		RollSize: 64 << 20, RollInterval: time.Hour, Memory: memory, Logger: zap.NewNop()}
	if cfg.Plan, err = p.PlanRegions(transform.RegionRequest{}); err != nil {
		tb.Fatal(err)
	}
	r, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// processMessages feeds a detached worker a batch of messages as its read does: decoded, then
// applied (here in one goroutine).
func (w *worker) processMessages(msgs []kafkago.Message) error {
	w.decoded = w.dec.DecodeBatch(w.decoded[:0], kafka.FetchBatch{Messages: msgs})
	err := w.process(w.decoded, 0)
	w.dec.Reset()
	return err
}

// detachedWorker is a worker of partition that is fed with process and commits nothing to Kafka.
// It is past its assignment's first roll (which closes after one batch): its rolls close on
// their size, or when the caller closes them.
func (r *Replicator) detachedWorker(partition, partitions int) *worker {
	w := r.newWorker(partition, func(int, int64) error { return nil }, partitions)
	w.ctx = context.Background()
	w.early = false
	return w
}
