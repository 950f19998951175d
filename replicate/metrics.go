package replicate

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/rekey/rekey/source/kafka"
)

// Metrics are the replicator's live figures, served by Handler on /metrics through
// prometheus/client_golang, from a registry of the replicator's own (never the global one),
// next to a health check (/healthz). Counters count from the process start.
//
// The counters are atomic.Int64 fields that the registry reads at scrape time: the status line
// and the summary read them too, which a prometheus.Counter cannot do cheaply, and adding to
// either costs the same (BenchmarkCounterAdd).
type Metrics struct {
	MessagesIn  atomic.Int64 // messages read from Kafka
	RowsWritten atomic.Int64 // upserted rows written to data files (committed or not yet)
	Deletes     atomic.Int64 // DELETE statements written
	Rejected    atomic.Int64 // messages (or rows of them) sent to rejects.jsonl
	// TombstonesDropped counts Debezium tombstones whose key alone cannot give the target key
	// (the delete event before them already deleted the row).
	TombstonesDropped atomic.Int64
	// RepeatsSkipped counts events of Debezium's Cassandra connector that repeat events it
	// published before (the same commit log position): applied again after newer ones, they
	// would undo those.
	RepeatsSkipped atomic.Int64
	// OtherTableEvents counts the events of other tables than the mapping's source.table (a
	// topic of several tables), not applied; otherTables counts them by table
	OtherTableEvents atomic.Int64
	otherMu          sync.Mutex
	otherTables      map[string]int64
	// TTLCells counts the cells of Debezium's Cassandra connector written with a TTL of their
	// own (USING TTL), which replicate writes without it.
	TTLCells       atomic.Int64
	BytesWritten   atomic.Int64 // bytes of committed data and delete files
	FilesCommitted atomic.Int64
	// Statements counts the SQL statements a table (--out lindorm://, mysql://) took; such a
	// target has no files.
	Statements    atomic.Int64
	Rolls         atomic.Int64
	OffsetCommits atomic.Int64
	CommitErrors  atomic.Int64
	Rebalances    atomic.Int64 // generations joined
	Gaps          atomic.Int64 // runs of messages deleted before they were read, skipped (AcceptGaps)
	GapMessages   atomic.Int64 // messages in them
	// LeasesLost counts the generations a member gave up because its lease ran out before a
	// batch's statements (into a table)
	LeasesLost atomic.Int64

	registry        *prometheus.Registry
	rollSeconds     prometheus.Histogram // a roll's whole close
	manifestSeconds prometheus.Histogram // renames, fsyncs and manifest rewrite, under the folder's lock
	offsetSeconds   prometheus.Histogram // one offset commit to Kafka

	sql *sqlMetrics // nil unless the target is a SQL table

	mu          sync.Mutex
	rejectCodes map[string]int64 // Rejected, by reject code
	rollMax     float64
	partitions  map[int]*partitionGauge
	state       string // "starting", "joining", "consuming", "stopping", "stopped", "failed"
	stateSince  time.Time
}

// reject counts n messages rejected with code.
func (m *Metrics) reject(code string, n int64) {
	m.Rejected.Add(n)
	m.mu.Lock()
	if m.rejectCodes == nil {
		m.rejectCodes = map[string]int64{}
	}
	m.rejectCodes[code] += n
	m.mu.Unlock()
}

// RejectCodes are the messages rejected since the process started, by reject code.
func (m *Metrics) RejectCodes() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.rejectCodes))
	for c, n := range m.rejectCodes {
		out[c] = n
	}
	return out
}

type partitionGauge struct {
	hwm       int64 // high watermark seen with the last message
	next      int64 // next offset to read
	committed int64 // last offset committed to Kafka (-1: none by this process)
	assigned  bool
}

// newMetrics registers the replicator's metrics, with the Go runtime's and the process's, in a
// registry of their own. topic labels the per-partition gauges; version is rekey_build_info's.
// ends reads the partitions' offsets from the brokers when /metrics is scraped (the lag gauge).
func newMetrics(topic, version string, ends func(context.Context) ([]kafka.PartitionOffsets, error)) *Metrics {
	now := time.Now()
	m := &Metrics{partitions: map[int]*partitionGauge{}, state: "starting", stateSince: now, registry: prometheus.NewRegistry()}
	// a roll closes in milliseconds on a local disk and in seconds on a loaded shared one
	m.rollSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rekey_roll_seconds",
		Help:    "Time to close a roll: finish, fsync and rename its files, write the manifest, commit offsets.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}) // 5ms .. 41s
	m.manifestSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rekey_manifest_commit_seconds",
		Help:    "Time to commit a roll to the output folder: take the folder's lock, rename and fsync its files, rewrite manifest.json.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}) // 1ms .. 16s
	m.offsetSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rekey_offset_commit_seconds",
		Help:    "Time to commit a partition's offset to Kafka (failed commits included).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}) // 1ms .. 8s

	counter := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rekey_build_info", Help: "rekey's version, always 1.",
			ConstLabels: prometheus.Labels{"version": version}}, func() float64 { return 1 }),
		counter("rekey_messages_in_total", "Kafka messages read.", &m.MessagesIn),
		counter("rekey_rows_written_total", "Rows written (upserts): into data files, committed or in a roll not yet committed, or into the table.", &m.RowsWritten),
		counter("rekey_deletes_total", "Deletes written: into delete files, or run on the table.", &m.Deletes),
		counter("rekey_messages_rejected_total", "Messages or rows sent to rejects.jsonl.", &m.Rejected),
		counter("rekey_repeated_events_skipped_total", "Events of Debezium's Cassandra connector skipped because it published them before (the same commit log position), which applied again would undo newer changes.", &m.RepeatsSkipped),
		counter("rekey_other_table_events_skipped_total", "Debezium events of other tables than the mapping's source.table (a topic of several tables), not applied; the summary and the logs name the tables.", &m.OtherTableEvents),
		counter("rekey_ttl_cells_total", "Cells of Debezium's Cassandra connector written with a TTL of their own (USING TTL), written without it: they stay after Cassandra expires them, unless the table's TTL expires them.", &m.TTLCells),
		counter("rekey_tombstones_dropped_total", "Debezium tombstones skipped: the target key needs more than the message key, and the delete event before them did the delete.", &m.TombstonesDropped),
		counter("rekey_bytes_written_total", "Bytes of committed data and delete files.", &m.BytesWritten),
		counter("rekey_files_committed_total", "Data and delete files committed.", &m.FilesCommitted),
		counter("rekey_offset_commits_total", "Offset commits to Kafka.", &m.OffsetCommits),
		counter("rekey_offset_commit_errors_total", "Failed offset commits (the files stay; the messages are replayed).", &m.CommitErrors),
		counter("rekey_gaps_total", "Runs of messages the topic deleted (retention) before they were read, skipped with --accept-gaps.", &m.Gaps),
		counter("rekey_gap_messages_total", "Messages the topic deleted (retention) before they were read, skipped with --accept-gaps: lost to the table.", &m.GapMessages),
		counter("rekey_generations_total", "Consumer group generations joined (rebalances).", &m.Rebalances),
		counter("rekey_leases_lost_total", "Generations this member gave up before a batch's statements into a table: no heartbeat accepted for longer than the session or rebalance timeout allows (a paused process, a network partition from the brokers), so the partitions may be another member's.", &m.LeasesLost),
		m.rollSeconds, m.manifestSeconds, m.offsetSeconds,
		gauge("rekey_roll_seconds_max", "Longest roll close.", func() float64 {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.rollMax
		}),
		gauge("rekey_assigned_partitions", "Partitions this process consumes.", func() float64 { return float64(m.Assigned()) }),
		gauge("rekey_up", "1 while the replicator consumes or waits for an assignment.", func() float64 {
			if s, _ := m.State(); s == "consuming" || s == "joining" {
				return 1
			}
			return 0
		}),
		&partitionCollector{m: m, topic: topic, ends: ends,
			lag: prometheus.NewDesc("rekey_consumer_lag", "Messages in the partition past the next offset to read: its end offset, read from the brokers at scrape time, - next.",
				[]string{"topic", "partition"}, nil),
			committed: prometheus.NewDesc("rekey_committed_offset", "Last offset committed for the partition, by this process or, where it started reading, the group's; only while the partition is assigned to this process.",
				[]string{"topic", "partition"}, nil)},
	)
	return m
}

// partitionCollector exports the per-partition gauges as they are at scrape time: lag for the
// partitions assigned now, the committed offset for those of them it knows one for.
//
// The lag is measured against the end offsets read from the brokers at scrape time, not the high
// watermark that came with the last fetch: that one is as old as the fetch, so a lag of 0 scraped
// after the producers stopped could still miss their last messages (and read 0 before the first
// fetch), and a drain that waits for 0 stopped replicate before it applied them.
type partitionCollector struct {
	m              *Metrics
	topic          string
	ends           func(context.Context) ([]kafka.PartitionOffsets, error)
	lag, committed *prometheus.Desc
}

// endsTimeout bounds the end-offset look-up of one scrape.
const endsTimeout = 10 * time.Second

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.lag; ch <- c.committed }

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	// read before the positions: a message produced before the scrape is then counted unless
	// already applied
	var offs map[int]kafka.PartitionOffsets
	var endsErr error
	if m.Assigned() > 0 && c.ends != nil {
		ctx, cancel := context.WithTimeout(context.Background(), endsTimeout)
		list, err := c.ends(ctx)
		cancel()
		if err != nil {
			// no lag rather than a stale one: a scraper waiting for 0 keeps waiting
			endsErr = fmt.Errorf("rekey_consumer_lag: read the end offsets of topic %s: %w", c.topic, err)
			ch <- prometheus.NewInvalidMetric(c.lag, endsErr)
		}
		offs = make(map[int]kafka.PartitionOffsets, len(list))
		for _, o := range list {
			offs[o.Partition] = o
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	parts := make([]int, 0, len(m.partitions))
	for p := range m.partitions {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	for _, p := range parts {
		g, label := m.partitions[p], strconv.Itoa(p)
		if o, ok := offs[p]; g.assigned && ok && endsErr == nil {
			// a partition without a committed offset starts at its first retained one
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(max(o.End-max(g.next, o.First), 0)), c.topic, label)
		}
		if g.committed >= 0 {
			ch <- prometheus.MustNewConstMetric(c.committed, prometheus.GaugeValue, float64(g.committed), c.topic, label)
		}
	}
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
	if assigned {
		m.gauge(p).assigned = true
	} else {
		// revoked: its offsets move on at another member, and when it comes back its position
		// is the group's then, not the one this process left it at
		delete(m.partitions, p)
	}
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
	m.rollSeconds.Observe(s)
	m.mu.Lock()
	m.rollMax = max(m.rollMax, s)
	m.mu.Unlock()
	m.Rolls.Add(1)
}

func observeSince(h prometheus.Histogram, t time.Time) { h.Observe(time.Since(t).Seconds()) }

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

// Uncommitted is the number of messages of the assigned partitions read but not committed yet:
// the messages of the open rolls.
func (m *Metrics) Uncommitted() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, g := range m.partitions {
		if g.assigned && g.committed >= 0 && g.next > g.committed {
			n += g.next - g.committed
		}
	}
	return n
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

// Handler serves /metrics (Prometheus text or OpenMetrics, as the scraper asks) and /healthz:
// 200 "ok" while the replicator consumes or is joining its group (for at most unhealthyAfter),
// 503 otherwise.
func (r *Replicator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.metrics.registry, promhttp.HandlerOpts{
		ErrorLog:          zapPrintln{r.log},
		ErrorHandling:     promhttp.ContinueOnError, // serve what could be gathered, log the rest
		EnableOpenMetrics: true,
	}))
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

// zapPrintln gives promhttp's error log to zap.
type zapPrintln struct{ log *zap.Logger }

func (z zapPrintln) Println(v ...any) { z.log.Warn("/metrics: " + fmt.Sprint(v...)) }

// sqlMetrics are the figures of a replication into a SQL table (--out lindorm:// or mysql://),
// registered next to the others when the target is one.
type sqlMetrics struct {
	statements *prometheus.CounterVec   // by kind (upsert, delete) and result (ok, error)
	seconds    *prometheus.HistogramVec // one statement's time, by kind
}

// enableSQL registers the SQL statement metrics and returns the sink's Observe hook.
func (m *Metrics) enableSQL() func(kind string, rows int, d time.Duration, err error) {
	s := &sqlMetrics{
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rekey_sql_statements_total",
			Help: "SQL statements sent to the target table, by kind (upsert, delete) and result (ok, error: every failed try, retried or not)."}, []string{"kind", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rekey_sql_statement_seconds",
			Help:    "Time of one SQL statement (a batch of up to 2,000 rows), failed tries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"kind"}), // 1ms .. 16s
	}
	m.registry.MustRegister(s.statements, s.seconds)
	m.sql = s
	return func(kind string, rows int, d time.Duration, err error) {
		result := "ok"
		if err != nil {
			result = "error"
		} else {
			m.Statements.Add(1)
		}
		s.statements.WithLabelValues(kind, result).Inc()
		s.seconds.WithLabelValues(kind).Observe(d.Seconds())
	}
}

// ToSQL tells whether the target is a SQL table, which has no files: its figures are rows and
// statements.
func (m *Metrics) ToSQL() bool { return m.sql != nil }

// sqlRetries registers the writer's retry counter.
func (m *Metrics) sqlRetries(v *atomic.Int64) {
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rekey_sql_retries_total",
		Help: "SQL statements tried again after a transient error (connection lost, timeout, deadlock, throttling)."},
		func() float64 { return float64(v.Load()) }))
}

// otherTable counts an event of table name, another than the mapping's source.table, and tells
// whether it is the first of that table.
func (m *Metrics) otherTable(name string) bool {
	m.OtherTableEvents.Add(1)
	m.otherMu.Lock()
	defer m.otherMu.Unlock()
	if m.otherTables == nil {
		m.otherTables = map[string]int64{}
	}
	m.otherTables[name]++
	return m.otherTables[name] == 1
}

// OtherTables returns the events of other tables than the mapping's source.table, by table: not
// applied.
func (m *Metrics) OtherTables() map[string]int64 {
	m.otherMu.Lock()
	defer m.otherMu.Unlock()
	return maps.Clone(m.otherTables)
}
