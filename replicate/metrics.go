package replicate

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics are the replicator's live figures, exported in the Prometheus text format by Handler
// (/metrics) next to a health check (/healthz). Counters count from the process start.
type Metrics struct {
	MessagesIn  atomic.Int64 // messages read from Kafka
	RowsWritten atomic.Int64 // upserted rows written to data files (committed or not yet)
	Deletes     atomic.Int64 // DELETE statements written
	Rejected    atomic.Int64 // messages (or rows of them) sent to rejects.jsonl
	// TombstonesDropped counts Debezium tombstones whose key alone cannot give the target key
	// (the delete event before them already deleted the row).
	TombstonesDropped atomic.Int64
	BytesWritten      atomic.Int64 // bytes of committed data and delete files
	FilesCommitted    atomic.Int64
	Rolls             atomic.Int64
	OffsetCommits     atomic.Int64
	CommitErrors      atomic.Int64
	Rebalances        atomic.Int64 // generations joined

	mu         sync.Mutex
	rollSum    float64 // seconds spent committing rolls
	rollMax    float64
	rollCount  int64
	partitions map[int]*partitionGauge
	state      string // "starting", "joining", "consuming", "stopping", "stopped", "failed"
	stateSince time.Time
	started    time.Time
}

type partitionGauge struct {
	hwm       int64 // high watermark seen with the last message
	next      int64 // next offset to read
	committed int64 // last offset committed to Kafka (-1: none by this process)
	assigned  bool
}

func newMetrics() *Metrics {
	now := time.Now()
	return &Metrics{partitions: map[int]*partitionGauge{}, state: "starting", stateSince: now, started: now}
}

func (m *Metrics) setState(s string) {
	m.mu.Lock()
	if m.state != s {
		m.state, m.stateSince = s, time.Now()
	}
	m.mu.Unlock()
}

// State is the replicator's state and since when it holds.
func (m *Metrics) State() (string, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.stateSince
}

func (m *Metrics) gauge(p int) *partitionGauge {
	g := m.partitions[p]
	if g == nil {
		g = &partitionGauge{committed: -1}
		m.partitions[p] = g
	}
	return g
}

func (m *Metrics) assign(p int, assigned bool) {
	m.mu.Lock()
	m.gauge(p).assigned = assigned
	m.mu.Unlock()
}

func (m *Metrics) position(p int, next, hwm int64) {
	m.mu.Lock()
	g := m.gauge(p)
	if next >= 0 {
		g.next = next
	}
	if hwm > 0 {
		g.hwm = hwm
	}
	m.mu.Unlock()
}

func (m *Metrics) committed(p int, off int64) {
	m.mu.Lock()
	m.gauge(p).committed = off
	m.mu.Unlock()
}

func (m *Metrics) roll(d time.Duration) {
	s := d.Seconds()
	m.mu.Lock()
	m.rollSum += s
	m.rollCount++
	m.rollMax = math.Max(m.rollMax, s)
	m.mu.Unlock()
	m.Rolls.Add(1)
}

// Lag is the total number of messages the assigned partitions hold past what was read.
func (m *Metrics) Lag() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lag int64
	for _, g := range m.partitions {
		if g.assigned && g.hwm > g.next {
			lag += g.hwm - g.next
		}
	}
	return lag
}

// Assigned is the number of partitions this process consumes now.
func (m *Metrics) Assigned() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, g := range m.partitions {
		if g.assigned {
			n++
		}
	}
	return n
}

// WritePrometheus writes every metric in the Prometheus text exposition format (version 0.0.4).
func (m *Metrics) WritePrometheus(w io.Writer, topic string) error {
	bw := bufio.NewWriter(w)
	counter := func(name, help string, v int64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	counter("rekey_messages_in_total", "Kafka messages read.", m.MessagesIn.Load())
	counter("rekey_rows_written_total", "Rows written to data files (upserts).", m.RowsWritten.Load())
	counter("rekey_deletes_total", "DELETE statements written.", m.Deletes.Load())
	counter("rekey_messages_rejected_total", "Messages or rows sent to rejects.jsonl.", m.Rejected.Load())
	counter("rekey_tombstones_dropped_total", "Debezium tombstones skipped: the target key needs more than the message key, and the delete event before them did the delete.", m.TombstonesDropped.Load())
	counter("rekey_bytes_written_total", "Bytes of committed data and delete files.", m.BytesWritten.Load())
	counter("rekey_files_committed_total", "Data and delete files committed.", m.FilesCommitted.Load())
	counter("rekey_offset_commits_total", "Offset commits to Kafka.", m.OffsetCommits.Load())
	counter("rekey_offset_commit_errors_total", "Failed offset commits (the files stay; the messages are replayed).", m.CommitErrors.Load())
	counter("rekey_generations_total", "Consumer group generations joined (rebalances).", m.Rebalances.Load())

	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(bw, "# HELP rekey_roll_seconds Time to close a roll: finish, fsync and rename its files, write the manifest, commit offsets.\n# TYPE rekey_roll_seconds summary\n")
	fmt.Fprintf(bw, "rekey_roll_seconds_sum %s\nrekey_roll_seconds_count %d\n", fmtFloat(m.rollSum), m.rollCount)
	fmt.Fprintf(bw, "# HELP rekey_roll_seconds_max Longest roll close.\n# TYPE rekey_roll_seconds_max gauge\nrekey_roll_seconds_max %s\n", fmtFloat(m.rollMax))
	parts := make([]int, 0, len(m.partitions))
	for p := range m.partitions {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	t := escapeLabel(topic)
	fmt.Fprintf(bw, "# HELP rekey_consumer_lag Messages in the partition past the next offset to read (high watermark - next).\n# TYPE rekey_consumer_lag gauge\n")
	for _, p := range parts {
		g := m.partitions[p]
		if !g.assigned {
			continue
		}
		lag := g.hwm - g.next
		if lag < 0 {
			lag = 0
		}
		fmt.Fprintf(bw, "rekey_consumer_lag{topic=\"%s\",partition=\"%d\"} %d\n", t, p, lag)
	}
	fmt.Fprintf(bw, "# HELP rekey_committed_offset Last offset this process committed for the partition.\n# TYPE rekey_committed_offset gauge\n")
	for _, p := range parts {
		if g := m.partitions[p]; g.committed >= 0 {
			fmt.Fprintf(bw, "rekey_committed_offset{topic=\"%s\",partition=\"%d\"} %d\n", t, p, g.committed)
		}
	}
	assigned := 0
	for _, g := range m.partitions {
		if g.assigned {
			assigned++
		}
	}
	fmt.Fprintf(bw, "# HELP rekey_assigned_partitions Partitions this process consumes.\n# TYPE rekey_assigned_partitions gauge\nrekey_assigned_partitions %d\n", assigned)
	fmt.Fprintf(bw, "# HELP rekey_up 1 while the replicator consumes or waits for an assignment.\n# TYPE rekey_up gauge\nrekey_up %d\n", b2i(m.state == "consuming" || m.state == "joining"))
	return bw.Flush()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func escapeLabel(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			out = append(out, `\\`...)
		case '"':
			out = append(out, `\"`...)
		case '\n':
			out = append(out, `\n`...)
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// Handler serves /metrics (Prometheus text format) and /healthz: 200 "ok" while the replicator
// consumes or is joining its group (for at most unhealthyAfter), 503 otherwise.
func (r *Replicator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		r.metrics.WritePrometheus(w, r.cfg.Kafka.Topic)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		state, since := r.metrics.State()
		healthy := state == "consuming" || (state == "joining" || state == "starting") && time.Since(since) < r.unhealthyAfter()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, "%s %s since %s\n", map[bool]string{true: "ok", false: "unhealthy"}[healthy], state, since.UTC().Format(time.RFC3339))
	})
	return mux
}
