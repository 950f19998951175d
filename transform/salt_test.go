package transform

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform/murmur3"
)

const saltYAML = `version: 1
source: {columns: {userid: text, orderid: bigint, note: text}}
target: {table: t, primary_key: "[userId][orderid][random(100)]"}
`

func salt(t *testing.T, p *Program, b *pipeline.Batch, r *pipeline.Record) int64 {
	t.Helper()
	out := make([]pipeline.Value, len(p.Target().Columns))
	if rerr := p.NewEvaluator().ApplyKey(b, r, out); rerr != nil {
		t.Fatal(rerr)
	}
	return out[2].Num
}

// TestRandomExactHash pins down what random(n) hashes (README.md "random(n)"): per source value
// a kind byte, then 8 big-endian bytes of Value.I (int, float bits, bool) or a 4-byte big-endian
// length and the bytes (text, bytes, decimal), nothing for null; with Batch.SaltOrigin also 0xff,
// the stream (length + bytes) and Seq (8 bytes); the salt is uint64(murmur3.Token(buf)) % n.
func TestRandomExactHash(t *testing.T) {
	p := compileYAML(t, saltYAML)
	r := &pipeline.Record{Seq: 42, Values: []pipeline.Value{pipeline.Text("abc"), pipeline.Int(7), pipeline.Null}}
	buf := []byte{byte(pipeline.KindText), 0, 0, 0, 3, 'a', 'b', 'c', byte(pipeline.KindInt), 0, 0, 0, 0, 0, 0, 0, 7, byte(pipeline.KindNull)}
	want := int64(uint64(murmur3.Token(buf)) % 100)
	if got := salt(t, p, &pipeline.Batch{Stream: "x"}, r); got != want {
		t.Errorf("salt %d, want %d", got, want)
	}
	origin := append(append([]byte{}, buf...), 0xff, 0, 0, 0, 4, 't', '/', '3', ':')
	origin = binary.BigEndian.AppendUint64(origin, 42)
	want = int64(uint64(murmur3.Token(origin)) % 100)
	if got := salt(t, p, &pipeline.Batch{Stream: "t/3:", SaltOrigin: true}, r); got != want {
		t.Errorf("origin salt %d, want %d", got, want)
	}
}

func TestRandomDeterministic(t *testing.T) {
	p := compileYAML(t, saltYAML)
	p2 := compileYAML(t, saltYAML)
	mk := func(seq int64, note pipeline.Value) *pipeline.Record {
		return &pipeline.Record{Seq: seq, Values: []pipeline.Value{pipeline.Text("u1"), pipeline.Int(5), note}}
	}
	file := &pipeline.Batch{Stream: "a.csv"}
	a := salt(t, p, file, mk(1, pipeline.Text("x")))
	if b := salt(t, p2, &pipeline.Batch{Stream: "other.csv"}, mk(99, pipeline.Text("x"))); a != b {
		t.Errorf("same values, other stream and position: %d vs %d (files hash values only)", a, b)
	}
	// every value counts, null differs from empty
	e := p.NewEvaluator()
	hash := func(r *pipeline.Record) uint64 { e.saltOK = false; return e.recordSalt(r) }
	if hash(mk(1, pipeline.Null)) == hash(mk(1, pipeline.Text(""))) {
		t.Error("null and empty text hash alike")
	}
	if hash(mk(1, pipeline.Text("x"))) == hash(mk(1, pipeline.Text("y"))) {
		t.Error("a non-key value does not count")
	}
	// no ambiguity between adjacent strings
	r1 := &pipeline.Record{Values: []pipeline.Value{pipeline.Text("ab"), pipeline.Int(5), pipeline.Text("c")}}
	r2 := &pipeline.Record{Values: []pipeline.Value{pipeline.Text("a"), pipeline.Int(5), pipeline.Text("bc")}}
	if hash(r1) == hash(r2) {
		t.Error("('ab','c') and ('a','bc') hash alike")
	}
	// Kafka: two identical messages at different offsets are two events
	kafka := &pipeline.Batch{Stream: "orders/0", SaltOrigin: true}
	differ := 0
	for seq := int64(0); seq < 20; seq++ {
		if salt(t, p, kafka, mk(seq, pipeline.Text("x"))) != salt(t, p2, kafka, mk(seq, pipeline.Text("x"))) {
			t.Fatal("same offset, different salt")
		}
		if salt(t, p, kafka, mk(seq, pipeline.Text("x"))) != a {
			differ++
		}
	}
	if differ < 10 {
		t.Errorf("origin salts barely vary: %d of 20 differ", differ)
	}
}

// Distinct records spread uniformly over the salts: chi-square over 100 buckets, 100k records.
func TestRandomUniform(t *testing.T) {
	p := compileYAML(t, saltYAML)
	e := p.NewEvaluator()
	out := make([]pipeline.Value, len(p.Target().Columns))
	const n, buckets = 100_000, 100
	counts := make([]int, buckets)
	b := &pipeline.Batch{Stream: "s"}
	for i := 0; i < n; i++ {
		r := &pipeline.Record{Values: []pipeline.Value{pipeline.Text("user" + strconv.Itoa(i%1000)), pipeline.Int(int64(i)), pipeline.Null}}
		if rerr := e.ApplyKey(b, r, out); rerr != nil {
			t.Fatal(rerr)
		}
		if out[2].Num < 0 || out[2].Num >= buckets {
			t.Fatalf("salt %d out of range", out[2].Num)
		}
		counts[out[2].Num]++
		if i%1024 == 0 {
			e.Reset()
		}
	}
	exp := float64(n) / buckets
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - exp
		chi += d * d / exp
	}
	// 99 degrees of freedom: mean 99, sd 14; 99.99th percentile is about 158
	if chi > 160 {
		t.Errorf("chi-square %.1f over %d buckets: not uniform", chi, buckets)
	}
}

// One Program, one Evaluator per goroutine: results equal the sequential ones (run with -race).
func TestConcurrentEvaluators(t *testing.T) {
	p := loadProgram(t, "orders.yaml")
	recs := benchRecords(2000)
	want := applyAll(t, p, recs)
	done := make(chan [][]pipeline.Value)
	for g := 0; g < 4; g++ {
		go func() {
			e := p.NewEvaluator()
			var rows [][]pipeline.Value
			for i := range recs {
				row := make([]pipeline.Value, len(p.Target().Columns))
				if rerr := e.Apply(&pipeline.Batch{Stream: "c"}, &recs[i], row); rerr != nil {
					panic(rerr)
				}
				for j := range row {
					row[j].Str = strings.Clone(row[j].Str)
				}
				rows = append(rows, row)
				if i%100 == 99 {
					e.Reset()
				}
			}
			done <- rows
		}()
	}
	for g := 0; g < 4; g++ {
		got := <-done
		for i := range want {
			for j := range want[i] {
				if got[i][j] != want[i][j] {
					t.Fatalf("row %d col %d: %v vs %v", i, j, got[i][j], want[i][j])
				}
			}
		}
	}
}

// A Cassandra table's schema lists its columns in its own order (partition key, clustering
// columns, then the others by name), a file of the same rows (a dsbulk export, verify --repair's
// file) in the mapping's source.columns order: random(n) gives a row the same salt either way,
// or a repair file migrated after the table writes its rows under other keys.
func TestRandomSameSaltWhateverTheSourceOrder(t *testing.T) {
	const yml = `version: 1
source: {columns: {userid: text, note: text, orderid: bigint, amount: decimal}}
target: {table: t, primary_key: "[userid][orderid][random(1000)]"}
`
	m, err := Decode([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	cassandra := pipeline.SourceSchema{{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"},
		{Name: "amount", Type: "decimal"}, {Name: "note", Type: "text"}}
	fromTable, err := Compile(m, cassandra)
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]pipeline.Value{"userid": pipeline.Text("u1"), "orderid": pipeline.Int(5),
		"amount": pipeline.Decimal("1.50"), "note": pipeline.Text("gift")}
	rec := func(s pipeline.SourceSchema) *pipeline.Record {
		r := &pipeline.Record{}
		for _, c := range s {
			r.Values = append(r.Values, row[c.Name])
		}
		return r
	}
	b := &pipeline.Batch{Stream: "x"}
	if f, c := salt(t, fromFile, b, rec(fromFile.Source())), salt(t, fromTable, b, rec(cassandra)); f != c {
		t.Errorf("the same row salts %d read from a file and %d read from the table", f, c)
	}
}
