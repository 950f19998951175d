// Command cassandra benchmarks `rekey migrate` from Cassandra against the ceiling of a bare gocql
// scan of the same table.
//
//	go run ./bench/cassandra -rekey bench/work/rekey -rows 1000000 -json bench/work/cassandra.json
//
// A server process (this program, -side server) runs the CQL test server (source/cassandra/cqltest)
// and seeds shop.orders with -rows rows (cassandratest.SeedOrders). Then, -runs times in
// alternation, each side runs in its own process, as a real migration would next to a real
// cluster:
//
//   - bare: this program with -side bare: gocql alone, a token-range scan of every column into Go
//     values (iter.Scan), nothing else, over the same sub-ranges with the same number of ranges in
//     flight and the same page size as rekey's defaults;
//   - source: this program with -side source: rekey's Cassandra source alone (source/cassandra,
//     default settings), every row decoded into a record and dropped: the same work as the bare
//     scan, done by rekey's code;
//   - rekey: `rekey migrate` (the real CLI, default settings) with mappings/orders.yaml into 16
//     regions of zstd Parquet, committed and checkpointed.
//
// Each side's time runs from its process start to its exit. The machine's cores are shared by the
// server and the side running, as they would be by any client on the server's host: the server's
// CPU time during each side's run is reported next to the side's own (server_cpu_seconds). The
// median run of each side is printed as JSON: {"bare": {...}, "source": {...}, "rekey": {...},
// "ratio": rekey/bare, "source_ratio": source/bare}, with the 1-minute load average before and
// after (the cores are shared with whatever else runs).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/bench/benchproc"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

func main() {
	side := flag.String("side", "", "internal: run one side (server, bare, source)")
	hosts := flag.String("hosts", "", "internal: host:port list of the server")
	ranges := flag.String("ranges", "", "internal: file with the token ranges, one name per line")
	uri := flag.String("uri", "", "internal: --source URI of the table, for -side source")
	workers := flag.Int("workers", 0, "internal: ranges in flight")
	rows := flag.Int("rows", 1000000, "rows to seed and migrate")
	runs := flag.Int("runs", 3, "runs of each side (alternating); the median is reported")
	rekey := flag.String("rekey", "", "path of the rekey binary (built from ./cmd/rekey)")
	mapping := flag.String("mapping", "mappings/orders.yaml", "mapping for rekey migrate")
	out := flag.String("json", "", "also write the figures to this file")
	work := flag.String("work", os.TempDir(), "directory for rekey's output")
	extra := flag.String("rekey-args", "", "extra arguments for rekey migrate, space-separated")
	flag.Parse()
	var err error
	switch *side {
	case "server":
		err = server(*rows)
	case "bare":
		err = bare(strings.Split(*hosts, ","), *ranges, *workers, int64(*rows))
	case "source":
		err = sourceOnly(*uri, int64(*rows))
	default:
		if *rekey == "" {
			fmt.Fprintln(os.Stderr, "-rekey is required (go build -o bench/work/rekey ./cmd/rekey)")
			os.Exit(2)
		}
		err = parent(*rekey, *mapping, *work, *rows, *runs, *out, strings.Fields(*extra))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench/cassandra %s: %v\n", *side, err)
		os.Exit(1)
	}
}

func parent(rekey, mapping, work string, n, runs int, out string, extra []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv, err := benchproc.StartServer(self, "-side", "server", "-rows", strconv.Itoa(n))
	if err != nil {
		return err
	}
	defer srv.Stop()
	hosts := srv.Addrs
	uri := "cassandra://" + strings.Join(hosts, ",") + "/shop/orders"

	// rekey's own sub-ranges and concurrency (its defaults), for the bare scan
	probe, err := openSource(uri)
	if err != nil {
		return err
	}
	var names []string
	for _, r := range probe.AllRanges() {
		names = append(names, r.Name())
	}
	workers := probe.Workers()
	// the test server computes system.size_estimates on first read, as Cassandra does in the
	// background: read it once now so that no timed run pays for it
	probe.EstimatedRows()
	probe.Close()
	rangesFile := filepath.Join(work, "cassandra-ranges.txt")
	if err := os.WriteFile(rangesFile, []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d rows, %d ranges, %d in flight, page size %d\n", n, len(names), workers, cassandra.DefaultPageSize)

	load0 := benchproc.LoadAvg()
	var bareRuns, sourceRuns, rekeyRuns []Side
	dir := filepath.Join(work, "out-cassandra")
	stats := filepath.Join(work, "cassandra-stats.json")
	for i := 0; i < runs; i++ {
		b, err := measure(srv, n, exec.Command(self, "-side", "bare", "-hosts", strings.Join(hosts, ","), "-ranges", rangesFile,
			"-workers", strconv.Itoa(workers), "-rows", strconv.Itoa(n)))
		if err != nil {
			return fmt.Errorf("bare scan: %w", err)
		}
		bareRuns = append(bareRuns, b)

		s, err := measure(srv, n, exec.Command(self, "-side", "source", "-uri", uri, "-rows", strconv.Itoa(n)))
		if err != nil {
			return fmt.Errorf("rekey's source alone: %w", err)
		}
		sourceRuns = append(sourceRuns, s)

		os.RemoveAll(dir)
		cmd := exec.Command(rekey, benchproc.WithArgs([]string{"migrate", "-m", mapping, "--source", uri, "--out", dir, "--progress", "never",
			"--stats-json", stats}, extra)...)
		r, err := measure(srv, n, cmd)
		if err != nil {
			return fmt.Errorf("rekey migrate: %w", err)
		}
		if err := benchproc.CheckWritten(stats, int64(n)); err != nil {
			return err
		}
		rekeyRuns = append(rekeyRuns, r)
		fmt.Fprintf(os.Stderr, "run %d (load %.1f): bare %s; source %s; rekey %s: %.2f (source %.2f)\n", i+1, b.Load,
			b, s, r, r.RowsPerSec/b.RowsPerSec, s.RowsPerSec/b.RowsPerSec)
	}
	b, s, r := benchproc.Median(bareRuns), benchproc.Median(sourceRuns), benchproc.Median(rekeyRuns)
	res := map[string]any{"bare": b, "source": s, "rekey": r, "ratio": r.RowsPerSec / b.RowsPerSec,
		"source_ratio": s.RowsPerSec / b.RowsPerSec, "loadavg_start": load0, "loadavg_end": benchproc.LoadAvg()}
	return benchproc.WriteJSON(out, res, map[string]Side{"bare": b, "source": s, "rekey": r})
}

// Side is one side's figures, with what the server spent meanwhile.
type Side struct {
	benchproc.Figures
	ServerCPU float64 `json:"server_cpu_seconds"` // the test server's user + system time during the run
	Load      float64 `json:"loadavg"`            // 1-minute load average when the run started
}

func (s Side) String() string {
	return fmt.Sprintf("%.0f rows/s (%.2fs, cpu %.2fs, server cpu %.2fs)", s.RowsPerSec, s.Seconds, s.CPUSeconds, s.ServerCPU)
}

// measure runs one side to its exit and returns its figures and the server's CPU time meanwhile.
func measure(srv *benchproc.Server, n int, cmd *exec.Cmd) (Side, error) {
	load := benchproc.LoadAvg()
	cpu0, err := benchproc.ProcCPU(srv.PID())
	if err != nil {
		return Side{}, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return Side{}, fmt.Errorf("%w\n%s", err, stderr.Bytes())
	}
	f := benchproc.Measure(int64(n), time.Since(start), cmd.ProcessState)
	cpu1, err := benchproc.ProcCPU(srv.PID())
	if err != nil {
		return Side{}, err
	}
	return Side{Figures: f, ServerCPU: math.Round((cpu1-cpu0)*100) / 100, Load: load}, nil
}

// server runs the CQL test server with shop.orders seeded, prints its host:port list and serves
// until stdin closes.
func server(n int) error {
	srv, err := cqltest.New()
	if err != nil {
		return err
	}
	defer srv.Close()
	t0 := time.Now()
	if err := cassandratest.SeedOrders(srv, n); err != nil {
		return err
	}
	srv.Rows("shop", "orders") // sorts the rows now, outside the timed part
	fmt.Fprintf(os.Stderr, "seeded %d rows in %v\n", n, time.Since(t0).Round(time.Millisecond))
	var hosts []string
	for _, h := range srv.Hosts() {
		hosts = append(hosts, fmt.Sprintf("%s:%d", h, srv.Port()))
	}
	fmt.Println(strings.Join(hosts, ","))
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// bare reads the ranges listed in rangesFile with cassandratest.BareScan.
func bare(hosts []string, rangesFile string, workers int, want int64) error {
	data, err := os.ReadFile(rangesFile)
	if err != nil {
		return err
	}
	var ranges []cassandra.Range
	for _, name := range strings.Fields(string(data)) {
		r, err := cassandra.ParseRange(name)
		if err != nil {
			return err
		}
		ranges = append(ranges, r)
	}
	got, err := cassandratest.BareScan(hosts, ranges, workers, cassandra.DefaultPageSize)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("read %d rows, want %d", got, want)
	}
	return nil
}

// sourceOnly reads the table with rekey's Cassandra source (its defaults: the same ranges,
// concurrency and page size as rekey migrate) and drops every record, releasing each batch.
func sourceOnly(uri string, want int64) error {
	src, err := openSource(uri)
	if err != nil {
		return err
	}
	defer src.Close()
	out := make(chan pipeline.Batch, 8)
	var got int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range out {
			got += int64(len(b.Records))
			if b.Release != nil {
				b.Release()
			}
		}
	}()
	err = src.Run(context.Background(), nil, out)
	close(out)
	<-done
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("read %d rows, want %d", got, want)
	}
	return nil
}

// openSource opens rekey's Cassandra source on uri with its default settings.
func openSource(uri string) (*cassandra.Source, error) {
	cfg, err := cassandra.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	return cassandra.New(context.Background(), cfg, zap.NewNop())
}
