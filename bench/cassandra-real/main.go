// Command cassandra-real benchmarks `rekey migrate` from a real Cassandra node to Parquet against
// what a user would pick instead: the Spark Cassandra Connector (Spark in local[2] reading the
// same table and writing Parquet, SccUnload.java) and DSBulk's unload (CSV).
//
//	go run ./bench/cassandra-real -hosts 127.0.0.1:9042 -server-pid PID -rekey bench/work/rekey \
//	  -scc 'bash bench/work/scc.sh' -dsbulk 'bash bench/work/dsbulk.sh' -rows 1000000 -json bench/work/cassandra-real.json
//
// bench/run.sh starts the node (deploy/dev/peers.sh) and writes the two launch scripts. This
// program first loads shop.orders with -rows rows (cassandratest.SeedOrders: the rows the
// cassandra case reads from the test server), four rows a partition in unlogged single-partition
// batches, 64 in flight, waits until the node is idle again and reads the table once, untimed
// (checking the count), so that the first side does not pay for a cold node. Then, -runs times in
// alternation, each side runs in its own process:
//
//   - rekey: `rekey migrate -m mappings/orders.yaml` (the real CLI, default settings) into 16
//     regions of zstd Parquet; every row must be written (its --stats-json);
//   - scc: the -scc command with HOST PORT shop orders OUTDIR: the same job in Spark (pk1, channel
//     codes, DECIMAL(18,2), 16 regions, zstd Parquet); it prints the rows it wrote, which must be
//     every row;
//   - dsbulk: the -dsbulk command with HOST PORT shop orders OUTDIR: DSBulk's unload of the table to
//     CSV files (no Parquet writer exists in DSBulk); the CSV's records are counted afterwards.
//
// Each side's time runs from its process start to its exit (a JVM's start-up is part of what its
// user waits for; the Spark job's own time is reported too), its CPU time and peak RSS are the
// child's rusage from wait4, and the node's CPU time during the run is read from
// /proc/PID/stat before and after (server_cpu_seconds). The median run of each side is printed
// as JSON: {"rekey": {...}, "scc": {...}, "dsbulk": {...}, "ratio": rekey/scc,
// "dsbulk_ratio": rekey/dsbulk}, with the 1-minute load average before and after.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/bench/benchproc"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

func main() {
	hosts := flag.String("hosts", "", "host:port of the Cassandra node (CASSANDRA_HOSTS of deploy/dev/peers.sh env)")
	serverPID := flag.Int("server-pid", 0, "the node's process id, for its CPU time per side")
	rows := flag.Int("rows", 1000000, "rows to load and migrate")
	runs := flag.Int("runs", 3, "runs of each side (alternating); the median is reported")
	rekey := flag.String("rekey", "", "path of the rekey binary (built from ./cmd/rekey)")
	mapping := flag.String("mapping", "mappings/orders.yaml", "mapping for rekey migrate")
	scc := flag.String("scc", "", "command running SccUnload (HOST PORT KEYSPACE TABLE OUTDIR appended); empty: no Spark side")
	dsbulk := flag.String("dsbulk", "", "command running DSBulk (HOST PORT KEYSPACE TABLE OUTDIR appended); empty: no DSBulk side")
	out := flag.String("json", "", "also write the figures to this file")
	work := flag.String("work", os.TempDir(), "directory for the sides' outputs")
	flag.Parse()
	if *rekey == "" || *hosts == "" || *serverPID == 0 {
		fmt.Fprintln(os.Stderr, "-rekey, -hosts and -server-pid are required")
		os.Exit(2)
	}
	b := bench{rekey: *rekey, mapping: *mapping, hosts: strings.Split(*hosts, ","), pid: *serverPID,
		n: *rows, work: *work, scc: strings.Fields(*scc), dsbulk: strings.Fields(*dsbulk)}
	if err := b.run(*runs, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cassandra-real:", err)
		os.Exit(1)
	}
}

type bench struct {
	rekey, mapping, work string
	hosts                []string
	pid, n               int
	scc, dsbulk          []string
}

func (b bench) run(runs int, out string) error {
	t0 := time.Now()
	if err := load(b.hosts, b.n); err != nil {
		return fmt.Errorf("loading shop.orders: %w", err)
	}
	fmt.Fprintf(os.Stderr, "loaded %d rows into shop.orders in %v\n", b.n, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	if err := settle(b.pid, 2*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "the node settled (flushes and compactions after the load) in %v\n", time.Since(t0).Round(time.Second))
	t0 = time.Now()
	if err := warmUp(b.hosts, b.n); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "read the table once, untimed, in %v\n", time.Since(t0).Round(time.Millisecond))
	host, port, ok := strings.Cut(b.hosts[0], ":")
	if !ok {
		return fmt.Errorf("-hosts %q: want host:port", b.hosts[0])
	}
	uri := "cassandra://" + strings.Join(b.hosts, ",") + "/shop/orders"
	load0 := benchproc.LoadAvg()
	sides := map[string][]Side{}
	for i := 0; i < runs; i++ {
		dir := filepath.Join(b.work, "out-cassandra-real-rekey")
		stats := filepath.Join(b.work, "cassandra-real-stats.json")
		os.RemoveAll(dir)
		r, _, err := b.measure(exec.Command(b.rekey, "migrate", "-m", b.mapping, "--source", uri, "--out", dir,
			"--progress", "never", "--stats-json", stats))
		if err != nil {
			return fmt.Errorf("rekey migrate: %w", err)
		}
		if err := benchproc.CheckWritten(stats, int64(b.n)); err != nil {
			return err
		}
		os.RemoveAll(dir)
		sides["rekey"] = append(sides["rekey"], r)
		fmt.Fprintf(os.Stderr, "run %d rekey migrate: %s\n", i+1, r)

		if len(b.scc) > 0 {
			dir := filepath.Join(b.work, "out-cassandra-real-scc")
			os.RemoveAll(dir)
			s, stdout, err := b.measure(command(b.scc, host, port, "shop", "orders", dir))
			if err != nil {
				return fmt.Errorf("the Spark Cassandra Connector side: %w", err)
			}
			var got struct {
				Rows       int64   `json:"rows"`
				JobSeconds float64 `json:"job_seconds"`
				Partitions int     `json:"partitions"`
			}
			if err := lastJSON(stdout, &got); err != nil {
				return fmt.Errorf("the Spark Cassandra Connector side: %w", err)
			}
			if got.Rows != int64(b.n) {
				return fmt.Errorf("the Spark Cassandra Connector wrote %d rows, want %d", got.Rows, b.n)
			}
			s.JobSeconds, s.Partitions = got.JobSeconds, got.Partitions
			os.RemoveAll(dir)
			sides["scc"] = append(sides["scc"], s)
			fmt.Fprintf(os.Stderr, "run %d Spark Cassandra Connector: %s (the job alone %.2fs, %d Spark partitions)\n", i+1, s, s.JobSeconds, s.Partitions)
		}

		if len(b.dsbulk) > 0 {
			dir := filepath.Join(b.work, "out-cassandra-real-dsbulk")
			os.RemoveAll(dir)
			d, _, err := b.measure(command(b.dsbulk, host, port, "shop", "orders", dir))
			if err != nil {
				return fmt.Errorf("DSBulk unload: %w", err)
			}
			got, err := csvRecords(dir)
			if err != nil {
				return fmt.Errorf("DSBulk unload: %w", err)
			}
			if got != int64(b.n) {
				return fmt.Errorf("DSBulk unloaded %d rows, want %d", got, b.n)
			}
			os.RemoveAll(dir)
			sides["dsbulk"] = append(sides["dsbulk"], d)
			fmt.Fprintf(os.Stderr, "run %d DSBulk unload: %s\n", i+1, d)
		}
	}
	res := map[string]any{"loadavg_start": load0, "loadavg_end": benchproc.LoadAvg()}
	med := map[string]Side{}
	for name, s := range sides {
		med[name] = benchproc.Median(s)
		res[name] = med[name]
	}
	if s, ok := med["scc"]; ok {
		res["ratio"] = med["rekey"].RowsPerSec / s.RowsPerSec
	}
	if d, ok := med["dsbulk"]; ok {
		res["dsbulk_ratio"] = med["rekey"].RowsPerSec / d.RowsPerSec
	}
	return benchproc.WriteJSON(out, res, med)
}

// settle waits until the node is idle after the load: less than a tenth of a core's time over 2 s
// (its memtable flushes and compactions would otherwise be charged to the first side to run), or
// until timeout.
func settle(pid int, timeout time.Duration) error {
	const window = 2 * time.Second
	deadline := time.Now().Add(timeout)
	prev, err := benchproc.ProcCPU(pid)
	if err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		time.Sleep(window) // polling another process's CPU time: nothing to wait on
		cur, err := benchproc.ProcCPU(pid)
		if err != nil {
			return err
		}
		if cur-prev < window.Seconds()/10 {
			return nil
		}
		prev = cur
	}
	fmt.Fprintf(os.Stderr, "the node is still busy %v after the load; measuring anyway\n", timeout)
	return nil
}

// command is cmd (a program and its leading arguments) with args appended.
func command(cmd []string, args ...string) *exec.Cmd {
	return exec.Command(cmd[0], append(append([]string(nil), cmd[1:]...), args...)...)
}

// Side is one side's figures, with what the node spent meanwhile.
type Side struct {
	benchproc.Figures
	ServerCPU  float64 `json:"server_cpu_seconds"`              // the node's user + system time during the run
	ServerRSS  int64   `json:"server_rss_bytes"`                // the node's resident set when the run ended
	Load       float64 `json:"loadavg"`                         // 1-minute load average when the run started
	JobSeconds float64 `json:"job_seconds,omitempty"`           // Spark: the job's own time, without the JVM's and Spark's start
	Partitions int     `json:"spark_scan_partitions,omitempty"` // Spark: the partitions the connector split the scan into
}

func (s Side) String() string {
	return fmt.Sprintf("%.0f rows/s (%.2fs, cpu %.2fs, peak RSS %d MiB, node cpu %.2fs)", s.RowsPerSec, s.Seconds,
		s.CPUSeconds, s.PeakRSS>>20, s.ServerCPU)
}

// measure runs one side to its exit and returns its figures, the node's CPU time meanwhile, and
// what the side printed on stdout.
func (b bench) measure(cmd *exec.Cmd) (Side, []byte, error) {
	load := benchproc.LoadAvg()
	cpu0, err := benchproc.ProcCPU(b.pid)
	if err != nil {
		return Side{}, nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return Side{}, nil, fmt.Errorf("%s: %w\n%s\n%s", strings.Join(cmd.Args, " "), err, tail(stdout.Bytes()), tail(stderr.Bytes()))
	}
	f := benchproc.Measure(int64(b.n), time.Since(start), cmd.ProcessState)
	cpu1, err := benchproc.ProcCPU(b.pid)
	if err != nil {
		return Side{}, nil, err
	}
	return Side{Figures: f, ServerCPU: math.Round((cpu1-cpu0)*100) / 100, ServerRSS: benchproc.ProcMemory(b.pid, "VmRSS"), Load: load}, stdout.Bytes(), nil
}

// tail is the last 40 lines of out.
func tail(out []byte) []byte {
	lines := bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return bytes.Join(lines, []byte("\n"))
}

// lastJSON decodes the last line of out that starts with '{'.
func lastJSON(out []byte, v any) error {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(bytes.TrimSpace(lines[i]), []byte("{")) {
			return json.Unmarshal(lines[i], v)
		}
	}
	return fmt.Errorf("no JSON line in its output:\n%s", tail(out))
}

// csvRecords counts the records of the CSV files under dir (DSBulk writes one header line per
// file and quotes no field of these rows across lines).
func csvRecords(dir string) (int64, error) {
	var n int64
	files := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".csv") {
			return err
		}
		files++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		first := true
		for sc.Scan() {
			if first {
				first = false
				if strings.HasPrefix(sc.Text(), "userid,") || strings.Contains(sc.Text(), "orderid") {
					continue // the header
				}
			}
			n++
		}
		return sc.Err()
	})
	if err == nil && files == 0 {
		err = fmt.Errorf("no CSV file under %s", dir)
	}
	return n, err
}

// load creates shop.orders on the node and writes n rows into it (cassandratest.SeedOrders); every
// side checks afterwards that it read them all.
func load(hosts []string, n int) error {
	cl := gocql.NewCluster(hosts...)
	cl.ProtoVersion = 4
	cl.Timeout = 60 * time.Second
	cl.ConnectTimeout = 30 * time.Second
	cl.NumConns = 2
	cl.Consistency = gocql.One
	sess, err := cl.CreateSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	w := &writer{sess: sess}
	if err := cassandratest.SeedOrders(w, n); err != nil {
		return err
	}
	return nil
}

// warmUp reads every row of shop.orders once and checks the count: a node that has only been
// written to serves its first full read at about half the speed of the next ones (its read path not
// yet compiled by the JIT, its caches cold), which would be charged to the first side to run.
func warmUp(hosts []string, n int) error {
	cl := gocql.NewCluster(hosts...)
	cl.ProtoVersion = 4
	cl.Timeout = 60 * time.Second
	cl.Consistency = gocql.One
	sess, err := cl.CreateSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	it := sess.Query(`SELECT ` + strings.Join(columnNames(), ", ") + ` FROM shop.orders`).PageSize(5000).Iter()
	var got int
	for m := map[string]any{}; it.MapScan(m); m = map[string]any{} {
		got++
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("reading shop.orders back: %w", err)
	}
	if got != n {
		return fmt.Errorf("shop.orders holds %d rows after loading %d", got, n)
	}
	return nil
}

func columnNames() []string {
	var names []string
	for _, c := range cassandratest.OrdersColumns {
		names = append(names, c.Name)
	}
	return names
}

// writer is the cassandratest.Seeder SeedOrders loads a real node through: rows of one partition
// that come one after another go in one unlogged batch (one mutation on the node), 64 batches in
// flight.
type writer struct {
	sess *gocql.Session
	cols []string
	pk   string
}

func (w *writer) CreateTable(keyspace, name string, cols []cqltest.Column, partitionKey, clustering []string) error {
	if len(partitionKey) != 1 {
		return errors.New("the loader batches by a single partition key column")
	}
	var defs []string
	w.cols = nil
	for _, c := range cols {
		defs = append(defs, c.Name+" "+c.Type)
		w.cols = append(w.cols, c.Name)
	}
	w.pk = partitionKey[0]
	key := "(" + partitionKey[0] + ")"
	if len(clustering) > 0 {
		key += ", " + strings.Join(clustering, ", ")
	}
	for _, s := range []string{
		"CREATE KEYSPACE IF NOT EXISTS " + keyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"DROP TABLE IF EXISTS " + keyspace + "." + name,
		fmt.Sprintf("CREATE TABLE %s.%s (%s, PRIMARY KEY (%s))", keyspace, name, strings.Join(defs, ", "), key),
	} {
		if err := w.sess.Query(s).Exec(); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func (w *writer) InsertMany(keyspace, name string, n int, fill func(i int, row map[string]any) error) error {
	stmt := fmt.Sprintf("INSERT INTO %s.%s (%s) VALUES (%s)", keyspace, name, strings.Join(w.cols, ", "),
		strings.TrimSuffix(strings.Repeat("?, ", len(w.cols)), ", "))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batches := make(chan [][]any, 128)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rows := range batches {
				b := w.sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
				for _, r := range rows {
					b.Query(stmt, r...)
				}
				if err := w.sess.ExecuteBatch(b); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("%s: %w", stmt, err); cancel() })
				}
			}
		}()
	}
	var cur [][]any
	var curKey any
	var err error
	for i := 0; i < n && ctx.Err() == nil; i++ {
		row := map[string]any{}
		if err = fill(i, row); err != nil {
			err = fmt.Errorf("row %d: %w", i, err)
			break
		}
		if len(cur) > 0 && (row[w.pk] != curKey || len(cur) == 16) {
			batches <- cur
			cur = nil
		}
		vals := make([]any, len(w.cols))
		for j, c := range w.cols {
			vals[j] = row[c]
		}
		cur, curKey = append(cur, vals), row[w.pk]
	}
	if len(cur) > 0 && err == nil {
		batches <- cur
	}
	close(batches)
	wg.Wait()
	if err != nil {
		return err
	}
	if firstErr != nil {
		return firstErr
	}
	return nil
}
