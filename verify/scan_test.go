package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// scanningTable is a fakeTable that can also be read by key range (a RangeScanner): it honours
// the bounds on the first key column (a bigint), counts the keys looked up, and can fail, give some rows
// twice (those of even ids) or leave one out.
type scanningTable struct {
	*fakeTable
	mu           sync.Mutex
	keysLookedUp int
	scans        int
	rowsGiven    int
	fail         error
	failFirst    bool // fail the range without a start only
	twice        bool
	hide         string // a key (as keyOf) the scans do not give
}

func (s *scanningTable) Lookup(ctx context.Context, keys [][]pipeline.Value) ([][]pipeline.Value, error) {
	s.mu.Lock()
	s.keysLookedUp += len(keys)
	s.mu.Unlock()
	return s.fakeTable.Lookup(ctx, keys)
}

func (s *scanningTable) Scan(ctx context.Context, kr pipeline.KeyRange, fn func(row []pipeline.Value) error) error {
	s.mu.Lock()
	s.scans++
	s.mu.Unlock()
	if s.fail != nil && (!s.failFirst || len(kr.Start.Vals) == 0) {
		return s.fail
	}
	s.fakeTable.mu.Lock()
	var rows [][]pipeline.Value
	for k, r := range s.rows {
		if k == s.hide {
			continue
		}
		if b := kr.Start.Vals; len(b) > 0 && r[0].Num < b[0].Num {
			continue
		}
		if b := kr.End.Vals; len(b) > 0 && r[0].Num >= b[0].Num {
			continue
		}
		rows = append(rows, r)
	}
	s.fakeTable.mu.Unlock()
	for _, r := range rows {
		for range 1 + btoi(s.twice && r[1].Num%2 == 0) {
			s.mu.Lock()
			s.rowsGiven++
			s.mu.Unlock()
			if err := fn(append([]pipeline.Value(nil), r...)); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A table verify can read by key range is read whole when it holds about as many rows as the
// source has keys: only the keys the ranges did not give are looked up (before, all 2,000 keys
// were looked up), and every verdict is the lookups' own: missing, differing columns, examples,
// rows of other keys passed over, a row given twice counted once, the keys of a larger table,
// a failing scan or a sample looked up as before.
func TestTableReadByKeyRange(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(2000)
	table := func() *fakeTable {
		tbl := migrated(t, p, recs)
		key := func(id int64) string { return tbl.keyOf([]pipeline.Value{pipeline.Int(id % 7), pipeline.Int(id)}) }
		delete(tbl.rows, key(10))
		sc := p.Target()
		tbl.rows[key(20)][sc.Index("amount")] = pipeline.Decimal("99.00")
		for id := int64(5000); id < 5020; id++ { // rows of keys the source has not
			r := append([]pipeline.Value(nil), tbl.rows[key(id-4000)]...)
			r[1] = pipeline.Int(id)
			tbl.rows[key(id)] = r
		}
		tbl.max = 500
		return tbl
	}
	// the lookups' verdict on the source's keys: what the extra rows the scan reads add is
	// taken out (and checked apart)
	result := func(res *Result) string {
		r := *res
		r.Seconds, r.RowsPerSec = 0, 0
		if r.Extra != nil {
			r.TargetRows -= *r.Extra
		}
		r.Extra, r.ExtraScope, r.Examples.Extra, r.Notes, r.Equal = nil, "", nil, nil, false
		return fmt.Sprintf("%+v", r)
	}
	want := result(runLookup(t, p, recs, table(), nil))
	if !strings.Contains(want, "Missing:1 Differ:1") {
		t.Fatalf("the lookups' verdict: %s", want)
	}
	hidden := migrated(t, p, recs).keyOf([]pipeline.Value{pipeline.Int(33 % 7), pipeline.Int(33)})
	for _, tc := range []struct {
		name     string
		st       *scanningTable
		mod      func(*Config)
		lookedUp int    // keys looked up
		extra    string // what the result says of the 20 rows of keys the source has not
	}{
		{"scan", &scanningTable{}, nil, 1, ExtraAll},
		{"spilled", &scanningTable{}, func(c *Config) { c.Memory = 16 << 10 }, 1, ExtraAll},
		{"one lookup in flight", &scanningTable{}, func(c *Config) { c.Lookups = 1 }, 1, ExtraAll},
		{"rows given twice", &scanningTable{twice: true}, nil, 1, ExtraAll},
		{"a row the ranges miss", &scanningTable{hide: hidden}, nil, 2, ExtraAll},
		{"scan fails", &scanningTable{fail: errors.New("full table scan refused")}, nil, 2000, ExtraNone},
		{"one range refused", &scanningTable{fail: errors.New("full table scan refused"), failFirst: true}, nil, -1, ExtraRangesRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.st.fakeTable = table()
			core, logs := observer.New(zap.InfoLevel)
			res := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Lookup: tc.st, Logger: zap.New(core)}, tc.mod)
			if got := result(res); got != want {
				t.Fatalf("verdict\n%s\nwant the lookups'\n%s", got, want)
			}
			// the rows of keys the source has not are extra wherever they were read (before,
			// they were passed over and the summary said extra was not checked)
			switch tc.extra {
			case ExtraAll:
				if res.ExtraScope != ExtraAll || res.Extra == nil || *res.Extra != 20 || len(res.Examples.Extra) != maxExamples || res.TargetRows != 2019 || len(res.Notes) != 0 {
					t.Fatalf("the table read whole: extra %v (%s), %d examples, %d target rows, notes %q; want the 20 rows of other keys, of 2,019",
						res.Extra, res.ExtraScope, len(res.Examples.Extra), res.TargetRows, res.Notes)
				}
			case ExtraRangesRead:
				if res.ExtraScope != ExtraRangesRead || res.Extra == nil || *res.Extra == 0 || *res.Extra >= 20 || len(res.Notes) != 1 {
					t.Fatalf("a range refused: extra %v (%s), notes %q; want the rows of other keys of the ranges read, and a note", res.Extra, res.ExtraScope, res.Notes)
				}
			default:
				if res.ExtraScope != ExtraNone || res.Extra != nil {
					t.Fatalf("nothing read: extra %v (%s), want not checked", res.Extra, res.ExtraScope)
				}
			}
			if tc.lookedUp < 0 { // the keys of the first range (a seventh), the missing one
				if tc.st.keysLookedUp < 200 || tc.st.keysLookedUp > 400 {
					t.Fatalf("%d keys looked up; want the first range's", tc.st.keysLookedUp)
				}
			} else if tc.st.scans == 0 || tc.st.keysLookedUp != tc.lookedUp {
				t.Fatalf("%d scans, %d keys looked up; want scans and %d keys looked up", tc.st.scans, tc.st.keysLookedUp, tc.lookedUp)
			}
			if tc.st.fail != nil && logs.FilterMessage("key ranges of the table not read: their keys are looked up").Len() != 1 {
				t.Fatalf("the ranges not read are not logged once: %v", logs.All())
			}
		})
	}
	// the table of a source of 500 keys holds 2,019 rows: the first range read tells, and the
	// keys of the rows read are not looked up (before, the scan read 1,001 rows, twice the
	// source's keys, before it gave up, and every key was looked up)
	t.Run("a table of more than two rows per key", func(t *testing.T) {
		st := &scanningTable{fakeTable: table()}
		few := recs[:500]
		res := runWith(t, Config{Program: p, Source: &sliceSource{few}, Lookup: st, Lookups: 1}, nil)
		if got, want := result(res), result(runLookup(t, p, few, table(), nil)); got != want {
			t.Fatalf("verdict\n%s\nwant the lookups'\n%s", got, want)
		}
		if res.ExtraScope != ExtraRangesRead || res.Extra == nil || *res.Extra == 0 {
			t.Fatalf("extra %v (%s): want the rows of other keys in the range read", res.Extra, res.ExtraScope)
		}
		if st.scans != 1 || st.keysLookedUp >= 500 || st.keysLookedUp < 400 || st.rowsGiven > 300 {
			t.Fatalf("%d scans of %d rows, %d keys looked up: want a scan ended within its first range and the keys not read looked up",
				st.scans, st.rowsGiven, st.keysLookedUp)
		}
	})
	t.Run("sample", func(t *testing.T) {
		st := &scanningTable{fakeTable: table()}
		res := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Lookup: st, Sample: Sample{Fraction: 0.1}}, nil)
		if st.scans != 0 || int64(st.keysLookedUp) != res.KeysChecked {
			t.Fatalf("a sample: %d scans, %d keys looked up of %d checked; want lookups only", st.scans, st.keysLookedUp, res.KeysChecked)
		}
	})
}

// A key with a FLOAT or DOUBLE column is looked up, not read by range: the server reads such a
// value back rounded, so a row read could stand for a source key it does not equal.
func TestTableWithAFloatingKeyIsLookedUp(t *testing.T) {
	m, err := transform.Decode([]byte(strings.Replace(testMapping, "[id % 7 AS b][id]", "[id % 7 AS b][score][id]", 1)), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := testRecords(300)
	st := &scanningTable{fakeTable: migrated(t, p, recs)}
	res := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Lookup: st}, nil)
	if st.scans != 0 || st.keysLookedUp != 300 {
		t.Fatalf("%d scans, %d keys looked up; want no scan and every key looked up", st.scans, st.keysLookedUp)
	}
	if !res.Equal {
		t.Fatalf("verdict %+v, want equal", *res)
	}
}
