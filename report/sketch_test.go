package report

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

func TestSpaceSavingExactWhileRoomy(t *testing.T) {
	ss := newSpaceSaving(8)
	want := map[string]int64{}
	for i := 0; i < 1000; i++ {
		v := pipeline.Text(fmt.Sprint("v", i%5))
		if i%3 == 0 {
			v = pipeline.Text("v0")
		}
		want[v.S]++
		ss.add(hashValue(v, 0), v)
	}
	if ss.evicted {
		t.Fatal("evicted with 5 values and 8 counters")
	}
	for _, tv := range ss.top(10) {
		if tv.Count != want[tv.Value.S] || tv.Err != 0 {
			t.Errorf("%s: %d (err %d), want %d", tv.Value.S, tv.Count, tv.Err, want[tv.Value.S])
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
		ss.add(hashValue(v, 0), v)
	}
	a.merge(b)
	top := a.top(2)
	if top[0].Value.I != 1 || top[1].Value.I != 2 {
		t.Fatalf("top %+v", top)
	}
	for _, tv := range top {
		e := exact[tv.Value.I]
		if tv.Count < e || tv.Count-tv.Err > e {
			t.Errorf("%d: bounds [%d, %d] do not hold the exact %d", tv.Value.I, tv.Count-tv.Err, tv.Count, e)
		}
	}
}

func TestWindowsStayBounded(t *testing.T) {
	w := newWindows(4, 0, 200, 256) // unknown size: starts at the minimum window
	total := int64(0)
	for i := 0; i < 2000000; i++ {
		w.add(i % 4)
		total++
		if len(w.done) >= 256 {
			t.Fatalf("%d complete windows", len(w.done))
		}
	}
	res := w.result()
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
func TestSpillCountsExactly(t *testing.T) {
	t.Run("buckets", func(t *testing.T) { testSpill(t) })
	t.Run("split", func(t *testing.T) {
		defer func(v int64) { maxBucketBytes = v }(maxBucketBytes)
		maxBucketBytes = 16 << 10
		testSpill(t)
	})
}

func testSpill(t *testing.T) {
	s, err := newSpill(t.TempDir(), spillBuckets(0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
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
			sw := s.writer()
			for i := w; i < len(rows); i += 3 {
				sw.add(rows[i].k, rows[i].src, appendOrigin(nil, s.streamID("t"), int64(i), nil, nil, nil))
			}
			sw.flush()
		}(w)
	}
	wg.Wait()
	res, err := s.count(3, 4)
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
		if len(ex.Origins) != int(min(ex.Sources, 4)) || ex.Origins[0].stream != "t" {
			t.Errorf("example %+v", ex)
		}
	}
	dir := s.dir
	s.close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp directory %s left behind", dir)
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
		h := hashValue(pipeline.Text(fmt.Sprint(i)), 0)
		seen[h] = true
		buckets[h>>60]++
		if hashValue(pipeline.Int(int64(i)), 0) == h {
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
		if !ok || v.S != s || len(rest) != 0 {
			t.Errorf("round trip of %q: %q %v", s, v.S, ok)
		}
	}
}

// The distinct-count estimate of sequential integers and of their text is within the sketch's
// error (HyperLogLog at precision 16: 0.4%; allow 1.5%).
func TestDistinctEstimate(t *testing.T) {
	for _, text := range []bool{false, true} {
		p, _ := compile(t, fmt.Sprintf(eventsYAML, "[id]"))
		a := newAcc(newDesign(p, pipeline.RegionPlan{}))
		const n = 1000000
		for i := 0; i < n; i++ {
			v := pipeline.Int(int64(i) * 7)
			if text {
				v = pipeline.Text(fmt.Sprint(i))
			}
			a.hll.InsertHash(hashValue(v, 0))
		}
		est := float64(a.hll.Estimate())
		if est < n*0.985 || est > n*1.015 {
			t.Errorf("text %v: estimate %.0f for %d distinct values", text, est, n)
		}
	}
}

// The fast routing gives the plan's own answers.
func TestFastRouteMatchesPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	randText := func() string {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = "0af\x00zZ"[r.IntN(6)]
		}
		return string(b)
	}
	var splits []pipeline.Value
	seen := map[string]bool{}
	for len(splits) < 40 {
		s := randText()
		if !seen[s] {
			seen[s] = true
			splits = append(splits, pipeline.Text(s))
		}
	}
	sort.Slice(splits, func(i, j int) bool { return splits[i].S < splits[j].S })
	text := &design{plan: pipeline.RegionPlan{Type: pipeline.TypeVarchar, Splits: splits, Strategy: "quantile"}}
	text.fastRoute()
	ints := &design{plan: pipeline.RegionPlan{Type: pipeline.TypeBigint, Splits: []pipeline.Value{pipeline.Int(-5), pipeline.Int(0), pipeline.Int(7), pipeline.Int(1 << 40)}}}
	ints.fastRoute()
	if text.textSplits == nil || ints.intSplits == nil {
		t.Fatal("no fast path")
	}
	for i := 0; i < 20000; i++ {
		v := pipeline.Text(randText())
		if got, want := text.route(v), text.plan.Route(v); got != want {
			t.Fatalf("route(%q) = %d, plan says %d", v.S, got, want)
		}
		n := pipeline.Int(r.Int64N(1<<41) - 1<<40)
		if i%10 == 0 {
			n = pipeline.Int(int64(r.IntN(20) - 10))
		}
		if got, want := ints.route(n), ints.plan.Route(n); got != want {
			t.Fatalf("route(%d) = %d, plan says %d", n.I, got, want)
		}
	}
}
