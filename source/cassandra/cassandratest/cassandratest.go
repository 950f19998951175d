// Package cassandratest gives tests a Cassandra to read from: the in-process cqltest server by
// default, or a real cluster when the CASSANDRA_HOSTS environment variable lists its contact
// points (CASSANDRA_HOSTS=127.0.0.1:9042, see docker-compose.yml). Tables are created and seeded
// through the same calls either way; fault injection exists only on the test server.
package cassandratest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/internal/realpeers"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// HostsEnv names the environment variable with a real cluster's contact points.
const HostsEnv = "CASSANDRA_HOSTS"

// Cluster is the Cassandra a test reads from.
type Cluster struct {
	// Server is the in-process test server, nil for a real cluster.
	Server *cqltest.Server
	hosts  []string // host:port
	sess   *gocql.Session
	t      testing.TB
	mu     sync.Mutex
	keys   map[string][2][]string       // "ks.t" -> partition key, clustering
	types  map[string]map[string]string // "ks.t" -> column -> CQL type
}

// Open starts a cqltest server (closed when the test ends) with opts, or connects to the real
// cluster named by CASSANDRA_HOSTS (opts are then ignored).
func Open(t testing.TB, opts ...cqltest.Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t, keys: map[string][2][]string{}, types: map[string]map[string]string{}}
	if env := strings.TrimSpace(os.Getenv(HostsEnv)); env != "" {
		for _, h := range strings.Split(env, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(h); err != nil {
				h = net.JoinHostPort(h, "9042")
			}
			c.hosts = append(c.hosts, h)
		}
		cl := gocql.NewCluster(c.hosts...)
		cl.Timeout = 30 * time.Second
		cl.ConnectTimeout = 10 * time.Second
		cl.Consistency = gocql.One
		sess, err := cl.CreateSession()
		if err != nil {
			t.Fatalf("connect to %s=%s: %v", HostsEnv, env, err)
		}
		c.sess = sess
		t.Cleanup(sess.Close)
		return c
	}
	realpeers.Missing(t, HostsEnv) // fails the test when the real peers are required
	srv, err := cqltest.New(opts...)
	if err != nil {
		t.Fatalf("cqltest: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	c.Server = srv
	for _, h := range srv.Hosts() {
		c.hosts = append(c.hosts, net.JoinHostPort(h, strconv.Itoa(srv.Port())))
	}
	return c
}

// Real tells whether the tests run against a real cluster.
func (c *Cluster) Real() bool { return c.Server == nil }

// Faults returns the test server for fault injection, skipping the test on a real cluster.
func (c *Cluster) Faults(t testing.TB) *cqltest.Server {
	t.Helper()
	if c.Server == nil {
		t.Skip("fault injection needs the in-process test server (unset " + HostsEnv + ")")
	}
	return c.Server
}

// Session is the driver's session on the real cluster, for statements the stand-in does not
// serve (user-defined types, counters, WRITETIME() and TTL() selections); the test is skipped on
// the stand-in.
func (c *Cluster) Session(t testing.TB) *gocql.Session {
	t.Helper()
	if c.sess == nil {
		t.Skip("needs a real Cassandra node (set " + HostsEnv + "): the in-process test server does not serve these statements")
	}
	return c.sess
}

// BigRowsEnv sets the row count of the large-table tests (BigRows).
const BigRowsEnv = "REKEY_REAL_ROWS"

// BigRows is the row count of the large-table tests: 1,000,000, or BigRowsEnv's.
func BigRows(t testing.TB) int {
	t.Helper()
	v := os.Getenv(BigRowsEnv)
	if v == "" {
		return 1000000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a row count", BigRowsEnv, v)
	}
	return n
}

// LoadBig creates keyspace.name (p int, c int, v text, PRIMARY KEY (p, c)) on the real cluster
// and writes n rows, 100 to a partition: row i is p = i/100, c = i%100, v = "v<i>". It writes
// unlogged batches of one partition from 16 goroutines (a million rows in some seconds).
func (c *Cluster) LoadBig(keyspace, name string, n int) error {
	if c.sess == nil {
		return errors.New("LoadBig needs a real cluster")
	}
	c.claim(keyspace, name)
	for _, s := range []string{
		fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`, q(keyspace)),
		fmt.Sprintf(`DROP TABLE IF EXISTS %s.%s`, q(keyspace), q(name)),
		fmt.Sprintf(`CREATE TABLE %s.%s (p int, c int, v text, PRIMARY KEY (p, c))`, q(keyspace), q(name)),
	} {
		if err := c.sess.Query(s).Exec(); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	insert := fmt.Sprintf(`INSERT INTO %s.%s (p, c, v) VALUES (?, ?, ?)`, q(keyspace), q(name))
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	parts := (n + 99) / 100
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p := int(next.Add(1) - 1)
				if p >= parts {
					return
				}
				b := c.sess.NewBatch(gocql.UnloggedBatch)
				for ck := 0; ck < 100 && p*100+ck < n; ck++ {
					b.Query(insert, p, ck, "v"+strconv.Itoa(p*100+ck))
				}
				if err := c.sess.ExecuteBatch(b); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("load %s.%s partition %d: %w", keyspace, name, p, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// tableClaims hold the tables of a real cluster that a test is using: parallel tests of one
// process that use the same table drop and re-create it, so without a claim one test's run
// read the table another had just dropped ("table shop.orders not found").
var tableClaims = struct {
	sync.Mutex
	byTable map[string]*tableClaim // "ks.t" -> its holder
}{byTable: map[string]*tableClaim{}}

type tableClaim struct {
	holder string        // the holding test's name
	freed  chan struct{} // closed when the holder ends
}

// claimWaits, when set, is called as a test starts waiting for a table another test holds.
var claimWaits func(table string)

// claim holds keyspace.name until c's test ends, waiting while another test holds it. A test
// (or its subtest) that already holds the table goes on, so opening a cluster twice is safe.
func (c *Cluster) claim(keyspace, name string) {
	table, me := keyspace+"."+name, c.t.Name()
	for {
		tableClaims.Lock()
		held := tableClaims.byTable[table]
		if held == nil {
			mine := &tableClaim{holder: me, freed: make(chan struct{})}
			tableClaims.byTable[table] = mine
			tableClaims.Unlock()
			c.t.Cleanup(func() {
				tableClaims.Lock()
				delete(tableClaims.byTable, table)
				tableClaims.Unlock()
				close(mine.freed)
			})
			return
		}
		tableClaims.Unlock()
		if held.holder == me || strings.HasPrefix(me, held.holder+"/") {
			return
		}
		if claimWaits != nil {
			claimWaits(table)
		}
		<-held.freed
	}
}

// Hosts are the contact points, host:port.
func (c *Cluster) Hosts() []string { return c.hosts }

// URI is a --source URI for keyspace.table with extra query parameters ("splits=8&page_size=100").
func (c *Cluster) URI(keyspace, table, params string) string {
	u := "cassandra://" + strings.Join(c.hosts, ",") + "/" + keyspace + "/" + table
	if params != "" {
		u += "?" + params
	}
	return u
}

// CreateTable creates keyspace.name (dropping an earlier one on a real cluster).
func (c *Cluster) CreateTable(keyspace, name string, cols []cqltest.Column, partitionKey, clustering []string) error {
	c.mu.Lock()
	c.keys[keyspace+"."+name] = [2][]string{partitionKey, clustering}
	types := map[string]string{}
	for _, col := range cols {
		types[col.Name] = col.Type
	}
	c.types[keyspace+"."+name] = types
	c.mu.Unlock()
	if c.Server != nil {
		return c.Server.CreateTable(keyspace, name, cols, partitionKey, clustering)
	}
	c.claim(keyspace, name)
	stmts := []string{
		fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`, q(keyspace)),
		fmt.Sprintf(`DROP TABLE IF EXISTS %s.%s`, q(keyspace), q(name)),
	}
	var defs []string
	for _, col := range cols {
		defs = append(defs, q(col.Name)+" "+col.Type)
	}
	var pk []string
	for _, p := range partitionKey {
		pk = append(pk, q(p))
	}
	key := "(" + strings.Join(pk, ", ") + ")"
	var order []string
	for _, ck := range clustering {
		n, desc := strings.CutSuffix(ck, " DESC")
		key += ", " + q(n)
		dir := "ASC"
		if desc {
			dir = "DESC"
		}
		order = append(order, q(n)+" "+dir)
	}
	create := fmt.Sprintf("CREATE TABLE %s.%s (%s, PRIMARY KEY (%s))", q(keyspace), q(name), strings.Join(defs, ", "), key)
	if len(order) > 0 {
		create += " WITH CLUSTERING ORDER BY (" + strings.Join(order, ", ") + ")"
	}
	stmts = append(stmts, create)
	for _, s := range stmts {
		if err := c.sess.Query(s).Exec(); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// InsertMany adds n rows built by fill, as cqltest.Server.InsertMany does. Values are Go values
// gocql marshals; a cqltest.Cell sets a cell's write time and TTL.
func (c *Cluster) InsertMany(keyspace, name string, n int, fill func(i int, row map[string]any) error) error {
	if c.Server != nil {
		return c.Server.InsertMany(keyspace, name, n, fill)
	}
	c.mu.Lock()
	keys := c.keys[keyspace+"."+name]
	types := c.types[keyspace+"."+name]
	c.mu.Unlock()
	var keyCols []string
	keyCols = append(keyCols, keys[0]...)
	for _, ck := range keys[1] {
		n, _ := strings.CutSuffix(ck, " DESC")
		keyCols = append(keyCols, n)
	}
	type job struct{ row map[string]any }
	jobs := make(chan job, 256)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := c.insert(keyspace, name, keyCols, types, j.row); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	var err error
	for i := 0; i < n; i++ {
		row := map[string]any{}
		if err = fill(i, row); err != nil {
			err = fmt.Errorf("row %d: %w", i, err)
			break
		}
		jobs <- job{row}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	return firstErr
}

func (c *Cluster) insert(keyspace, name string, keyCols []string, types map[string]string, row map[string]any) error {
	cols := make([]string, 0, len(row))
	for k := range row {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	var names, marks []string
	var args []any
	var cells []string
	for _, k := range cols {
		v := row[k]
		if cell, ok := v.(cqltest.Cell); ok {
			cells = append(cells, k)
			v = cell.Value
			if cell.WriteTime != 0 || cell.TTL != 0 {
				continue // written below with its own timestamp and TTL
			}
		}
		names = append(names, q(k))
		mark, vals := bind(types[k], v)
		marks = append(marks, mark)
		args = append(args, vals...)
	}
	stmt := fmt.Sprintf("INSERT INTO %s.%s (%s) VALUES (%s)", q(keyspace), q(name), strings.Join(names, ", "), strings.Join(marks, ", "))
	if err := c.sess.Query(stmt, args...).Exec(); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	for _, k := range cells {
		cell := row[k].(cqltest.Cell)
		if cell.WriteTime == 0 && cell.TTL == 0 {
			continue
		}
		var using []string
		var uargs []any
		if cell.WriteTime != 0 {
			using = append(using, "TIMESTAMP ?")
			uargs = append(uargs, cell.WriteTime)
		}
		if cell.TTL != 0 {
			using = append(using, "TTL ?")
			uargs = append(uargs, int(cell.TTL))
		}
		mark, vals := bind(types[k], cell.Value)
		uargs = append(uargs, vals...)
		var where []string
		for _, kc := range keyCols {
			where = append(where, q(kc)+" = ?")
			uargs = append(uargs, row[kc])
		}
		stmt := fmt.Sprintf("UPDATE %s.%s USING %s SET %s = %s WHERE %s", q(keyspace), q(name), strings.Join(using, " AND "), q(k), mark, strings.Join(where, " AND "))
		if err := c.sess.Query(stmt, uargs...).Exec(); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// bind gives the bind marker and values of a value v of a column of CQL type typ. A tuple's
// elements are bound one by one, "(?, ?)": gocql v1.7 counts a tuple bind marker as one value per
// element but marshals values by marker, so it cannot bind a tuple value to a single marker
// ("gocql: expected 23 values send got 22", on a real node; the test server does not prepare
// tuple markers).
func bind(typ string, v any) (string, []any) {
	elems, ok := v.([]any)
	t := strings.TrimSpace(typ)
	if f, found := strings.CutPrefix(t, "frozen<"); found {
		t = strings.TrimSpace(f)
	}
	switch {
	case !strings.HasPrefix(t, "tuple<"):
		return "?", []any{v}
	case v == nil:
		return "null", nil
	case !ok:
		return "?", []any{v} // gocql refuses it, naming the count it wants
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(elems)), ", ")
	return "(" + marks + ")", elems
}

func q(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
