package collide

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

func TestSpaceSavingExactWhileRoomy(t *testing.T) {
	ss := newSpaceSaving(8)
	want := map[string]int64{}
	for i := 0; i < 1000; i++ {
		v := pipeline.Text(fmt.Sprint("v", i%5))
		if i%3 == 0 {
			v = pipeline.Text("v0")
		}
		want[v.Str]++
		ss.add(HashValue(v, 0), v)
	}
	if ss.Evicted {
		t.Fatal("evicted with 5 values and 8 counters")
	}
	for _, tv := range ss.Top(10) {
		if tv.Count != want[tv.Value.Str] || tv.Err != 0 {
			t.Errorf("%s: %d (err %d), want %d", tv.Value.Str, tv.Count, tv.Err, want[tv.Value.Str])
		}
	}
}

func TestSpaceSavingFindsHeavyHittersAndMerges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := newSpaceSaving(32), newSpaceSaving(32)
	exact := map[int64]int64{}
	for i := 0; i < 200000; i++ {
		x := int64(r.IntN(1000000)) + 100 // noise
		if i%10 == 0 {
			x = 1 // 10%
		} else if i%20 == 1 {
			x = 2 // 5%
		}
		exact[x]++
		ss := a
		if i%2 == 1 {
			ss = b
		}
		v := pipeline.Int(x)
		ss.add(HashValue(v, 0), v)
	}
	a.merge(b)
	top := a.Top(2)
	if top[0].Value.Num != 1 || top[1].Value.Num != 2 {
		t.Fatalf("top %+v", top)
	}
	for _, tv := range top {
		e := exact[tv.Value.Num]
		if tv.Count < e || tv.Count-tv.Err > e {
			t.Errorf("%d: bounds [%d, %d] do not hold the exact %d", tv.Value.Num, tv.Count-tv.Err, tv.Count, e)
		}
	}
}

func TestWindowsStayBounded(t *testing.T) {
	w := NewWindows(4, 0, 200, 256) // unknown size: starts at the minimum window
	total := int64(0)
	for i := 0; i < 2000000; i++ {
		w.Add(i % 4)
		total++
		if len(w.done) >= 256 {
			t.Fatalf("%d complete windows", len(w.done))
		}
	}
	res := w.Result()
	var sum int64
	for i, x := range res {
		sum += x.Rows
		if i > 0 && x.First != res[i-1].First+res[i-1].Rows {
			t.Fatalf("window %d starts at %d", i, x.First)
		}
		if x.TopShare > 0.26 {
			t.Errorf("window %d top share %v for a round robin", i, x.TopShare)
		}
	}
	if sum != total || len(res) < 128 {
		t.Errorf("%d windows hold %d rows of %d", len(res), sum, total)
	}
}

// The bucket pass counts exactly what an in-memory count gives, with several writers, whether
// the buckets are sorted as they are or split first.
// openSpill makes a spill in the test's temp directory, removed when the test ends.
func openSpill(tb testing.TB, buckets int) *Spill {
	tb.Helper()
	s, err := NewSpill(tb.TempDir(), buckets, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

func TestSpillCountsExactly(t *testing.T) {
	t.Run("buckets", func(t *testing.T) { testSpill(t) })
	t.Run("split", func(t *testing.T) {
		defer func(v int64) { maxBucketBytes = v }(maxBucketBytes)
		maxBucketBytes = 16 << 10
		testSpill(t)
	})
}

func testSpill(t *testing.T) {
	s := openSpill(t, SpillBuckets(0))
	r := rand.New(rand.NewPCG(3, 4))
	type row struct{ k, src uint64 }
	var rows []row
	for i := 0; i < 300000; i++ {
		k := r.Uint64()
		rows = append(rows, row{k, r.Uint64()})
		switch i % 1000 {
		case 1: // a collision: same key, another source row
			rows = append(rows, row{k, r.Uint64()})
		case 2: // a duplicate
			rows = append(rows, rows[len(rows)-1])
		case 3: // three sources and a duplicate of one
			a, b := r.Uint64(), r.Uint64()
			rows = append(rows, row{k, a}, row{k, b}, row{k, a})
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			sw := s.Writer()
			for i := w; i < len(rows); i += 3 {
				text := AppendRowInfo(nil, 0, nil, 0, 0)
				sw.Add(rows[i].k, rows[i].src, AppendOrigin(text, s.StreamID("t"), int64(i), nil, nil, nil))
			}
			sw.Flush()
		}(w)
	}
	wg.Wait()
	// the bucket files, which the pass reads back whole, hold 20 bytes a row: the texts are apart
	var bucketBytes int64
	for _, f := range s.files {
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		bucketBytes += st.Size()
	}
	if want := int64(20 * len(rows)); bucketBytes != want {
		t.Errorf("bucket files hold %d bytes for %d rows, want %d", bucketBytes, len(rows), want)
	}
	res, err := s.Count(CountSpec{MaxExamples: 3, MaxOrigins: 4})
	if err != nil {
		t.Fatal(err)
	}
	// expected
	per := map[uint64]map[uint64]int{}
	for _, x := range rows {
		if per[x.k] == nil {
			per[x.k] = map[uint64]int{}
		}
		per[x.k][x.src]++
	}
	var keys, colliding, coll, dups int64
	for _, m := range per {
		keys++
		n := 0
		for _, c := range m {
			n += c
		}
		if len(m) > 1 {
			colliding++
			coll += int64(len(m) - 1)
		}
		dups += int64(n - len(m))
	}
	if res.Keys != keys || res.Colliding != colliding || res.Rows != coll || res.Duplicates != dups {
		t.Errorf("got keys %d colliding %d rows %d dups %d; want %d %d %d %d", res.Keys, res.Colliding, res.Rows, res.Duplicates, keys, colliding, coll, dups)
	}
	if len(res.Examples) != 3 {
		t.Fatalf("%d examples", len(res.Examples))
	}
	for _, ex := range res.Examples {
		if len(ex.Origins) != int(min(ex.Sources, 4)) || ex.Origins[0].Stream != "t" {
			t.Errorf("example %+v", ex)
		}
	}
	dir := s.dir
	s.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp directory %s left behind", dir)
	}
}

// Beyond the mapping's own collisions, the bucket pass counts the rows a key reading other
// column sets would lose, with a salt too, and the columns in which colliding rows differ, all
// exactly as an in-memory count over the column values gives: with the file held in memory,
// split first, or sorted as it is (a few keys with many rows each: it cannot be split).
func TestSpillCountsColumnSets(t *testing.T) {
	for _, origin := range []textMode{textHashes, textFromOrigin, textWholeRows} {
		name := [...]string{"", "/from_origin", "/whole_rows"}[origin]
		t.Run("held"+name, func(t *testing.T) { testSpillSets(t, 40000, origin) })
		t.Run("split"+name, func(t *testing.T) {
			defer func(v int64) { maxBucketBytes = v }(maxBucketBytes)
			maxBucketBytes = 16 << 10
			testSpillSets(t, 40000, origin)
		})
		t.Run("stream"+name, func(t *testing.T) {
			defer func(v int64) { maxBucketBytes = v }(maxBucketBytes)
			maxBucketBytes = 4 << 10 // groups of ~7,000 rows cannot be split below this
			testSpillSets(t, 6, origin)
		})
	}
}

// textMode is how testSpillSets writes the rows' texts.
type textMode int

const (
	textHashes     textMode = iota // salt and every column hash
	textFromOrigin                 // the origin holds columns a and b, whose hashes are left out
	textWholeRows                  // every value whole (appendWhole): the counter computes salt and hashes
)

// testSpillSets counts column sets exactly; with textFromOrigin, the origin holds columns a and
// b and the rows leave their hashes out (b differs between rows of a key): the counts are the
// same, and the texts hold one column hash a row instead of three. With textWholeRows the salt
// is transform.SaltToken's (as random(2) gives it), computed by the counter.
func testSpillSets(t *testing.T, keys uint64, mode textMode) {
	s := openSpill(t, SpillBuckets(0))
	var srcCols []int
	if mode == textFromOrigin {
		srcCols = []int{0, 1}
		s.LeaveOutOriginHashes(srcCols, 3)
	}
	if mode == textWholeRows {
		srcCols = []int{0}
		s.srcCols = srcCols
	}
	// rows (a, b, c): the key reads a; sets {a, b} and {a, c}; the salt is c % 3 for odd b
	r := rand.New(rand.NewPCG(5, 6))
	type row struct{ a, b, c, salt uint64 }
	var rows []row
	for i := 0; i < 40000; i++ {
		x := row{a: r.Uint64N(keys), b: r.Uint64N(3), c: r.Uint64N(5)}
		x.salt = (x.c + x.b) % 2
		if mode == textWholeRows {
			rec := pipeline.Record{Values: []pipeline.Value{pipeline.Int(int64(x.a)), pipeline.Int(int64(x.b)), pipeline.Int(int64(x.c))}}
			tok, _ := transform.SaltToken(nil, &pipeline.Batch{Stream: "t"}, &rec, []int{0, 1, 2})
			x.salt = tok % 2
		}
		rows = append(rows, x)
	}
	colHashes := func(x row) []uint64 {
		return []uint64{HashValue(pipeline.Int(int64(x.a)), 0), HashValue(pipeline.Int(int64(x.b)), 0), HashValue(pipeline.Int(int64(x.c)), 0)}
	}
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			sw := s.Writer()
			for i := w; i < len(rows); i += 2 {
				cols := colHashes(rows[i])
				vals := []pipeline.Value{pipeline.Int(int64(rows[i].a)), pipeline.Int(int64(rows[i].b)), pipeline.Int(int64(rows[i].c))}
				_, src := HashColumns(vals, nil)
				if mode == textWholeRows {
					text, src := AppendWhole(nil, false, s.StreamID("t"), int64(i), nil, vals)
					sw.Add(HashValue(pipeline.Int(int64(rows[i].a)), 7), src, text)
					continue
				}
				text := AppendRowInfo(nil, rows[i].salt, cols, 3, s.Skip)
				sw.Add(HashValue(pipeline.Int(int64(rows[i].a)), 7), src, AppendOrigin(text, s.StreamID("t"), int64(i), nil, srcCols, vals))
			}
			sw.Flush()
		}(w)
	}
	wg.Wait()
	var textBytes int64
	for b := range s.texts {
		textBytes += s.textSize[b]
	}
	// salt, column hashes, stream id, seq (1-3 bytes), key count, source count, a and b (2-4 each)
	if hashes := 3 - len(srcCols); mode != textWholeRows && (textBytes > int64(len(rows)*(1+4*hashes+1+3+1+1+4*len(srcCols))) || textBytes < int64(len(rows)*(1+4*hashes+1+1+1+1+2*len(srcCols)))) {
		t.Errorf("texts take %.1f bytes a row, want %d column hashes a row", float64(textBytes)/float64(len(rows)), hashes)
	}
	sets := []uint64{0b011, 0b101, 0b111}
	res, err := s.Count(CountSpec{MaxExamples: 2, MaxOrigins: 4, Sets: sets, Salted: true, SaltN: 2, SaltOrder: []int{0, 1, 2}, Pairs: true, Cols: 3})
	if err != nil {
		t.Fatal(err)
	}
	// expected: per key, distinct rows minus distinct projections
	type proj struct{ a, b, c, salt uint64 }
	distinct := map[uint64]map[row]bool{}
	for _, x := range rows {
		if distinct[x.a] == nil {
			distinct[x.a] = map[row]bool{}
		}
		distinct[x.a][x] = true
	}
	want := make([]int64, len(sets))
	wantSalt := make([]int64, len(sets))
	var wantRows, pairs int64
	masks := map[uint64]int64{}
	var partial int64
	for _, m := range distinct {
		wantRows += int64(len(m) - 1)
		for j, set := range sets {
			p, ps := map[proj]bool{}, map[proj]bool{}
			for x := range m {
				q := proj{a: x.a}
				if set&2 != 0 {
					q.b = x.b
				}
				if set&4 != 0 {
					q.c = x.c
				}
				p[q] = true
				q.salt = x.salt
				ps[q] = true
			}
			want[j] += int64(len(m) - len(p))
			wantSalt[j] += int64(len(m) - len(ps))
		}
		if len(m) > MaxPairRows {
			partial++
			continue
		}
		var list []row
		for x := range m {
			list = append(list, x)
		}
		for i := range list {
			for k := i + 1; k < len(list); k++ {
				var d uint64
				if list[i].b != list[k].b {
					d |= 2
				}
				if list[i].c != list[k].c {
					d |= 4
				}
				masks[d]++
				pairs++
			}
		}
	}
	if res.Rows != wantRows || fmt.Sprint(res.SetRows) != fmt.Sprint(want) || fmt.Sprint(res.SaltRows) != fmt.Sprint(wantSalt) {
		t.Errorf("rows %d sets %v salted %v; want %d %v %v", res.Rows, res.SetRows, res.SaltRows, wantRows, want, wantSalt)
	}
	if res.PartialKeys != partial {
		t.Errorf("partly checked keys %d, want %d", res.PartialKeys, partial)
	}
	if partial == 0 && (res.Pairs != pairs || fmt.Sprint(res.Masks) != fmt.Sprint(masks) || res.NoDiff != 0) {
		t.Errorf("pairs %d masks %v nodiff %d; want %d %v", res.Pairs, res.Masks, res.NoDiff, pairs, masks)
	}
	for _, ex := range res.Examples {
		if ex.Diff&^uint64(6) != 0 || ex.Diff == 0 || ex.Hashed != 3 {
			t.Errorf("example differs in %b", ex.Diff)
		}
		for _, o := range ex.Origins {
			// an origin shows the values of srcCols, whole rows too
			if len(o.Src) != len(srcCols) || o.Stream != "t" || len(srcCols) > 0 && o.Src[0].Num != int64(rows[o.Seq].a) {
				t.Errorf("example origin %+v, want the values of columns %v of row %d", o, srcCols, o.Seq)
			}
		}
	}
}

// A whole row's salt is the worker's: the origin's stream and offset go into it when the batch
// says so (Kafka), and every kind of value comes back as it was.
func TestWholeRowSaltIsTheWorkers(t *testing.T) {
	s := openSpill(t, 64)
	s.srcCols = []int{1}
	vals := []pipeline.Value{pipeline.Text("u1"), pipeline.Int(-42), pipeline.Float(2.5), pipeline.Bool(true), pipeline.Null,
		{Kind: pipeline.KindBytes, Str: "\x00\xff"}, {Kind: pipeline.KindDecimal, Str: "-12.340"}}
	order := []int{3, 0, 6, 1, 2, 5, 4} // a mapping's source.columns order, not the source's
	for _, saltOrigin := range []bool{false, true} {
		b := pipeline.Batch{Stream: "orders/3", SaltOrigin: saltOrigin}
		rec := pipeline.Record{Values: vals, Seq: 1234567}
		tok, _ := transform.SaltToken(nil, &b, &rec, order)
		text, src := AppendWhole(nil, saltOrigin, s.StreamID(b.Stream), rec.Seq, nil, vals)
		// the source hash is the values': the same for another stream and offset, another for
		// other values
		if _, src2 := AppendWhole(nil, !saltOrigin, s.StreamID("other"), 7, nil, vals); src2 != src {
			t.Errorf("equal values, source hashes %x and %x", src, src2)
		}
		if _, src3 := AppendWhole(nil, saltOrigin, s.StreamID(b.Stream), rec.Seq, nil, vals[:len(vals)-1]); src3 == src {
			t.Error("a row without its last value has the same source hash")
		}
		v, k := binary.Uvarint(text)
		w, ok := s.readWhole(v, text[k:])
		if !ok {
			t.Fatal("whole row not read back")
		}
		for _, n := range []uint64{7, 16, 1 << 40} {
			if got, _ := w.salt(n, order, nil); got != tok%n {
				t.Errorf("salt origin %v, n %d: salt %d, the worker's %d", saltOrigin, n, got, tok%n)
			}
		}
		if len(w.origin.Src) != 1 || w.origin.Src[0] != vals[1] || w.origin.Stream != "orders/3" || w.origin.Seq != rec.Seq {
			t.Errorf("origin %+v", w.origin)
		}
	}
}

func TestHashIsStableAndSpread(t *testing.T) {
	// golden values: the hash must not change between runs or machines
	if h := hashString("rekey", 0); h != hashString("rekey", 0) {
		t.Fatal("unstable")
	}
	seen := map[uint64]bool{}
	buckets := make([]int, 16)
	for i := 0; i < 100000; i++ {
		h := HashValue(pipeline.Text(fmt.Sprint(i)), 0)
		seen[h] = true
		buckets[h>>60]++
		if HashValue(pipeline.Int(int64(i)), 0) == h {
			t.Fatalf("int %d hashes like its text", i)
		}
	}
	if len(seen) != 100000 {
		t.Errorf("%d distinct hashes of 100000 values", len(seen))
	}
	for i, n := range buckets {
		if n < 6000 || n > 6500 {
			t.Errorf("top-bits bucket %d holds %d of 100000", i, n)
		}
	}
	for _, s := range []string{"", "a", "abc", "abcd", "0123456789abcdef", "0123456789abcdefg", string(make([]byte, 100))} {
		v, _, rest, ok := decodeValue(appendValue(nil, pipeline.Text(s), 1000))
		if !ok || v.Str != s || len(rest) != 0 {
			t.Errorf("round trip of %q: %q %v", s, v.Str, ok)
		}
	}
}

// The fast routing gives the plan's own answers: text plans routed by counting their splits (up
// to linearRouteSplits) and by binary search beyond, values equal to a split or just past it
// included.
func TestFastRouteMatchesPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	randText := func() string {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = "0af\x00zZ"[r.IntN(6)]
		}
		return string(b)
	}
	for _, n := range []int{1, 15, 40, linearRouteSplits, linearRouteSplits + 1} {
		var splits []pipeline.Value
		seen := map[string]bool{}
		for len(splits) < n {
			s := randText()
			if !seen[s] {
				seen[s] = true
				splits = append(splits, pipeline.Text(s))
			}
		}
		sort.Slice(splits, func(i, j int) bool { return splits[i].Str < splits[j].Str })
		text := &Design{Plan: pipeline.RegionPlan{Type: pipeline.TypeVarchar, Splits: splits, Strategy: "quantile"}}
		text.fastRoute()
		if text.textSplits == nil {
			t.Fatalf("%d splits: no fast path", n)
		}
		for i := 0; i < 20000; i++ {
			v := randText()
			if i%3 == 0 {
				v = splits[r.IntN(n)].Str + v[:len(v)%3]
			}
			if got, want := text.Route(pipeline.Text(v)), text.Plan.Route(pipeline.Text(v)); got != want {
				t.Fatalf("%d splits: route(%q) = %d, plan says %d", n, v, got, want)
			}
		}
	}
	ints := &Design{Plan: pipeline.RegionPlan{Type: pipeline.TypeBigint, Splits: []pipeline.Value{pipeline.Int(-5), pipeline.Int(0), pipeline.Int(7), pipeline.Int(1 << 40)}}}
	ints.fastRoute()
	if ints.intSplits == nil {
		t.Fatal("no fast path")
	}
	for i := 0; i < 20000; i++ {
		n := pipeline.Int(r.Int64N(1<<41) - 1<<40)
		if i%10 == 0 {
			n = pipeline.Int(int64(r.IntN(20) - 10))
		}
		if got, want := ints.Route(n), ints.Plan.Route(n); got != want {
			t.Fatalf("route(%d) = %d, plan says %d", n.Num, got, want)
		}
	}
}

// The time heatmap's bins adapt to the values (doubling their width, moving their start) and
// every value ends in the bin that covers it.
func TestTimeHeatBins(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	h := NewTimeHeat(300)
	if h.group != 3 || h.rows != 100 {
		t.Fatalf("group %d rows %d", h.group, h.rows)
	}
	var vals []int64
	var regions []int
	for i := 0; i < 20000; i++ {
		v := int64(r.IntN(5_000_000)) - 1_000_000
		if i%1000 == 0 {
			v = -86400000 * 400 // before 1970
		}
		vals = append(vals, v)
		regions = append(regions, r.IntN(300))
		h.Add(v, regions[i])
	}
	h.Add(NoTime, 0)
	want := make([][]int64, heatBins)
	for i := range want {
		want[i] = make([]int64, h.rows)
	}
	for i, v := range vals {
		b := (v - h.start) / h.width
		if v < h.start || b >= heatBins {
			t.Fatalf("value %d outside [%d, %d)", v, h.start, h.start+heatBins*h.width)
		}
		want[b][regions[i]/3]++
	}
	if fmt.Sprint(want) != fmt.Sprint(h.counts) || h.nulls != 1 {
		t.Errorf("bins differ from a direct count")
	}
	res := h.Result("ts", make([]model.Region, 300))
	var sum int64
	for _, b := range res.Bins {
		sum += b.Rows
	}
	if sum != int64(len(vals)) || res.NullRows != 1 || len(res.Rows) != 100 || res.Rows[1].FirstRegion != 3 {
		t.Errorf("result: %d rows, %+v", sum, res.Rows[:2])
	}
}

// sortByKey orders a bucket's records by key hash as a full sort does: uniform keys, keys that
// repeat (a few keys with many rows) and a split file's constant bits.
func TestSortByKey(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name string
		n    int
		top  uint
		key  func() uint64
	}{
		{"uniform", 100000, 8, func() uint64 { return r.Uint64()>>8 | 0x5a<<56 }},
		{"repeated", 50000, 8, func() uint64 { return r.Uint64N(7)<<40 | 0x5a<<56 }},
		{"split", 30000, 12, func() uint64 { return r.Uint64()>>12 | 0x5a3<<52 }},
		{"small", 40, 8, func() uint64 { return r.Uint64() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs := make([]SpillRec, c.n)
			for i := range recs {
				recs[i] = SpillRec{Key: c.key(), Src: uint64(i)}
			}
			want := slices.Clone(recs)
			slices.SortStableFunc(want, func(a, b SpillRec) int { return cmp.Compare(a.Key, b.Key) })
			got, _ := sortByKey(recs, nil, c.top)
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			seen := map[uint64]int{}
			for i := range got {
				if got[i].Key != want[i].Key {
					t.Fatalf("record %d: key %x, want %x", i, got[i].Key, want[i].Key)
				}
				seen[got[i].Src]++
			}
			if len(seen) != c.n {
				t.Errorf("%d distinct records after the sort, want %d", len(seen), c.n)
			}
		})
	}
}

// hashColumns inlines hashValue for speed: each column's hash is hashValue's, for every kind,
// and the record's hash chains them as before.
func TestHashColumnsIsHashValue(t *testing.T) {
	row := []pipeline.Value{pipeline.Null, pipeline.Text("u0123456789"), pipeline.Int(-7), pipeline.Float(2.5),
		pipeline.Bool(true), pipeline.Bytes("\x00\xff"), pipeline.Decimal("79.96"), pipeline.Text("")}
	cols, src := HashColumns(row, make([]uint64, 2))
	h := uint64(len(row)) ^ wyp3
	for i, v := range row {
		if want := HashValue(v, 0); cols[i] != want {
			t.Errorf("column %d (%v): %x, hashValue %x", i, v, cols[i], want)
		}
		h = mum(h^HashValue(v, 0)^wyp0, uint64(i)^wyp1)
	}
	if want := mum(h^wyp2, wyp3); src != want {
		t.Errorf("record hash %x, want %x", src, want)
	}
}

// A worker's spill buffers are live heap for the whole read: at the bucket counts a report uses
// they hold at most 24 MiB a worker (record buffers of 8 MiB, text buffers twice that), and
// rows of the usual size never grow them (a grown buffer is a copy and heap held for nothing).
// A first read that leaves the texts out (a source read again for them) holds no text buffers:
// 256 buckets of 64 KiB each a writer would be heap for nothing.
func TestSpillWithoutTextsHoldsNoTextBuffers(t *testing.T) {
	s := openSpill(t, unknownSizeBuckets)
	sw := s.Writer()
	for i := 0; i < 200000; i++ {
		k := Mix64(uint64(i), 1)
		sw.Commit(k, Mix64(k, 2), sw.TextFor(k))
	}
	sw.Flush()
	for b := range sw.texts {
		if sw.bufs[b] == nil || cap(sw.texts[b]) != 0 {
			t.Fatalf("bucket %d: record buffer %d bytes, text buffer %d bytes; want a record buffer and no text buffer", b, cap(sw.bufs[b]), cap(sw.texts[b]))
		}
	}
	res, err := s.Count(CountSpec{KeysOnly: true})
	if err != nil || res.Keys != 200000 {
		t.Fatalf("%d keys: %v", res.Keys, err)
	}
}

func TestSpillWriterBuffersStayBounded(t *testing.T) {
	for _, buckets := range []int{MinBuckets, maxBuckets} {
		s := openSpill(t, buckets)
		sw := s.Writer()
		id := s.StreamID("orders.csv")
		cols := make([]uint64, 7)
		src := []pipeline.Value{pipeline.Text("user-000123456")}
		caps := map[int][2]int{}
		for i := 0; i < 400000; i++ { // 2-3 flushes of every bucket
			k := Mix64(uint64(i), 1)
			for c := range cols {
				cols[c] = Mix64(uint64(i), uint64(c))
			}
			text := sw.TextFor(k)
			text = AppendRowInfo(text, k%16, cols, len(cols), 0)
			text = AppendOrigin(text, id, int64(i), nil, []int{0}, src)
			sw.Commit(k, Mix64(k, 2), text)
			b := int(k >> s.shift)
			now := [2]int{cap(sw.bufs[b]), cap(sw.texts[b])}
			if now[1] == 0 { // the text buffer comes with the bucket's first stage of texts
				continue
			}
			if was, ok := caps[b]; ok && was != now {
				t.Fatalf("%d buckets: bucket %d's buffers grew from %v to %v bytes", buckets, b, was, now)
			}
			caps[b] = now
		}
		total := 0
		for b := range sw.bufs {
			total += cap(sw.bufs[b]) + cap(sw.texts[b]) + cap(sw.rstage[b]) + cap(sw.tstage[b])
		}
		// 24 MiB of buffers, a row's text of slack and the stages a bucket
		if total > 24<<20+buckets*(2<<10)+stagesBytes+buckets*(1<<10) {
			t.Errorf("%d buckets: a writer holds %d bytes of buffers, want at most 24 MiB, 2 KiB a bucket and its stages", buckets, total)
		}
		sw.Flush()
		s.Close()
	}
}

// Equal keys are one row in Lindorm: no split falls between them, so the full-key ranges keep
// them together whatever order the sort leaves them in. 400 rows of one key written one after
// the other with 400 distinct keys: they all land in one range, and it is hot.
func TestSplitHotFactorKeepsEqualKeysTogether(t *testing.T) {
	types, desc := []pipeline.Type{pipeline.TypeVarchar, pipeline.TypeBigint}, []bool{false, false}
	var keys [][]pipeline.Value
	for i := 0; i < 800; i++ {
		k := []pipeline.Value{pipeline.Text("same"), pipeline.Int(0)}
		if i%2 == 1 {
			k = []pipeline.Value{pipeline.Text(fmt.Sprintf("k%04d", Mix64(uint64(i), 3)%10000)), pipeline.Int(int64(i))}
		}
		keys = append(keys, k)
	}
	got := SplitHotFactor(keys, types, desc, 4)
	// the other half is spread over the four ranges: half the writes of every window go to the
	// range of "same", an eighth to each of the others
	if got < 2.0 || got > 2.5 {
		t.Errorf("split hot factor %.3f, want about 2 (one range takes half of every window)", got)
	}
	// and the decimal path (no byte encoding) agrees
	dec := []pipeline.Type{pipeline.TypeVarchar, pipeline.TypeDecimal}
	var dkeys [][]pipeline.Value
	for _, k := range keys {
		dkeys = append(dkeys, []pipeline.Value{k[0], {Kind: pipeline.KindDecimal, Str: fmt.Sprint(k[1].Num)}})
	}
	if d := SplitHotFactor(dkeys, dec, desc, 4); d != got {
		t.Errorf("decimal keys: split hot factor %.3f, want %.3f as the encoded path", d, got)
	}
}

func TestSortHeadsOrdersByHeadThenIndex(t *testing.T) {
	var hs []headIndex
	for i := 0; i < 5000; i++ {
		hs = append(hs, headIndex{head: Mix64(uint64(i%700), 1) >> (i % 3 * 20), i: int32(i)})
	}
	want := slices.Clone(hs)
	slices.SortStableFunc(want, func(a, b headIndex) int { return cmp.Compare(a.head, b.head) })
	if got := sortHeads(hs, make([]headIndex, len(hs))); !slices.Equal(got, want) {
		t.Error("sortHeads differs from a stable sort by head")
	}
}

// An example's differ_in covers every distinct row of its key, not only the origins it shows:
// 30 rows of one key differ in b, and one of them also in c; one origin is shown.
func TestExampleDiffCoversEveryRow(t *testing.T) {
	s := openSpill(t, 64)
	sw := s.Writer()
	id := s.StreamID("t")
	key := HashValue(pipeline.Text("k"), 7)
	for i := 0; i < 30; i++ {
		c := int64(0)
		if i == 17 {
			c = 1
		}
		vals := []pipeline.Value{pipeline.Text("a"), pipeline.Int(int64(i)), pipeline.Int(c)}
		cols, src := HashColumns(vals, nil)
		text := AppendRowInfo(nil, 0, cols, 3, 0)
		sw.Add(key, src, AppendOrigin(text, id, int64(i), nil, []int{0}, vals))
	}
	sw.Flush()
	res, err := s.Count(CountSpec{MaxExamples: 1, MaxOrigins: 1, Cols: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Examples) != 1 || len(res.Examples[0].Origins) != 1 {
		t.Fatalf("examples %+v", res.Examples)
	}
	if d := res.Examples[0].Diff; d != 0b110 {
		t.Errorf("differ in %b, want b and c (110)", d)
	}
}

// A stored key longer than an origin keeps (a salted key of long computed values) is cut in the
// text, and that is no reason to doubt the row: its source values are whole. Two rows of one
// key, in both text formats, count as one collision with both origins shown.
func TestLongStoredKeyIsNotCorrupt(t *testing.T) {
	key := []pipeline.Value{pipeline.Int(3), pipeline.Text(strings.Repeat("k", 200))}
	for _, whole := range []bool{false, true} {
		s := openSpill(t, 64)
		srcCols := []int{0, 1}
		s.srcCols = srcCols
		if !whole {
			s.LeaveOutOriginHashes(srcCols, 3)
		}
		sw := s.Writer()
		id := s.StreamID("t")
		for i := 0; i < 2; i++ {
			vals := []pipeline.Value{pipeline.Text(strings.Repeat("a", 100)), pipeline.Text(strings.Repeat("b", 100)), pipeline.Int(int64(i))}
			if whole {
				text, src := AppendWhole(nil, false, id, int64(i), key, vals)
				sw.Add(77, src, text)
				continue
			}
			cols, src := HashColumns(vals, nil)
			text := AppendRowInfo(nil, 1, cols, 3, s.Skip)
			sw.Add(77, src, AppendOrigin(text, id, int64(i), key, srcCols, vals))
		}
		sw.Flush()
		res, err := s.Count(CountSpec{MaxExamples: 1, MaxOrigins: 4, Cols: 3, Sets: []uint64{0b011}, Salted: true, SaltN: 4, SaltOrder: []int{0, 1, 2}, Pairs: true})
		if err != nil {
			t.Fatalf("whole %v: %v", whole, err)
		}
		if res.Rows != 1 || len(res.Examples) != 1 || len(res.Examples[0].Origins) != 2 || res.Examples[0].Diff != 0b100 {
			t.Errorf("whole %v: rows %d, examples %+v", whole, res.Rows, res.Examples)
		}
		s.Close()
	}
}

// Rows are kept whole only when that is small: a wide row keeps column hashes instead.
func TestFitsWholeOnlySmallRows(t *testing.T) {
	row := func(n, size int) []pipeline.Value {
		var vals []pipeline.Value
		for i := 0; i < n; i++ {
			vals = append(vals, pipeline.Text(strings.Repeat("x", size)))
		}
		return vals
	}
	for _, c := range []struct {
		vals []pipeline.Value
		want bool
	}{
		{row(7, 10), true},               // an orders row
		{row(20, 30), false},             // 640 bytes: hashes take ~100
		{row(1, MaxOriginText), true},    // a value an origin keeps whole
		{row(1, MaxOriginText+1), false}, // one it would cut
		{append(row(1, 1), pipeline.Null), true},
	} {
		if got := FitsWhole(c.vals); got != c.want {
			t.Errorf("%d values of %d bytes: whole %v, want %v", len(c.vals), len(c.vals[0].Str), got, c.want)
		}
	}
}
