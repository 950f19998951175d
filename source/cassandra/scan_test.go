package cassandra_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// seedEvents creates ks.events (user text, day int, seq int, payload text, amount decimal):
// partitions of up to 5 rows, n rows in all.
func seedEvents(t testing.TB, c *cassandratest.Cluster, ks string, n int) {
	t.Helper()
	must(t, c.CreateTable(ks, "events", []cqltest.Column{
		{Name: "user", Type: "text"}, {Name: "day", Type: "int"}, {Name: "seq", Type: "int"},
		{Name: "payload", Type: "text"}, {Name: "amount", Type: "decimal"},
	}, []string{"user", "day"}, []string{"seq DESC"}))
	must(t, c.InsertMany(ks, "events", n, func(i int, r map[string]any) error {
		r["user"] = fmt.Sprintf("u%05d", i/5)
		r["day"] = int32(i % 3)
		r["seq"] = int32(i)
		r["payload"] = fmt.Sprintf("p-%d", i)
		r["amount"] = dec(fmt.Sprintf("%d.%02d", i, i%100))
		return nil
	}))
}

func TestScanReadsEveryRowOnce(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(3), cqltest.WithVnodes(8))
	const n = 20000
	seedEvents(t, c, "scan", n)
	for _, params := range []string{"splits=1", "splits=7&page_size=333", "splits=100&page_size=50&workers=8", "page_size=5000"} {
		src := open(t, c, "scan", "events", params)
		if err := cassandra.CheckTiling(src.AllRanges()); err != nil {
			t.Fatal(err)
		}
		if src.Nodes() != 3 && !c.Real() {
			t.Errorf("nodes = %d", src.Nodes())
		}
		if c.Server != nil {
			c.Server.ResetStats()
		}
		batches, err := collect(context.Background(), src, nil)
		must(t, err)
		rows := rowSet(t, batches)
		if len(rows) != n {
			t.Fatalf("%s: %d rows, want %d", params, len(rows), n)
		}
		for i := 1; i < len(rows); i++ {
			if rows[i] == rows[i-1] {
				t.Fatalf("%s: duplicate row %s", params, rows[i])
			}
		}
		// every stream ends with one Done batch; cursors move forward
		done := map[string]int{}
		for _, b := range batches {
			if b.Done {
				done[b.Stream]++
			}
			if _, err := cassandra.ParseRange(b.Stream); err != nil {
				t.Fatal(err)
			}
		}
		if len(done) != len(src.Ranges()) {
			t.Fatalf("%s: %d ranges done, want %d", params, len(done), len(src.Ranges()))
		}
		if c.Server != nil {
			checkRouting(t, c.Server, src)
		}
	}
}

// checkRouting verifies that each range's pages were served by the node owning the range.
func checkRouting(t *testing.T, srv *cqltest.Server, src *cassandra.Source) {
	t.Helper()
	st := srv.Stats()
	ring := srv.Tokens()
	nodes := len(srv.Hosts())
	want := make([]int64, nodes)
	for r, rs := range st.Ranges {
		// cqltest: node i owns ring token k when k % nodes == i; a range (a, b] belongs to the
		// first ring token >= b
		k := 0
		for k < len(ring) && ring[k] < r.End {
			k++
		}
		if k == len(ring) {
			k = 0
		}
		want[k%nodes] += rs.Pages + rs.Faults
	}
	var total, off int64
	for i := range want {
		total += want[i]
		d := st.NodeRequests[i] - want[i]
		if d < 0 {
			d = -d
		}
		off += d
	}
	if total > 0 && float64(off) > 0.05*float64(total)+4 {
		t.Errorf("requests per node %v, the owners' share %v", st.NodeRequests, want)
	}
}

func TestResumeAfterCancel(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(2))
	const n = 30000
	seedEvents(t, c, "resume", n)
	params := "splits=16&page_size=700&workers=4"
	clean, err := collect(context.Background(), open(t, c, "resume", "events", params), nil)
	must(t, err)
	want := rowSet(t, clean)
	if len(want) != n {
		t.Fatalf("clean run: %d rows", len(want))
	}
	for _, stopAfter := range []int{1, 5, 17, 40} {
		// run 1: stop after stopAfter batches were delivered, as Ctrl-C would
		src := open(t, c, "resume", "events", params)
		ctx, cancel := context.WithCancel(context.Background())
		out := make(chan pipeline.Batch)
		var first []pipeline.Batch
		errc := make(chan error, 1)
		go func() { errc <- src.Run(ctx, nil, out) }()
		for len(first) < stopAfter {
			first = append(first, <-out)
		}
		cancel()
		for { // drain what was in flight: the pipeline keeps it
			select {
			case b := <-out:
				first = append(first, b)
				continue
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("interrupted run: %v", err)
				}
			}
			break
		}
		// run 2: a new process resumes from the checkpoint
		rest, err := collect(context.Background(), open(t, c, "resume", "events", params), checkpointOf(first))
		must(t, err)
		got := rowSet(t, append(first, rest...))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("stop after %d batches: %d rows after resume, want %d (identical)", stopAfter, len(got), len(want))
		}
		for _, b := range rest {
			if st := checkpointOf(first)[b.Stream]; st.Done {
				t.Fatalf("resumed run read %s again, which was done", b.Stream)
			}
		}
	}
}

func TestResumeChecksRanges(t *testing.T) {
	c := cassandratest.Open(t)
	seedEvents(t, c, "mism", 100)
	ring := len(open(t, c, "mism", "events", "splits=1").AllRanges()) // the ring's own ranges (+1)
	a, b := fmt.Sprintf("splits=%d", 4*ring), fmt.Sprintf("splits=%d", 6*ring)
	first, err := collect(context.Background(), open(t, c, "mism", "events", a), nil)
	must(t, err)
	cp := checkpointOf(first)
	_, err = collect(context.Background(), open(t, c, "mism", "events", b), cp)
	if err == nil || !strings.Contains(err.Error(), "do not match") || !strings.Contains(err.Error(), "splits=") {
		t.Fatalf("different splits: %v", err)
	}
	_, err = collect(context.Background(), open(t, c, "mism", "events", a+"&shard=1/2"), cp)
	if err == nil || !strings.Contains(err.Error(), "another shard") {
		t.Fatalf("different shard: %v", err)
	}
	_, err = collect(context.Background(), open(t, c, "mism", "events", a), map[string]pipeline.StreamState{"orders.csv": {Cursor: "off=1,line=2"}})
	if err == nil || !strings.Contains(err.Error(), "not a token range") {
		t.Fatalf("file checkpoint: %v", err)
	}
	// a complete checkpoint resumes to nothing
	rest, err := collect(context.Background(), open(t, c, "mism", "events", a), cp)
	if err != nil || len(rest) != 0 {
		t.Fatalf("complete checkpoint: %d batches, %v", len(rest), err)
	}
	// splits left to its default, the checkpoint written on a machine with 3 cores: its ranges
	// are found again
	nodes := open(t, c, "mism", "events", "").Nodes()
	other := fmt.Sprintf("splits=%d&page_size=7", 8*3*nodes)
	first, err = collect(context.Background(), open(t, c, "mism", "events", other), nil)
	must(t, err)
	half := first[:len(first)/2]
	rest, err = collect(context.Background(), open(t, c, "mism", "events", "page_size=7"), checkpointOf(half))
	must(t, err)
	if rows := rowSet(t, append(half, rest...)); len(rows) != 100 {
		t.Fatalf("resume with the default splits: %d rows", len(rows))
	}
}

func TestRetriesTimeoutsAndLostConnections(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t)
	seedEvents(t, c, "retry", 5000)
	f1 := srv.FailPage(cqltest.FaultMatch{Table: "events", Page: 2, Times: 3}, cqltest.ErrReadTimeout)
	f2 := srv.FailPage(cqltest.FaultMatch{Table: "events", Page: 3, Times: 2}, cqltest.ErrOverloaded)
	f3 := srv.FailPage(cqltest.FaultMatch{Table: "events", Page: 1, Skip: 2, Times: 2}, cqltest.ErrUnavailable)
	f4 := srv.DropPage(cqltest.FaultMatch{Table: "events", Page: 4, Times: 1})
	batches, err := collect(context.Background(), open(t, c, "retry", "events", "splits=4&page_size=50", func(cfg *cassandra.Config) {
		cfg.Timeout = 2 * time.Second
	}), nil)
	must(t, err)
	if rows := rowSet(t, batches); len(rows) != 5000 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, f := range []*cqltest.Fault{f1, f2, f3, f4} {
		if f.Fired() == 0 {
			t.Errorf("fault %d never fired", i+1)
		}
	}
}

func TestFailingRangeIsReported(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t)
	seedEvents(t, c, "fail", 3000)
	src := open(t, c, "fail", "events", "splits=6&page_size=100", func(cfg *cassandra.Config) { cfg.Retries = 3 })
	bad := src.Ranges()[2]
	f := srv.FailPage(cqltest.FaultMatch{Table: "events", Page: 2, Range: cqltest.RangeIs(bad.Start, bad.End)}, cqltest.ErrReadTimeout)
	batches, err := collect(context.Background(), src, nil)
	var re *cassandra.RangesError
	if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Range != bad || re.Failed[0].Page != 2 {
		t.Fatalf("got %v, want a RangesError for %s", err, bad)
	}
	// what to do next is the command's to say (migrate: --resume; verify and report have none)
	if !strings.Contains(err.Error(), bad.Name()) || !strings.Contains(err.Error(), "other ranges were read") || strings.Contains(err.Error(), "--resume") {
		t.Errorf("message: %v", err)
	}
	if f.Fired() != 4 {
		t.Errorf("the page was tried %d times, want 4 (1 + 3 retries)", f.Fired())
	}
	cp := checkpointOf(batches)
	for _, r := range src.Ranges() {
		if st := cp[r.Name()]; st.Done == (r == bad) {
			t.Errorf("%s: done=%v", r, st.Done)
		}
	}
	// the fault clears: a resumed run reads the missing range only, and the rows add up
	srv.RemoveFault(f)
	rest, err := collect(context.Background(), open(t, c, "fail", "events", "splits=6&page_size=100"), cp)
	must(t, err)
	for _, b := range rest {
		if b.Stream != bad.Name() {
			t.Fatalf("resume read %s", b.Stream)
		}
	}
	if rows := rowSet(t, append(batches, rest...)); len(rows) != 3000 {
		t.Fatalf("%d rows after resume", len(rows))
	}
}

func TestNonRetryableErrorStopsAtOnce(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t)
	seedEvents(t, c, "fatal", 2000)
	src := open(t, c, "fatal", "events", "splits=8&page_size=50&workers=2")
	srv.FailPage(cqltest.FaultMatch{Table: "events", Page: 3}, cqltest.ErrInvalid)
	start := time.Now()
	_, err := collect(context.Background(), src, nil)
	var re *cassandra.RangesError
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "range(") {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

func TestWriteTimeAndTTL(t *testing.T) {
	c := cassandratest.Open(t)
	must(t, c.CreateTable("wt", "t", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}, {Name: "w", Type: "int"}, {Name: "l", Type: "list<int>"}}, []string{"id"}, nil))
	must(t, c.InsertMany("wt", "t", 3, func(i int, r map[string]any) error {
		r["id"] = int32(i)
		r["v"] = cqltest.Cell{Value: fmt.Sprint("v", i), WriteTime: 1704164645678999 - int64(i), TTL: int32(3600 * i)}
		if i != 1 {
			r["w"] = int32(i)
		}
		return nil
	}))
	src := open(t, c, "wt", "t", "writetime=v,w&ttl=v")
	names := strings.Join(src.Schema().Names(), ",")
	if names != "id,l,v,w,writetime_v,writetime_w,ttl_v" {
		t.Fatalf("schema %s", names)
	}
	if typ := src.Schema()[4].Type; typ != "timestamp" {
		t.Errorf("writetime type %s", typ)
	}
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	for _, b := range batches {
		for _, r := range b.Records {
			id := r.Values[0].Num
			if r.Values[4] != pipeline.Int(1704164645678) {
				t.Errorf("row %d writetime_v = %v, want 1704164645678 (ms)", id, r.Values[4])
			}
			if id == 1 != r.Values[5].IsNull() {
				t.Errorf("row %d writetime_w = %v", id, r.Values[5])
			}
			if id == 0 != r.Values[6].IsNull() || id > 0 && (r.Values[6].Num <= 0 || r.Values[6].Num > 3600*id) {
				t.Errorf("row %d ttl_v = %v", id, r.Values[6])
			}
		}
	}
	for params, msg := range map[string]string{
		"writetime=id": "primary key", "writetime=nope": "no column", "ttl=l": "non-frozen collection",
	} {
		if _, err := tryOpen(t, c, "wt", "t", params); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v", params, err)
		}
	}
}

func TestUnknownTable(t *testing.T) {
	c := cassandratest.Open(t)
	seedEvents(t, c, "known", 1)
	if _, err := tryOpen(t, c, "known", "evnts", ""); err == nil || !strings.Contains(err.Error(), "tables in known: events") {
		t.Errorf("unknown table: %v", err)
	}
	if _, err := tryOpen(t, c, "nokeyspace", "events", ""); err == nil || !strings.Contains(err.Error(), `keyspace "nokeyspace" not found`) {
		t.Errorf("unknown keyspace: %v", err)
	}
}

func TestSampleAndEstimate(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(2))
	seedEvents(t, c, "sample", 20000)
	var samples []string
	for _, params := range []string{"splits=40", "splits=40&shard=0/3&workers=1", "splits=40&shard=2/3"} {
		src := open(t, c, "sample", "events", params)
		recs, err := src.Sample(context.Background(), 1000)
		must(t, err)
		if len(recs) != 1000 {
			t.Fatalf("%s: %d records", params, len(recs))
		}
		var keys []string
		users := map[string]bool{}
		for _, r := range recs {
			keys = append(keys, rowKey(r.Values))
			users[r.Values[0].Str] = true
		}
		if len(users) < 150 {
			t.Errorf("%s: the sample holds only %d users", params, len(users))
		}
		samples = append(samples, strings.Join(keys, "\n"))
		if !c.Real() {
			est := src.EstimatedRows()
			// cqltest counts partitions exactly (4000 users x 3 days), and the rows of a
			// partition (1 or 2 of the 20000) are measured on a few slices of the ring
			want := int64(20000)
			if !strings.Contains(params, "shard") && (est < want*9/10 || est > want*11/10) {
				t.Errorf("%s: estimate %d, want about %d", params, est, want)
			}
			if strings.Contains(params, "shard") && (est < want/6 || est > want/2) {
				t.Errorf("%s: estimate %d for a third of the ring", params, est)
			}
		}
	}
	if samples[0] != samples[1] || samples[0] != samples[2] {
		t.Error("the sample depends on the shard or on timing")
	}
}

func TestRateLimit(t *testing.T) {
	c := cassandratest.Open(t)
	seedEvents(t, c, "rate", 3000)
	start := time.Now()
	batches, err := collect(context.Background(), open(t, c, "rate", "events", "splits=4&page_size=250&rate=6000&workers=4"), nil)
	must(t, err)
	if rows := rowSet(t, batches); len(rows) != 3000 {
		t.Fatal(len(rows))
	}
	// 3000 rows at 6000 rows/s: the first batch goes at once, the rest take >= 2750/6000 s
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Errorf("3000 rows at 6000 rows/s took %v", el)
	}
}

func TestRingWrapAndEmptyRanges(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithVnodes(1))
	srv := c.Faults(t)
	must(t, c.CreateTable("wrap", "t", []cqltest.Column{{Name: "id", Type: "bigint"}}, []string{"id"}, nil))
	// keys whose tokens sit at both ends of the ring
	var ids []int64
	for i := int64(0); len(ids) < 200 && i < 1e6; i++ {
		tok, _ := srv.Token("wrap", "t", i)
		if tok < math.MinInt64+1<<58 || tok > math.MaxInt64-1<<58 {
			ids = append(ids, i)
		}
	}
	must(t, c.InsertMany("wrap", "t", len(ids), func(i int, r map[string]any) error { r["id"] = ids[i]; return nil }))
	src := open(t, c, "wrap", "t", "splits=1")
	if len(src.AllRanges()) != 2 {
		t.Fatalf("one token, one split: %v", src.AllRanges())
	}
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	if rows := rowSet(t, batches); len(rows) != len(ids) {
		t.Fatalf("%d rows, want %d", len(rows), len(ids))
	}
	// many more ranges than rows: empty ranges end with one empty Done batch each
	src = open(t, c, "wrap", "t", "splits=300")
	batches, err = collect(context.Background(), src, nil)
	must(t, err)
	if rows := rowSet(t, batches); len(rows) != len(ids) {
		t.Fatalf("%d rows, want %d", len(rows), len(ids))
	}
	if len(checkpointOf(batches)) != len(src.Ranges()) {
		t.Fatal("a range without rows did not report done")
	}
}

func TestReadChosenColumns(t *testing.T) {
	c := cassandratest.Open(t)
	seedEvents(t, c, "cols", 50)
	want := pipeline.SourceSchema{{Name: "payload", Type: "text"}, {Name: "user", Type: "varchar"}, {Name: "writetime_payload", Type: "timestamp"}}
	src := open(t, c, "cols", "events", "writetime=payload", func(cfg *cassandra.Config) { cfg.Columns = want })
	if got := strings.Join(src.Schema().Names(), ","); got != "payload,user,writetime_payload" {
		t.Fatalf("schema %s", got)
	}
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	for _, b := range batches {
		for _, r := range b.Records {
			if len(r.Values) != 3 || !strings.HasPrefix(r.Values[0].Str, "p-") || !strings.HasPrefix(r.Values[1].Str, "u") || r.Values[2].Kind != pipeline.KindInt {
				t.Fatalf("record %v", r.Values)
			}
		}
	}
	_, err = tryOpen(t, c, "cols", "events", "", func(cfg *cassandra.Config) {
		cfg.Columns = pipeline.SourceSchema{{Name: "day", Type: "bigint"}, {Name: "nope", Type: "text"}}
	})
	if err == nil || !strings.Contains(err.Error(), `column "day" is int, not bigint`) || !strings.Contains(err.Error(), `no column "nope"`) {
		t.Errorf("bad columns: %v", err)
	}
}

// TestUnknownDataCenterIsRefused pins that dc= naming no data center of the cluster stops the
// source when it opens: gocql's DCAwareRoundRobinPolicy takes every host of another data center
// as a remote one and picks them all the same (policies.go, dcAwareRR.Pick: roundRobbin over the
// local hosts, then the remote ones), so a misspelt dc= would scan the data center it was meant
// to spare without a word.
func TestUnknownDataCenterIsRefused(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(2), cqltest.WithDataCenter("dc1", "rack1"))
	if c.Real() {
		t.Skip("the test server's data center")
	}
	seedEvents(t, c, "dcs", 10)
	_, err := tryOpen(t, c, "dcs", "events", "dc=dc2")
	if err == nil || !strings.Contains(err.Error(), `dc=dc2`) || !strings.Contains(err.Error(), "dc1") {
		t.Fatalf("dc=dc2 on a cluster of dc1: %v, want an error naming dc2 and the cluster's dc1", err)
	}
	src := open(t, c, "dcs", "events", "dc=dc1")
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	if rows := rowSet(t, batches); len(rows) != 10 {
		t.Fatalf("dc=dc1: %d rows, want 10", len(rows))
	}
}

// TestViewTakesItsBaseTableTTL pins that a materialized view read as the source has its base
// table's default_time_to_live, which the target table takes: a view cannot have one of its own
// (Cassandra refuses it: "Data in a materialized view always expire at the same time than the
// corresponding data in the parent table", CreateViewStatement), so its own is always 0, and
// taking it left the target without the TTL the view's rows expire by.
func TestViewTakesItsBaseTableTTL(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t) // the test server's views
	cols := []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}}
	must(t, srv.CreateTable("mv", "base", cols, []string{"id"}, nil))
	must(t, srv.SetDefaultTTL("mv", "base", 3600))
	must(t, srv.CreateView("mv", "by_v", "base", cols, []string{"v"}, []string{"id"}))
	must(t, srv.Insert("mv", "by_v", map[string]any{"v": "a", "id": 1}))
	if got := open(t, c, "mv", "base", "").DefaultTTL(); got != 3600 {
		t.Fatalf("the table's default TTL: %d, want 3600", got)
	}
	src := open(t, c, "mv", "by_v", "")
	if got := src.DefaultTTL(); got != 3600 {
		t.Fatalf("the view's default TTL: %d, want its base table's 3600", got)
	}
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	if rows := rowSet(t, batches); len(rows) != 1 {
		t.Fatalf("the view reads %d rows, want 1", len(rows))
	}
}

// TestEstimateWithANodeDown pins that the row estimate stands for the whole table when a node
// does not answer: the ranges the answering nodes list are scaled up to the whole ring. Before,
// the down node's ranges were left out without a word and 3 nodes with one down estimated about
// 2/3 of the table (the progress bar, a report's scale and a regions.size plan took it as the
// table's size).
func TestEstimateWithANodeDown(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(3), cqltest.WithVnodes(8))
	if c.Real() {
		t.Skip("takes a node down")
	}
	seedEvents(t, c, "downest", 20000)
	want := open(t, c, "downest", "events", "").EstimatedRows() // every node up
	if want < 18000 || want > 22000 {
		t.Fatalf("estimate with every node up: %d, want about 20000", want)
	}
	c.Server.StopNode(2)
	got := open(t, c, "downest", "events", "").EstimatedRows()
	if got < want*9/10 || got > want*11/10 {
		t.Errorf("estimate with a node down: %d, want about %d", got, want)
	}
}

// TestEstimateCountsRowsOfClusteredTables pins that the row estimate of a table with clustering
// columns counts rows, not partitions: system.size_estimates counts partitions, and the mean rows
// of a partition come from a few thin slices of the ring. Before, 500 partitions of 40 rows were
// estimated at 500 rows, which a report scaled its sample by and a regions.size plan sized the
// table by (40 times too few regions).
func TestEstimateCountsRowsOfClusteredTables(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(2))
	if c.Real() {
		t.Skip("the real node's size_estimates are refreshed every few minutes")
	}
	must(t, c.CreateTable("clustered", "series", []cqltest.Column{
		{Name: "sensor", Type: "int"}, {Name: "at", Type: "int"}, {Name: "v", Type: "double"},
	}, []string{"sensor"}, []string{"at"}))
	must(t, c.InsertMany("clustered", "series", 20000, func(i int, r map[string]any) error {
		r["sensor"], r["at"], r["v"] = int32(i%500), int32(i/500), float64(i)
		return nil
	}))
	if got := open(t, c, "clustered", "series", "").EstimatedRows(); got < 18000 || got > 22000 {
		t.Errorf("estimate of 500 partitions of 40 rows: %d, want about 20000", got)
	}
}

// TestDataCenterKeepsTheReadsThere pins that dc= keeps the table's reads in that data center,
// as docs/sources.md says: with its nodes down the ranges fail (named, the run exits non-zero)
// instead of being read from another data center. Before, gocql's DC-aware policy went on to
// the other data center's nodes and the scan read the whole table there without a word.
func TestDataCenterKeepsTheReadsThere(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(4), cqltest.WithNodeDataCenters("dc1", "dc1", "dc2", "dc2"))
	if c.Real() {
		t.Skip("takes nodes down")
	}
	seedEvents(t, c, "dcdown", 200)
	src := open(t, c, "dcdown", "events", "dc=dc1&splits=8&retries=1")
	c.Server.StopNode(0)
	c.Server.StopNode(1)
	batches, err := collect(context.Background(), src, nil)
	var re *cassandra.RangesError
	if !errors.As(err, &re) || len(re.Failed) != len(src.Ranges()) || !strings.Contains(err.Error(), "no node of dc=dc1 answers") {
		t.Errorf("dc=dc1 with its nodes down: %v (%d rows read), want every range named as not read", err, len(rowSet(t, batches)))
	}
}

// TestTimingOutRangeSaysWhatToChange pins that a range given up because its page kept timing
// out says what to change: smaller pages (page_size=, with the page's rows). Before, the
// error held the driver's message alone ("Operation timed out - received only 0 responses"),
// and a resume read the same pages and timed out the same way.
func TestTimingOutRangeSaysWhatToChange(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t)
	seedEvents(t, c, "slow", 600)
	src := open(t, c, "slow", "events", "splits=3&page_size=100&retries=1")
	bad := src.Ranges()[1]
	srv.FailPage(cqltest.FaultMatch{Table: "events", Page: 1, Range: cqltest.RangeIs(bad.Start, bad.End)}, cqltest.ErrReadTimeout)
	_, err := collect(context.Background(), src, nil)
	var re *cassandra.RangesError
	if !errors.As(err, &re) || len(re.Failed) != 1 || !strings.Contains(err.Error(), "smaller pages with page_size= (this page was of 100 rows)") {
		t.Fatalf("got %v, want the range named with what to change (smaller pages with page_size=)", err)
	}
}

// TestReadFailureSaysWhatToDo pins that a page a replica failed to read (Cassandra's
// ReadFailure, most often too many tombstones in one page) stops the run with what to do: read
// smaller pages, compact, look in the nodes' logs. Before, the error was the driver's
// "Operation failed - received 0 responses and 1 failures" alone.
func TestReadFailureSaysWhatToDo(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t)
	seedEvents(t, c, "readfail", 600)
	src := open(t, c, "readfail", "events", "splits=3&page_size=50")
	srv.FailPage(cqltest.FaultMatch{Table: "events", Page: 2}, cqltest.ErrReadFailure)
	_, err := collect(context.Background(), src, nil)
	if err == nil || !strings.Contains(err.Error(), "range(") || !strings.Contains(err.Error(), "tombstone") || !strings.Contains(err.Error(), "page_size=") {
		t.Fatalf("got %v, want the range named with what to do (tombstones, page_size=)", err)
	}
}
