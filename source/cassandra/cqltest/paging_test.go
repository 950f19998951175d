package cqltest

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"

	"github.com/gocql/gocql"
)

const pagingRows = 20000

// gocql's own iterator pages through a full scan: every row once, in token order.
func TestPagingFullScan(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", pagingRows)
	sess := newSession(t, s)

	iter := sess.Query("SELECT id, token(id) FROM ks.t").PageSize(1000).Iter()
	seen := make([]bool, pagingRows)
	var id int32
	var tok, prev int64 = 0, math.MinInt64
	n := 0
	for iter.Scan(&id, &tok) {
		if seen[id] {
			t.Fatalf("id %d returned twice", id)
		}
		seen[id] = true
		if tok < prev {
			t.Fatalf("token order broken at row %d: %d after %d", n, tok, prev)
		}
		prev = tok
		n++
	}
	must(t, iter.Close())
	if n != pagingRows {
		t.Fatalf("got %d rows, want %d", n, pagingRows)
	}
	st := s.Stats()
	if st.Pages != pagingRows/1000 || st.Rows != pagingRows {
		t.Errorf("stats: %d pages, %d rows", st.Pages, st.Rows)
	}
}

// splitRing returns n-1 sorted split points dividing the ring evenly.
func splitRing(n int) []int64 {
	return evenTokens(n)
}

// 64 token ranges (a, b], plus the two ends of the ring, cover every row exactly once.
func TestPagingTokenRanges(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", pagingRows)
	sess := newSession(t, s)

	pts := splitRing(63) // 63 split points -> 62 inner ranges + 2 wrap-around pieces = 64 ranges
	type rng struct {
		q    string
		a, b int64
	}
	var ranges []rng
	ranges = append(ranges, rng{"SELECT id, token(id) FROM ks.t WHERE token(id) >= ? AND token(id) <= ?", math.MinInt64, pts[0]})
	for i := 0; i+1 < len(pts); i++ {
		ranges = append(ranges, rng{"SELECT id, token(id) FROM ks.t WHERE token(id) > ? AND token(id) <= ?", pts[i], pts[i+1]})
	}
	ranges = append(ranges, rng{"SELECT id, token(id) FROM ks.t WHERE token(id) > ? AND token(id) <= ?", pts[len(pts)-1], math.MaxInt64})
	if len(ranges) != 64 {
		t.Fatalf("%d ranges", len(ranges))
	}

	var mu sync.Mutex
	counts := make([]int, pagingRows)
	var wg sync.WaitGroup
	errs := make(chan error, len(ranges))
	work := make(chan rng)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				iter := sess.Query(r.q, r.a, r.b).PageSize(100).Iter()
				var id int32
				var tok int64
				var local []int32
				for iter.Scan(&id, &tok) {
					if tok < r.a || tok > r.b || (r.a != math.MinInt64 && tok == r.a) {
						errs <- fmt.Errorf("token %d outside (%d, %d]", tok, r.a, r.b)
					}
					local = append(local, id)
				}
				if err := iter.Close(); err != nil {
					errs <- err
				}
				mu.Lock()
				for _, id := range local {
					counts[id]++
				}
				mu.Unlock()
			}
		}()
	}
	for _, r := range ranges {
		work <- r
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for id, c := range counts {
		if c != 1 {
			t.Fatalf("id %d seen %d times", id, c)
		}
	}
	if got := len(s.Stats().Ranges); got != 64 {
		t.Errorf("stats saw %d ranges, want 64", got)
	}
}

// Cassandra's token-bound rules (CASSANDRA-5573): a wrapping interval is empty, and the
// minimum token as an end bound means "to the end of the ring".
func TestTokenBoundRules(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 1000)
	sess := newSession(t, s)
	count := func(q string, args ...any) int {
		t.Helper()
		iter := sess.Query(q, args...).PageSize(100).Iter()
		n := 0
		var id int32
		for iter.Scan(&id) {
			n++
		}
		must(t, iter.Close())
		return n
	}
	all := count("SELECT id FROM ks.t")
	if all != 1000 {
		t.Fatalf("full scan %d", all)
	}
	if n := count("SELECT id FROM ks.t WHERE token(id) > ? AND token(id) <= ?", int64(100), int64(-100)); n != 0 {
		t.Errorf("wrapping range returned %d rows", n)
	}
	if n := count("SELECT id FROM ks.t WHERE token(id) > ? AND token(id) <= ?", int64(5), int64(5)); n != 0 {
		t.Errorf("(5, 5] returned %d rows", n)
	}
	tail := count("SELECT id FROM ks.t WHERE token(id) > ?", int64(0))
	if n := count("SELECT id FROM ks.t WHERE token(id) > ? AND token(id) <= ?", int64(0), int64(math.MinInt64)); n != tail {
		t.Errorf("(0, min] returned %d rows, want the %d rows after 0", n, tail)
	}
	head := count("SELECT id FROM ks.t WHERE token(id) <= ?", int64(0))
	if head+tail != all {
		t.Errorf("head %d + tail %d != %d", head, tail, all)
	}
	tok1, _ := s.Token("ks", "t", int32(1))
	if n := count("SELECT id FROM ks.t WHERE token(id) = ?", tok1); n != 1 {
		t.Errorf("token(id) = token(1) returned %d rows", n)
	}
	if n := count("SELECT id FROM ks.t WHERE token(id) >= ? AND token(id) < ?", tok1, tok1+1); n != 1 {
		t.Errorf("[t, t+1) returned %d rows", n)
	}
	if n := count("SELECT id FROM ks.t WHERE token(id) > -9223372036854775808 AND token(id) <= 0"); n != head {
		t.Errorf("literal bounds returned %d rows, want %d", n, head)
	}
	if n := count("SELECT id FROM ks.t LIMIT 10"); n != 10 {
		t.Errorf("LIMIT 10 returned %d", n)
	}
}

// Paging by hand with PageState resumes exactly after the last row, in a new session too,
// and stays right when rows are inserted and deleted between pages.
func TestManualPagingResume(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 5000)
	sess := newSession(t, s)
	const q = "SELECT id, token(id) FROM ks.t WHERE token(id) > ? AND token(id) <= ?"

	readPage := func(sess *gocql.Session, state []byte) (ids []int32, toks []int64, next []byte) {
		t.Helper()
		iter := sess.Query(q, int64(math.MinInt64), int64(math.MaxInt64)).PageSize(700).PageState(state).Iter()
		var id int32
		var tok int64
		for iter.Scan(&id, &tok) {
			ids = append(ids, id)
			toks = append(toks, tok)
		}
		next = iter.PageState()
		must(t, iter.Close())
		return ids, toks, next
	}

	// Pure resume: pages concatenate to the full scan.
	var all []int32
	var state []byte
	pages := 0
	for {
		ids, _, next := readPage(sess, state)
		if len(ids) > 700 {
			t.Fatalf("page of %d rows", len(ids))
		}
		all = append(all, ids...)
		pages++
		if len(next) == 0 {
			break
		}
		state = next
		if pages == 3 { // switch to a brand-new session mid-scan, as a restarted process would
			sess = newSession(t, s)
		}
	}
	if len(all) != 5000 || pages != 8 {
		t.Fatalf("manual paging: %d rows in %d pages", len(all), pages)
	}
	seen := map[int32]bool{}
	for _, id := range all {
		if seen[id] {
			t.Fatalf("id %d twice", id)
		}
		seen[id] = true
	}

	// Rows changing between pages: the state holds the last key, not an offset.
	ids, toks, next := readPage(sess, nil)
	last := toks[len(toks)-1]
	// Find ids whose tokens fall before and after the boundary, insert them, delete a row that
	// would have come next.
	var before, after int32 = -1, -1
	for id := int32(10000); before < 0 || after < 0; id++ {
		tok, _ := s.Token("ks", "t", id)
		if tok < last && before < 0 {
			before = id
		}
		if tok > last && after < 0 {
			after = id
		}
	}
	must(t, s.Insert("ks", "t", map[string]any{"id": before, "v": "new"}))
	must(t, s.Insert("ks", "t", map[string]any{"id": after, "v": "new"}))
	// The row right after the boundary in token order.
	type kv struct {
		id  int32
		tok int64
	}
	var rest []kv
	for id := int32(0); id < 5000; id++ {
		tok, _ := s.Token("ks", "t", id)
		if tok > last {
			rest = append(rest, kv{id, tok})
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].tok < rest[j].tok })
	gone := rest[0].id
	if ok, err := s.Delete("ks", "t", map[string]any{"id": gone}); !ok || err != nil {
		t.Fatalf("Delete: %v %v", ok, err)
	}
	got := map[int32]bool{}
	for _, id := range ids {
		got[id] = true
	}
	state = next
	for len(state) > 0 {
		var more []int32
		more, _, state = readPage(sess, state)
		for _, id := range more {
			if got[id] {
				t.Fatalf("id %d returned twice after rows changed", id)
			}
			got[id] = true
		}
	}
	if got[before] {
		t.Errorf("row inserted before the resume point (id %d) was returned", before)
	}
	if !got[after] {
		t.Errorf("row inserted after the resume point (id %d) was not returned", after)
	}
	if got[gone] {
		t.Errorf("deleted row %d was returned", gone)
	}
	if len(got) != 5000 { // 5000 - deleted + after
		t.Errorf("second scan returned %d rows, want 5000", len(got))
	}
}

// Clustering rows come in clustering order (DESC honoured) and paging may stop mid-partition.
func TestPagingClustering(t *testing.T) {
	s := newServer(t)
	must(t, s.CreateTable("ks", "c", []Column{{"p", "text"}, {"c1", "int"}, {"c2", "text"}, {"v", "bigint"}},
		[]string{"p"}, []string{"c1", "c2 DESC"}))
	must(t, s.InsertMany("ks", "c", 3000, func(i int, r map[string]any) error {
		r["p"] = fmt.Sprintf("part-%d", i%7)
		r["c1"] = int32(i % 50)
		r["c2"] = fmt.Sprintf("k%04d", i)
		r["v"] = int64(i)
		return nil
	}))
	sess := newSession(t, s)
	iter := sess.Query("SELECT p, c1, c2, v, token(p) FROM ks.c").PageSize(37).Iter()
	var p, c2, prevP, prevC2 string
	var c1, prevC1 int
	var v, tok, prevTok int64
	n := 0
	for iter.Scan(&p, &c1, &c2, &v, &tok) {
		if n > 0 {
			switch {
			case tok < prevTok:
				t.Fatalf("token order broken")
			case p == prevP && (c1 < prevC1 || c1 == prevC1 && c2 >= prevC2):
				t.Fatalf("clustering order broken: (%d,%s) after (%d,%s)", c1, c2, prevC1, prevC2)
			case p != prevP && tok == prevTok:
				t.Fatalf("partitions with equal tokens")
			}
		}
		prevP, prevC1, prevC2, prevTok = p, c1, c2, tok
		n++
	}
	must(t, iter.Close())
	if n != 3000 {
		t.Fatalf("%d rows", n)
	}
	// One partition, with a clustering restriction.
	var count int64
	must(t, sess.Query("SELECT count(*) FROM ks.c WHERE p = ? AND c1 >= ?", "part-3", 25).Scan(&count))
	if count == 0 || count >= 3000/7+1 {
		t.Errorf("partition slice count = %d", count)
	}
	// DISTINCT lists each partition once, across pages.
	iter = sess.Query("SELECT DISTINCT p FROM ks.c").PageSize(2).Iter()
	parts := map[string]bool{}
	for iter.Scan(&p) {
		if parts[p] {
			t.Fatalf("partition %s twice", p)
		}
		parts[p] = true
	}
	must(t, iter.Close())
	if len(parts) != 7 {
		t.Errorf("DISTINCT returned %d partitions", len(parts))
	}
	// LIMIT across pages.
	iter = sess.Query("SELECT v FROM ks.c LIMIT 250").PageSize(100).Iter()
	n = 0
	for iter.Scan(&v) {
		n++
	}
	must(t, iter.Close())
	if n != 250 {
		t.Errorf("LIMIT 250 over pages of 100 returned %d rows", n)
	}
}
