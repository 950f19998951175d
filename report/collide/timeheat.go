package collide

import (
	"math"

	"github.com/rekey/rekey/report/model"
)

// The time heatmap: accepted rows by their write-order value (in time bins) and key range
// (region groups), so the HTML page can show when the data was written against where its keys
// land. Bins are a fixed number of equal slices that adapt to the values seen: when a value falls
// outside, the bin width doubles (neighbours merge; a value before the start also moves the start
// one span earlier), so memory stays at heatBins x region groups whatever the input.

const (
	heatBins = 256
	// NoTime marks a row without a timestamp (null).
	NoTime = math.MinInt64
	// timeClamp bounds the timestamps binned (about 36 million years around 1970), so that spans
	// and offsets stay far from overflowing.
	timeClamp = int64(1) << 60
)

type TimeHeat struct {
	group  int // regions per row
	rows   int
	init   bool
	start  int64 // bin i covers [start + i*width, start + (i+1)*width)
	width  int64
	counts [][]int64 // heatBins x rows
	nulls  int64
}

func NewTimeHeat(regions int) *TimeHeat {
	group := (regions + MaxHeatRows - 1) / MaxHeatRows
	h := &TimeHeat{group: max(group, 1), width: 1}
	h.rows = (regions + h.group - 1) / h.group
	h.counts = make([][]int64, heatBins)
	for i := range h.counts {
		h.counts[i] = make([]int64, h.rows)
	}
	return h
}

func (h *TimeHeat) Add(t int64, region int) {
	if t == NoTime {
		h.nulls++
		return
	}
	t = min(max(t, -timeClamp), timeClamp) // beyond any calendar: keeps the arithmetic in range
	if !h.init {
		h.start, h.init = t, true
	}
	for t < h.start || (t-h.start)/h.width >= heatBins {
		h.grow(t < h.start)
	}
	h.counts[(t-h.start)/h.width][region/h.group]++
}

// grow doubles the bin width, merging neighbours; left moves the start one span earlier first
// (the old bins then fill the right half).
func (h *TimeHeat) grow(left bool) {
	shift := 0
	if left {
		shift = heatBins
		h.start -= heatBins * h.width
	}
	merged := make([][]int64, heatBins)
	for i := range merged {
		merged[i] = make([]int64, h.rows)
	}
	for i, c := range h.counts {
		dst := merged[(i+shift)/2]
		for r, n := range c {
			dst[r] += n
		}
	}
	h.counts = merged
	h.width *= 2
}

// Result condenses the heatmap for the report: the bins from the first to the last with rows.
func (h *TimeHeat) Result(column string, regions []model.Region) *model.TimeHeatmap {
	out := &model.TimeHeatmap{Column: column, BinMillis: h.width, RegionsPerRow: h.group, NullRows: h.nulls, Rows: []model.HeatRow{}, Bins: []model.TimeBin{}}
	for g := 0; g < h.rows; g++ {
		r := model.HeatRow{FirstRegion: g * h.group}
		if r.FirstRegion < len(regions) {
			r.Start = regions[r.FirstRegion].Start
		}
		out.Rows = append(out.Rows, r)
	}
	first, last := -1, -1
	for i, c := range h.counts {
		for _, n := range c {
			if n > 0 {
				if first < 0 {
					first = i
				}
				last = i
				break
			}
		}
	}
	if first < 0 {
		return out
	}
	out.StartMillis = h.start + int64(first)*h.width
	for i := first; i <= last; i++ {
		b := model.TimeBin{StartMillis: h.start + int64(i)*h.width, Counts: h.counts[i]}
		for _, n := range b.Counts {
			b.Rows += n
		}
		out.Bins = append(out.Bins, b)
	}
	return out
}

// MaxHeatRows bounds the heatmap's region rows: beyond it adjacent regions are grouped.
const MaxHeatRows = 128
