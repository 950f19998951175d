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
	type keyAt struct {
		hash uint64
		at   int32 // a row with the key
	}
	all := make([]keyAt, len(keys))
	for i, key := range keys {
		all[i] = keyAt{HashValues(key), int32(i)}
	}
	byHash := func(a, b keyAt) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return int(a.at - b.at)
	}
	type stat struct {
		at                   int
		writes, best, bestOf int64
	}
	stats := map[uint64]*stat{}
	var buf []keyAt
	win := 0
	for start := 0; start < len(all); win++ {
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
					st = &stat{} // its first row and writes: below
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
	if len(stats) > 0 {
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
	h.Windows = win
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
