package parquet_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

const benchBatch = 1024

// orderGen makes batches of unique orders rows the way the pipeline hands them to the sink:
// the strings of a batch live in one arena that is reused after Write returns.
type orderGen struct {
	plan  pipeline.RegionPlan
	arena []byte
	vals  []pipeline.Value
	rows  []pipeline.Row
}

var (
	channels  = []string{"web", "app", "store", "phone", "partner"}
	statuses  = []string{"NEW", "PAID", "SHIPPED", "DELIVERED", "CANCELLED", "RETURNED"}
	locations = func() []string {
		l := make([]string, 300)
		for i := range l {
			l[i] = "city-" + strconv.Itoa(100+i) + "/zone-" + strconv.Itoa(10+i%37)
		}
		return l
	}()
)

func newOrderGen(plan pipeline.RegionPlan) *orderGen {
	return &orderGen{plan: plan, arena: make([]byte, 0, benchBatch*64), vals: make([]pipeline.Value, benchBatch*7), rows: make([]pipeline.Row, benchBatch)}
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

const hexd = "0123456789abcdef"

func (g *orderGen) str(start int) string {
	return unsafe.String(&g.arena[start], len(g.arena)-start)
}

// batch fills rows first..first+benchBatch-1 (row i is the same on every call).
func (g *orderGen) batch(first int) []pipeline.Row {
	g.arena = g.arena[:0]
	for k := 0; k < benchBatch; k++ {
		i := uint64(first + k)
		h := mix(i)
		v := g.vals[k*7 : k*7+7 : k*7+7]
		start := len(g.arena)
		salt := h & 0xffff
		g.arena = append(g.arena, hexd[salt>>12], hexd[salt>>8&15], hexd[salt>>4&15], hexd[salt&15])
		g.arena = append(g.arena, "_cust"...)
		g.arena = appendPadded(g.arena, (h>>16)%2_000_000, 7)
		g.arena = append(g.arena, '_')
		g.arena = appendPadded(g.arena, i, 9)
		v[0] = pipeline.Text(g.str(start))
		v[1] = pipeline.Int(int64(1_000_000_000 + i))
		v[2] = pipeline.Text(channels[(h>>40)%uint64(len(channels))])
		v[3] = pipeline.Int(1_700_000_000_000 + int64(i)*37 + int64(h>>50))
		v[4] = pipeline.Text(statuses[(h>>44)%uint64(len(statuses))])
		v[5] = pipeline.Text(locations[(h>>24)%uint64(len(locations))])
		start = len(g.arena)
		g.arena = strconv.AppendUint(g.arena, (h>>8)%100000, 10)
		g.arena = append(g.arena, '.', byte('1'+h%9), byte('0'+(h>>4)%10))
		v[6] = pipeline.Decimal(g.str(start))
		g.rows[k] = pipeline.Row{Values: v, Region: g.plan.Route(v[0])}
	}
	return g.rows
}

func appendPadded(dst []byte, v uint64, width int) []byte {
	var b [20]byte
	i := len(b)
	for v > 0 || i > len(b)-width {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, b[i:]...)
}

// BenchmarkSinkParquet writes 4M unique orders rows (the project benchmark's table: pk1 ~25
// chars, orderid, channel, ts, status, location, amount DECIMAL(12,2)) into 16 regions of zstd
// Parquet from GOMAXPROCS writers in batches of 1024, and commits. cpu-ns/row is the CPU time
// of the whole process per row (generating the batches included; see the gen-only
// sub-benchmark), the robust figure on a shared machine; rows/s is wall-clock.
func BenchmarkSinkParquet(b *testing.B) {
	b.Run("gen-only", func(b *testing.B) { benchOrders(b, false) })
	b.Run("sink", func(b *testing.B) { benchOrders(b, true) })
}

func benchOrders(b *testing.B, sink bool) {
	const n = 4000 * benchBatch
	plan := sinktest.HexPlan(16)
	schema := sinktest.Orders()
	workers := runtime.GOMAXPROCS(0)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	var bytes int64
	var writeTime, commitTime time.Duration
	for it := 0; it < b.N; it++ {
		var s *files.Sink
		if sink {
			dir, err := os.MkdirTemp(b.TempDir(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			s, err = files.New(context.Background(), files.Config{Store: sinktest.Folder(b, dir), Schema: schema, Plan: plan, Format: parquet.New(benchOpts...)}, nil)
			if err != nil {
				b.Fatal(err)
			}
		}
		t0 := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g := newOrderGen(plan)
				for {
					i := int(next.Add(benchBatch)) - benchBatch
					if i >= n {
						return
					}
					rows := g.batch(i)
					if s == nil {
						continue
					}
					if err := s.Write(context.Background(), rows); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		tw := time.Since(t0)
		writeTime += tw
		if s == nil {
			continue
		}
		infos, err := s.Commit(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		commitTime += time.Since(t0) - tw
		for _, fi := range infos {
			bytes += fi.Bytes
		}
		if it == 0 {
			b.ReportMetric(float64(s.Stats().PeakBuffered)/(1<<20), "peakMiB")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/float64(b.N), "cpu-ns/row")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	if sink {
		b.ReportMetric(float64(bytes)/float64(b.N)/float64(n), "B/row")
		b.ReportMetric(commitTime.Seconds()/float64(b.N), "commit-s")
	}
}

var benchOpts []parquet.Option

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
