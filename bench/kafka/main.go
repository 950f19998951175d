// Command kafka benchmarks `rekey replicate` against the ceiling of a bare kafka-go consumer group
// reader draining the same topic.
//
//	go run ./bench/kafka -rekey bench/work/rekey -messages 2000000 -json bench/work/kafka.json
//
// A broker process (this program, -side broker) runs franz-go's kfake and produces the messages
// into it (about 150 bytes of JSON each, mappings/orders.yaml's columns, over 6 partitions).
// Then each side runs in its own process, started by the small parent so that no process
// shares a heap (or, through fork and exec, the broker's resident set: a child's ru_maxrss
// counts the memory of the process it was forked from):
//
//   - bare: this program with -side bare: one kafka-go Reader in a consumer group reading every
//     message (ReadMessage, commits every second), then exiting;
//   - rekey: `rekey replicate` (the real CLI) writing zstd Parquet with rolls of 64 MiB, stopped
//     with SIGTERM once the group has committed every end offset (its last roll closes then).
//
// The two sides run -runs times in alternation, each run in a consumer group of its own, and the
// median of each side is reported (by rate; the host's speed drifts between runs). Each side's
// start is the time from its process start to its first result: the bare reader's first message,
// rekey's first committed offset (the group's offsets polled every 10 ms). Each side's time runs
// from its process start to the end of its work, and its peak RSS is the child's ru_maxrss from
// wait4 (getrusage of the finished child, the same figure as its own getrusage(RUSAGE_SELF) at
// exit); the broker's CPU time during each run is read from /proc/PID/stat
// (server_cpu_seconds). The figures are printed as JSON: {"bare": {...}, "rekey": {...},
// "ratio": rekey/bare}.
//
// With -brokers, the broker is one already running (a real Kafka, deploy/dev/peers.sh): the
// messages go to a topic of their own (orders-NANOS, 6 partitions), and its CPU time is read
// with -broker-pid.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekey/rekey/bench/benchproc"
	"github.com/rekey/rekey/source/kafka/kafkademo"
)

const partitions = 6

// topic is the topic the messages go to: "orders" in kfake, one of its own on a real broker.
var topic = "orders"

func main() {
	side := flag.String("side", "", "internal: run one side (bare) against -brokers")
	brokers := flag.String("brokers", "", "addresses of a running broker to use instead of kfake")
	brokerPID := flag.Int("broker-pid", 0, "the running broker's process id, for its CPU time per run (with -brokers)")
	runs := flag.Int("runs", 1, "runs of each side, alternating, the median reported")
	group := flag.String("group", "bare-bench", "internal: the bare reader's consumer group")
	flag.StringVar(&topic, "topic", topic, "internal: the topic the bare reader drains")
	messages := flag.Int64("messages", 2000000, "messages to produce and drain")
	rekey := flag.String("rekey", "", "path of the rekey binary (built from ./cmd/rekey)")
	mapping := flag.String("mapping", "mappings/orders.yaml", "mapping for rekey replicate")
	out := flag.String("json", "", "also write the figures to this file")
	work := flag.String("work", os.TempDir(), "directory for rekey's output")
	extra := flag.String("rekey-args", "", "extra arguments for rekey replicate, space-separated")
	flag.Parse()
	if *side == "broker" {
		if err := broker(*messages); err != nil {
			fmt.Fprintln(os.Stderr, "broker:", err)
			os.Exit(1)
		}
		return
	}
	if *side == "bare" {
		if err := bare(strings.Split(*brokers, ","), *group, *messages); err != nil {
			fmt.Fprintln(os.Stderr, "bare:", err)
			os.Exit(1)
		}
		return
	}
	if *rekey == "" {
		fmt.Fprintln(os.Stderr, "-rekey is required (go build -o bench/work/rekey ./cmd/rekey)")
		os.Exit(2)
	}
	var err error
	if *brokers != "" {
		err = external(*rekey, *mapping, *work, strings.Split(*brokers, ","), *brokerPID, *messages, *runs, *out, strings.Fields(*extra))
	} else {
		err = parent(*rekey, *mapping, *work, *messages, *runs, *out, strings.Fields(*extra))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/kafka:", err)
		os.Exit(1)
	}
}

// external runs the sides against a running broker: a topic of its own, runs alternated, each in
// a group of its own, medians.
func external(rekey, mapping, work string, addrs []string, brokerPID int, n int64, runs int, out string, extra []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	topic = fmt.Sprintf("orders-%d", time.Now().UnixNano())
	if err := createTopic(addrs, topic); err != nil {
		return err
	}
	t0 := time.Now()
	if err := produce(addrs, n); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "produced %d messages to %s in %v\n", n, topic, time.Since(t0).Round(time.Millisecond))
	// a fresh broker creates its offsets topic (__consumer_offsets) when a group first asks for its
	// coordinator, which takes seconds: a group of its own pays for it before any timed run
	if _, err := runBare(self, addrs, "warm-up", 1); err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	return alternate(self, rekey, mapping, work, addrs, brokerPID, n, runs, extra, out, map[string]any{"topic": topic})
}

// alternate runs the two sides runs times in alternation, each run in a consumer group of its
// own, and writes the median of each side, their ratio and the start gap to out, with fields.
func alternate(self, rekey, mapping, work string, addrs []string, brokerPID int, n int64, runs int, extra []string,
	out string, fields map[string]any) error {
	load0 := benchproc.LoadAvg()
	var bareRuns, rekeyRuns []Side
	for i := 0; i < runs; i++ {
		b, err := onBroker(brokerPID, func() (benchproc.Figures, error) {
			return runBare(self, addrs, fmt.Sprintf("bare-bench-%d", i), n)
		})
		if err != nil {
			return err
		}
		bareRuns = append(bareRuns, b)
		r, err := onBroker(brokerPID, func() (benchproc.Figures, error) {
			return runRekey(rekey, mapping, filepath.Join(work, "out-kafka"), addrs, fmt.Sprintf("rekey-bench-%d", i), n, extra)
		})
		if err != nil {
			return err
		}
		rekeyRuns = append(rekeyRuns, r)
		fmt.Fprintf(os.Stderr, "run %d (load %.1f): bare %s; rekey %s: %.2f\n", i+1, b.Load, b, r, r.RowsPerSec/b.RowsPerSec)
	}
	os.RemoveAll(filepath.Join(work, "out-kafka"))
	b, r := benchproc.Median(bareRuns), benchproc.Median(rekeyRuns)
	res := map[string]any{"bare": b, "rekey": r, "ratio": r.RowsPerSec / b.RowsPerSec, "start_gap_seconds": r.Start - b.Start,
		"loadavg_start": load0, "loadavg_end": benchproc.LoadAvg()}
	for k, v := range fields {
		res[k] = v
	}
	return benchproc.WriteJSON(out, res, map[string]Side{"bare": b, "rekey": r})
}

// Side is one side's figures on a running broker, with what the broker spent meanwhile.
type Side struct {
	benchproc.Figures
	BrokerCPU float64 `json:"server_cpu_seconds"` // the broker's user + system time during the run (0 on a broker without -broker-pid)
	Load      float64 `json:"loadavg"`            // 1-minute load average when the run started
}

func (s Side) String() string {
	return fmt.Sprintf("%.0f msg/s (%.2fs, cpu %.2fs, peak RSS %d MiB, broker cpu %.2fs)", s.RowsPerSec, s.Seconds,
		s.CPUSeconds, s.PeakRSS>>20, s.BrokerCPU)
}

// onBroker runs one side and adds the broker's CPU time meanwhile (when its pid is known).
func onBroker(pid int, run func() (benchproc.Figures, error)) (Side, error) {
	s := Side{Load: benchproc.LoadAvg()}
	var cpu0 float64
	var err error
	if pid != 0 {
		if cpu0, err = benchproc.ProcCPU(pid); err != nil {
			return s, err
		}
	}
	if s.Figures, err = run(); err != nil {
		return s, err
	}
	if pid != 0 {
		cpu1, err := benchproc.ProcCPU(pid)
		if err != nil {
			return s, err
		}
		s.BrokerCPU = math.Round((cpu1-cpu0)*100) / 100
	}
	return s, nil
}

// createTopic creates topic with the benchmark's partitions on the broker's controller.
func createTopic(addrs []string, topic string) error {
	cl := &kafkago.Client{Addr: kafkago.TCP(addrs...), Timeout: 30 * time.Second}
	resp, err := cl.CreateTopics(context.Background(), &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{
		{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}}})
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	if err := resp.Errors[topic]; err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	return nil
}

func parent(rekey, mapping, work string, n int64, runs int, out string, extra []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// the broker: kfake with the messages produced, in its own process
	broker, err := benchproc.StartServer(self, "-side", "broker", "-messages", fmt.Sprint(n))
	if err != nil {
		return err
	}
	defer broker.Stop()
	return alternate(self, rekey, mapping, work, broker.Addrs, broker.PID(), n, runs, extra, out, nil)
}

// runBare runs the bare reader (this program, -side bare) in group until it has read n messages.
// Its start is the time to its first message (it prints a line then).
func runBare(self string, addrs []string, group string, n int64) (benchproc.Figures, error) {
	fmt.Fprintln(os.Stderr, "bare kafka-go group reader ...")
	start := time.Now()
	cmd := exec.Command(self, "-side", "bare", "-brokers", strings.Join(addrs, ","), "-topic", topic, "-group", group,
		"-messages", fmt.Sprint(n))
	cmd.Stderr = os.Stderr
	first := &firstWrite{start: start}
	cmd.Stdout = first
	if err := cmd.Run(); err != nil {
		return benchproc.Figures{}, fmt.Errorf("bare reader: %w", err)
	}
	f := benchproc.Measure(n, time.Since(start), cmd.ProcessState)
	f.Start = first.after.Seconds()
	return f, nil
}

// firstWrite records when its first write came, after start.
type firstWrite struct {
	start time.Time
	mu    sync.Mutex
	after time.Duration
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.after == 0 {
		w.after = time.Since(w.start)
	}
	return len(p), nil
}

// watchFirstCommit polls the group's committed offsets until one is above zero or done closes,
// and returns the time from start to the poll that saw it (0 if none did). The poll runs every
// 10 ms: the figure is late by at most that and a round trip.
func watchFirstCommit(addrs []string, group string, start time.Time, done <-chan struct{}) <-chan time.Duration {
	res := make(chan time.Duration, 1)
	go func() {
		cl := &kafkago.Client{Addr: kafkago.TCP(addrs...), Timeout: 10 * time.Second}
		parts := make([]int, partitions)
		for i := range parts {
			parts[i] = i
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			resp, err := cl.OffsetFetch(context.Background(), &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
			if err == nil {
				for _, p := range resp.Topics[topic] {
					if p.CommittedOffset > 0 {
						res <- time.Since(start)
						return
					}
				}
			}
			select {
			case <-done:
				res <- 0
				return
			case <-tick.C:
			}
		}
	}()
	return res
}

// runRekey runs rekey replicate in group into dir until it has read n messages and committed them.
func runRekey(rekey, mapping, dir string, addrs []string, group string, n int64, extra []string) (benchproc.Figures, error) {
	fmt.Fprintln(os.Stderr, "rekey replicate ...")
	os.RemoveAll(dir)
	start := time.Now()
	metrics, err := freeAddr()
	if err != nil {
		return benchproc.Figures{}, err
	}
	cmd := exec.Command(rekey, benchproc.WithArgs([]string{"replicate", "-m", mapping, "--source",
		fmt.Sprintf("kafka://%s/%s?group=%s&format=json", strings.Join(addrs, ","), topic, group),
		"--out", dir, "--roll-size", "64MiB", "--roll-interval", "1m", "--progress", "never", "--metrics-addr", metrics}, extra)...)
	cmd.Stderr = os.Stderr
	cmd.Stdout = os.Stderr
	if err := cmd.Start(); err != nil {
		return benchproc.Figures{}, err
	}
	done := make(chan struct{})
	firstCommit := watchFirstCommit(addrs, group, start, done)
	// once every message is read, SIGTERM closes the open rolls (fsync, rename, manifest) and
	// commits the offsets: the time runs to the process's exit
	if err := benchproc.WaitRead(metrics, n, 10*time.Minute); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return benchproc.Figures{}, err
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		return benchproc.Figures{}, fmt.Errorf("rekey replicate: %w", err)
	}
	r := benchproc.Measure(n, time.Since(start), cmd.ProcessState)
	if err := waitCommitted(addrs, group, n, 10*time.Second); err != nil {
		return benchproc.Figures{}, err
	}
	close(done)
	r.Start = (<-firstCommit).Seconds()
	return r, nil
}

// broker runs kfake, produces n messages, prints the listen addresses and serves until stdin
// closes.
func broker(n int64) error {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic),
		kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cluster.Close()
	addrs := cluster.ListenAddrs()
	t0 := time.Now()
	if err := produce(addrs, n); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "produced %d messages in %v\n", n, time.Since(t0).Round(time.Millisecond))
	fmt.Println(strings.Join(addrs, ","))
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// produce writes n orders rows as JSON, about 150 bytes each, keyed by user.
func produce(addrs []string, n int64) error {
	w := kafkademo.Writer(addrs, topic)
	defer w.Close()
	return kafkademo.NewOrders(1).Produce(context.Background(), w, n)
}

// bare drains the topic with one kafka-go consumer group reader.
func bare(brokers []string, group string, n int64) error {
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: brokers, GroupID: group, Topic: topic, StartOffset: kafkago.FirstOffset,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 4096,
		CommitInterval: time.Second, SessionTimeout: 6 * time.Second,
	})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var bytes int64
	for i := int64(0); i < n; i++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("after %d messages: %w", i, err)
		}
		if i == 0 {
			fmt.Println("first message") // the parent times the start by it
		}
		bytes += int64(len(m.Value))
	}
	fmt.Fprintf(os.Stderr, "bare: %d messages, %d value bytes\n", n, bytes)
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitCommitted waits until the group committed offsets summing to n.
func waitCommitted(addrs []string, group string, n int64, timeout time.Duration) error {
	cl := &kafkago.Client{Addr: kafkago.TCP(addrs...), Timeout: 10 * time.Second}
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := cl.OffsetFetch(context.Background(), &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
		if err == nil {
			var sum int64
			for _, p := range resp.Topics[topic] {
				if p.CommittedOffset > 0 {
					sum += p.CommittedOffset
				}
			}
			if sum >= n {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("rekey did not commit %d messages within %v", n, timeout)
}
