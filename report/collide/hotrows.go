package collide

import (
	"slices"
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
)

// HotRowWindows is how many windows the subsample is cut into for single-row hotspots.
const HotRowWindows = 50

// CountHotRows counts the writes of each key (keys in write order) per window. The keys' hashes
// are sorted per window and counted by runs (a map entry per key cost several thousand
// instructions a row); only the keys written twice in a window are kept.
func CountHotRows(keys [][]pipeline.Value, evidence string, regions int) model.HotRows {
	h := model.HotRows{Order: evidence, Rows: int64(len(keys)), EvenShare: 1 / float64(max(regions, 1)), Top: []model.HotRow{}}
	if len(keys) == 0 {
		return h
	}
	per := max(int64(len(keys))/HotRowWindows, 1)
	h.RowsPerWindow = per
	all := make([]keyAt, len(keys))
	for i, key := range keys {
		all[i] = keyAt{HashValues(key), int32(i)}
	}
	var stats map[uint64]*hotStat
	stats, h.Windows = windowPeaks(all, per)
	if len(stats) > 0 {
		countWrites(all, stats)
	}
	for _, s := range stats {
		if s.best < 2 {
			continue
		}
		var text []string
		for _, v := range keys[s.at] {
			text = append(text, v.String())
		}
		h.Top = append(h.Top, model.HotRow{Key: text, Writes: s.writes, WindowWrites: s.best, WindowShare: float64(s.best) / float64(max(s.bestOf, 1))})
	}
	slices.SortFunc(h.Top, func(a, b model.HotRow) int {
		switch {
		case a.WindowWrites != b.WindowWrites:
			return int(b.WindowWrites - a.WindowWrites)
		case a.Writes != b.Writes:
			return int(b.Writes - a.Writes)
		}
		return strings.Compare(strings.Join(a.Key, "\x00"), strings.Join(b.Key, "\x00"))
	})
	h.Top = h.Top[:min(len(h.Top), 5)]
	return h
}

// keyAt is a key's hash and a row with the key.
type keyAt struct {
	hash uint64
	at   int32
}

// byHash orders keys by hash, then row.
func byHash(a, b keyAt) int {
	switch {
	case a.hash < b.hash:
		return -1
	case a.hash > b.hash:
		return 1
	}
	return int(a.at - b.at)
}

// hotStat is a key written at least twice in a window: its first row, its writes, and the most
// writes it had in one window (best) of that window's rows (bestOf).
type hotStat struct {
	at                   int
	writes, best, bestOf int64
}

// windowPeaks cuts the rows into windows of per rows and finds, for each key written twice in
// one, its most writes in a window; it returns them by key hash, and the windows' number.
func windowPeaks(all []keyAt, per int64) (stats map[uint64]*hotStat, windows int) {
	stats = map[uint64]*hotStat{}
	var buf []keyAt
	for start := 0; start < len(all); windows++ {
		// the last window takes the rest when it would be shorter than half a window
		end := start + int(per)
		if rest := len(all) - end; rest < int(per/2) || end > len(all) {
			end = len(all)
		}
		buf = append(buf[:0], all[start:end]...)
		slices.SortFunc(buf, byHash)
		for r := 0; r < len(buf); {
			n := 1
			for r+n < len(buf) && buf[r+n].hash == buf[r].hash {
				n++
			}
			if n >= 2 {
				st := stats[buf[r].hash]
				if st == nil {
					st = &hotStat{} // its first row and writes: countWrites
					stats[buf[r].hash] = st
				}
				if int64(n) > st.best {
					st.best, st.bestOf = int64(n), int64(end-start)
				}
			}
			r += n
		}
		start = end
	}
	return stats, windows
}

// countWrites sets each hot key's writes over all rows and its first row (all is sorted by
// hash in place).
func countWrites(all []keyAt, stats map[uint64]*hotStat) {
	slices.SortFunc(all, byHash)
	for r := 0; r < len(all); {
		n := 1
		for r+n < len(all) && all[r+n].hash == all[r].hash {
			n++
		}
		if st := stats[all[r].hash]; st != nil {
			st.writes, st.at = int64(n), int(all[r].at) // the key's first row
		}
		r += n
	}
}
