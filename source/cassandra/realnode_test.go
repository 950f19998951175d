package cassandra_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
)

// The tests of this file need a real Cassandra node (CASSANDRA_HOSTS, the real-peer tier): they
// use what the in-process test server does not serve (user-defined types, static columns,
// counters, Cassandra 5's vector type, WRITETIME() and TTL() selections, the node's own vnodes).

// execAll runs CQL statements on the real node.
func execAll(t *testing.T, sess *gocql.Session, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if err := sess.Query(s).Exec(); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestRealNodeUDTsStaticColumnsCounters reads, from a real node, a table with user-defined
// types (frozen and not), tuples, frozen and plain collections, a static column (a partition
// with rows and one with the static cell only), duration, varint, decimal, timeuuid, inet and
// blob, and a counter table; a column of a type rekey does not read (Cassandra 5's vector) is
// refused when the source opens, naming the column and the types it reads.
func TestRealNodeUDTsStaticColumnsCounters(t *testing.T) {
	c := cassandratest.Open(t)
	sess := c.Session(t)
	// Debezium's connector (3.4.1.Final) cannot parse a vector type: while such a table exists,
	// its schema refreshes fail and it takes no new table; the tier's CDC tests run after this one
	t.Cleanup(func() { execAll(t, sess, `DROP TABLE IF EXISTS rn.vec`) })
	execAll(t, sess,
		`CREATE KEYSPACE IF NOT EXISTS rn WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`DROP TABLE IF EXISTS rn.wide`, `DROP TABLE IF EXISTS rn.counts`, `DROP TABLE IF EXISTS rn.vec`,
		`DROP TYPE IF EXISTS rn.addr`,
		`CREATE TYPE rn.addr (street text, zip int, tags frozen<set<text>>)`,
		`CREATE TABLE rn.wide (p int, c int, s text static, fu frozen<addr>, u addr, tp tuple<int, text>,
			d duration, vi varint, de decimal, tu timeuuid, ip inet, b blob, fl frozen<list<int>>,
			m map<text, int>, PRIMARY KEY (p, c))`,
		`INSERT INTO rn.wide (p, c, s, fu, u, tp, d, vi, de, tu, ip, b, fl, m) VALUES (1, 1, 'shared',
			{street: 'Main "St"', zip: 12345, tags: {'b', 'a'}}, {street: 'Side', zip: 7}, (3, 'x'),
			1y2mo3d4h5m6s7ms, -123456789012345678901234567890, 3.14159265358979323846,
			50554d6e-29bb-11e5-b345-feff819cdc9f, '::1', 0xcafe, [3, 1, 2], {'k': 1, 'j': 2})`,
		`INSERT INTO rn.wide (p, c, vi) VALUES (1, 2, 0)`,
		`INSERT INTO rn.wide (p, s) VALUES (2, 'alone')`,
		`CREATE TABLE rn.counts (p int PRIMARY KEY, n counter)`,
		`UPDATE rn.counts SET n = n + 5 WHERE p = 1`,
		`UPDATE rn.counts SET n = n - 7 WHERE p = 2`,
		`CREATE TABLE rn.vec (p int PRIMARY KEY, v vector<float, 3>)`,
		`INSERT INTO rn.vec (p, v) VALUES (1, [1.5, 2, 3])`,
	)
	src := open(t, c, "rn", "wide", "")
	if got := strings.Join(src.Schema().Names(), ","); got != "p,c,b,d,de,fl,fu,ip,m,s,tp,tu,u,vi" {
		t.Fatalf("columns %s", got)
	}
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	want := []string{
		`int:"1"|int:"1"|bytes:"\xca\xfe"|text:"1y2mo3d4h5m6s7ms"|decimal:"3.14159265358979323846"|text:"[3,1,2]"|text:"{\"street\":\"Main \\\"St\\\"\",\"zip\":12345,\"tags\":[\"a\",\"b\"]}"|text:"::1"|text:"{\"j\":2,\"k\":1}"|text:"shared"|text:"[3,\"x\"]"|text:"50554d6e-29bb-11e5-b345-feff819cdc9f"|text:"{\"street\":\"Side\",\"zip\":7,\"tags\":null}"|decimal:"-123456789012345678901234567890"`,
		// the static cell on every row of its partition
		`int:"1"|int:"2"|null|null|null|null|null|null|null|text:"shared"|null|null|null|int:"0"`,
		// a partition with the static cell only: one row, its clustering column null
		`int:"2"|null|null|null|null|null|null|null|null|text:"alone"|null|null|null|null`,
	}
	got := rowSet(t, batches)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	counts := open(t, c, "rn", "counts", "")
	batches, err = collect(context.Background(), counts, nil)
	must(t, err)
	if got := strings.Join(rowSet(t, batches), " | "); got != `int:"1"|int:"5" | int:"2"|int:"-7"` {
		t.Errorf("counter rows %s", got)
	}

	_, err = tryOpen(t, c, "rn", "vec", "")
	if err == nil || !strings.Contains(err.Error(), "column v: CQL type vector<float, 3> is not supported") || !strings.Contains(err.Error(), "source.columns") {
		t.Errorf("a vector column: %v, want it refused when the source opens, naming the column", err)
	}
	// the other columns of the table read as ever
	rest := open(t, c, "rn", "vec", "", func(cfg *cassandra.Config) { cfg.Columns = pipeline.SourceSchema{{Name: "p", Type: "int"}} })
	batches, err = collect(context.Background(), rest, nil)
	must(t, err)
	if got := strings.Join(rowSet(t, batches), " | "); got != `int:"1"` {
		t.Errorf("the table without its vector column: %s", got)
	}
}

// TestRealNodeWriteTimeAndTTLAreTheDriversOwn: the writetime_/ttl_ columns equal what the driver
// reads with WRITETIME() and TTL() on the same node (writetime in milliseconds, the node's
// microseconds cut down; a TTL read a moment later is the same or a little less).
func TestRealNodeWriteTimeAndTTLAreTheDriversOwn(t *testing.T) {
	c := cassandratest.Open(t)
	sess := c.Session(t)
	execAll(t, sess,
		`CREATE KEYSPACE IF NOT EXISTS rn WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`DROP TABLE IF EXISTS rn.cells`,
		`CREATE TABLE rn.cells (id int PRIMARY KEY, v text, w int)`)
	const n = 50
	base := time.Now().UnixMicro()
	for i := 0; i < n; i++ {
		switch {
		case i%3 == 0: // the node's own clock and no TTL
			execAll(t, sess, fmt.Sprintf(`INSERT INTO rn.cells (id, v, w) VALUES (%d, 'v%d', %d)`, i, i, i))
		default: // a write time of its own, some microseconds apart, and a TTL
			execAll(t, sess, fmt.Sprintf(`INSERT INTO rn.cells (id, v) VALUES (%d, 'v%d') USING TIMESTAMP %d AND TTL %d`, i, i, base-int64(i*1777), 3600+i))
			if i%2 == 0 {
				execAll(t, sess, fmt.Sprintf(`UPDATE rn.cells USING TIMESTAMP %d SET w = %d WHERE id = %d`, base+int64(i), i, i))
			}
		}
	}
	src := open(t, c, "rn", "cells", "writetime=v,w&ttl=v,w")
	if got := strings.Join(src.Schema().Names(), ","); got != "id,v,w,writetime_v,writetime_w,ttl_v,ttl_w" {
		t.Fatalf("columns %s", got)
	}
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	type cells struct{ wtv, wtw, ttlv, ttlw string }
	read := map[int64]cells{}
	for _, b := range batches {
		for _, r := range b.Records {
			if r.Err != nil {
				t.Fatalf("%s: %v", b.Position(&r), r.Err)
			}
			read[r.Values[0].Num] = cells{show(r.Values[3]), show(r.Values[4]), show(r.Values[5]), show(r.Values[6])}
		}
	}
	if len(read) != n {
		t.Fatalf("%d rows, want %d", len(read), n)
	}
	iter := sess.Query(`SELECT id, WRITETIME(v), WRITETIME(w), TTL(v), TTL(w) FROM rn.cells`).Iter()
	var id int
	var wtv, wtw *int64
	var ttlv, ttlw *int
	seen := 0
	for iter.Scan(&id, &wtv, &wtw, &ttlv, &ttlw) {
		seen++
		got := read[int64(id)]
		ms := func(us *int64) string {
			if us == nil {
				return "null"
			}
			return fmt.Sprintf("int:\"%d\"", *us/1000)
		}
		if got.wtv != ms(wtv) || got.wtw != ms(wtw) {
			t.Errorf("id %d: writetime_v %s writetime_w %s, the driver's WRITETIME()s %s %s", id, got.wtv, got.wtw, ms(wtv), ms(wtw))
		}
		for _, p := range []struct {
			name, got string
			drv       *int
		}{{"ttl_v", got.ttlv, ttlv}, {"ttl_w", got.ttlw, ttlw}} {
			if p.drv == nil {
				if p.got != "null" {
					t.Errorf("id %d: %s %s, the driver's TTL() null", id, p.name, p.got)
				}
				continue
			}
			v, err := strconv.Atoi(strings.Trim(strings.TrimPrefix(p.got, "int:"), `"`))
			if err != nil || v < *p.drv || v > *p.drv+5 {
				t.Errorf("id %d: %s %s, the driver's TTL() %d read after it", id, p.name, p.got, *p.drv)
			}
		}
	}
	must(t, iter.Close())
	if seen != n {
		t.Fatalf("the driver read %d rows, want %d", seen, n)
	}
}

// TestRealNodeVnodesAndLargeTable loads a large table into the real node (cassandratest.BigRows) and reads it whole through the node's 16 vnodes (num_tokens: 16 of
// deploy/dev/cassandra/cassandra.yaml) with small and large pages: every row once. Skipped with
// -short.
func TestRealNodeVnodesAndLargeTable(t *testing.T) {
	if testing.Short() {
		t.Skip("loads and reads a large table; runs in the real-peer tier (without -short)")
	}
	c := cassandratest.Open(t)
	sess := c.Session(t)
	n := cassandratest.BigRows(t)
	var tokens []string
	must(t, sess.Query(`SELECT tokens FROM system.local WHERE key = 'local'`).Scan(&tokens))
	if len(tokens) != 16 {
		t.Fatalf("the node has %d tokens, want 16 (num_tokens: 16)", len(tokens))
	}
	start := time.Now()
	must(t, c.LoadBig("rn", "big", n))
	t.Logf("loaded %d rows in %s", n, time.Since(start).Round(time.Millisecond))

	for _, params := range []string{"splits=1&page_size=100", "page_size=5000&workers=4"} {
		start := time.Now()
		src := open(t, c, "rn", "big", params)
		must(t, cassandra.CheckTiling(src.AllRanges()))
		bounds := map[int64]bool{}
		for _, r := range src.AllRanges() {
			bounds[r.End] = true
		}
		for _, tok := range tokens {
			v, _ := strconv.ParseInt(tok, 10, 64)
			if !bounds[v] {
				t.Errorf("%s: no range ends at the node's token %d", params, v)
			}
		}
		seen := make([]uint8, n)
		var rows, dups int64
		out := make(chan struct{})
		ch := make(chan pipeline.Batch, 16)
		go func() {
			defer close(out)
			for b := range ch {
				for _, r := range b.Records {
					if r.Err != nil {
						t.Errorf("%s: %v", b.Position(&r), r.Err)
						continue
					}
					i := int(r.Values[0].Num)*100 + int(r.Values[1].Num)
					if i < 0 || i >= n || r.Values[2].String() != "v"+strconv.Itoa(i) {
						t.Errorf("%s: row %v", params, r.Values)
						continue
					}
					if seen[i]++; seen[i] > 1 {
						dups++
					}
					rows++
				}
			}
		}()
		err := src.Run(context.Background(), nil, ch)
		close(ch)
		<-out
		must(t, err)
		if rows != int64(n) || dups != 0 {
			t.Fatalf("%s: %d rows (%d twice), want %d once each", params, rows, dups, n)
		}
		t.Logf("%s: %d rows in %s over %d ranges", params, rows, time.Since(start).Round(time.Millisecond), len(src.Ranges()))
	}
}
