package cqltest

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

func seedBench(tb testing.TB, s *Server, rows int) {
	tb.Helper()
	must(tb, s.CreateTable("bench", "t", []Column{
		{"id", "bigint"}, {"name", "text"}, {"n", "int"}, {"score", "double"}, {"ts", "timestamp"},
	}, []string{"id"}, nil))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	must(tb, s.InsertMany("bench", "t", rows, func(i int, r map[string]any) error {
		r["id"] = int64(i)
		r["name"] = fmt.Sprintf("name-%08d", i)
		r["n"] = int32(i)
		r["score"] = float64(i) / 3
		r["ts"] = base.Add(time.Duration(i) * time.Second)
		return nil
	}))
	s.Rows("bench", "t") // sort now, outside the timed part
}

// scanRanges reads the whole table split into n token ranges, one goroutine per range, and
// returns the number of rows read.
func scanRanges(tb testing.TB, sess *gocql.Session, n int) int64 {
	pts := evenTokens(n - 1)
	bounds := append([]int64{math.MinInt64}, pts...)
	bounds = append(bounds, math.MaxInt64)
	var total int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i+1 < len(bounds); i++ {
		q := "SELECT id, name, n, score, ts FROM bench.t WHERE token(id) > ? AND token(id) <= ?"
		if i == 0 {
			q = "SELECT id, name, n, score, ts FROM bench.t WHERE token(id) >= ? AND token(id) <= ?"
		}
		wg.Add(1)
		go func(q string, a, b int64) {
			defer wg.Done()
			iter := sess.Query(q, a, b).PageSize(5000).Iter()
			var id int64
			var name string
			var n int32
			var score float64
			var ts time.Time
			c := int64(0)
			for iter.Scan(&id, &name, &n, &score, &ts) {
				c++
			}
			if err := iter.Close(); err != nil {
				tb.Error(err)
			}
			mu.Lock()
			total += c
			mu.Unlock()
		}(q, bounds[i], bounds[i+1])
	}
	wg.Wait()
	return total
}

// BenchmarkScan measures gocql reading 200k rows over 16 token ranges from the server.
func BenchmarkScan(b *testing.B) {
	const rows = 200000
	s := newServer(b)
	seedBench(b, s, rows)
	sess := newSession(b, s, func(c *gocql.ClusterConfig) { c.NumConns = 2 })
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if got := scanRanges(b, sess, 16); got != rows {
			b.Fatalf("read %d rows, want %d", got, rows)
		}
	}
	b.ReportMetric(float64(rows*b.N)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkSeed measures InsertMany plus the sort on first read, per million rows.
func BenchmarkSeed(b *testing.B) {
	const rows = 1000000
	for i := 0; i < b.N; i++ {
		s := newServer(b)
		start := time.Now()
		seedBench(b, s, rows)
		b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
		s.Close()
	}
}

// TestScanThroughput guards against a slow server: 200k rows over 16 ranges must go faster
// than 50k rows/s even on a busy 2-core machine (measured: see BenchmarkScan).
func TestScanThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := newServer(t)
	seedBench(t, s, 200000)
	sess := newSession(t, s)
	start := time.Now()
	if got := scanRanges(t, sess, 16); got != 200000 {
		t.Fatalf("read %d rows", got)
	}
	rate := 200000 / time.Since(start).Seconds()
	t.Logf("%.0f rows/s", rate)
	if rate < 50000 {
		t.Errorf("scan rate %.0f rows/s is below 50k rows/s", rate)
	}
}
