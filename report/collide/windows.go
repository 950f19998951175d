package collide

// Windows and regions of the analysis.
const (
	DefaultAnalysisRegions = 16
	MainWindows            = 200 // windows the main analysis aims at
	MainWindowsMax         = 256 // more complete windows than this are merged pairwise
	AltWindows             = 50
	AltWindowsMax          = 64
)

// Windows cuts the accepted rows, in arrival order, into windows of a fixed number of rows and
// counts each window's rows per region. When more than maxWindows windows are complete,
// neighbours are merged pairwise and the window size doubles, so the windows x regions matrix
// stays bounded whatever the input size.
type Windows struct {
	regions int
	Per     int64 // rows per window
	max     int
	done    [][]int64 // complete windows: rows per region
	first   []int64   // ordinal (among accepted rows) of each complete window's first row
	cur     []int64
	curRows int64
	total   int64
}

// minRowsPerWindow keeps windows large enough that an even spread shows as an even spread: with
// 32 rows per region on average, the busiest region of a uniform window holds about 1.4x its
// share, far from the N x of a hotspot.
func minRowsPerWindow(regions int) int64 { return max(256, int64(32*regions)) }

// NewWindows sizes windows so that the expected rows make about target windows; more than
// maxWindows (even) complete windows are merged pairwise, leaving maxWindows/2.
func NewWindows(regions int, expectedRows int64, target, maxWindows int) *Windows {
	per := minRowsPerWindow(regions)
	if expectedRows > 0 {
		per = max(per, (expectedRows+int64(target)-1)/int64(target))
	}
	return &Windows{regions: regions, Per: per, max: maxWindows, cur: make([]int64, regions)}
}

func (w *Windows) Add(region int) {
	w.cur[region]++
	w.curRows++
	if w.curRows == w.Per {
		w.push()
	}
}

func (w *Windows) push() {
	w.done = append(w.done, w.cur)
	w.first = append(w.first, w.total)
	w.total += w.curRows
	w.cur = make([]int64, w.regions)
	w.curRows = 0
	if len(w.done) >= w.max && len(w.done)%2 == 0 {
		half := len(w.done) / 2
		for i := 0; i < half; i++ {
			a, b := w.done[2*i], w.done[2*i+1]
			for r := range a {
				a[r] += b[r]
			}
			w.done[i] = a
			w.first[i] = w.first[2*i]
		}
		w.done = w.done[:half]
		w.first = w.first[:half]
		w.Per *= 2
	}
}

// windowStat is one window's figures.
type windowStat struct {
	First     int64
	Rows      int64
	TopRegion int
	TopShare  float64
	Counts    []int64
}

// Result returns the complete windows and the partial last one (if it has at least half a
// window of rows; a shorter tail is folded into the previous window).
func (w *Windows) Result() []windowStat {
	done, first := w.done, w.first
	if w.curRows > 0 {
		if w.curRows*2 >= w.Per || len(done) == 0 {
			done = append(done, w.cur)
			first = append(first, w.total)
		} else {
			last := make([]int64, w.regions)
			copy(last, done[len(done)-1])
			for r, c := range w.cur {
				last[r] += c
			}
			done = append(done[:len(done)-1:len(done)-1], last)
		}
	}
	out := make([]windowStat, len(done))
	for i, c := range done {
		var rows, top int64
		topR := 0
		for r, n := range c {
			rows += n
			if n > top {
				top, topR = n, r
			}
		}
		s := windowStat{First: first[i], Rows: rows, TopRegion: topR, Counts: c}
		if rows > 0 {
			s.TopShare = float64(top) / float64(rows)
		}
		out[i] = s
	}
	return out
}

// hotspotSummary condenses windows: the mean and max share of the busiest region per window,
// weighted by rows, and the share an even spread would give.
type hotspotSummary struct {
	Windows        int
	RowsPerWindow  int64
	MeanTopShare   float64
	MaxTopShare    float64
	EvenShare      float64
	HotFactor      float64 // MeanTopShare / EvenShare: 1 is even, the region count is one region taking all
	DistinctTopReg int     // how many different regions were the busiest of some window
}

func Summarize(ws []windowStat, regions int, per int64) hotspotSummary {
	s := hotspotSummary{Windows: len(ws), RowsPerWindow: per, EvenShare: 1 / float64(max(regions, 1))}
	var rows int64
	seen := map[int]bool{}
	for _, w := range ws {
		s.MeanTopShare += w.TopShare * float64(w.Rows)
		rows += w.Rows
		s.MaxTopShare = max(s.MaxTopShare, w.TopShare)
		if w.Rows > 0 {
			seen[w.TopRegion] = true
		}
	}
	if rows > 0 {
		s.MeanTopShare /= float64(rows)
	}
	s.HotFactor = s.MeanTopShare / s.EvenShare
	s.DistinctTopReg = len(seen)
	return s
}

// Step is the greatest common divisor of the values' differences from the first (0 when all
// are equal).
func Step(vals []int64) int64 {
	var g int64
	for _, v := range vals[1:] {
		d := v - vals[0]
		if d < 0 {
			d = -d
		}
		for d != 0 {
			g, d = d, g%d
		}
	}
	return g
}
