package cassandra_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"

	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/cqlvalue"
	"github.com/rekey/rekey/transform"
)

// e2eCol is a column of the end-to-end table: gen gives row i's Go value for the insert (nil
// for null) and the value the file source would read for the same cell: the CSV text parsed by
// cqlvalue, or, for types cqlvalue does not read (time, duration, tuples), the value itself.
type e2eCol struct {
	name, typ string
	gen       func(i int) (goValue any, text string, direct *pipeline.Value)
}

func pv(v pipeline.Value) *pipeline.Value { return &v }

var e2eCols = []e2eCol{
	{"id", "bigint", func(i int) (any, string, *pipeline.Value) { return int64(i), strconv.Itoa(i), nil }},
	{"c_text", "text", func(i int) (any, string, *pipeline.Value) {
		switch {
		case i%11 == 0:
			return nil, "", pv(pipeline.Null)
		case i%7 == 0:
			return "", "", nil
		}
		s := fmt.Sprintf("tëxt-%d \"漢\"", i)
		return s, s, nil
	}},
	{"c_ascii", "ascii", func(i int) (any, string, *pipeline.Value) { s := "a" + strconv.Itoa(i*3); return s, s, nil }},
	{"c_int", "int", func(i int) (any, string, *pipeline.Value) {
		v := int32(i*7919) - 1e9
		return v, strconv.Itoa(int(v)), nil
	}},
	{"c_small", "smallint", func(i int) (any, string, *pipeline.Value) {
		v := int16(i%65536 - 32768)
		return v, strconv.Itoa(int(v)), nil
	}},
	{"c_tiny", "tinyint", func(i int) (any, string, *pipeline.Value) {
		v := int8(i%256 - 128)
		return v, strconv.Itoa(int(v)), nil
	}},
	{"c_varint", "varint", func(i int) (any, string, *pipeline.Value) {
		if i%1000 == 999 { // beyond BIGINT: the transform rejects the row (code "type")
			n := new(big.Int).Lsh(big.NewInt(1), 70)
			n.Add(n, big.NewInt(int64(i)))
			return n, n.String(), nil
		}
		n := big.NewInt(-int64(i) * 1000003)
		return n, n.String(), nil
	}},
	{"c_bool", "boolean", func(i int) (any, string, *pipeline.Value) { return i%3 == 0, strconv.FormatBool(i%3 == 0), nil }},
	{"c_float", "float", func(i int) (any, string, *pipeline.Value) {
		f := float32(i) / 7
		return f, strconv.FormatFloat(float64(f), 'g', -1, 32), nil
	}},
	{"c_double", "double", func(i int) (any, string, *pipeline.Value) {
		f := float64(i)/3 - 1000
		return f, strconv.FormatFloat(f, 'g', -1, 64), nil
	}},
	{"c_dec", "decimal", func(i int) (any, string, *pipeline.Value) {
		d := inf.NewDec(int64(i)*37-5000000, 3)
		return d, d.String(), nil
	}},
	{"c_ts", "timestamp", func(i int) (any, string, *pipeline.Value) {
		ms := int64(-315360000000) + int64(i)*1001 // from 1960
		return time.UnixMilli(ms).UTC(), strconv.FormatInt(ms, 10), nil
	}},
	{"c_date", "date", func(i int) (any, string, *pipeline.Value) {
		days := i%40000 - 20000
		return time.Unix(int64(days)*86400, 0).UTC(), time.Unix(int64(days)*86400, 0).UTC().Format("2006-01-02"), nil
	}},
	{"c_time", "time", func(i int) (any, string, *pipeline.Value) {
		ns := int64(i) * 1000003 % (86400 * 1e9)
		return time.Duration(ns), "", pv(pipeline.Int(ns))
	}},
	{"c_uuid", "uuid", func(i int) (any, string, *pipeline.Value) {
		u := e2eUUID(i, 4)
		return u, strings.ToUpper(u.String()), nil
	}},
	{"c_tuuid", "timeuuid", func(i int) (any, string, *pipeline.Value) {
		u := e2eUUID(i, 1)
		return u, u.String(), nil
	}},
	{"c_blob", "blob", func(i int) (any, string, *pipeline.Value) {
		if i%5 == 0 {
			return []byte{}, "0x", nil
		}
		b := []byte(strconv.Itoa(i))
		return b, "0x" + hex.EncodeToString(b), nil
	}},
	{"c_inet", "inet", func(i int) (any, string, *pipeline.Value) {
		var a netip.Addr
		if i%2 == 0 {
			a = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		} else {
			a = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
		}
		return net.IP(a.AsSlice()), a.String(), nil
	}},
	{"c_dur", "duration", func(i int) (any, string, *pipeline.Value) {
		d := gocql.Duration{Months: int32(i % 13), Days: int32(i % 31), Nanoseconds: int64(i%60) * 1e9}
		var b strings.Builder
		if d.Months >= 12 {
			fmt.Fprintf(&b, "%dy", d.Months/12)
		}
		if d.Months%12 > 0 {
			fmt.Fprintf(&b, "%dmo", d.Months%12)
		}
		if d.Days > 0 {
			fmt.Fprintf(&b, "%dd", d.Days)
		}
		if d.Nanoseconds > 0 {
			fmt.Fprintf(&b, "%ds", d.Nanoseconds/1e9)
		}
		if b.Len() == 0 {
			b.WriteString("0s")
		}
		return d, "", pv(pipeline.Text(b.String()))
	}},
	{"c_list", "list<int>", func(i int) (any, string, *pipeline.Value) {
		if i%4 == 0 {
			return nil, "", nil
		}
		l := []int32{int32(i), -1, int32(i % 7)}
		return l, fmt.Sprintf("[%d, -1, %d]", i, i%7), nil
	}},
	{"c_set", "set<text>", func(i int) (any, string, *pipeline.Value) {
		a, b := fmt.Sprintf("s%d", i%5), fmt.Sprintf("é%d", i%3)
		return []string{a, b}, fmt.Sprintf("{'%s', '%s'}", a, b), nil
	}},
	{"c_map", "map<text, bigint>", func(i int) (any, string, *pipeline.Value) {
		return map[string]int64{"k": int64(i), "j": -int64(i)}, fmt.Sprintf(`{"k": %d, "j": %d}`, i, -i), nil
	}},
	{"c_tuple", "tuple<int, text>", func(i int) (any, string, *pipeline.Value) {
		if i%9 == 0 {
			return nil, "", pv(pipeline.Null)
		}
		return []any{int32(i), fmt.Sprint("t", i)}, "", pv(pipeline.Text(fmt.Sprintf(`[%d,"t%d"]`, i, i)))
	}},
}

func e2eUUID(i, version int) gocql.UUID {
	sum := md5.Sum([]byte(strconv.Itoa(i)))
	sum[6] = sum[6]&0x0f | byte(version)<<4
	sum[8] = sum[8]&0x3f | 0x80
	return gocql.UUID(sum)
}

const e2eMapping = `
version: 1
source:
  name: e2e.all    # no columns: they come from the table's schema
target:
  table: all_types
  primary_key: "[md5(id).substr(0,4) AS h][id]"
  columns:
    bucket: id % 16
regions:
  count: 8
`

func seedE2E(t testing.TB, c *cassandratest.Cluster, ks string, n int) {
	t.Helper()
	cols := make([]cqltest.Column, len(e2eCols))
	for i, col := range e2eCols {
		cols[i] = cqltest.Column{Name: col.name, Type: col.typ}
	}
	must(t, c.CreateTable(ks, "all", cols, []string{"id"}, nil))
	must(t, c.InsertMany(ks, "all", n, func(i int, row map[string]any) error {
		for _, col := range e2eCols {
			if v, _, _ := col.gen(i); v != nil {
				row[col.name] = v
			}
		}
		return nil
	}))
}

// expectedRows computes what the migration must write, independently of the Cassandra source:
// each seeded cell as the file source reads its CSV text (cqlvalue.ParseText), run through the
// compiled mapping. It also returns how many rows the mapping rejects.
func expectedRows(t testing.TB, prog *transform.Program, schema pipeline.SourceSchema, n int) ([]string, int) {
	t.Helper()
	types := make([]cqlvalue.Type, len(e2eCols))
	pos := make([]int, len(e2eCols))
	for k, col := range e2eCols {
		if ct, err := cqlvalue.ParseType(col.typ); err == nil {
			types[k] = ct
		}
		pos[k] = schema.Index(col.name)
		if pos[k] < 0 {
			t.Fatalf("schema has no %s", col.name)
		}
	}
	ev := prog.NewEvaluator()
	target := prog.Target()
	b := &pipeline.Batch{Stream: "expected"}
	var rows []string
	rejected := 0
	out := make([]pipeline.Value, len(target.Columns))
	for i := 0; i < n; i++ {
		vals := make([]pipeline.Value, len(schema))
		for k, col := range e2eCols {
			goV, text, direct := col.gen(i)
			switch {
			case direct != nil:
				vals[pos[k]] = *direct
			case goV == nil:
			default:
				v, err := types[k].ParseText(text)
				if err != nil {
					t.Fatalf("row %d %s: cqlvalue %q: %v", i, col.name, text, err)
				}
				vals[pos[k]] = v
			}
		}
		rec := pipeline.Record{Values: vals, Seq: int64(i)}
		if rerr := ev.Apply(b, &rec, out); rerr != nil {
			rejected++
			continue
		}
		// the key rewrite, checked independently of the transform
		sum := md5.Sum([]byte(strconv.Itoa(i)))
		if h := hex.EncodeToString(sum[:])[:4]; out[0].Str != h {
			t.Fatalf("row %d: key prefix %q, want %q", i, out[0].Str, h)
		}
		rows = append(rows, canonRow(target, out))
		ev.Reset()
	}
	sort.Strings(rows)
	return rows, rejected
}

func e2eRows(t testing.TB) int {
	if testing.Short() {
		return 20000
	}
	return 200000
}

// TestEndToEndParquet migrates a table with a column of every supported type through the real
// pipeline into Parquet and reads the files back with parquet-go.
func TestEndToEndParquet(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(2))
	n := e2eRows(t)
	start := time.Now()
	seedE2E(t, c, "e2e", n)
	t.Logf("seeded %d rows in %v", n, time.Since(start))
	src := open(t, c, "e2e", "all", "page_size=2000")
	prog := compile(t, src.Schema(), e2eMapping)
	out := filepath.Join(t.TempDir(), "out")
	start = time.Now()
	res, err := migrate(t, src, prog, out, runOpts{})
	must(t, err)
	t.Logf("migrated %d rows in %v (%.0f rows/s)", res.RowsIn, time.Since(start), float64(res.RowsIn)/time.Since(start).Seconds())
	start = time.Now()
	want, rejected := expectedRows(t, prog, src.Schema(), n)
	t.Logf("expected rows computed in %v", time.Since(start))
	if res.RowsIn != int64(n) || res.RowsRejected != int64(rejected) || res.RowsWritten != int64(len(want)) {
		t.Fatalf("in %d written %d rejected %d; want %d, %d, %d", res.RowsIn, res.RowsWritten, res.RowsRejected, n, len(want), rejected)
	}
	if rejected == 0 || res.RejectCodes["type"] != int64(rejected) {
		t.Errorf("reject codes %v", res.RejectCodes)
	}
	cp, err := outputtest.Checkpoint(out)
	must(t, err)
	start = time.Now()
	got := readOutput(t, out, prog.Target(), cp.Plan)
	t.Logf("read back with parquet-go in %v", time.Since(start))
	compareRows(t, got, want)
	rej, err := os.ReadFile(filepath.Join(out, output.RejectsFile))
	must(t, err)
	if lines := strings.Count(string(rej), "\n"); lines != rejected || !strings.Contains(string(rej), `"range(`) {
		t.Errorf("rejects.jsonl: %d lines, want %d", lines, rejected)
	}
}

func compareRows(t testing.TB, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			t.Fatalf("first difference at sorted row %d:\n got  %s\n want %s", i, got[i], want[i])
		}
	}
}

// TestEndToEndResume interrupts migrations (Ctrl-C at several points, a hard cancel, and a
// page that keeps failing) and resumes them: the output must hold exactly the rows of a clean run.
func TestEndToEndResume(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(2))
	n := e2eRows(t) / 10
	seedE2E(t, c, "e2r", n)
	params := "page_size=500&splits=24&workers=3"
	src := open(t, c, "e2r", "all", params)
	prog := compile(t, src.Schema(), e2eMapping)
	clean := filepath.Join(t.TempDir(), "clean")
	_, err := migrate(t, src, prog, clean, runOpts{})
	must(t, err)
	cp, _ := outputtest.Checkpoint(clean)
	want := readOutput(t, clean, prog.Target(), cp.Plan)

	resumeAll := func(out string) {
		t.Helper()
		for attempt := 0; ; attempt++ {
			_, err := migrate(t, open(t, c, "e2r", "all", params), prog, out, runOpts{resume: true, checkpointEvery: 20 * time.Millisecond})
			if err == nil {
				break
			}
			if attempt > 3 {
				t.Fatalf("resume: %v", err)
			}
		}
		cp, err := outputtest.Checkpoint(out)
		must(t, err)
		if !cp.Complete {
			t.Fatal("resumed run not complete")
		}
		compareRows(t, readOutput(t, out, prog.Target(), cp.Plan), want)
	}

	// Ctrl-C after some rows: what was read is committed, the rest is read on resume
	for _, after := range []int64{1, int64(n) / 3, int64(n) * 9 / 10} {
		t.Run(fmt.Sprintf("stop-after-%d", after), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			s := open(t, c, "e2r", "all", params)
			stop := make(chan struct{})
			counting := &stopAfter{Source: s, after: after, stop: stop}
			_, err := migrate(t, counting, prog, out, runOpts{stop: stop, checkpointEvery: 10 * time.Millisecond})
			if !errors.Is(err, runner.ErrInterrupted) {
				t.Fatalf("interrupted run: %v", err)
			}
			resumeAll(out)
		})
	}
	// a hard cancel (a crash): nothing after the last checkpoint survives, resume redoes it
	t.Run("hard-cancel", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		ctx, cancel := context.WithCancel(context.Background())
		s := open(t, c, "e2r", "all", params)
		counting := &stopAfter{Source: s, after: int64(n) / 2, cancel: cancel}
		_, err := migrate(t, counting, prog, out, runOpts{ctx: ctx, checkpointEvery: 15 * time.Millisecond})
		if err == nil {
			t.Fatal("cancelled run succeeded")
		}
		resumeAll(out)
	})
	// a page of one range keeps timing out: the run fails naming the range, the checkpoint has
	// every other range done, and a resume after the fault clears completes the output
	t.Run("failing-range", func(t *testing.T) {
		srv := c.Faults(t)
		out := filepath.Join(t.TempDir(), "out")
		s := open(t, c, "e2r", "all", params, func(cfg *cassandra.Config) { cfg.Retries = 2 })
		bad := s.Ranges()[5]
		f := srv.FailPage(cqltest.FaultMatch{Table: "all", Page: 1, Range: cqltest.RangeIs(bad.Start, bad.End)}, cqltest.ErrReadTimeout)
		defer srv.RemoveFault(f)
		_, err := migrate(t, s, prog, out, runOpts{checkpointEvery: 5 * time.Millisecond})
		var re *cassandra.RangesError
		if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Range != bad {
			t.Fatalf("got %v, want the failure of %s", err, bad)
		}
		cp, err := outputtest.Checkpoint(out)
		must(t, err)
		if cp == nil || cp.Streams[bad.Name()].Done {
			t.Fatalf("checkpoint %v: the failed range must not be done", cp)
		}
		srv.RemoveFault(f)
		resumeAll(out)
	})
}

// stopAfter wraps a source and closes stop (Ctrl-C) or calls cancel (a crash) once after rows
// were delivered.
type stopAfter struct {
	*cassandra.Source
	after  int64
	stop   chan struct{}
	cancel context.CancelFunc
}

func (s *stopAfter) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	mid := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() { errc <- s.Source.Run(ctx, resume, mid); close(mid) }()
	var rows int64
	fired, cut := false, false
	for b := range mid {
		if cut {
			continue // drain: the source is stopping
		}
		select {
		case out <- b:
		case <-ctx.Done():
			// Forward nothing after a batch that was not delivered: a later page of the same
			// range would carry a cursor past the dropped one, and its rows would be lost (as a
			// real source never does: it returns at the first send it cannot make).
			cut = true
			continue
		}
		rows += int64(len(b.Records))
		if rows >= s.after && !fired {
			fired = true
			if s.stop != nil {
				close(s.stop)
			}
			if s.cancel != nil {
				s.cancel()
			}
		}
	}
	return <-errc
}
