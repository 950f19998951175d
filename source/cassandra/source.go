// Package cassandra reads a Cassandra table as a pipeline.Source with a parallel token-range
// scan, the way DSBulk and the Spark connector do: the Murmur3 ring, read from the cluster's
// token metadata, is cut into sub-ranges; each is read with
//
//	SELECT cols FROM ks.t WHERE token(pk) > ? AND token(pk) <= ?
//
// page by page, routed to a replica of the range, several ranges at a time. Each sub-range is
// one pipeline stream named range(start,end]; a batch is one page, and its cursor is the paging
// state after it, so an interrupted run resumes every range where it stopped.
//
// The table's schema comes from system_schema (see Source.Schema): the mapping is compiled
// against it before any data moves. Values are decoded as the file source parses them (see
// decode.go), so a mapping gives the same rows from Cassandra and from a CSV export.
package cassandra

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// Source reads one Cassandra table. It implements pipeline.Source, pipeline.Sizer and
// pipeline.Sampler. Close it when done.
type Source struct {
	cfg     Config
	log     *zap.Logger
	sess    *gocql.Session
	policy  *hostPolicy
	cons    gocql.Consistency
	table   *Table
	sel     *selection
	stmt    string
	ring    []int64 // every node's tokens, sorted
	nodes   int
	splits  int              // the splits value the ranges were computed with
	all     []Range          // the whole ring's sub-ranges
	ranges  []Range          // this shard's
	owners  map[int64]string // ring token -> host ID of the node owning it
	limiter *limiter

	decOnce sync.Once
	decs    []*colDecoder
	decErr  error
	pages   sync.Pool // *pageMem of released batches
	// rowBytes is what a row took in the page decoded last, in any range (Config.PageBytes):
	// a range's first page is sized by it
	rowBytes atomic.Int64

	estOnce sync.Once
	est     int64

	// wtRefused is why the server refused the rows' WRITETIME() (Config.RowWriteTimes), nil
	// when it did not
	wtRefused error
	// expiry judges cells by their write times against the table's TTL (Config.CellWriteTimes)
	expiry expiry
}

var (
	_ pipeline.Source          = (*Source)(nil)
	_ pipeline.Sizer           = (*Source)(nil)
	_ pipeline.Sampler         = (*Source)(nil)
	_ pipeline.BatchSampler    = (*Source)(nil)
	_ pipeline.SampleDescriber = (*Source)(nil)
)

// New connects to the cluster, reads the table's schema and the token ring, and computes the
// ranges to read; it gives up when ctx ends. Errors are returned, never panics; nothing is read
// from the table yet.
func New(ctx context.Context, cfg Config, logger *zap.Logger) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	s := &Source{cfg: cfg, log: logger, est: -1}
	s.cons, _ = gocql.ParseConsistencyWrapper(strings.ToUpper(cfg.Consistency))
	if cfg.Rate > 0 {
		s.limiter = &limiter{rate: cfg.Rate}
	}
	cluster := gocql.NewCluster(cfg.Hosts...)
	cluster.Port = cfg.Port
	cluster.ProtoVersion = cfg.ProtoVersion
	cluster.Timeout = cfg.Timeout
	cluster.ConnectTimeout = cfg.ConnectTimeout
	cluster.NumConns = cfg.NumConns
	cluster.Consistency = s.cons
	cluster.RetryPolicy = nil // the source retries pages itself, with backoff and logging
	cluster.Logger = gocqlLogger{logger.Named("gocql").Sugar()}
	cluster.PageSize = cfg.PageSize
	var fallback gocql.HostSelectionPolicy
	if cfg.DC != "" {
		fallback = gocql.DCAwareRoundRobinPolicy(cfg.DC)
	} else {
		fallback = gocql.RoundRobinHostPolicy()
	}
	s.policy = newHostPolicy(gocql.TokenAwareHostPolicy(fallback, gocql.ShuffleReplicas()), cfg.DC)
	cluster.PoolConfig.HostSelectionPolicy = s.policy
	if cfg.Username != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: cfg.Username, Password: cfg.Password}
	}
	if cfg.TLS.Enabled {
		tc, err := cfg.TLS.tlsConfig()
		if err != nil {
			return nil, fmt.Errorf("cassandra source: %w", err)
		}
		cluster.HostDialer = &tlsDialer{dialer: net.Dialer{Timeout: cfg.ConnectTimeout}, config: tc, timeout: cfg.ConnectTimeout}
	}
	where := strings.Join(cfg.Hosts, ",")
	sess, err := createSession(ctx, cluster)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("cassandra source: connect to %s: %w", where, ctx.Err())
	}
	if err != nil {
		// gocql's error keeps only the network error's text: a contact point that refuses
		// or times out is named by dialing it again, so that the error wraps it
		// (pipeline.Unreachable: the command may succeed once the cluster is up)
		if dialErr := dialAny(cfg); dialErr != nil {
			return nil, fmt.Errorf("cassandra source: no contact point of %s answers: %w", where, dialErr)
		}
		if silent(err) {
			// a node that accepts the connection and never answers (hung, still starting,
			// another service on the port): gocql keeps only the timeout's text
			return nil, fmt.Errorf("cassandra source: %s accepts connections but does not answer CQL within the connect timeout (%s), so it %w: is a Cassandra node up there, listening for CQL on that port? (%v)",
				strings.Join(contactAddrs(cfg), ","), cfg.ConnectTimeout, pipeline.ErrUnreachable, err)
		}
		return nil, fmt.Errorf("cassandra source: connect to %s: %w", where, err)
	}
	s.sess = sess
	ictx, cancel := context.WithTimeout(ctx, cfg.Timeout+cfg.ConnectTimeout)
	defer cancel()
	if err := s.init(ictx); err != nil {
		sess.Close()
		return nil, fmt.Errorf("cassandra source %s/%s.%s: %w", where, cfg.Keyspace, cfg.Table, err)
	}
	return s, nil
}

// createSession is cluster.CreateSession, which takes no context, given up when ctx ends: a node
// that accepts connections and never answers holds it for the connect timeout. A session made
// after ctx ended is closed.
func createSession(ctx context.Context, cluster *gocql.ClusterConfig) (*gocql.Session, error) {
	type made struct {
		sess *gocql.Session
		err  error
	}
	ch := make(chan made, 1)
	go func() {
		sess, err := cluster.CreateSession()
		ch <- made{sess, err}
	}()
	select {
	case m := <-ch:
		return m.sess, m.err
	case <-ctx.Done():
		go func() {
			if m := <-ch; m.sess != nil {
				m.sess.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// tlsDialer connects to a node over TLS, the handshake bounded by the connect timeout as the
// connection is: gocql's own dialer waits for the handshake on its session's context, which
// has no deadline, so a node that accepts the connection and never answers the handshake (a
// hung node, another service on the port) would hold the command forever.
type tlsDialer struct {
	dialer  net.Dialer
	config  *tls.Config
	timeout time.Duration
}

func (d *tlsDialer) DialHost(ctx context.Context, host *gocql.HostInfo) (*gocql.DialedHost, error) {
	conn, err := d.dialer.DialContext(ctx, "tcp", host.ConnectAddressAndPort())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	dialed, err := gocql.WrapTLS(ctx, conn, host.HostnameAndPort(), d.config)
	if err != nil {
		return nil, fmt.Errorf("TLS handshake with %s: %w", host.ConnectAddressAndPort(), err)
	}
	return dialed, nil
}

// silent tells whether a session's error is a contact point that did not answer in time: gocql
// keeps only the text of the errors of its connections to the contact points.
func silent(err error) bool {
	msg := err.Error()
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "within timeout") ||
		strings.Contains(msg, "context deadline exceeded") || strings.Contains(msg, "i/o timeout")
}

// contactAddrs gives the contact points as host:port, the port of the URI's or the default
// where a host names none.
func contactAddrs(cfg Config) []string {
	addrs := make([]string, len(cfg.Hosts))
	for i, h := range cfg.Hosts {
		addrs[i] = h
		if _, _, splitErr := net.SplitHostPort(h); splitErr != nil {
			addrs[i] = net.JoinHostPort(h, strconv.Itoa(cfg.Port))
		}
	}
	return addrs
}

// dialAny opens a TCP connection to the contact points, one at a time, and returns nil as soon
// as one accepts, else the last dial's error.
func dialAny(cfg Config) error {
	var err error
	for _, addr := range contactAddrs(cfg) {
		var conn net.Conn
		if conn, err = net.DialTimeout("tcp", addr, cfg.ConnectTimeout); err == nil {
			conn.Close()
			return nil
		}
	}
	return err
}

func (s *Source) init(ctx context.Context) error {
	t, err := readSchema(ctx, s.sess, s.cfg.Keyspace, s.cfg.Table)
	if err != nil {
		return err
	}
	s.table = t
	if s.sel, err = newSelection(t, s.cfg.WriteTime, s.cfg.TTL); err != nil {
		return err
	}
	if len(s.cfg.Columns) > 0 {
		if s.sel, err = s.sel.project(s.cfg.Columns); err != nil {
			return fmt.Errorf("the columns to read: %w", err)
		}
	}
	if err := s.sel.readable(); err != nil {
		return err
	}
	if !s.cfg.Since.IsZero() || s.cfg.RowWriteTimes {
		s.sel.dateRows(t)
	}
	if s.cfg.CellWriteTimes {
		s.sel.cellTimes(t)
		s.expiry = expiry{ttl: int64(t.DefaultTTL), now: time.Now, untimed: s.sel.untimed}
	}
	s.stmt = s.sel.statement(t)
	if err := s.readRing(ctx); err != nil {
		return err
	}
	if err := s.checkDC(); err != nil {
		return err
	}
	if s.cfg.RowWriteTimes && len(s.sel.dating) > 0 && s.cfg.Since.IsZero() {
		s.probeWriteTimes(ctx)
	}
	s.splits = s.cfg.Splits
	if s.splits == 0 {
		cores := runtime.GOMAXPROCS(0)
		if s.cfg.Shard.Count > 1 {
			cores = 8 // every shard must compute the same ranges, whatever its machine
		}
		s.splits = 8 * cores * s.nodes
	}
	if s.all, err = SplitRing(s.ring, s.splits); err != nil {
		return err
	}
	s.ranges = takeShard(s.cfg.Shard, s.all)
	s.log.Info("table and ring read",
		zap.String("table", t.Keyspace+"."+t.Name), zap.Int("columns", len(s.sel.schema)),
		zap.Strings("partition_key", t.PartitionKey()), zap.Int("nodes", s.nodes),
		zap.Int("ring_ranges", len(s.ring)), zap.Int("splits", s.splits),
		zap.Int("ranges", len(s.all)), zap.String("shard", s.cfg.Shard.String()),
		zap.Int("shard_ranges", len(s.ranges)))
	return nil
}

// readRing reads every node's tokens from system.local and system.peers of one node.
func (s *Source) readRing(ctx context.Context) error {
	hosts := s.policy.Hosts()
	if len(hosts) == 0 {
		return errors.New("the driver knows no host of the cluster")
	}
	var lastErr error
	for _, h := range hosts {
		if !h.IsUp() {
			continue
		}
		pctx := pinned(ctx, h)
		var partitioner string
		var tokens []string
		var hostID gocql.UUID
		if err := s.sess.Query(`SELECT partitioner, host_id, tokens FROM system.local WHERE key = 'local'`).
			WithContext(pctx).Consistency(gocql.One).Scan(&partitioner, &hostID, &tokens); err != nil {
			lastErr = fmt.Errorf("read system.local on %s: %w", h.ConnectAddress(), err)
			continue
		}
		if !strings.HasSuffix(partitioner, "Murmur3Partitioner") {
			return fmt.Errorf("the cluster uses %s: only Murmur3Partitioner (the default since Cassandra 1.2) is supported", partitioner)
		}
		owners := map[int64]string{}
		ring, err := parseTokens(nil, tokens, owners, hostID.String())
		if err != nil {
			return err
		}
		nodes := 1
		iter := s.sess.Query(`SELECT host_id, tokens FROM system.peers`).WithContext(pctx).Consistency(gocql.One).Iter()
		for iter.Scan(&hostID, &tokens) {
			if len(tokens) == 0 {
				continue // a joining node, or one without tokens: it owns nothing yet
			}
			if ring, err = parseTokens(ring, tokens, owners, hostID.String()); err != nil {
				iter.Close()
				return err
			}
			nodes++
		}
		if err := iter.Close(); err != nil {
			lastErr = fmt.Errorf("read system.peers on %s: %w", h.ConnectAddress(), err)
			continue
		}
		s.ring, s.nodes, s.owners = sortUnique(ring), nodes, owners
		if len(s.ring) == 0 {
			return errors.New("system.local and system.peers list no tokens")
		}
		return nil
	}
	if lastErr == nil {
		lastErr = errors.New("no host is up")
	}
	return lastErr
}

// checkDC refuses a dc= that names no data center of the cluster: gocql's DC-aware policy takes
// the hosts of every other data center as remote ones and picks them all the same (dcAwareRR.Pick
// in policies.go: the local hosts, then the remote ones), so the scan would read from the data
// centers dc= was meant to spare.
func (s *Source) checkDC() error {
	if s.cfg.DC == "" {
		return nil
	}
	var names []string
	for _, h := range s.policy.Hosts() {
		dc := h.DataCenter()
		if dc == s.cfg.DC {
			return nil
		}
		if !slices.Contains(names, dc) {
			names = append(names, dc)
		}
	}
	slices.Sort(names)
	return fmt.Errorf("dc=%s: the cluster has no such data center (its data centers: %s)", s.cfg.DC, strings.Join(names, ", "))
}

func parseTokens(dst []int64, tokens []string, owners map[int64]string, host string) ([]int64, error) {
	for _, t := range tokens {
		v, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("token %q is not a Murmur3 token", t)
		}
		dst = append(dst, v)
		owners[v] = host
	}
	return dst, nil
}

// owner is the node whose token ends the ring range holding r (its primary replica), or nil.
func (s *Source) owner(r Range) *gocql.HostInfo {
	return s.policy.host(s.owners[ownerEnd(s.ring, r.End)])
}

func sortUnique(ts []int64) []int64 {
	if len(ts) == 0 {
		return ts
	}
	out := append([]int64(nil), ts...)
	slices.Sort(out)
	u := out[:1]
	for _, t := range out[1:] {
		if t != u[len(u)-1] {
			u = append(u, t)
		}
	}
	return u
}

// Close closes the connections to the cluster.
func (s *Source) Close() error {
	if s.sess != nil {
		s.sess.Close()
	}
	return nil
}

// Schema is the source schema records follow: the table's columns (partition key, clustering,
// then the others by name, with their CQL types), then writetime_<col> (timestamp) and
// ttl_<col> (int) for the columns Config.WriteTime and Config.TTL name; or Config.Columns when
// set. Compile the mapping against it (transform.Compile(m, src.Schema())).
func (s *Source) Schema() pipeline.SourceSchema { return s.sel.schema }

// Table is the table's schema as system_schema describes it.
func (s *Source) Table() *Table { return s.table }

// DefaultTTL is the table's default_time_to_live in seconds (0: none), for the target's TTL.
func (s *Source) DefaultTTL() int { return s.table.DefaultTTL }

// SchemaOf names the table: "keyspace.table".
func (s *Source) SchemaOf() string { return s.table.Keyspace + "." + s.table.Name }

// Shard is the part of the ring the source reads (Config.Shard).
func (s *Source) Shard() pipeline.Shard { return s.cfg.Shard }

// Ranges are the token sub-ranges this source reads (this shard's), in ring order.
func (s *Source) Ranges() []Range { return s.ranges }

// AllRanges are the whole ring's sub-ranges, whatever the shard.
func (s *Source) AllRanges() []Range { return s.all }

// Splits is the number of sub-ranges asked for (Config.Splits or its default); a resumed run
// must use the same value.
func (s *Source) Splits() int { return s.splits }

// Nodes is the number of nodes owning tokens.
func (s *Source) Nodes() int { return s.nodes }

// Statement is the CQL of the range scan.
func (s *Source) Statement() string { return s.stmt }

// EstimatedRows sums system.size_estimates over the nodes (Cassandra refreshes it every few
// minutes; it counts partitions, which a table with clustering columns multiplies by the mean
// rows of a partition, rowsPerPartition), scaled to this shard's share of the ring. It returns -1 when
// the cluster has no estimate yet.
func (s *Source) EstimatedRows() int64 {
	s.estOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		defer cancel()
		total, ok := s.sizeEstimate(ctx)
		if !ok {
			return
		}
		if len(s.table.Clustering()) > 0 && total > 0 {
			// size_estimates counts partitions, and a partition holds many rows
			pctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
			defer cancel()
			if per := s.rowsPerPartition(pctx, total); per > 0 {
				total = int64(float64(total) * per)
			}
		}
		if s.cfg.Shard.Count > 1 {
			var mine float64
			for _, r := range s.ranges {
				mine += float64(r.span())
			}
			total = int64(float64(total) * mine / (1 << 64))
		}
		s.est = total
	})
	return s.est
}

// rowsPerPartition is the mean rows of a partition in a few thin slices of the ring (about
// estimateProbePartitions partitions in all, at most estimateProbeRows rows: a lower bound when
// the partitions are larger), for a table with clustering columns given its estimated
// partitions; 0 when the slices could not be read.
func (s *Source) rowsPerPartition(ctx context.Context, partitions int64) float64 {
	const slices = 8
	pk := s.table.PartitionKey()
	for i, c := range pk {
		pk[i] = quoteIdent(c)
	}
	tk := "token(" + strings.Join(pk, ", ") + ")"
	stmt := "SELECT " + tk + " FROM " + quoteIdent(s.table.Keyspace) + "." + quoteIdent(s.table.Name) +
		" WHERE " + tk + " > ? AND " + tk + " <= ?"
	// each slice holds about 1/slices of the probe's partitions (at most, its share of the
	// ring: a table of fewer partitions is read whole)
	share := min(1.0/slices, float64(estimateProbePartitions)/slices/float64(partitions))
	width := uint64(share * (1 << 64)) // of the ring's 2^64 tokens; at most 2^61
	var rows, parts int64
	for i := uint64(0); i < slices && rows < estimateProbeRows; i++ {
		a := i * (^uint64(0) / slices)
		r := Range{Start: tok(a), End: tok(a + max(width, 1))}
		iter := s.sess.Query(stmt, r.Start, r.End).WithContext(inDC(preferring(ctx, s.owner(r)))).Consistency(s.cons).
			PageSize(s.cfg.PageSize).Iter()
		var t, prev int64
		for n := int64(0); iter.Scan(&t); n++ {
			if n == 0 || t != prev { // rows come in token order, a partition's together
				parts++
			}
			prev = t
			if rows++; rows >= estimateProbeRows {
				break
			}
		}
		if err := iter.Close(); err != nil {
			s.log.Debug("rows per partition", zap.String("range", r.Name()), zap.Error(err))
			return 0
		}
	}
	if parts == 0 {
		return 0
	}
	return float64(rows) / float64(parts)
}

// The probe of rowsPerPartition reads about this many partitions, at most this many rows: a
// few hundredths of a second of a scan, which a migration waits for before it starts.
const (
	estimateProbePartitions = 256
	estimateProbeRows       = 20_000
)

func (s *Source) sizeEstimate(ctx context.Context) (int64, bool) {
	type key struct{ a, b string }
	seen := map[key]int64{}
	for _, h := range s.policy.Hosts() {
		if !h.IsUp() {
			continue
		}
		iter := s.sess.Query(`SELECT range_start, range_end, partitions_count FROM system.size_estimates WHERE keyspace_name = ? AND table_name = ?`,
			s.table.Keyspace, s.table.Name).WithContext(pinned(ctx, h)).Consistency(gocql.One).Iter()
		var a, b string
		var n int64
		for iter.Scan(&a, &b, &n) {
			// Cassandra 3 lists every range a node replicates, 4.0 only its primary ranges:
			// count each range once.
			if n > seen[key{a, b}] {
				seen[key{a, b}] = n
			}
		}
		if err := iter.Close(); err != nil {
			s.log.Debug("system.size_estimates", zap.Stringer("host", h.ConnectAddress()), zap.Error(err))
		}
	}
	if len(seen) == 0 {
		return -1, false
	}
	var total int64
	var covered float64 // tokens of the ranges listed: the whole ring when every node answered
	for k, n := range seen {
		total += n
		a, errA := strconv.ParseInt(k.a, 10, 64)
		b, errB := strconv.ParseInt(k.b, 10, 64)
		switch {
		case errA != nil || errB != nil:
			covered = math.Inf(1) // not Murmur3 tokens: nothing to scale by
		case a == b:
			covered += 1 << 64
		default:
			covered += float64(off(b) - off(a)) // (a, b], clockwise
		}
	}
	if ring := float64(1 << 64); covered > 0 && covered < ring*0.999 {
		// a node down (or whose table did not answer) lists none of its ranges: the others'
		// partitions stand for the whole ring, not for the part they own
		s.log.Warn("system.size_estimates lists part of the ring only (a node did not answer): the row estimate is scaled from it",
			zap.Float64("ring_share", covered/ring), zap.Int64("partitions_listed", total))
		total = int64(float64(total) * ring / covered)
	}
	return total, true
}

// limiter spaces batches so that rows flow at most at rate rows/s over all workers.
type limiter struct {
	mu   sync.Mutex
	rate float64
	next time.Time
}

func (l *limiter) wait(ctx context.Context, rows int) error {
	if l == nil || rows == 0 {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(time.Duration(float64(rows) / l.rate * float64(time.Second)))
	l.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Workers is the number of ranges read at the same time (Config.Workers or its default).
func (s *Source) Workers() int {
	if s.cfg.Workers > 0 {
		return s.cfg.Workers
	}
	return defaultWorkers()
}

// RowWriteTimes tells whether batches carry each row's write time (Config.RowWriteTimes, the
// table has a regular column WRITETIME() is defined on (a key-only table has none) and the
// server did not refuse it: see WriteTimesRefused).
func (s *Source) RowWriteTimes() bool { return s.cfg.RowWriteTimes && len(s.sel.dating) > 0 }

// WriteTimesRefused is the server's answer when it refused WRITETIME() (a Cassandra-compatible
// service without it), nil otherwise: the scan then reads no write times.
func (s *Source) WriteTimesRefused() error { return s.wtRefused }

// probeWriteTimes reads one row with the rows' writetime()s. A server that refuses the query
// as invalid (it has no WRITETIME()) gets the scan without them, so that Config.RowWriteTimes,
// which only informs a report, never fails one. Any other failure is left to the scan, which
// retries or reports it as it does for every page.
func (s *Source) probeWriteTimes(ctx context.Context) {
	iter, err := s.fetchPage(ctx, Range{Start: math.MinInt64, End: math.MaxInt64}, nil, 1, 1)
	if err == nil {
		iter.Close()
		return
	}
	var re gocql.RequestError
	if !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid && re.Code() != gocql.ErrCodeSyntax {
		return
	}
	s.wtRefused = re
	s.sel.dating = nil
	s.stmt = s.sel.statement(s.table)
	s.log.Warn("the server refused WRITETIME(): rows are read without their write times", zap.Error(err))
}
