package cqltest

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"go.uber.org/zap"

	"github.com/rekey/rekey/transform/murmur3"
)

// Server is an in-process Cassandra node (or several) speaking CQL native protocol v4 (v3 is
// accepted too). Tables are created and seeded through the Go API; clients read them with
// SELECT, including paged token-range scans. Safe for concurrent use.
type Server struct {
	cfg    config
	log    *zap.Logger
	port   int
	nodes  []*node
	tokens []int64 // all vnode tokens, sorted

	mu        sync.RWMutex
	keyspaces map[string]*keyspace
	schemaVer uint64
	sysCache  map[string]*table // system tables by "node/ks.table", dropped on schema change
	prepared  map[string]*plan
	conns     map[*conn]struct{}
	closed    bool

	faultMu sync.Mutex
	faults  []*Fault
	refused string // RefuseSelector

	stats statsCounter
	wg    sync.WaitGroup
}

type node struct {
	idx    int
	dc     string
	ip     net.IP
	hostID gocql.UUID
	tokens []int64
	ln     net.Listener
}

type keyspace struct {
	name        string
	replication map[string]string
	tables      map[string]*table
}

type config struct {
	nodes       int
	vnodes      int
	cluster     string
	dc          string
	dcs         []string // per node (WithNodeDataCenters); dc for the nodes it leaves out
	rack        string
	release     string
	port        int
	logger      *zap.Logger
	partitioner string
}

// Option configures a Server.
type Option func(*config)

// WithNodes makes the server pretend to be a cluster of n nodes: node i listens on
// 127.0.0.(i+1) at the same port, has its own host_id and tokens, and lists the others in
// system.peers / system.peers_v2. All nodes serve all data. Default 1.
func WithNodes(n int) Option { return func(c *config) { c.nodes = n } }

// WithVnodes sets the number of tokens each node owns (num_tokens). Default 16, the
// Cassandra 4 default. Tokens are spread evenly over the ring.
func WithVnodes(n int) Option { return func(c *config) { c.vnodes = n } }

// WithLogger logs connections and requests at Debug level. Default: no logging.
func WithLogger(l *zap.Logger) Option { return func(c *config) { c.logger = l } }

// WithReleaseVersion sets system.local.release_version. Default "4.0.11".
func WithReleaseVersion(v string) Option { return func(c *config) { c.release = v } }

// WithPort listens on a fixed port instead of a random free one.
func WithPort(p int) Option { return func(c *config) { c.port = p } }

// WithDataCenter sets the data_center and rack of every node. Default "datacenter1", "rack1".
func WithDataCenter(dc, rack string) Option { return func(c *config) { c.dc, c.rack = dc, rack } }

// WithNodeDataCenters sets the data_center of each node in turn (node i gets dcs[i]; the nodes
// after the list keep WithDataCenter's), for a cluster of several data centers.
func WithNodeDataCenters(dcs ...string) Option { return func(c *config) { c.dcs = dcs } }

// New starts a server listening on 127.0.0.1 (and 127.0.0.2... for WithNodes) on a free port.
func New(opts ...Option) (*Server, error) {
	cfg := config{nodes: 1, vnodes: 16, cluster: "Test Cluster", dc: "datacenter1", rack: "rack1",
		release: "4.0.11", partitioner: "org.apache.cassandra.dht.Murmur3Partitioner"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.nodes < 1 || cfg.nodes > 200 {
		return nil, fmt.Errorf("cqltest: nodes must be between 1 and 200, got %d", cfg.nodes)
	}
	if cfg.vnodes < 1 || cfg.vnodes > 4096 {
		return nil, fmt.Errorf("cqltest: vnodes must be between 1 and 4096, got %d", cfg.vnodes)
	}
	log := cfg.logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{
		cfg:       cfg,
		log:       log,
		keyspaces: map[string]*keyspace{},
		sysCache:  map[string]*table{},
		prepared:  map[string]*plan{},
		conns:     map[*conn]struct{}{},
	}
	s.stats.nodes = make([]atomic.Int64, cfg.nodes)
	s.tokens = evenTokens(cfg.nodes * cfg.vnodes)
	for i := 0; i < cfg.nodes; i++ {
		n := &node{idx: i, dc: cfg.dc, ip: net.IPv4(127, 0, 0, byte(i+1)).To4(), hostID: nameUUID("host:" + strconv.Itoa(i))}
		if i < len(cfg.dcs) {
			n.dc = cfg.dcs[i]
		}
		for k := i; k < len(s.tokens); k += cfg.nodes {
			n.tokens = append(n.tokens, s.tokens[k])
		}
		s.nodes = append(s.nodes, n)
	}
	if err := s.listen(); err != nil {
		return nil, err
	}
	for _, n := range s.nodes {
		s.wg.Add(1)
		go s.acceptLoop(n)
	}
	return s, nil
}

// listen binds every node to the same port, retrying with another port if one is taken.
func (s *Server) listen() error {
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		port := s.cfg.port
		ok := true
		for i, n := range s.nodes {
			ln, err := net.Listen("tcp", net.JoinHostPort(n.ip.String(), strconv.Itoa(port)))
			if err != nil {
				lastErr = err
				ok = false
				for _, m := range s.nodes[:i] {
					m.ln.Close()
				}
				break
			}
			n.ln = ln
			if port == 0 {
				port = ln.Addr().(*net.TCPAddr).Port
			}
		}
		if ok {
			s.port = port
			return nil
		}
		if s.cfg.port != 0 {
			break
		}
	}
	return fmt.Errorf("cqltest: listen: %w", lastErr)
}

// evenTokens spreads n tokens evenly over the Murmur3 ring.
func evenTokens(n int) []int64 {
	step := math.MaxUint64 / uint64(n)
	out := make([]int64, n)
	for k := range out {
		out[k] = int64(uint64(1)<<63 + step*uint64(k) + step/2)
	}
	return out
}

// nameUUID derives a stable version-3 UUID from a name.
func nameUUID(name string) gocql.UUID {
	sum := md5.Sum([]byte(name))
	sum[6] = sum[6]&0x0f | 0x30
	sum[8] = sum[8]&0x3f | 0x80
	return gocql.UUID(sum)
}

// Addr is host:port of the first node.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host(), strconv.Itoa(s.port)) }

// Host is the first node's IP address, "127.0.0.1".
func (s *Server) Host() string { return s.nodes[0].ip.String() }

// Hosts lists every node's IP address.
func (s *Server) Hosts() []string {
	out := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.ip.String()
	}
	return out
}

// Port is the port all nodes listen on.
func (s *Server) Port() int { return s.port }

// Tokens returns every vnode token of the ring, sorted; node i owns tokens[k] for k%nodes == i.
func (s *Server) Tokens() []int64 { return slices.Clone(s.tokens) }

// NewCluster returns a gocql cluster config for this server: its hosts and port, protocol v4,
// and timeouts suited to tests. Callers may change any field before CreateSession.
func (s *Server) NewCluster() *gocql.ClusterConfig {
	c := gocql.NewCluster(s.Hosts()...)
	c.Port = s.port
	c.ProtoVersion = 4
	c.Timeout = 5 * time.Second
	c.ConnectTimeout = 5 * time.Second
	c.Consistency = gocql.One
	return c
}

// Close stops the listeners, closes every client connection and waits for handlers to end.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, n := range s.nodes {
		n.ln.Close()
	}
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// DropConnections closes every client connection now; requests in flight get no answer.
// The listeners stay open, so clients can reconnect.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.close()
	}
}

// StopNode takes node i (0-based) down: its listener closes and its client connections drop,
// as a node that crashed; the other nodes still list it, with its tokens, in system.peers.
func (s *Server) StopNode(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[i]
	n.ln.Close()
	for c := range s.conns {
		if c.node == n {
			c.close()
		}
	}
}

// ---- schema API ----

// CreateKeyspace creates a keyspace with the given replication options (a "class" key and
// its options, as in system_schema.keyspaces.replication). A nil map means SimpleStrategy
// with replication_factor 1. Creating an existing keyspace replaces its replication.
func (s *Server) CreateKeyspace(name string, replication map[string]string) error {
	if name == "" {
		return errors.New("cqltest: empty keyspace name")
	}
	if isSystemKeyspace(name) {
		return fmt.Errorf("cqltest: keyspace %s is reserved", name)
	}
	if replication == nil {
		replication = map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keyspaces[name]
	if ks == nil {
		ks = &keyspace{name: name, tables: map[string]*table{}}
		s.keyspaces[name] = ks
	}
	ks.replication = replication
	s.schemaChangedLocked()
	return nil
}

// CreateTable creates a table (and its keyspace, SimpleStrategy RF 1, if missing).
// partitionKey lists the partition key columns in order; clustering lists the clustering
// columns, each optionally followed by " DESC". Column types are CQL type text.
// Creating a table that exists fails.
func (s *Server) CreateTable(keyspace, name string, cols []Column, partitionKey, clustering []string) error {
	if isSystemKeyspace(keyspace) {
		return fmt.Errorf("cqltest: keyspace %s is reserved", keyspace)
	}
	t, err := newTable(keyspace, name, cols, partitionKey, clustering)
	if err != nil {
		return fmt.Errorf("cqltest: %w", err)
	}
	s.mu.Lock()
	ks := s.keyspaces[keyspace]
	s.mu.Unlock()
	if ks == nil {
		if err := s.CreateKeyspace(keyspace, nil); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks = s.keyspaces[keyspace]
	if _, exists := ks.tables[name]; exists {
		return fmt.Errorf("cqltest: table %s.%s already exists", keyspace, name)
	}
	ks.tables[name] = t
	s.schemaChangedLocked()
	return nil
}

// CreateView creates a materialized view of the table base, listed in system_schema.views
// instead of system_schema.tables, as Cassandra lists one. Its rows are inserted as a table's
// are: the view is not kept up to date with its base.
func (s *Server) CreateView(keyspace, name, base string, cols []Column, partitionKey, clustering []string) error {
	if _, err := s.table(keyspace, base); err != nil {
		return err
	}
	if err := s.CreateTable(keyspace, name, cols, partitionKey, clustering); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keyspaces[keyspace].tables[name].base = base
	s.schemaChangedLocked()
	return nil
}

// SetDefaultTTL sets a table's default_time_to_live (seconds) in system_schema.tables. It is
// schema only: cells do not expire.
func (s *Server) SetDefaultTTL(keyspace, name string, seconds int) error {
	if _, err := s.table(keyspace, name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keyspaces[keyspace].tables[name].ttl = seconds
	s.schemaChangedLocked()
	return nil
}

// DropTable removes a table and its rows. Statements prepared on it fail afterwards.
func (s *Server) DropTable(keyspace, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keyspaces[keyspace]
	if ks == nil || ks.tables[name] == nil {
		return fmt.Errorf("cqltest: table %s.%s does not exist", keyspace, name)
	}
	delete(ks.tables, name)
	for id, p := range s.prepared {
		if p.keyspace == keyspace && p.table == name {
			delete(s.prepared, id)
		}
	}
	s.schemaChangedLocked()
	return nil
}

func (s *Server) schemaChangedLocked() {
	s.schemaVer++
	clear(s.sysCache)
}

func (s *Server) table(keyspace, name string) (*table, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ks := s.keyspaces[keyspace]
	if ks == nil {
		return nil, fmt.Errorf("cqltest: keyspace %s does not exist", keyspace)
	}
	t := ks.tables[name]
	if t == nil {
		return nil, fmt.Errorf("cqltest: table %s.%s does not exist", keyspace, name)
	}
	return t, nil
}

// Insert adds one row. Values are Go values as gocql marshals them (int32/int for int,
// int64 for bigint, string, []byte, bool, float32, float64, *inf.Dec, *big.Int, time.Time,
// gocql.UUID, net.IP, time.Duration for time, gocql.Duration, slices for list/set, maps,
// []any for tuples), a Cell to set the cell's write time or TTL, or nil for null. Missing
// columns are null. A row with the primary key of an existing row replaces it. Sets and maps
// are stored sorted and deduplicated, and an empty non-frozen collection is stored as null,
// as Cassandra does.
func (s *Server) Insert(keyspace, name string, values map[string]any) error {
	t, err := s.table(keyspace, name)
	if err != nil {
		return err
	}
	r, _, err := t.encodeRow(values, nowMicros(), nil, nil)
	if err != nil {
		return fmt.Errorf("cqltest: %w", err)
	}
	t.insert([]row{r})
	return nil
}

// InsertMany seeds n rows quickly. fill is called for i = 0..n-1 with an empty map to fill
// with the row's values (the map is reused between calls: do not keep it). Rows are sorted
// into the table once, on the next read, so a million rows take a few seconds. If fill or a
// value fails, the rows before it may already have been added.
func (s *Server) InsertMany(keyspace, name string, n int, fill func(i int, row map[string]any) error) error {
	t, err := s.table(keyspace, name)
	if err != nil {
		return err
	}
	wt := nowMicros()
	ar := &arena{}
	m := make(map[string]any, len(t.cols))
	var scratch [][]byte
	const batch = 8192
	buf := make([]row, 0, min(n, batch))
	for i := 0; i < n; i++ {
		clear(m)
		if err := fill(i, m); err != nil {
			return fmt.Errorf("cqltest: row %d: %w", i, err)
		}
		var r row
		r, scratch, err = t.encodeRow(m, wt, ar, scratch)
		if err != nil {
			return fmt.Errorf("cqltest: row %d: %w", i, err)
		}
		buf = append(buf, r)
		if len(buf) == batch {
			t.insert(buf)
			buf = buf[:0]
		}
	}
	t.insert(buf)
	return nil
}

// InsertRows adds rows given as maps, like Insert, in one batch.
func (s *Server) InsertRows(keyspace, name string, rows []map[string]any) error {
	return s.InsertMany(keyspace, name, len(rows), func(i int, r map[string]any) error {
		for k, v := range rows[i] {
			r[k] = v
		}
		return nil
	})
}

// Delete removes the row with the given primary key values (all key columns are required).
// It reports whether a row was removed.
func (s *Server) Delete(keyspace, name string, key map[string]any) (bool, error) {
	t, err := s.table(keyspace, name)
	if err != nil {
		return false, err
	}
	for k := range key {
		if i, ok := t.byName[k]; !ok || t.cols[i].kind == "regular" {
			return false, fmt.Errorf("cqltest: %s is not a primary key column of %s.%s", k, keyspace, name)
		}
	}
	r, _, err := t.encodeRow(key, 0, nil, nil)
	if err != nil {
		return false, fmt.Errorf("cqltest: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mergeLocked()
	i, found := slices.BinarySearchFunc(t.rows, r, func(a, b row) int { return t.compareRows(&a, &b) })
	if !found {
		return false, nil
	}
	t.rows = slices.Delete(slices.Clone(t.rows), i, i+1)
	t.gen++
	return true, nil
}

// Truncate removes every row of a table.
func (s *Server) Truncate(keyspace, name string) error {
	t, err := s.table(keyspace, name)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.rows, t.pending = nil, nil
	t.gen++
	t.mu.Unlock()
	return nil
}

// Rows returns the number of rows in a table, or -1 if it does not exist.
func (s *Server) Rows(keyspace, name string) int {
	t, err := s.table(keyspace, name)
	if err != nil {
		return -1
	}
	return t.count()
}

// Token returns the Murmur3 token of a partition key given as Go values, in partition key
// order, exactly as Cassandra computes token(pk) for that table.
func (s *Server) Token(keyspace, name string, partitionKey ...any) (int64, error) {
	t, err := s.table(keyspace, name)
	if err != nil {
		return 0, err
	}
	if len(partitionKey) != t.npk {
		return 0, fmt.Errorf("cqltest: %s.%s has %d partition key columns, got %d values", keyspace, name, t.npk, len(partitionKey))
	}
	parts := make([][]byte, t.npk)
	for i, v := range partitionKey {
		c := t.cols[i]
		b, err := c.typ.marshal(v)
		if err != nil {
			return 0, fmt.Errorf("cqltest: %s.%s column %s (%s): %w", keyspace, name, c.name, c.typ.name, err)
		}
		if b == nil {
			return 0, fmt.Errorf("cqltest: %s.%s: partition key column %s must not be null", keyspace, name, c.name)
		}
		parts[i] = b
	}
	return murmur3.Token(murmur3.CompositeKey(nil, parts...)), nil
}

// ---- connections ----

func (s *Server) acceptLoop(n *node) {
	defer s.wg.Done()
	for {
		nc, err := n.ln.Accept()
		if err != nil {
			return
		}
		c := &conn{s: s, node: n, nc: nc, done: make(chan struct{})}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.stats.connections.Add(1)
		s.log.Debug("connection opened", zap.String("remote", nc.RemoteAddr().String()), zap.Int("node", n.idx))
		s.wg.Add(1)
		go c.serve()
	}
}

type conn struct {
	s    *Server
	node *node
	nc   net.Conn
	wmu  sync.Mutex
	done chan struct{}
	once sync.Once

	ksMu     sync.Mutex
	keyspace string
	version  atomic.Uint32
	inflight sync.WaitGroup
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}

func (c *conn) currentKeyspace() string {
	c.ksMu.Lock()
	defer c.ksMu.Unlock()
	return c.keyspace
}

func (c *conn) serve() {
	defer c.s.wg.Done()
	defer func() {
		c.close()
		c.inflight.Wait()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	}()
	var hdr [headerSize]byte
	for {
		if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
			return
		}
		version := hdr[0]
		flags := hdr[1]
		stream := int16(binary.BigEndian.Uint16(hdr[2:]))
		op := hdr[4]
		length := int32(binary.BigEndian.Uint32(hdr[5:]))
		if length < 0 || length > maxBodySize {
			return
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(c.nc, body); err != nil {
			return
		}
		if version != 3 && version != 4 {
			// Answer in the highest version we speak, with the message drivers parse.
			c.version.Store(4)
			c.writeError(stream, errorf(ErrProtocol, "Invalid or unsupported protocol version (%d); the lowest supported version is 3 and the greatest is 4", version&0x7f))
			continue
		}
		c.version.Store(uint32(version))
		if flags&flagCompression != 0 {
			c.writeError(stream, errorf(ErrProtocol, "compression was not negotiated"))
			continue
		}
		r := &reader{b: body}
		if flags&flagCustomPayload != 0 {
			r.bytesMap()
		}
		switch op {
		case opOptions:
			c.writeSupported(stream)
		case opStartup:
			if alg, ok := r.stringMap()["COMPRESSION"]; ok {
				c.writeError(stream, errorf(ErrProtocol, "Unknown compression algorithm: %s", alg))
				continue
			}
			c.writeFrame(stream, opReady, nil)
		case opRegister:
			r.stringList()
			c.writeFrame(stream, opReady, nil)
		case opQuery, opPrepare, opExecute, opBatch:
			c.inflight.Add(1)
			go func() {
				defer c.inflight.Done()
				c.handleRequest(stream, op, r)
			}()
		default:
			c.writeError(stream, errorf(ErrProtocol, "unsupported opcode 0x%02x", op))
		}
	}
}

func (c *conn) writeSupported(stream int16) {
	var b []byte
	b = appendShort(b, 3)
	b = appendString(b, "CQL_VERSION")
	b = appendStringList(b, []string{"3.4.5"})
	b = appendString(b, "COMPRESSION")
	b = appendStringList(b, nil)
	b = appendString(b, "PROTOCOL_VERSIONS")
	b = appendStringList(b, []string{"3/v3", "4/v4"})
	c.writeFrame(stream, opSupported, b)
}

// frameHeader returns a response header for a body of n bytes.
func (c *conn) frameHeader(stream int16, op byte, n int) []byte {
	h := make([]byte, headerSize, headerSize+64)
	h[0] = 0x80 | c.versionOrDefault()
	binary.BigEndian.PutUint16(h[2:], uint16(stream))
	h[4] = op
	binary.BigEndian.PutUint32(h[5:], uint32(n))
	return h
}

func (c *conn) versionOrDefault() byte {
	if v := c.version.Load(); v != 0 {
		return byte(v)
	}
	return 4
}

// writeFrame writes one response frame made of the given body parts.
func (c *conn) writeFrame(stream int16, op byte, parts ...[]byte) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	bufs := make(net.Buffers, 0, len(parts)+1)
	bufs = append(bufs, c.frameHeader(stream, op, n))
	for _, p := range parts {
		if len(p) > 0 {
			bufs = append(bufs, p)
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return
	default:
	}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		c.close()
	}
}

func (c *conn) writeError(stream int16, e *cqlError) {
	c.s.log.Debug("error response", zap.Int32("code", int32(e.code)), zap.String("message", e.msg))
	c.writeFrame(stream, opError, appendErrorBody(nil, e))
}
