package gen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/file"
)

func runAll(t testing.TB, src *Source, resume map[string]pipeline.StreamState) []pipeline.Batch {
	t.Helper()
	out := make(chan pipeline.Batch, 4)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background(), resume, out); close(out) }()
	var bs []pipeline.Batch
	for b := range out {
		bs = append(bs, b)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return bs
}

func records(bs []pipeline.Batch) []pipeline.Record {
	var rs []pipeline.Record
	for _, b := range bs {
		rs = append(rs, b.Records...)
	}
	return rs
}

func mustNew(t testing.TB, cfg Config, schema pipeline.SourceSchema) *Source {
	t.Helper()
	s, err := New(cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseURI(t *testing.T) {
	cases := []struct {
		uri  string
		want Config
		err  string
	}{
		{uri: "gen:orders", want: Config{Name: "orders", Rows: 1000000, Seed: 1}},
		{uri: "gen:orders?rows=1000&seed=7", want: Config{Name: "orders", Rows: 1000, Seed: 7}},
		{uri: "gen:logs?rows=5m", want: Config{Name: "logs", Rows: 5000000, Seed: 1}},
		{uri: "gen:logs?rows=0", want: Config{Name: "logs", Rows: 0, Seed: 1}},
		{uri: "gen:nope", err: `unknown generator "nope" (have orders, logs, transactions)`},
		{uri: "gen:orders?rows=-1", err: "not a row count"},
		{uri: "gen:orders?seed=x", err: "not an integer"},
		{uri: "gen:orders?row=1", err: `unknown parameter "row"`},
		{uri: "orders", err: "want gen:NAME"},
	}
	for _, c := range cases {
		got, err := ParseURI(c.uri)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.uri, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.uri, err)
			continue
		}
		got.BatchSize, got.Workers = 0, 0
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.uri, got, c.want)
		}
	}
}

func TestColumnsExact(t *testing.T) {
	o, _ := Columns("orders")
	l, _ := Columns("logs")
	if got := fmt.Sprint(o); got != "[{userid text} {orderid bigint} {channel text} {ts timestamp} {status text} {location text} {amount decimal}]" {
		t.Fatal(got)
	}
	if got := fmt.Sprint(l); got != "[{ts timestamp} {hostname text} {log-event text} {level text} {latency_ms int} {message text}]" {
		t.Fatal(got)
	}
}

func TestDeterministicAndResume(t *testing.T) {
	for _, name := range Names() {
		ref := records(runAll(t, mustNew(t, Config{Name: name, Rows: 1000, Seed: 7, BatchSize: 1000, Workers: 1}, nil), nil))
		if len(ref) != 1000 {
			t.Fatalf("%d rows", len(ref))
		}
		bs := runAll(t, mustNew(t, Config{Name: name, Rows: 1000, Seed: 7, BatchSize: 33, Workers: 4}, nil), nil)
		if got := records(bs); !reflect.DeepEqual(got, ref) {
			t.Fatalf("%s: parallel run differs", name)
		}
		other := records(runAll(t, mustNew(t, Config{Name: name, Rows: 1000, Seed: 8}, nil), nil))
		same := 0
		for i := range other {
			if reflect.DeepEqual(other[i].Values, ref[i].Values) {
				same++
			}
		}
		if same > 10 {
			t.Fatalf("%s: seed 8 repeats %d rows of seed 7", name, same)
		}
		src := mustNew(t, Config{Name: name, Rows: 1000, Seed: 7, BatchSize: 33, Workers: 2}, nil)
		seen := 0
		for i, b := range bs {
			if b.Stream != "gen:"+name || b.Done != (i == len(bs)-1) {
				t.Fatalf("batch %d: stream %q done %v", i, b.Stream, b.Done)
			}
			seen += len(b.Records)
			if b.Cursor != fmt.Sprint(seen) {
				t.Fatalf("cursor %q after %d rows", b.Cursor, seen)
			}
			rest := records(runAll(t, src, map[string]pipeline.StreamState{b.Stream: {Cursor: b.Cursor}}))
			if !reflect.DeepEqual(rest, ref[seen:]) && !(len(rest) == 0 && seen == len(ref)) {
				t.Fatalf("%s: resume at %s: %d rows", name, b.Cursor, len(rest))
			}
		}
		if n := len(runAll(t, src, map[string]pipeline.StreamState{"gen:" + name: {Cursor: "1000", Done: true}})); n != 0 {
			t.Fatalf("done stream sent %d batches", n)
		}
		sample, err := src.Sample(context.Background(), 10)
		if err != nil || len(sample) != 10 {
			t.Fatal(err)
		}
		// one row of each hundred, the same as the run's row at that index
		for k, r := range sample {
			if r.Seq < int64(k*100) || r.Seq >= int64(k*100+100) || !reflect.DeepEqual(r.Values, ref[r.Seq].Values) {
				t.Fatalf("%s: sample %d = row %d %v, want a row of %d..%d as the run gives it", name, k, r.Seq, r.Values, k*100, k*100+99)
			}
		}
		if src.EstimatedRows() != 1000 {
			t.Fatal(src.EstimatedRows())
		}
	}
}

func TestSchemaSubset(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "amount", Type: "DECIMAL"}, {Name: "userid", Type: "varchar"}}
	src := mustNew(t, Config{Name: "orders", Rows: 50, Seed: 3}, schema)
	full := records(runAll(t, mustNew(t, Config{Name: "orders", Rows: 50, Seed: 3}, nil), nil))
	for i, r := range records(runAll(t, src, nil)) {
		if len(r.Values) != 2 || r.Values[0] != full[i].Values[6] || r.Values[1] != full[i].Values[0] {
			t.Fatalf("row %d: %v vs %v", i, r.Values, full[i].Values)
		}
	}
	for _, bad := range []pipeline.SourceSchema{
		{{Name: "userid", Type: "bigint"}},
		{{Name: "user", Type: "text"}},
		{{Name: "ts", Type: "timestamp"}, {Name: "nope", Type: "int"}},
	} {
		_, err := New(Config{Name: "orders"}, bad, nil)
		if err == nil || !strings.Contains(err.Error(), "the generator has: userid text, orderid bigint, channel text, ts timestamp, status text, location text, amount decimal") {
			t.Fatalf("%v: %v", bad, err)
		}
	}
}

func TestWriteCSVReadsBack(t *testing.T) {
	for _, name := range Names() {
		path := filepath.Join(t.TempDir(), name+".csv")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteCSV(f, name, 3000, 11); err != nil {
			t.Fatal(err)
		}
		f.Close()
		schema, _ := Columns(name)
		fsrc, err := file.New(file.Config{Path: path, Schema: schema}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := make(chan pipeline.Batch, 100)
		if err := fsrc.Run(context.Background(), nil, out); err != nil {
			t.Fatal(err)
		}
		close(out)
		var got []pipeline.Record
		for b := range out {
			got = append(got, b.Records...)
		}
		want := records(runAll(t, mustNew(t, Config{Name: name, Rows: 3000, Seed: 11}, nil), nil))
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", name, len(got), len(want))
		}
		for i := range want {
			if got[i].Err != nil || !equalValues(got[i].Values, want[i].Values) || got[i].Seq != int64(i)+2 {
				t.Fatalf("%s row %d: %v %v, want %v", name, i, got[i].Err, got[i].Values, want[i].Values)
			}
		}
	}
}

func TestOrdersShape(t *testing.T) {
	const n = 200000
	rs := records(runAll(t, mustNew(t, Config{Name: "orders", Rows: n, Seed: 1}, nil), nil))
	channels := map[string]int{}
	users := map[string]int{}
	statuses := map[string]int{}
	cities := map[string]bool{}
	var bytes int
	for i, r := range rs {
		v := r.Values
		if v[1].Num != 1000000000+int64(i) {
			t.Fatalf("orderid %d at %d", v[1].Num, i)
		}
		if ts := v[3].Num; ts < 1704067200000+int64(i)*4 || ts > 1704067200000+int64(i)*4+7 {
			t.Fatalf("ts %d at %d", ts, i)
		}
		if len(v[0].Str) != 11 || v[0].Str[0] != 'u' || strings.Trim(v[0].Str[1:], "0123456789") != "" {
			t.Fatalf("userid %q", v[0].Str)
		}
		a := v[6].Str
		if dot := strings.IndexByte(a, '.'); dot < 1 || len(a)-dot != 3 {
			t.Fatalf("amount %q", a)
		}
		channels[v[2].Str]++
		users[v[0].Str]++
		statuses[v[4].Str]++
		cities[v[5].Str] = true
		bytes += len(v[0].Str) + 10 + len(v[2].Str) + 13 + len(v[4].Str) + len(v[5].Str) + len(a) + 7
	}
	if p := float64(channels["taobao"]) / n; p < 0.55 || p > 0.65 || len(channels) != 5 {
		t.Fatalf("channels %v", channels)
	}
	if len(statuses) != 5 || len(cities) != 30 {
		t.Fatalf("statuses %v cities %d", statuses, len(cities))
	}
	top := 0
	for _, c := range users {
		top = max(top, c)
	}
	// Skew: the hottest user has far more than the uniform share, and many users appear.
	if top < 200 || len(users) < 50000 {
		t.Fatalf("users: %d distinct, hottest %d", len(users), top)
	}
	t.Logf("csv bytes/row %.1f, distinct users %d, hottest %d, channels %v, statuses %v", float64(bytes)/n, len(users), top, channels, statuses)
}

func TestCancel(t *testing.T) {
	src := mustNew(t, Config{Name: "orders", Rows: 100000000}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(ctx, nil, out) }()
	<-out
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not stop")
	}
}

func TestEmpty(t *testing.T) {
	bs := runAll(t, mustNew(t, Config{Name: "logs", Rows: 0}, nil), nil)
	if len(bs) != 1 || !bs[0].Done || len(bs[0].Records) != 0 || bs[0].Cursor != "0" {
		t.Fatalf("%+v", bs)
	}
}

func BenchmarkGenOrders(b *testing.B) {
	const rows = 1000000
	b.ReportAllocs()
	var total int64
	for i := 0; i < b.N; i++ {
		src := mustNew(b, Config{Name: "orders", Rows: rows}, nil)
		out := make(chan pipeline.Batch, 4)
		go func() {
			if err := src.Run(context.Background(), nil, out); err != nil {
				panic(err)
			}
			close(out)
		}()
		for bt := range out {
			total += int64(len(bt.Records))
		}
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkGenOrdersOneCore(b *testing.B) {
	src := mustNew(b, Config{Name: "orders", Rows: 1 << 40}, nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		src.batch(int64(i)*4096, int64(i+1)*4096)
	}
	b.ReportMetric(float64(b.N)*4096/b.Elapsed().Seconds(), "rows/s")
}

// TestGolden pins the first rows: the data sets must not change between versions or machines
// (benchmarks and demos compare runs).
func TestGolden(t *testing.T) {
	want := map[string]string{
		"orders": `userid,orderid,channel,ts,status,location,amount
u1234567891,1000000000,taobao,1704067200003,DELIVERED,Shenzhen,79.96
u0954951931,1000000001,alipay,1704067200007,DELIVERED,Dongguan,8.00
u9347706975,1000000002,alipay,1704067200015,DELIVERED,Qingdao,580.18
u9164723461,1000000003,wechat,1704067200017,DELIVERED,Kunming,12.36
`,
		"logs": `ts,hostname,log-event,level,latency_ms,message
1704067200000,web-10,http_request,INFO,5,GET /api/user 304
1704067200004,web-19,http_request,INFO,23,GET /api/user 304
1704067200007,web-14,auth_logout,INFO,81,logout
`,
	}
	for name, w := range want {
		var b strings.Builder
		if err := WriteCSV(&b, name, int64(strings.Count(w, "\n")-1), 1); err != nil {
			t.Fatal(err)
		}
		if b.String() != w {
			t.Errorf("%s:\n%s\nwant\n%s", name, b.String(), w)
		}
	}
}

// equalValues compares by Value.Equal: a decimal read back from text carries its number too.
func equalValues(a, b []pipeline.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// A shard generates its rows only but samples the whole generator, as the whole run does: before,
// each shard sampled its own rows, so shards written into one output (--shared-out) placed other
// quantile splits and all but the first were refused.
func TestShardSamplesTheWholeGenerator(t *testing.T) {
	whole, err := New(Config{Name: "logs", Rows: 3000}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := whole.Sample(t.Context(), 30)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		sh := pipeline.Shard{Index: i, Count: 3}
		src, err := New(Config{Name: "logs", Rows: 3000, Shard: sh}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := src.Sample(t.Context(), 30)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("shard %s samples other rows than the whole generator (%v): the shards would plan other regions", sh, err)
		}
		if src.EstimatedRows() != 1000 {
			t.Fatalf("shard %s estimates %d rows, want its 1000", sh, src.EstimatedRows())
		}
	}
}
