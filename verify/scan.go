package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// scanRowsPerKey bounds a table scan: past this many table rows per source key, the scan gives
// up and the keys are looked up instead. A row read by range cost MariaDB a tenth of a row
// looked up by key, so a table of up to twice the source's keys is cheaper read whole; beyond it
// the rows read so far are the most a scan wastes.
const scanRowsPerKey = 2

// scanRangesPerLookup is how many key ranges each of the scans in flight reads on average: small
// enough ranges that a range larger than the others leaves no scan idle for long.
const scanRangesPerLookup = 4

// scanSample is how many source keys (of the first buckets) place the range bounds.
const scanSample = 4096

// errScanGaveUp ends a scan that is no longer worth it or cannot represent a row.
var errScanGaveUp = errors.New("scan gave up")

// scanTable reads the lookup target's rows into dst by key range, when the target can, and says
// whether it did: false (dst left empty) when the table turned out larger than scanRowsPerKey
// rows per source key, held a value the scan cannot compare, or refused the scan; the keys are
// then looked up. keys is the number of source rows kept.
func (v *run) scanTable(parent context.Context, rs RangeScanner, dst *parts, keys int64) (bool, error) {
	cfg := v.cfg
	ranges, err := v.scanRanges(cfg.Lookups * scanRangesPerLookup)
	if err != nil {
		return false, err
	}
	limit := scanRowsPerKey * keys
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var c pipeline.Counters
	done := v.phase("reading table", -1, &c)
	defer done()
	var (
		read     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	next := make(chan pipeline.KeyRange)
	for range cfg.Lookups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := dst.writer()
			defer w.flush()
			var key, row []byte
			for kr := range next {
				err := rs.Scan(ctx, kr, func(vals []pipeline.Value) error {
					var e *pipeline.RowError
					if key, row, e = v.encodeTableRow(key[:0], row[:0], vals); e != nil {
						return fmt.Errorf("%w: a row of the table does not fit its type (%s)", errScanGaveUp, e.Message)
					}
					if read.Add(1) > limit {
						return fmt.Errorf("%w: the table holds more than %d rows per source key", errScanGaveUp, scanRowsPerKey)
					}
					h, _ := keyHashes(key)
					w.add(h, 0, key, row)
					c.RowsIn.Add(1)
					return nil
				})
				if err != nil {
					fail(err)
				}
			}
		}()
	}
feed:
	for _, kr := range ranges {
		select {
		case next <- kr:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := parent.Err(); err != nil {
		return false, err
	}
	if err := dst.failed(); err != nil {
		return false, err
	}
	if firstErr == nil {
		cfg.Logger.Info("table read by key range", zap.Int64("rows", read.Load()), zap.Int("ranges", len(ranges)))
		return true, nil
	}
	dst.discard()
	if errors.Is(firstErr, errScanGaveUp) {
		cfg.Logger.Info("looking keys up instead of reading the table", zap.String("reason", firstErr.Error()))
	} else {
		cfg.Logger.Warn("reading the table by key range failed: looking keys up instead", zap.Error(firstErr))
	}
	return false, nil
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
// in hash order, so any of them is a sample of all). The ranges cover every key whatever the
// values: bounds out of the server's order only unbalance them, and the keys a range misses
// are looked up.
func (v *run) scanRanges(n int) ([]pipeline.KeyRange, error) {
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
		return []pipeline.KeyRange{{}}, nil
	}
	sort.Slice(vals, func(i, j int) bool {
		if col.Desc { // the key order is the values' reversed
			return lessValue(vals[j], vals[i])
		}
		return lessValue(vals[i], vals[j])
	})
	var bounds []pipeline.Value
	for i := 1; i < n; i++ {
		b := vals[i*len(vals)/n]
		if len(bounds) == 0 || !b.Equal(bounds[len(bounds)-1]) {
			bounds = append(bounds, b)
		}
	}
	ranges := make([]pipeline.KeyRange, len(bounds)+1)
	for i, b := range bounds {
		ranges[i].End = pipeline.KeyBound{Vals: []pipeline.Value{b}}
		ranges[i+1].Start = pipeline.KeyBound{Vals: []pipeline.Value{b}, Inclusive: true}
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
