package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// scanRowsPerKey bounds a table scan: past this many table rows per source key, in any key
// range, the scan ends and the keys not read yet are looked up. A row read by range cost
// MariaDB a tenth of a row looked up by key, so a table of up to twice the source's keys is
// cheaper read whole; a larger one (the source of one shard of the table, say) is found out
// within the first ranges read, which bounds what the scan costs on top of the lookups.
const scanRowsPerKey = 2

// scanRangesPerLookup is how many key ranges each of the scans in flight reads on average: small
// ranges, so that a larger table is found out early and no scan waits long on a larger range.
const scanRangesPerLookup = 16

// scanSample is how many source keys (of the first buckets) place the range bounds and tell
// each range's share of the source's keys.
const scanSample = 4096

// scanSlack is the rows a range may hold beyond scanRowsPerKey per source key it is expected
// to have: a range of few sampled keys is not given up on for the sample's chance.
const scanSlack = 64

// scanRange is a key range of the table and the most rows it may hold before the scan gives up.
type scanRange struct {
	kr    pipeline.KeyRange
	limit int64
}

// errTableTooLarge ends every range of a scan: the table holds more rows than are worth reading.
var errTableTooLarge = errors.New("the table holds more rows than the source has keys")

// scanTable reads the lookup target's rows into dst by key range. Whatever it could not read
// is looked up afterwards (the keys no row was read for), so that it never changes a verdict:
// a range that holds more than scanRowsPerKey rows per source key it should ends the scan (the
// table is larger than the source: reading on would cost more than the lookups); a range the
// server refuses, or whose row does not fit its column's type (the lookup of that key then
// says so, as it did before), ends that range. keys is the number of source rows kept. It
// reports the rows read and whether every range was read to its end: the table was read whole,
// and its rows of keys the source has not are extra.
func (v *run) scanTable(parent context.Context, rs RangeScanner, dst *parts, keys int64) (int64, bool, error) {
	cfg := v.cfg
	ranges, err := v.scanRanges(cfg.Lookups*scanRangesPerLookup, keys)
	if err != nil {
		return 0, false, err
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	ts := &tableScan{v: v, rs: rs, cancel: cancel}
	done := v.phase("reading table", -1, &ts.c)
	defer done()
	next := make(chan scanRange)
	var wg sync.WaitGroup
	for range cfg.Lookups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts.scanRanges(ctx, dst, next)
		}()
	}
feed:
	for _, sr := range ranges {
		select {
		case next <- sr:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := parent.Err(); err != nil {
		return 0, false, err
	}
	if err := dst.failed(); err != nil {
		return 0, false, err
	}
	rows := ts.c.RowsIn.Load()
	if ts.tooLarge {
		cfg.Logger.Info("table larger than the source: looking up the keys not read yet", zap.Int64("rows", rows),
			zap.Int("rows_per_key", scanRowsPerKey))
	} else {
		cfg.Logger.Info("table read by key range", zap.Int64("rows", rows), zap.Int("ranges", len(ranges)))
	}
	if ts.firstErr != nil {
		cfg.Logger.Warn("key ranges of the table not read: their keys are looked up", zap.Int("ranges", ts.failed), zap.Error(ts.firstErr))
	}
	return rows, !ts.tooLarge && ts.firstErr == nil, nil
}

// tableScan is a scan of the table's key ranges by several goroutines, and how it ended.
type tableScan struct {
	v      *run
	rs     RangeScanner
	cancel func() // ends the scan: the table is larger than the source
	c      pipeline.Counters

	mu       sync.Mutex
	firstErr error // of a range refused or not read to its end
	failed   int
	tooLarge bool
}

// scanRanges reads the ranges handed out on next into dst, one at a time, until next closes.
func (ts *tableScan) scanRanges(ctx context.Context, dst *parts, next <-chan scanRange) {
	w := dst.writer()
	defer w.flush()
	var key, row []byte
	for sr := range next {
		if ctx.Err() != nil {
			// the scan ended (the feed's select may still hand out a range it
			// had ready): no range is started after that
			continue
		}
		var n int64
		err := ts.rs.Scan(ctx, sr.kr, func(vals []pipeline.Value) error {
			var e *pipeline.RowError
			if key, row, e = ts.v.encodeTableRow(key[:0], row[:0], vals); e != nil {
				return fmt.Errorf("a row of the table does not fit its type (%s)", e.Message)
			}
			if n++; n > sr.limit {
				return errTableTooLarge
			}
			h, _ := keyHashes(key)
			w.add(h, 0, key, row)
			ts.c.RowsIn.Add(1)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			ts.ended(err)
		}
	}
}

// ended records how a range's read failed: a table too large ends the whole scan, another error
// that range only.
func (ts *tableScan) ended(err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if errors.Is(err, errTableTooLarge) {
		ts.tooLarge = true
		ts.cancel()
	} else if ts.failed++; ts.firstErr == nil {
		ts.firstErr = err
	}
}

// encodeTableRow appends a table row's key and other values in their stored form.
func (v *run) encodeTableRow(key, row []byte, vals []pipeline.Value) ([]byte, []byte, *pipeline.RowError) {
	if len(vals) != len(v.schema.Columns) {
		return key, row, &pipeline.RowError{Message: fmt.Sprintf("a row of %d values, the table %s has %d columns", len(vals), v.schema.Table, len(v.schema.Columns))}
	}
	var e *pipeline.RowError
	for i, col := range v.keyCols {
		if key, e = appendStored(key, col, vals[i]); e != nil {
			return key, row, e
		}
	}
	for i, col := range v.rowCols {
		if row, e = appendStored(row, col, vals[v.schema.KeyLen+i]); e != nil {
			return key, row, e
		}
	}
	return key, row, nil
}

// scanRanges cuts the table's key space into about n ranges of as many source keys each, at
// values of the first key column taken from the source's first buckets (the buckets hold keys
// in hash order, so any of them is a sample of all), each with its limit: scanRowsPerKey rows
// per source key its share of the sample says it holds (of keys in all). The ranges cover every
// key whatever the values: bounds out of the server's order only unbalance them, and the keys a
// range misses are looked up.
func (v *run) scanRanges(n int, keys int64) ([]scanRange, error) {
	col := v.keyCols[0]
	var vals []pipeline.Value
	var parts [][]byte
	for b := 0; b < v.src.n && len(vals) < scanSample; b++ {
		chunks, err := v.src.peek(b)
		if err != nil {
			return nil, err
		}
		if err := eachEntry(chunks, func(e entry) error {
			var ok bool
			if parts, ok = splitValues(v.keyCols, e.key, parts[:0]); !ok {
				return errDamagedSpill
			}
			vals = append(vals, decodeValue(col, parts[0]))
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if len(vals) == 0 {
		return []scanRange{{limit: scanRowsPerKey*keys + scanSlack}}, nil
	}
	less := func(a, b pipeline.Value) bool {
		if col.Desc { // the key order is the values' reversed
			return lessValue(b, a)
		}
		return lessValue(a, b)
	}
	sort.Slice(vals, func(i, j int) bool { return less(vals[i], vals[j]) })
	// starts[i]: the first sampled value of range i (a bound's first place in the sample)
	starts := []int{0}
	for i := 1; i < n; i++ {
		at := i * len(vals) / n
		b := vals[at]
		at = sort.Search(len(vals), func(j int) bool { return !less(vals[j], b) })
		if at > starts[len(starts)-1] {
			starts = append(starts, at)
		}
	}
	ranges := make([]scanRange, len(starts))
	for i, at := range starts {
		end := len(vals)
		if i+1 < len(starts) {
			end = starts[i+1]
			ranges[i].kr.End = pipeline.KeyBound{Vals: []pipeline.Value{vals[end]}}
		}
		if i > 0 {
			ranges[i].kr.Start = pipeline.KeyBound{Vals: []pipeline.Value{vals[at]}, Inclusive: true}
		}
		ranges[i].limit = scanRowsPerKey*int64(end-at)*keys/int64(len(vals)) + scanSlack
	}
	return ranges, nil
}

// lessValue orders values of one column as a server does, for the types it can tell apart
// cheaply: numbers by value, text and bytes by their bytes.
func lessValue(a, b pipeline.Value) bool {
	switch a.Kind {
	case pipeline.KindFloat:
		return a.Float() < b.Float()
	case pipeline.KindDecimal:
		ua, sa, okA := a.Unscaled()
		ub, sb, okB := b.Unscaled()
		if okA && okB && sa == sb {
			return ua < ub
		}
		return a.Str < b.Str
	case pipeline.KindText, pipeline.KindBytes:
		return a.Str < b.Str
	}
	return a.Num < b.Num
}
