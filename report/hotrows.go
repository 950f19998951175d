package report

import (
	"slices"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

// Single-row hotspots: one row written again and again (a counter, a status updated by every
// event of an order). The wide-table guide: "Requests for the same row are always distributed
// to the same node ... you can only resolve this issue by scaling up the specification of the
// node": no key design spreads it. The advisor's subsample, in write order (a Kafka or CDC
// window's timestamps or offsets, Cassandra's WRITETIME(), a time column), is cut into windows
// and the writes of each key counted per window.

// HotRows are the keys written most often within a window of writes.
type HotRows struct {
	Order         string   `json:"order"`           // the write order's evidence (write_order.evidence)
	Rows          int64    `json:"rows"`            // subsample rows counted
	Windows       int      `json:"windows"`         // windows they were cut into
	RowsPerWindow int64    `json:"rows_per_window"` // rows per window (the last may hold up to 1.5x)
	EvenShare     float64  `json:"even_share"`      // 1 / regions asked: a region's share of the writes
	Top           []HotRow `json:"top"`             // up to 5 keys written more than once in a window, most first
}

// HotRow is one key and its writes.
type HotRow struct {
	Key          []string `json:"key"`           // the key's values as text
	Writes       int64    `json:"writes"`        // subsample rows with this key
	WindowWrites int64    `json:"window_writes"` // the most in one window
	WindowShare  float64  `json:"window_share"`  // that window's share of them
}

// hotRowWindows is how many windows the subsample is cut into for single-row hotspots.
const hotRowWindows = 50

// countHotRows counts the writes of each key (keys in write order) per window. The keys' hashes
// are sorted per window and counted by runs (a map entry per key cost several thousand
// instructions a row); only the keys written twice in a window are kept.
func countHotRows(keys [][]pipeline.Value, evidence string, regions int) HotRows {
	h := HotRows{Order: evidence, Rows: int64(len(keys)), EvenShare: 1 / float64(max(regions, 1)), Top: []HotRow{}}
	if len(keys) == 0 {
		return h
	}
	per := max(int64(len(keys))/hotRowWindows, 1)
	h.RowsPerWindow = per
	type keyAt struct {
		hash uint64
		at   int32 // a row with the key
	}
	all := make([]keyAt, len(keys))
	for i, key := range keys {
		all[i] = keyAt{hashValues(key), int32(i)}
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
		h.Top = append(h.Top, HotRow{Key: text, Writes: s.writes, WindowWrites: s.best, WindowShare: float64(s.best) / float64(max(s.bestOf, 1))})
	}
	slices.SortFunc(h.Top, func(a, b HotRow) int {
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
