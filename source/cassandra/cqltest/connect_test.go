package cqltest

import (
	"sort"
	"testing"

	"github.com/gocql/gocql"
)

func TestConnectProtocolVersions(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 10)
	for _, v := range []int{0, 3, 4} {
		sess := newSession(t, s, func(c *gocql.ClusterConfig) { c.ProtoVersion = v })
		var n int64
		if err := sess.Query("SELECT count(*) FROM ks.t").Scan(&n); err != nil {
			t.Fatalf("proto %d: %v", v, err)
		}
		if n != 10 {
			t.Fatalf("proto %d: count = %d, want 10", v, n)
		}
	}
}

// Other ways a client may connect: host:port contact points with the default port 9042
// configured (gocql keeps the contact point's port because host_id is stable), and without
// the initial host lookup (gocql then probes SELECT * FROM system_schema.keyspaces).
func TestConnectVariants(t *testing.T) {
	s := newServer(t, WithNodes(2))
	seedInts(t, s, "t", 10)
	variants := map[string]func(*gocql.ClusterConfig){
		"host:port": func(c *gocql.ClusterConfig) {
			c.Hosts = []string{s.Addr()}
			c.Port = 9042
		},
		"no host lookup": func(c *gocql.ClusterConfig) {
			c.DisableInitialHostLookup = true
			c.Hosts = []string{s.Host()}
		},
		"events disabled": func(c *gocql.ClusterConfig) {
			c.Events.DisableNodeStatusEvents = true
			c.Events.DisableTopologyEvents = true
			c.Events.DisableSchemaEvents = true
		},
	}
	for name, mod := range variants {
		sess := newSession(t, s, mod)
		for i := 0; i < 5; i++ { // round robin over both nodes
			var n int64
			if err := sess.Query("SELECT count(*) FROM ks.t").Scan(&n); err != nil || n != 10 {
				t.Fatalf("%s: count = %d, %v", name, n, err)
			}
		}
		if md, err := sess.KeyspaceMetadata("ks"); err != nil || md.Tables["t"] == nil {
			t.Fatalf("%s: KeyspaceMetadata: %v", name, err)
		}
	}
}

func TestKeyspaceMetadata(t *testing.T) {
	s := newServer(t)
	must(t, s.CreateTable("shop", "orders", []Column{
		{"region", "text"}, {"day", "int"}, {"id", "uuid"}, {"seq", "bigint"},
		{"total", "decimal"}, {"tags", "set<text>"}, {"attrs", "map<text, int>"}, {"hist", "frozen<list<int>>"},
	}, []string{"region", "day"}, []string{"id", "seq DESC"}))
	sess := newSession(t, s, func(c *gocql.ClusterConfig) { c.Keyspace = "shop" })

	md, err := sess.KeyspaceMetadata("shop")
	must(t, err)
	if md.StrategyClass != "org.apache.cassandra.locator.SimpleStrategy" || md.StrategyOptions["replication_factor"] != "1" {
		t.Errorf("strategy = %q %v", md.StrategyClass, md.StrategyOptions)
	}
	tm := md.Tables["orders"]
	if tm == nil {
		t.Fatalf("table missing: %v", md.Tables)
	}
	var pk, ck []string
	for _, c := range tm.PartitionKey {
		pk = append(pk, c.Name)
	}
	for _, c := range tm.ClusteringColumns {
		ck = append(ck, c.Name+":"+c.ClusteringOrder)
	}
	if got := []string{"region", "day"}; !equal(pk, got) {
		t.Errorf("partition key = %v", pk)
	}
	if got := []string{"id:asc", "seq:desc"}; !equal(ck, got) {
		t.Errorf("clustering = %v", ck)
	}
	wantTypes := map[string]string{
		"region": "text", "day": "int", "id": "uuid", "seq": "bigint", "total": "decimal",
		"tags": "set<text>", "attrs": "map<text, int>", "hist": "frozen<list<int>>",
	}
	for name, typ := range wantTypes {
		c := tm.Columns[name]
		if c == nil {
			t.Errorf("column %s missing", name)
			continue
		}
		if c.Validator != typ {
			t.Errorf("column %s type %q, want %q", name, c.Validator, typ)
		}
	}
	if tm.Columns["total"].Kind != gocql.ColumnRegular || tm.Columns["day"].Kind != gocql.ColumnPartitionKey {
		t.Errorf("kinds: %v %v", tm.Columns["total"].Kind, tm.Columns["day"].Kind)
	}
	if len(tm.OrderedColumns) != len(wantTypes) {
		t.Errorf("ordered columns = %v", tm.OrderedColumns)
	}

	// What rekey reads directly: system_schema.columns for one table.
	iter := sess.Query(`SELECT column_name, type, kind, position, clustering_order FROM system_schema.columns
		WHERE keyspace_name = ? AND table_name = ?`, "shop", "orders").Iter()
	var name, typ, kind, order string
	var pos int
	got := map[string]string{}
	for iter.Scan(&name, &typ, &kind, &pos, &order) {
		got[name] = typ + "/" + kind + "/" + order
		if kind == "regular" && pos != -1 || name == "day" && pos != 1 || name == "seq" && pos != 1 {
			t.Errorf("%s position %d", name, pos)
		}
	}
	must(t, iter.Close())
	if got["seq"] != "bigint/clustering/desc" || got["attrs"] != "map<text, int>/regular/none" || len(got) != 8 {
		t.Errorf("system_schema.columns = %v", got)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// With several nodes and a token-aware policy, a single-partition query goes to the node that
// owns the key's token (RF 1: the first ring token >= the key's token, wrapping).
func TestTokenAwareRouting(t *testing.T) {
	const nodes = 3
	s := newServer(t, WithNodes(nodes), WithVnodes(8))
	seedInts(t, s, "t", 100)
	sess := newSession(t, s, func(c *gocql.ClusterConfig) {
		c.Keyspace = "ks"
		c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	})
	// Let the driver connect to every node.
	for i := 0; i < 50; i++ {
		must(t, sess.Query("SELECT v FROM t WHERE id = ?", 1).Exec())
	}
	ring := s.Tokens()
	owner := func(tok int64) int {
		k := sort.Search(len(ring), func(i int) bool { return ring[i] >= tok })
		if k == len(ring) {
			k = 0
		}
		return k % nodes
	}
	s.ResetStats()
	want := make([]int64, nodes)
	for id := int32(0); id < 100; id++ {
		tok, err := s.Token("ks", "t", id)
		must(t, err)
		want[owner(tok)]++
		var v string
		must(t, sess.Query("SELECT v FROM t WHERE id = ?", id).Scan(&v))
	}
	got := s.Stats().NodeRequests
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("node %d served %d requests, want %d (all: %v vs %v)", i, got[i], want[i], got, want)
		}
	}
	// Scans still see everything from any node.
	var n int64
	must(t, sess.Query("SELECT count(*) FROM t").Scan(&n))
	if n != 100 {
		t.Errorf("count = %d", n)
	}
}

func TestSystemTables(t *testing.T) {
	s := newServer(t, WithNodes(2), WithVnodes(4))
	seedInts(t, s, "t", 1000)
	sess := newSession(t, s)

	var tokens []string
	var dc, partitioner string
	var hostID gocql.UUID
	must(t, sess.Query("SELECT tokens, data_center, partitioner, host_id FROM system.local WHERE key = 'local'").
		Scan(&tokens, &dc, &partitioner, &hostID))
	if len(tokens) != 4 || dc != "datacenter1" || partitioner != "org.apache.cassandra.dht.Murmur3Partitioner" {
		t.Errorf("local: %v %q %q", tokens, dc, partitioner)
	}
	var peers int
	iter := sess.Query("SELECT peer, native_port, tokens FROM system.peers_v2").Iter()
	var peer string
	var port int
	for iter.Scan(&peer, &port, &tokens) {
		peers++
		if port != s.Port() || len(tokens) != 4 {
			t.Errorf("peer %s port %d tokens %v", peer, port, tokens)
		}
	}
	must(t, iter.Close())
	if peers != 1 {
		t.Errorf("peers_v2 rows = %d, want 1", peers)
	}

	// size_estimates: each node lists its own 4 primary ranges; together they hold every row.
	total := int64(0)
	for _, host := range s.Hosts() {
		one := newSession(t, s, func(c *gocql.ClusterConfig) { c.HostFilter = gocql.WhiteListHostFilter(host) })
		iter := one.Query("SELECT range_start, range_end, partitions_count FROM system.size_estimates WHERE keyspace_name = ? AND table_name = ?", "ks", "t").Iter()
		var start, end string
		var count int64
		rows := 0
		for iter.Scan(&start, &end, &count) {
			total += count
			rows++
		}
		must(t, iter.Close())
		if rows != 4 {
			t.Fatalf("%s: size_estimates rows = %d", host, rows)
		}
	}
	if total != 1000 {
		t.Errorf("size_estimates partitions over both nodes = %d, want 1000", total)
	}

	// The legacy schema table does not exist in Cassandra 3+: Invalid.
	err := sess.Query("SELECT * FROM system.schema_keyspaces").Exec()
	if errCode(err) != gocql.ErrCodeInvalid {
		t.Errorf("schema_keyspaces: %v", err)
	}
	// Unknown statements are syntax errors.
	err = sess.Query("INSERT INTO ks.t (id, v) VALUES (1, 'x')").Exec()
	if errCode(err) != gocql.ErrCodeSyntax {
		t.Errorf("INSERT: %v (code %x)", err, errCode(err))
	}
	err = sess.Query("SELECT nope FROM ks.t").Exec()
	if errCode(err) != gocql.ErrCodeInvalid {
		t.Errorf("unknown column: %v", err)
	}
	err = sess.Query("SELECT * FROM ks.missing").Exec()
	if errCode(err) != gocql.ErrCodeInvalid {
		t.Errorf("unknown table: %v", err)
	}
	err = sess.Query("SELECT * FROM ks.t WHERE v = 'x'").Exec()
	if errCode(err) != gocql.ErrCodeInvalid {
		t.Errorf("filtering without ALLOW FILTERING: %v", err)
	}
	var n int64
	must(t, sess.Query("SELECT count(*) FROM ks.t WHERE v = 'value' ALLOW FILTERING").Scan(&n))
	if n != 1000 {
		t.Errorf("filtered count = %d", n)
	}
}
