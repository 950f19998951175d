package cassandra

import (
	"fmt"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// A cell is expired when its write time plus the table TTL has passed (Lindorm counts the table
// TTL from the cell timestamp, and the cell carries its write time): it is cleared and counted;
// a row whose every cell expired is skipped, unless a collection (no write time) still holds a
// value; a kept cell whose TTL is not the table's (its own USING TTL, or none in a table with a
// default) is counted as such. A cell of the table's TTL past it by its write time has a second
// or so left by Cassandra's clock (TTL() counts from the node's time at the write).
func TestExpiryJudgesCellsByWriteTimeAndTableTTL(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	ms := now.UnixMilli()
	e := &expiry{ttl: 3600, now: func() time.Time { return now }, untimed: []int{3}}
	cells := []int{1, 2}
	type cell struct {
		v   pipeline.Value
		wt  int64
		ttl int32
	}
	for _, tc := range []struct {
		name                  string
		a, b                  cell
		coll                  pipeline.Value
		skip                  bool
		wantA, wantB          string
		expired, rows, others int64
	}{
		{"fresh, the table's TTL", cell{pipeline.Text("x"), ms - 1000, 3599}, cell{pipeline.Int(1), ms, 3600}, pipeline.Null, false, "x", "1", 0, 0, 0},
		{"one past the TTL", cell{pipeline.Text("x"), ms - 3600_000, 1}, cell{pipeline.Int(1), ms, 3600}, pipeline.Null, false, "", "1", 1, 0, 0},
		{"both past: the row", cell{pipeline.Text("x"), ms - 3601_000, 1}, cell{pipeline.Int(1), ms - 3600_500, 1}, pipeline.Null, true, "", "", 2, 1, 0},
		{"both past, a collection left", cell{pipeline.Text("x"), ms - 3601_000, 1}, cell{pipeline.Int(1), ms - 3600_500, 1}, pipeline.Text("[1]"), false, "", "", 2, 0, 0},
		{"a TTL of its own", cell{pipeline.Text("x"), ms, 60}, cell{pipeline.Null, 0, 0}, pipeline.Null, false, "x", "", 0, 0, 1},
		{"no TTL in a table with one", cell{pipeline.Text("x"), ms, 0}, cell{pipeline.Int(1), ms, 3600}, pipeline.Null, false, "x", "1", 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.expired.Store(0)
			e.rows.Store(0)
			e.others.Store(0)
			vals := []pipeline.Value{pipeline.Int(7), tc.a.v, tc.b.v, tc.coll}
			times := []int64{0, tc.a.wt, tc.b.wt, 0}
			ttls := []int32{0, tc.a.ttl, tc.b.ttl, 0}
			if tc.b.v.IsNull() {
				times[2] = 0
			}
			if got := e.row(vals, times, ttls, cells); got != tc.skip {
				t.Errorf("row skipped %v, want %v", got, tc.skip)
			}
			if vals[1].String() != tc.wantA || vals[2].String() != tc.wantB {
				t.Errorf("values %q %q, want %q %q", vals[1].String(), vals[2].String(), tc.wantA, tc.wantB)
			}
			for i, v := range vals[1:3] {
				if v.IsNull() && times[i+1] != 0 {
					t.Errorf("cleared cell %d keeps its time %d", i+1, times[i+1])
				}
			}
			got := fmt.Sprint(e.expired.Load(), e.rows.Load(), e.others.Load())
			if want := fmt.Sprint(tc.expired, tc.rows, tc.others); got != want {
				t.Errorf("expired cells, rows, other TTLs: %s, want %s", got, want)
			}
		})
	}
	// a table without a TTL: nothing expires, a cell with a TTL of its own is counted
	e = &expiry{now: func() time.Time { return now }}
	vals := []pipeline.Value{pipeline.Int(7), pipeline.Text("x"), pipeline.Int(1)}
	if e.row(vals, []int64{0, 1, 1}, []int32{0, 0, 30}, cells) || vals[1].IsNull() || e.expired.Load() != 0 || e.others.Load() != 1 {
		t.Errorf("no table TTL: %v expired %d others %d", vals, e.expired.Load(), e.others.Load())
	}
}

// A cell Cassandra returns is live there. One past the table's TTL counted from its write time
// (Lindorm would hide it at once) that Cassandra keeps for a TTL of its own, or for good (no TTL
// in a table given a default later), is left out as expired and counted as a cell of another
// TTL too, and apart as one of those left out: the summary must not hide that Cassandra still
// holds it while the target will not.
func TestExpiryCountsLiveCellsPastTheTableTTLAsAnotherTTL(t *testing.T) {
	now := time.UnixMilli(100_000_000)
	ms := now.UnixMilli()
	e := &expiry{ttl: 3600, now: func() time.Time { return now }}
	// a: no TTL of its own, written two hours ago; b: USING TTL 86400 an hour and a half ago;
	// c: the table's TTL, a second left by Cassandra's clock, past by the write time's
	vals := []pipeline.Value{pipeline.Int(7), pipeline.Text("x"), pipeline.Int(1), pipeline.Int(2)}
	times := []int64{0, ms - 7_200_000, ms - 5_400_000, ms - 3_600_500}
	ttls := []int32{0, 0, 86400 - 5400, 1}
	if e.row(vals, times, ttls, []int{1, 2, 3}) != true {
		t.Errorf("row with every cell past the table's TTL kept")
	}
	st := CellTimeStats{ExpiredCells: e.expired.Load(), ExpiredRows: e.rows.Load(), OtherTTL: e.others.Load(), OtherTTLLeftOut: e.othersGone.Load()}
	if want := (CellTimeStats{ExpiredCells: 3, ExpiredRows: 1, OtherTTL: 2, OtherTTLLeftOut: 2}); st != want {
		t.Errorf("counts %+v, want %+v", st, want)
	}
}
