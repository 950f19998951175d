package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

const testMapping = `version: 1
source:
  name: t
  columns: {id: bigint, name: text, score: double, ts: timestamp, amount: decimal}
target:
  table: t
  primary_key: "[id % 7 AS b][id]"
  columns:
    amount: "amount :: DECIMAL(10,2)"
regions:
  count: 1
`

func testProgram(t testing.TB) *transform.Program {
	t.Helper()
	m, err := transform.Decode([]byte(testMapping), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sliceSource sends records in batches of 100, as one stream.
type sliceSource struct{ recs []pipeline.Record }

func (s *sliceSource) Run(ctx context.Context, _ map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	for i := 0; i < len(s.recs); i += 100 {
		b := pipeline.Batch{Stream: "test", Records: s.recs[i:min(i+100, len(s.recs))]}
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func rec(id int64, name string, score float64, ts int64, amount string) pipeline.Record {
	return pipeline.Record{Seq: id, Values: []pipeline.Value{pipeline.Int(id), pipeline.Text(name), pipeline.Float(score), pipeline.Int(ts), pipeline.Decimal(amount)}}
}

func testRecords(n int) []pipeline.Record {
	recs := make([]pipeline.Record, n)
	for i := range recs {
		id := int64(i + 1)
		recs[i] = rec(id, fmt.Sprintf("name-%d", id), float64(id)/3, 1700000000000+id, fmt.Sprintf("%d.5", id))
	}
	return recs
}

// fakeTable is an in-memory LookupTarget: rows by their encoded key.
type fakeTable struct {
	schema  pipeline.TargetSchema
	max     int
	mu      sync.Mutex
	rows    map[string][]pipeline.Value
	calls   int
	maxSeen int
}

func (f *fakeTable) keyOf(vals []pipeline.Value) string {
	var b []byte
	for i, c := range f.schema.Key() {
		var e *pipeline.RowError
		if b, e = appendStored(b, c, vals[i]); e != nil {
			panic(e)
		}
	}
	return string(b)
}

func (f *fakeTable) MaxKeys() int { return f.max }
func (f *fakeTable) Close() error { return nil }
func (f *fakeTable) Lookup(_ context.Context, keys [][]pipeline.Value) ([][]pipeline.Value, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.maxSeen = max(f.maxSeen, len(keys))
	out := make([][]pipeline.Value, len(keys))
	for i, k := range keys {
		out[i] = f.rows[f.keyOf(k)]
	}
	return out, nil
}

// migrated fills a fake table as a migration would: every record through the program, the last
// row of a key winning. The values are stored as a SQL driver would return them (the key's
// bigint as an int, the decimal as its text at the column's scale).
func migrated(t testing.TB, p *transform.Program, recs []pipeline.Record) *fakeTable {
	t.Helper()
	f := &fakeTable{schema: p.Target(), max: 3, rows: map[string][]pipeline.Value{}}
	ev := p.NewEvaluator()
	b := &pipeline.Batch{Stream: "test"}
	for i := range recs {
		out := make([]pipeline.Value, len(p.Target().Columns))
		if ev.Apply(b, &recs[i], out) != nil {
			continue
		}
		for j, c := range p.Target().Columns {
			out[j].Str = strings.Clone(out[j].Str)
			if c.Type == pipeline.TypeDecimal {
				d, e := files.DecimalValue(c, out[j])
				if e != nil {
					t.Fatal(e)
				}
				out[j] = pipeline.Decimal(string(d.AppendText(nil, c.Scale)))
			}
		}
		f.rows[f.keyOf(out)] = out
	}
	return f
}

// list is the table's rows, in no order.
func (f *fakeTable) list() (rows [][]pipeline.Value) {
	for _, r := range f.rows {
		rows = append(rows, r)
	}
	return rows
}

func runLookup(t *testing.T, p *transform.Program, recs []pipeline.Record, tbl *fakeTable, mod func(*Config)) *Result {
	t.Helper()
	return runWith(t, Config{Program: p, Source: &sliceSource{recs}, Lookup: tbl}, mod)
}

// runWith runs cfg, changed by mod, with two workers and a temp folder of the test's.
func runWith(t *testing.T, cfg Config, mod func(*Config)) *Result {
	t.Helper()
	cfg.TmpDir, cfg.Workers = t.TempDir(), 2
	if mod != nil {
		mod(&cfg)
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestLookupEqual(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(1000)
	tbl := migrated(t, p, recs)
	res := runLookup(t, p, recs, tbl, nil)
	if !res.Equal || res.KeysChecked != 1000 || res.RowsChecked != 1000 || res.TargetRows != 1000 || res.Extra != nil {
		t.Fatalf("want equal, 1000 keys: %+v", res)
	}
	if tbl.maxSeen > 3 || tbl.calls < 1000/3 {
		t.Fatalf("lookups: %d calls, at most %d keys; want batches of at most MaxKeys=3", tbl.calls, tbl.maxSeen)
	}
}

// A missing row, a changed value and a changed float bit: missing 1, differ 2, with the columns
// and the source vs target values.
func TestLookupMissingAndDiffer(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(500)
	tbl := migrated(t, p, recs)
	key := func(id int64) string { return tbl.keyOf([]pipeline.Value{pipeline.Int(id % 7), pipeline.Int(id)}) }
	delete(tbl.rows, key(10))
	sc := p.Target()
	tbl.rows[key(20)][sc.Index("amount")] = pipeline.Decimal("99.00")
	row := tbl.rows[key(30)]
	row[sc.Index("score")] = pipeline.Float(row[sc.Index("score")].Float() + 1e-12) // a few bits off
	res := runLookup(t, p, recs, tbl, nil)
	if res.Equal || res.Missing != 1 || res.Differ != 2 {
		t.Fatalf("want missing 1, differ 2: %+v", res)
	}
	want := []ColumnCount{{"amount", 1}, {"score", 1}}
	if fmt.Sprint(res.DifferColumns) != fmt.Sprint(want) {
		t.Fatalf("differ columns %v, want %v", res.DifferColumns, want)
	}
	if len(res.Examples.Missing) != 1 || fmt.Sprint(res.Examples.Missing[0].Key) != "[{b 3} {id 10}]" || res.Examples.Missing[0].Where != "test:10" { // as rejects name it: stream:Seq
		t.Fatalf("missing example: %+v", res.Examples.Missing)
	}
	var found bool
	for _, e := range res.Examples.Differ {
		if len(e.Columns) == 1 && e.Columns[0] == (Diff{Column: "amount", Source: "20.50", Target: "99.00"}) {
			found = true
		}
	}
	if !found {
		t.Fatalf("differ examples lack amount 20.50 vs 99.00: %+v", res.Examples.Differ)
	}
}

// Two source rows with one key: the last one is what the target must hold, and the earlier one
// is counted as overwritten, not as missing or differing.
func TestDuplicateKeysCompareTheLastRow(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(300)
	recs = append(recs, rec(5, "renamed", 1, 2, "3.00"), rec(6, "again", 1, 2, "3"), rec(6, "last", 1, 2, "3"))
	tbl := migrated(t, p, recs)
	res := runLookup(t, p, recs, tbl, nil)
	if !res.Equal || res.RowsOverwritten != 3 || res.KeysChecked != 300 || res.RowsChecked != 303 {
		t.Fatalf("want equal, 3 rows overwritten, 300 keys of 303 rows: %+v", res)
	}
	// a target holding the first row of key 6 differs
	tbl2 := migrated(t, p, recs[:len(recs)-1])
	res = runLookup(t, p, recs, tbl2, nil)
	if res.Differ != 1 || res.Missing != 0 || fmt.Sprint(res.DifferColumns) != "[{name 1}]" {
		t.Fatalf("want differ 1 in name: %+v", res)
	}
}

// Rows the mapping rejects (a null key) are rejects, not missing rows.
// Source rows of one key that differ are one target row: the earlier ones are in no target row.
// The target still holds what the source's last rows say (EQUAL), but the verdict counts the
// rows lost that way, apart from identical repeats, which lose nothing.
func TestDistinctRowsOfOneKeyAreCountedAsLost(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(300)
	recs = append(recs, rec(5, "renamed", 1, 2, "3.00"), recs[5], rec(7, "again", 1, 2, "3"), rec(7, "last", 1, 2, "3"))
	tbl := migrated(t, p, recs)
	check := func(name string, res *Result) {
		t.Helper()
		if !res.Equal || res.RowsOverwritten != 4 || res.RowsLost != 3 {
			t.Errorf("%s: want equal, 4 rows overwritten of which 3 lost: equal %v, overwritten %d, lost %d", name, res.Equal, res.RowsOverwritten, res.RowsLost)
		}
		if v := Verdict(res); !strings.Contains(v, "3 source rows are in no target row") {
			t.Errorf("%s: the verdict does not count the rows lost: %s", name, v)
		}
	}
	check("lookup", runLookup(t, p, recs, tbl, nil))
	folder := writeFolder(t, p.Target(), migrated(t, p, recs).list())
	for _, once := range []bool{false, true} { // digests then values; values in one pass
		check(fmt.Sprintf("folder (one pass %v)", once), runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder, SourceOnce: once}, nil))
	}
	// identical repeats lose nothing: a plain EQUAL
	res := runLookup(t, p, append(testRecords(300), testRecords(3)...), migrated(t, p, testRecords(300)), nil)
	if !res.Equal || res.RowsOverwritten != 3 || res.RowsLost != 0 || strings.Contains(Verdict(res), "no target row") {
		t.Errorf("identical repeats: equal %v, overwritten %d, lost %d: %s", res.Equal, res.RowsOverwritten, res.RowsLost, Verdict(res))
	}
}

func TestRejectsAreNotMissing(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(100)
	recs = append(recs, pipeline.Record{Seq: 101, Values: []pipeline.Value{pipeline.Null, pipeline.Text("x"), pipeline.Null, pipeline.Null, pipeline.Null}},
		rec(102, "big", 1, 1, "123456789012.5")) // does not fit DECIMAL(10,2): the sink refuses it
	recs = append(recs, pipeline.Record{Seq: 103, Err: &pipeline.RowError{Code: pipeline.CodeParse, Message: "bad line"}})
	tbl := migrated(t, p, recs)
	res := runLookup(t, p, recs, tbl, nil)
	if !res.Equal || res.RowsRejected != 3 || res.RowsRead != 103 || res.KeysChecked != 100 {
		t.Fatalf("want equal with 3 rejects of 103 rows: %+v", res)
	}
	if res.RejectCodes[pipeline.CodeNullKey] != 1 || res.RejectCodes[pipeline.CodeType] != 1 || res.RejectCodes[pipeline.CodeParse] != 1 {
		t.Fatalf("reject codes %v", res.RejectCodes)
	}
}

// --sample picks keys by hash: the same keys on every run, every row of a key or none, and a
// row count gives that many rows.
func TestSampleByKeyHash(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(5000)
	tbl := migrated(t, p, recs)
	for id := int64(1); id <= 5000; id += 50 { // 100 keys gone
		delete(tbl.rows, tbl.keyOf([]pipeline.Value{pipeline.Int(id % 7), pipeline.Int(id)}))
	}
	full := runLookup(t, p, recs, tbl, nil)
	if full.Missing != 100 {
		t.Fatalf("full pass: missing %d, want 100", full.Missing)
	}
	pct := runLookup(t, p, recs, tbl, func(c *Config) { c.Sample = Sample{Fraction: 0.1} })
	if pct.KeysChecked < 350 || pct.KeysChecked > 650 || pct.Missing == 0 || pct.Missing > 30 || pct.Sample != "10%" {
		t.Fatalf("10%% sample: %d keys, %d missing", pct.KeysChecked, pct.Missing)
	}
	again := runLookup(t, p, recs, tbl, func(c *Config) { c.Sample = Sample{Fraction: 0.1}; c.Workers = 1 })
	if again.KeysChecked != pct.KeysChecked || again.Missing != pct.Missing || fmt.Sprint(again.Examples) != fmt.Sprint(pct.Examples) {
		t.Fatalf("a repeated sample differs: %+v vs %+v", again, pct)
	}
	rows := runLookup(t, p, recs, tbl, func(c *Config) { c.Sample = Sample{Rows: 700} })
	if rows.RowsChecked != 700 || rows.KeysChecked != 700 || rows.Sample != "700 rows" {
		t.Fatalf("--sample 700: %d rows, %d keys checked", rows.RowsChecked, rows.KeysChecked)
	}
	more := runLookup(t, p, recs, tbl, func(c *Config) { c.Sample = Sample{Rows: 1000000} })
	if more.RowsChecked != 5000 {
		t.Fatalf("a sample larger than the source checks it all: %d", more.RowsChecked)
	}
}

// A source larger than the memory budget: the buckets spill to temp files and are split again
// when compared, and the result is the same.
func TestSpillBeyondMemory(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(20000)
	recs = append(recs, rec(77, "dup", 0, 0, "1"), rec(77, "dup-last", 0, 0, "1"))
	tbl := migrated(t, p, recs)
	delete(tbl.rows, tbl.keyOf([]pipeline.Value{pipeline.Int(12345 % 7), pipeline.Int(12345)}))
	tmp := t.TempDir()
	var peak int
	splits := bucketSplits.Load()
	small := runLookup(t, p, recs, tbl, func(c *Config) {
		c.Memory = 16 << 10
		c.TmpDir = tmp
		c.Phase = func(name string, _ int64, _ *pipeline.Counters) func() {
			return func() { // the temp files as a phase ends
				n := 0
				filepath.Walk(tmp, func(_ string, fi os.FileInfo, _ error) error {
					if fi != nil && !fi.IsDir() {
						n++
					}
					return nil
				})
				peak = max(peak, n)
			}
		}
	})
	big := runLookup(t, p, recs, tbl, nil)
	if small.Missing != 1 || small.KeysChecked != 20000 || small.RowsOverwritten != 2 {
		t.Fatalf("small memory: %+v", small)
	}
	if peak < topBuckets/2 {
		t.Fatalf("%d temp files at most: the 16 KiB budget should have spilled most buckets", peak)
	}
	if n := bucketSplits.Load() - splits; n < topBuckets/2 {
		t.Fatalf("%d buckets split: each is larger than a 2 KiB share of the budget", n)
	}
	small.Seconds, big.Seconds, small.RowsPerSec, big.RowsPerSec = 0, 0, 0, 0
	if fmt.Sprintf("%+v", *small) != fmt.Sprintf("%+v", *big) {
		t.Fatalf("spilled result differs:\n%+v\n%+v", small, big)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("temp files left: %v", ents)
	}
}

// The stored form of every column type is the same whether computed from the values a
// transform produces or read back from the Parquet or CSV file the sink wrote: floats bit for
// bit, decimals at scale, timestamps, dates, binary, NULL vs empty string.
func TestStoredFormMatchesFiles(t *testing.T) {
	plan := sinktest.VarcharPlan()
	for _, f := range []files.Format{parquet.New(), csv.New()} {
		schema := sinktest.AllTypes()
		rows := sinktest.AllTypesRows(9000, 3, plan) // more than two of readParquet's batches
		if f.Name() == "csv" {
			schema, rows = sinktest.ForCSV(schema, rows) // no VARBINARY, no value CSV rejects
		}
		t.Run(f.Name(), func(t *testing.T) {
			buf, err := f.NewBuffer(schema)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, r := range rows {
				if err := buf.Append(r.Values); err != nil {
					continue // a value the sink refuses: a reject
				}
				var k, v []byte
				for i, c := range schema.Columns {
					var e *pipeline.RowError
					if i < schema.KeyLen {
						k, e = appendStored(k, c, r.Values[i])
					} else {
						v, e = appendStored(v, c, r.Values[i])
					}
					if e != nil {
						t.Fatalf("the sink accepted a value verify refuses: %v", e)
					}
				}
				want = append(want, string(k)+"|"+string(v))
			}
			var out bytes.Buffer
			w, err := f.NewWriter(&out, schema)
			if err != nil {
				t.Fatal(err)
			}
			ch := buf.Cut()
			if err := w.Write(ch); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := "data." + f.Ext()
			if err := os.WriteFile(filepath.Join(dir, path), out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			var used atomic.Int64
			v := &run{schema: schema, keyCols: schema.Columns[:schema.KeyLen], rowCols: schema.Columns[schema.KeyLen:], sampleMax: ^uint64(0),
				cfg: Config{Workers: 1, Logger: zap.NewNop(), Folder: &Folder{Objects: localStore(t, dir), Format: f.Name(), Files: []pipeline.FileInfo{{Path: path, Rows: int64(len(want))}}}}}
			v.res = &Result{}
			dst := newParts(dir, "target", 1, 0, &used, 1<<30)
			if err := v.readFolder(context.Background(), []int{0}, dst, &pipeline.Counters{}, ^uint64(0)); err != nil {
				t.Fatal(err)
			}
			chunks, _, err := dst.load(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := eachEntry(chunks, func(e entry) error {
				got = append(got, string(e.key)+"|"+string(e.row))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(want) < 2*readBatch {
				t.Fatalf("read %d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("row %d: file %q, values %q", i, got[i], want[i])
				}
			}
			if len(v.res.Notes) != 0 {
				t.Fatalf("notes: %v", v.res.Notes)
			}
		})
	}
}

func localStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// writeFolder writes rows (as the transform produces them) to one Parquet data file, as migrate
// would, and returns the folder target holding it.
func writeFolder(t *testing.T, schema pipeline.TargetSchema, rows [][]pipeline.Value) *Folder {
	t.Helper()
	dir := t.TempDir()
	if err := sinktest.WriteParquet(filepath.Join(dir, "part.parquet"), schema, rows); err != nil {
		t.Fatal(err)
	}
	return &Folder{Objects: localStore(t, dir), Location: dir, Format: "parquet",
		Files: []pipeline.FileInfo{{Path: "part.parquet", Rows: int64(len(rows))}}, Rows: int64(len(rows))}
}

// A folder target is compared by digests first and its differences value by value: the counts,
// the differing columns and the examples' keys are those the exact comparison of the same rows
// (a lookup target) finds, however many keys differ and whatever the memory.
func TestFolderDigestsAgreeWithExactComparison(t *testing.T) {
	p := testProgram(t)
	schema := p.Target()
	recs := testRecords(3000)
	recs = append(recs, rec(5, "renamed", 1, 2, "3.00"), rec(6, "again", 1, 2, "3"), rec(6, "last", 1, 2, "3"))
	tbl := migrated(t, p, recs)
	keyOf := func(id int64) string { return tbl.keyOf([]pipeline.Value{pipeline.Int(id % 7), pipeline.Int(id)}) }
	delete(tbl.rows, keyOf(17))
	delete(tbl.rows, keyOf(6)) // a duplicated key missing
	tbl.rows[keyOf(40)][schema.Index("name")] = pipeline.Text("changed")
	tbl.rows[keyOf(41)][schema.Index("amount")] = pipeline.Decimal("0.01")
	tbl.rows[keyOf(42)][schema.Index("score")] = pipeline.Float(0.5)
	var rows [][]pipeline.Value
	for _, r := range tbl.rows {
		rows = append(rows, r)
	}
	// in the folder only: a key the source lacks, and key 100 written twice
	stray := append([]pipeline.Value(nil), tbl.rows[keyOf(99)]...)
	stray[0], stray[1] = pipeline.Int(9999%7), pipeline.Int(9999)
	rows = append(rows, stray, tbl.rows[keyOf(100)])
	folder := writeFolder(t, schema, rows)

	exact := runLookup(t, p, recs, tbl, nil)
	keys := func(ex []Example) string {
		var s []string
		for _, e := range ex {
			s = append(s, fmt.Sprint(e.Key))
		}
		return strings.Join(s, " ")
	}
	runFolder := func(mod func(*Config)) *Result {
		return runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder}, mod)
	}
	check := func(name string, got *Result) {
		t.Helper()
		if got.Missing != 2 || got.Differ != 3 || got.Extra == nil || *got.Extra != 2 {
			t.Fatalf("%s: want 2 missing, 3 differ, 2 extra: %+v", name, got)
		}
		if got.Missing != exact.Missing || got.Differ != exact.Differ || fmt.Sprint(got.DifferColumns) != fmt.Sprint(exact.DifferColumns) ||
			got.KeysChecked != exact.KeysChecked || got.RowsChecked != exact.RowsChecked || got.RowsOverwritten != exact.RowsOverwritten ||
			keys(got.Examples.Missing) != keys(exact.Examples.Missing) || keys(got.Examples.Differ) != keys(exact.Examples.Differ) {
			t.Fatalf("%s differs from the exact comparison:\n%+v\n%+v", name, got, exact)
		}
		if len(got.Examples.Extra) != 2 || len(got.Notes) != 0 {
			t.Fatalf("%s: extra examples %+v, notes %v", name, got.Examples.Extra, got.Notes)
		}
	}
	check("digests", runFolder(nil))
	defer func(n int) { maxDetailKeys = n }(maxDetailKeys)
	maxDetailKeys = 2 // more keys differ: the detail pass compares all of them
	check("every key compared again", runFolder(nil))
	maxDetailKeys = 1 << 20
	splits := bucketSplits.Load()
	check("spilled", runFolder(func(c *Config) { c.Memory = 16 << 10 }))
	if bucketSplits.Load() == splits {
		t.Fatal("a 16 KiB budget split no bucket")
	}

	// equal: one pass only (the source is read once)
	same := writeFolder(t, schema, migrated(t, p, recs).list())
	src := &countingSource{sliceSource: sliceSource{recs}}
	res, err := Run(context.Background(), Config{Program: p, Source: src, Folder: same, TmpDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Equal || res.KeysChecked != 3000 || res.TargetRows != 3000 || src.runs != 1 {
		t.Fatalf("want equal after one read of the source: %+v (%d reads)", res, src.runs)
	}
}

type countingSource struct {
	sliceSource
	runs int
}

func (s *countingSource) Run(ctx context.Context, st map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	s.runs++
	return s.sliceSource.Run(ctx, st, out)
}

// Rows of one key the source lacks, written many times, are one key for the detail pass: they
// must not pass maxDetailKeys and send it over every key.
func TestStrayRowsAreOneDetailKey(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(500)
	tbl := migrated(t, p, recs)
	var rows [][]pipeline.Value
	for _, r := range tbl.rows {
		rows = append(rows, r)
	}
	stray := append([]pipeline.Value(nil), rows[0]...)
	stray[0], stray[1] = pipeline.Int(9999%7), pipeline.Int(9999)
	for range 5 {
		rows = append(rows, stray)
	}
	folder := writeFolder(t, p.Target(), rows)
	defer func(n int) { maxDetailKeys = n }(maxDetailKeys)
	maxDetailKeys = 2
	core, logs := observer.New(zap.InfoLevel)
	res := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder, Logger: zap.New(core)}, nil)
	if res.Extra == nil || *res.Extra != 5 || res.Missing != 0 || res.Differ != 0 {
		t.Fatalf("want 5 extra rows: %+v", res)
	}
	detail := logs.FilterMessage("comparing the differences value by value").All()
	if len(detail) != 1 || detail[0].ContextMap()["keys"] != "1 keys" {
		t.Fatalf("the detail pass was told %v, want the one stray key", detail)
	}
}

// A Parquet target file with damaged pages: arrow's zstd codec panics on them; verify fails
// with an error naming the file (exit 3 in the CLI), instead of crashing with the Go runtime's
// exit code 2, which reads as "different".
func TestDamagedParquetTargetIsAnError(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(20000)
	folder := writeFolder(t, p.Target(), migrated(t, p, recs).list())
	path := filepath.Join(folder.Location, folder.Files[0].Path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(data) / 4; i < len(data)/2; i += 97 { // the pages, not the footer
		data[i] ^= 0xff
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Program: p, Source: &sliceSource{recs}, Folder: folder, TmpDir: t.TempDir(), Workers: 2})
	if err == nil && res != nil && !res.Equal {
		// a page zstd stored raw (incompressible) decodes with its bytes flipped: the values
		// differ, and verify says so; the pages' layout varies with the writer's timing
		t.Logf("the damage decoded into other values: %d missing, %d differ", res.Missing, res.Differ)
		return
	}
	if err == nil || !strings.Contains(err.Error(), "part.parquet") || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("want an error naming the damaged file, or a result that is not equal; got %v (%+v)", err, res)
	}
}

// A target file cut short (a copy that did not finish) fails verify with an error that names the
// file and says what to do: copy it again, or migrate again.
func TestTruncatedTargetFileSaysWhatToDo(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(2000)
	folder := writeFolder(t, p.Target(), migrated(t, p, recs).list())
	path := filepath.Join(folder.Location, folder.Files[0].Path)
	if err := os.Truncate(path, 3000); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Config{Program: p, Source: &sliceSource{recs}, Folder: folder, TmpDir: t.TempDir(), Workers: 2})
	if err == nil || !strings.Contains(err.Error(), folder.Files[0].Path) || !strings.Contains(err.Error(), "copy it again") {
		t.Fatalf("want an error naming the file and what to do, got %v", err)
	}
}

// A sampled folder target passes over the rows of keys outside the sample: a row the source
// does not produce there is not seen, so the result must not say the target holds nothing else.
func TestSampledFolderDoesNotClaimNothingElse(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(500)
	rows := migrated(t, p, recs).list()
	keyHash := func(id int64) uint64 {
		var key []byte
		for i, c := range p.Target().Key() {
			var e *pipeline.RowError
			if key, e = appendStored(key, c, []pipeline.Value{pipeline.Int(id % 7), pipeline.Int(id)}[i]); e != nil {
				t.Fatal(e)
			}
		}
		h, _ := keyHashes(key)
		return h
	}
	fraction := 0.1
	id := int64(9999)
	for keyHash(id) <= uint64(fraction*(1<<64)) { // a stray key the sample leaves out
		id++
	}
	stray := append([]pipeline.Value(nil), rows[0]...)
	stray[0], stray[1] = pipeline.Int(id%7), pipeline.Int(id)
	folder := writeFolder(t, p.Target(), append(rows, stray))

	res := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder}, func(c *Config) { c.Sample = Sample{Fraction: fraction} })
	if res.ExtraScope == ExtraAll || strings.Contains(Verdict(res), "nothing else") {
		t.Fatalf("a sample claims every target row was checked: extra_scope %q, %q", res.ExtraScope, Verdict(res))
	}
	if res.ExtraScope != ExtraSampledKeys || !res.Equal {
		t.Fatalf("want the sampled keys equal, extra among them only: %+v", res)
	}
	// a sample of no key checks nothing: not equal
	none := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder}, func(c *Config) { c.Sample = Sample{Fraction: 1e-12} })
	if none.KeysChecked != 0 || none.Equal || !strings.HasPrefix(Verdict(none), "NOT VERIFIED") {
		t.Fatalf("a sample of no key: %q", Verdict(none))
	}
	// a sample as large as the source leaves nothing out: the stray row is extra
	all := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder}, func(c *Config) { c.Sample = Sample{Rows: 1000} })
	if all.ExtraScope != ExtraAll || all.Extra == nil || *all.Extra != 1 {
		t.Fatalf("--sample 1000 of 500 rows: want the stray row extra: %+v", all)
	}
}

// A key the source gives twice is in a folder twice (migrate writes every row): a target whose
// rows of it are the last source row and a row the source never held is not equal, whichever
// the bulk load keeps; the rows the source gave, in any number up to theirs, are.
func TestRepeatedKeyWithARowTheSourceNeverHeld(t *testing.T) {
	p := testProgram(t)
	recs := append(testRecords(300), rec(5, "renamed", 1, 2, "3.00")) // key 5 twice: the last wins
	rows := migrated(t, p, recs[:300]).list()                         // key 5's first row among them
	last := migrated(t, p, recs[300:]).list()[0]
	junk := append([]pipeline.Value(nil), last...)
	junk[p.Target().Index("name")] = pipeline.Text("never in the source")
	for _, tc := range []struct {
		name  string
		rows  [][]pipeline.Value
		equal bool
	}{
		{"both source rows", append(append([][]pipeline.Value(nil), rows...), last), true},
		{"the last row only", append(withoutKey5(p, rows), last), true},
		{"the last row twice", append(withoutKey5(p, rows), last, last), true},
		{"the last row and one never in the source", append(withoutKey5(p, rows), last, junk), false},
		{"one never in the source and the last row", append(withoutKey5(p, rows), junk, last), false},
	} {
		folder := writeFolder(t, p.Target(), tc.rows)
		for _, once := range []bool{false, true} { // digests then values; values in one pass
			res := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder, SourceOnce: once}, nil)
			if res.Equal != tc.equal || (!tc.equal && (res.Differ != 1 || len(res.Examples.Differ) != 1)) {
				t.Errorf("%s (one pass %v): equal %v, want %v: %d differ, examples %+v", tc.name, once, res.Equal, tc.equal, res.Differ, res.Examples.Differ)
			}
		}
	}
}

// withoutKey5 is rows without the row of key 5.
func withoutKey5(p *transform.Program, rows [][]pipeline.Value) [][]pipeline.Value {
	var out [][]pipeline.Value
	for _, r := range rows {
		if r[p.Target().Index("id")].Num != 5 {
			out = append(out, r)
		}
	}
	return out
}

// changingSource gives its first read's records, then the second's on every later read: a
// source that changed between verify's passes.
type changingSource struct {
	reads        int
	first, later []pipeline.Record
}

func (s *changingSource) Run(ctx context.Context, st map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	s.reads++
	recs := s.later
	if s.reads == 1 {
		recs = s.first
	}
	return (&sliceSource{recs}).Run(ctx, st, out)
}

// When the digests find differences that comparing their values does not (the source or the
// target changed between the passes), nothing was verified: not EQUAL with a note, which it
// said before, but NOT VERIFIED, naming both counts.
func TestPassesThatDisagreeAreNotEqual(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(300)
	folder := writeFolder(t, p.Target(), migrated(t, p, recs).list())
	changed := slices.Clone(recs)
	changed[4] = rec(5, "changed", 1, 2, "3.00")
	src := &changingSource{first: changed, later: recs}
	res := runWith(t, Config{Program: p, Source: src, Folder: folder}, nil)
	if src.reads < 2 {
		t.Fatalf("the source was read %d times: no second pass", src.reads)
	}
	if v := Verdict(res); res.Equal || !strings.HasPrefix(v, "NOT VERIFIED") || !strings.Contains(v, "found 1 difference") {
		t.Errorf("equal %v, verdict %q", res.Equal, v)
	}
}

// skippingSource sends records as sliceSource does, each batch telling skipped rows its filter
// left out (a Cassandra catch-up's since=).
type skippingSource struct {
	recs    []pipeline.Record
	skipped int64 // per batch
}

func (s *skippingSource) Run(ctx context.Context, _ map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	for i := 0; i < len(s.recs); i += 100 {
		b := pipeline.Batch{Stream: "test", Records: s.recs[i:min(i+100, len(s.recs))], Skipped: s.skipped}
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Rows the source's own filter leaves out (since=) are read but not checked, as migrate leaves
// them out: the summary counts them (rows read = checked + rejected + skipped) instead of
// reading as if the source held only the rows checked.
func TestRowsTheSourceSkipsAreCounted(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(500)
	folder := writeFolder(t, p.Target(), migrated(t, p, recs).list())
	for name, target := range map[string]func(*Config){
		"folder": func(c *Config) { c.Folder = folder },
		"lookup": func(c *Config) { c.Lookup = migrated(t, p, recs) },
	} {
		res := runWith(t, Config{Program: p, Source: &skippingSource{recs: recs, skipped: 3}}, target)
		var text bytes.Buffer
		if err := WriteText(&text, res); err != nil {
			t.Fatal(err)
		}
		if !res.Equal || res.RowsSkipped != 15 || res.RowsRead != 515 || res.RowsChecked != 500 || !strings.Contains(text.String(), "rows skipped") {
			t.Errorf("%s: 500 rows given and 15 skipped by the source: equal %v, read %d, skipped %d, checked %d\n%s",
				name, res.Equal, res.RowsRead, res.RowsSkipped, res.RowsChecked, text.String())
		}
	}
}
