package cassandra

import (
	"sync/atomic"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// CellTimeStats count what a read with Config.CellWriteTimes found about the cells' times,
// judged against the table's default_time_to_live (Table.DefaultTTL), which the target table
// gets as its TTL: Lindorm counts a table TTL from each cell's timestamp, and the cells carry
// their Cassandra write times.
type CellTimeStats struct {
	// ExpiredCells are cells whose write time plus the table TTL had passed when they were read:
	// Lindorm would hide them from the moment they are written. They are left out of the records
	// (their value null, their time 0).
	ExpiredCells int64
	// ExpiredRows are rows whose every cell was expired so: they get no record and count as
	// skipped (Batch.Skipped).
	ExpiredRows int64
	// OtherTTL are cells written (and kept) whose own TTL differs from the table's: a cell
	// written USING TTL, or one without a TTL in a table with a default (set by a later ALTER).
	// Lindorm SQL has no per-cell TTL: such a cell expires at its write time plus the table
	// TTL (never, when the table has none), not when it would have in Cassandra. It counts
	// those left out as expired too, which Cassandra still holds (OtherTTLLeftOut).
	OtherTTL int64
	// OtherTTLLeftOut are the cells of another TTL among ExpiredCells: live in Cassandra (a
	// TTL of their own longer than the table's, or none, or the table's counted from a write
	// later than their timestamp, USING TIMESTAMP), past the table's TTL counted from their
	// write time, so the target would hide them from the moment they are written.
	OtherTTLLeftOut int64
}

// expiry judges a row's cells; its counters are shared by every range's decoder.
type expiry struct {
	ttl                   int64 // the table TTL in seconds, 0: none
	now                   func() time.Time
	untimed               []int // record columns that keep a row alive and have no write time
	expired, rows, others atomic.Int64
	othersGone            atomic.Int64 // cells of another TTL left out as expired
}

// ttlSlack is how far Cassandra's expiry of a cell (read time + TTL() left) and the target's
// (write time + table TTL) may differ for the cell to count as having the table's TTL: TTL()
// has a resolution of a second, and Cassandra counts a TTL from the node's clock at the write,
// which the write time (often the client's clock) can differ from by a little.
const ttlSlack = 2 * time.Second

// row clears the expired cells of one row (values, their times) and counts them and the cells
// of another TTL; it tells whether the row had cells and all of them expired.
func (e *expiry) row(vals []pipeline.Value, times []int64, ttls []int32, cells []int) (allExpired bool) {
	if e == nil || e.now == nil {
		return false
	}
	now := e.now().UnixMilli()
	had, left := 0, 0
	for _, i := range cells {
		if vals[i].IsNull() {
			continue
		}
		had++
		wt := times[i]
		other := e.otherTTL(now, wt, ttls[i])
		if other {
			e.others.Add(1)
		}
		if e.ttl > 0 && wt != 0 && wt+e.ttl*1000 <= now {
			// live in Cassandra (it returned the cell), hidden by the target at once
			vals[i], times[i] = pipeline.Null, 0
			e.expired.Add(1)
			if other {
				e.othersGone.Add(1)
			}
			continue
		}
		left++
	}
	for _, i := range e.untimed {
		if !vals[i].IsNull() {
			left++
		}
	}
	if had > 0 && left == 0 {
		e.rows.Add(1)
		return true
	}
	return false
}

// otherTTL tells whether a cell written at wt (ms) with ttl seconds left by Cassandra at now
// (0: none) expires otherwise than the table TTL counted from its write time.
func (e *expiry) otherTTL(now, wt int64, ttl int32) bool {
	switch {
	case ttl == 0 && e.ttl == 0:
		return false
	case ttl == 0 || e.ttl == 0:
		return true
	}
	cass := now + int64(ttl)*1000
	target := wt + e.ttl*1000
	d := time.Duration(cass-target) * time.Millisecond
	return d > ttlSlack || d < -ttlSlack
}

// CellTimeStats is what the reads so far found about the cells' times (Config.CellWriteTimes).
func (s *Source) CellTimeStats() CellTimeStats {
	return CellTimeStats{ExpiredCells: s.expiry.expired.Load(), ExpiredRows: s.expiry.rows.Load(), OtherTTL: s.expiry.others.Load(),
		OtherTTLLeftOut: s.expiry.othersGone.Load()}
}
