package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// The HTML page's charts as geometry: every position, size and colour the SVG markup in
// templates/charts.svg.tmpl prints, worked out here from the report.

const (
	chartW = 1120
	padL   = 64
	padR   = 16
)

// gridLine is a horizontal grid line at Y, its value labelled left of the plot at LabelY.
type gridLine struct {
	Y, LabelY float64
	Label     string
}

// svgText is a text placed at X, Y.
type svgText struct {
	X, Y float64
	Text string
}

// regionChartView draws rows per region: one bar per region against the mean.
type regionChartView struct {
	Summary       string
	Width, Height int
	Left, Right   int // the plot's x edges
	TickX         int // the grid labels' right edge
	Grid          []gridLine
	Bars          []regionBar
	IndexY        int // the region numbers' baseline
	ShowMean      bool
	MeanY         float64
	AxisY         float64
	CaptionX      float64
	CaptionY      int
	RowsCaptionY  float64 // the rotated y axis caption's centre
}

type regionBar struct {
	X, Y, W, H float64
	Fill, Tip  string
	ShowIndex  bool // every region is numbered below its bar, or every k-th when there are many
	IndexX     float64
	Index      int
}

func barColor(ratio float64) string {
	switch {
	case ratio > 2:
		return "#e45756"
	case ratio > 1.25:
		return "#f2a23a"
	}
	return "#4c78a8"
}

func newRegionChart(rep *model.Report) regionChartView {
	n := len(rep.Regions)
	const H, padT, padB = 260, 10, 44
	plotW, plotH := float64(chartW-padL-padR), float64(H-padT-padB)
	v := regionChartView{
		Summary: fmt.Sprintf(" · %d regions, %s from %s · max/mean %.2f · CV %.2f", n, rep.Plan.Strategy, rep.Plan.Origin, rep.Distribution.RowsMaxMean, rep.Distribution.CV) +
			strings.Replace(sampledRows(rep), ";", " ·", 1),
		Width: chartW, Height: H, Left: padL, Right: chartW - padR, TickX: padL - 6,
		IndexY: H - padB + 16, AxisY: padT + plotH, CaptionX: padL + plotW/2, CaptionY: H - 6, RowsCaptionY: padT + plotH/2,
	}
	if why := unmeasured(rep); why != "" {
		// no accepted row: a max/mean and CV of 0 would read as an even spread
		v.Summary = fmt.Sprintf(" · %d regions, %s from %s · not measured: %s", n, rep.Plan.Strategy, rep.Plan.Origin, why)
	}
	var top, sum int64
	for _, r := range rep.Regions {
		top = max(top, r.Rows)
		sum += r.Rows
	}
	step := math.Max(niceStep(float64(top), 5), 1) // whole rows
	ymax := math.Max(step*math.Ceil(float64(top)/step), step)
	for s := 0.0; s <= ymax+step/2; s += step {
		y := padT + plotH - s/ymax*plotH
		v.Grid = append(v.Grid, gridLine{Y: y, LabelY: y + 4, Label: shortCount(s)})
	}
	bw := plotW / float64(max(n, 1))
	gap := math.Min(bw*0.18, 6)
	mean := 0.0
	if n > 0 {
		mean = float64(sum) / float64(n)
	}
	labelEvery := int(math.Ceil(float64(n) / 32))
	for i, r := range rep.Regions {
		x := padL + float64(i)*bw
		bh := 0.0
		if ymax > 0 {
			bh = float64(r.Rows) / ymax * plotH
		}
		ratio := 0.0
		if mean > 0 {
			ratio = float64(r.Rows) / mean
		}
		v.Bars = append(v.Bars, regionBar{
			X: x + gap/2, Y: padT + plotH - bh, W: math.Max(bw-gap, 0.8), H: bh, Fill: barColor(ratio),
			Tip:       fmt.Sprintf("region %d [%s, %s): %s rows (%s), %s", r.Index, orInf(r.Start, "-inf"), orInf(r.End, "+inf"), model.Count(r.Rows), model.Pct(r.Share), transform.FormatSize(r.Bytes)),
			ShowIndex: i%labelEvery == 0, IndexX: x + bw/2, Index: i,
		})
	}
	if mean > 0 && ymax > 0 {
		v.ShowMean, v.MeanY = true, padT+plotH-mean/ymax*plotH
	}
	return v
}

// niceStep returns a round tick step for a range.
func niceStep(maxV float64, ticks int) float64 {
	if maxV <= 0 {
		return 1
	}
	raw := maxV / float64(ticks)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func shortCount(v float64) string {
	f := func(x float64, unit string) string {
		return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64) + unit
	}
	switch {
	case v >= 1e9:
		return f(v/1e9, "B")
	case v >= 1e6:
		return f(v/1e6, "M")
	case v >= 1e3:
		return f(v/1e3, "k")
	}
	return f(v, "")
}

func orInf(s, inf string) string {
	if s == "" {
		return inf
	}
	return s
}

// heatmapView is the write heatmap's section: key ranges against the write order, and the
// busiest region's share per window of arrival order below it.
type heatmapView struct {
	Heading string // what the x axis is
	Intro   string
	NoRows  bool            // arrival order without accepted rows: no chart, the section says so
	Grid    *heatGridView   // nil when there is nothing to draw
	Windows *windowLineView // nil without windows
}

func newHeatmapView(rep *model.Report) heatmapView {
	n := rep.Plan.Regions
	group := max((n+collide.MaxHeatRows-1)/collide.MaxHeatRows, 1)
	regionsOf := func(g int) string {
		if group > 1 {
			return fmt.Sprintf("regions %d-%d", g*group, min((g+1)*group, n)-1)
		}
		return fmt.Sprintf("region %d", g)
	}
	if th := rep.TimeHeatmap; th != nil && len(th.Bins) > 0 {
		return timeHeatmapView(rep, th, regionsOf)
	}
	return windowHeatmapView(rep, group, regionsOf)
}

// timeHeatmapView is the heatmap by the write order's values: the accepted rows' slices of time
// (or of a sequence) by key range.
func timeHeatmapView(rep *model.Report, th *model.TimeHeatmap, regionsOf func(int) string) heatmapView {
	var v heatmapView
	bins := th.Bins
	v.Heading = "write order (" + th.Column + ")"
	// a declared integer write order (a sequence) is binned by its values, not by dates
	values := th.Axis == "value"
	at, width, ticks := timeText, durationText, timeTicks
	if values {
		at, width, ticks = valueText, func(w int64) string { return valueText(w) + " values" }, valueTicks
		v.Intro = "The horizontal axis is the write order: " + rep.WriteOrder.Description + ", by its values. "
	} else {
		v.Intro = "The time axis is the write order: " + rep.WriteOrder.Description + ". "
	}
	v.Intro += fmt.Sprintf("The accepted rows by their %s (left to right, %d slices of %s from %s) and by key range (top to bottom: each row starts at the region's split key, in key order). Each cell is the share of a slice's rows whose keys land in that key range: data written in this order by a key that leads with it draws one dark diagonal (every slice in one region); a key that spreads writes is an even tint.%s",
		th.Column, len(bins), width(th.BinMillis), at(th.StartMillis), nullNote(th.NullRows))
	first, span := th.StartMillis, th.BinMillis*int64(len(bins))
	v.Grid = newHeatGrid(heatGrid{id: "heatmap", title: "share of each time slice's rows per key range", cols: len(bins), rows: len(th.Rows),
		share: func(c, r int) float64 {
			b := bins[c]
			if b.Rows == 0 || r >= len(b.Counts) {
				return 0
			}
			return float64(b.Counts[r]) / float64(b.Rows)
		},
		tip: func(c, r int) string {
			b := bins[c]
			var k int64
			if r < len(b.Counts) {
				k = b.Counts[r]
			}
			share := 0.0
			if b.Rows > 0 {
				share = float64(k) / float64(b.Rows)
			}
			return fmt.Sprintf("%s to %s, %s (from %s): %s rows, %s", at(b.StartMillis), at(b.StartMillis+th.BinMillis), regionsOf(r), labelOr(th.Rows[r].Start), model.Count(k), model.Pct(share))
		},
		yLabel: heatRowLabels(rep, len(th.Rows), th.RegionsPerRow), xTicks: ticks(first, span), xLabel: th.Column + " →"})
	v.Windows = newWindowLine(rep)
	return v
}

// windowHeatmapView is the heatmap by the input's order: windows of rows by key range, group
// regions to a row.
func windowHeatmapView(rep *model.Report, group int, regionsOf func(int) string) heatmapView {
	var v heatmapView
	hs, n := rep.Hotspot, rep.Plan.Regions
	rowsN := (n + group - 1) / group
	ws := rep.HotspotWindows
	v.Heading = orderText(rep)
	v.Intro = fmt.Sprintf("The input in "+orderText(rep)+", cut into %d windows of %s rows (left to right); each cell is the share of a window's writes that lands in a key range (top to bottom: each row starts at the region's split key, in key order). A monotonic key draws one dark diagonal (each window writes one region); a good spread is an even tint.",
		hs.Windows, model.Count(hs.RowsPerWindow))
	if len(ws) == 0 || n == 0 {
		v.NoRows = true
		return v
	}
	total := ws[len(ws)-1].FirstRow + ws[len(ws)-1].Rows
	var ticks []heatTick
	xstep := math.Max(niceStep(float64(total), 8), 1) // whole rows
	for x := 0.0; x <= float64(total); x += xstep {
		ticks = append(ticks, heatTick{at: x / float64(max(total, 1)), label: shortCount(x)})
	}
	v.Grid = newHeatGrid(heatGrid{id: "heatmap", title: "share of each window's writes per key range", cols: len(ws), rows: rowsN,
		share: func(c, r int) float64 {
			w := ws[c]
			if w.Rows == 0 {
				return 0
			}
			return float64(groupCount(w.Counts, r, group, n)) / float64(w.Rows)
		},
		tip: func(c, r int) string {
			w := ws[c]
			k := groupCount(w.Counts, r, group, n)
			share := 0.0
			if w.Rows > 0 {
				share = float64(k) / float64(w.Rows)
			}
			return fmt.Sprintf("window %d (rows %s-%s), %s: %s rows, %s", c, model.Count(w.FirstRow), model.Count(w.FirstRow+w.Rows-1), regionsOf(r), model.Count(k), model.Pct(share))
		},
		yLabel: heatRowLabels(rep, rowsN, group), xTicks: ticks, xLabel: "rows in " + orderText(rep) + " →"})
	v.Windows = newWindowLine(rep)
	return v
}

func labelOr(s string) string {
	if s == "" {
		return "-inf"
	}
	return s
}

func nullNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" %s rows have no value and are not shown.", model.Count(n))
}

func groupCount(counts []int64, g, group, n int) int64 {
	var c int64
	for r := g * group; r < min((g+1)*group, n); r++ {
		if r < len(counts) {
			c += counts[r]
		}
	}
	return c
}

// heat colours: a sequential ramp over sqrt(share), so that an even spread still shows texture
// and a hotspot stands out.
var heatStops = []struct {
	at      float64
	r, g, b float64
}{
	{0, 255, 247, 236}, {0.15, 254, 232, 200}, {0.3, 253, 212, 158}, {0.45, 253, 187, 132},
	{0.6, 252, 141, 89}, {0.75, 239, 101, 72}, {0.88, 215, 48, 31}, {1, 127, 0, 0},
}

func heatColor(share float64) string {
	if share <= 0 {
		return "#f1f3f6"
	}
	x := math.Sqrt(math.Min(share, 1))
	for i := 1; i < len(heatStops); i++ {
		a, b := heatStops[i-1], heatStops[i]
		if x <= b.at {
			t := (x - a.at) / (b.at - a.at)
			return fmt.Sprintf("#%02x%02x%02x", int(a.r+(b.r-a.r)*t+0.5), int(a.g+(b.g-a.g)*t+0.5), int(a.b+(b.b-a.b)*t+0.5))
		}
	}
	return "#7f0000"
}

// maxHeatTips bounds the heatmap cells that get a tooltip: beyond it the page would grow by
// megabytes of tooltips.
const maxHeatTips = 6000

// heatGrid is a heatmap to draw: cols x rows cells, each a share in [0,1].
type heatGrid struct {
	id     string
	title  string
	cols   int
	rows   int
	share  func(c, r int) float64
	tip    func(c, r int) string // a cell's tooltip
	yLabel []string              // per row: the key range's start key
	xTicks []heatTick
	xLabel string
}

type heatTick struct {
	at    float64 // 0..1 along the x axis
	label string
	day   int64 // for time ticks: the day (later ticks of the same day show the time only)
}

// heatGridView draws a heatmap with its axes and colour legend.
type heatGridView struct {
	ID, Title    string
	Width        int
	Height       float64
	Cells        []heatCell // column by column
	Tips         bool       // the cells have tooltips
	Left         float64    // the plot's left edge, after the key labels
	Top          int
	PlotW, PlotH float64
	KeyLabels    []svgText
	KeyCaptionY  float64 // the rotated y axis caption's centre
	XTicks       []heatXTick
	XLabel       svgText
	Legend       []heatLegendStep
	LegendX      float64
	LegendTicks  []heatLegendTick
	LegendTickX1 float64
	LegendTickX2 float64
	LegendLabelX float64
	NoneY        float64 // the swatch for an empty cell
	NoneFill     string
	NoneLabelY   float64
	CaptionX     float64
	CaptionY1    float64
	CaptionY2    float64
}

type heatCell struct {
	X, Y, W, H float64
	Fill, Tip  string
}

type heatXTick struct {
	X, Y1, Y2, LabelY float64
	Label             string
}

type heatLegendStep struct {
	Y, H float64
	Fill string
}

type heatLegendTick struct {
	Y, LabelY float64
	Label     string
}

// heatRowLabels are the start keys of the heatmap's rows (region groups): the key ranges.
func heatRowLabels(rep *model.Report, rows, group int) []string {
	out := make([]string, rows)
	for g := range out {
		i := g * group
		if i < len(rep.Regions) {
			out[g] = rep.Regions[i].Start
		}
		if out[g] == "" {
			out[g] = "-inf"
		}
	}
	return out
}

func newHeatGrid(g heatGrid) *heatGridView {
	if g.cols == 0 || g.rows == 0 {
		return nil
	}
	// the key-range labels set the left margin
	longest := 0
	for _, l := range g.yLabel {
		longest = max(longest, len([]rune(clip(l, 24))))
	}
	left := math.Max(float64(padL), math.Min(float64(longest)*6.4+34, 210))
	cellH := math.Max(math.Min(22, 360/float64(g.rows)), 2)
	const padT, legendW = 8, 90
	plotW := float64(chartW-padR-legendW) - left
	plotH := cellH * float64(g.rows)
	cellW := plotW / float64(g.cols)
	v := &heatGridView{ID: g.id, Title: g.title, Width: chartW, Height: padT + plotH + 40,
		Tips: g.cols*g.rows <= maxHeatTips && g.tip != nil, Left: left, Top: padT, PlotW: plotW, PlotH: plotH,
		KeyCaptionY: padT + plotH/2, XLabel: svgText{left + plotW/2, padT + plotH + 32, g.xLabel}}
	v.Cells = make([]heatCell, 0, g.cols*g.rows)
	for c := 0; c < g.cols; c++ {
		x := left + float64(c)*cellW
		for r := 0; r < g.rows; r++ {
			cell := heatCell{X: x, Y: padT + float64(r)*cellH, W: cellW + 0.05, H: cellH + 0.05, Fill: heatColor(g.share(c, r))}
			if v.Tips {
				cell.Tip = g.tip(c, r)
			}
			v.Cells = append(v.Cells, cell)
		}
	}
	// axes: key ranges down the left (each row's start key), the x ticks below
	yEvery := int(math.Ceil(float64(g.rows) / 16))
	for r := 0; r < g.rows; r += yEvery {
		v.KeyLabels = append(v.KeyLabels, svgText{left - 6, padT + float64(r)*cellH + math.Min(cellH, 14)/2 + 4, clip(g.yLabel[r], 24)})
	}
	for _, t := range g.xTicks {
		x := left + t.at*plotW
		v.XTicks = append(v.XTicks, heatXTick{X: x, Y1: padT + plotH, Y2: padT + plotH + 4, LabelY: padT + plotH + 16, Label: t.label})
	}
	// legend: vertical gradient of the colour scale
	lx := float64(chartW - padR - legendW + 26)
	// as tall as the plot, within 110 (its five tick labels apart) and 200 pixels
	lh := math.Min(math.Max(plotH, 110), 200)
	const steps = 40
	for i := 0; i < steps; i++ {
		s0 := 1 - float64(i)/steps
		v.Legend = append(v.Legend, heatLegendStep{Y: padT + float64(i)*lh/steps, H: lh/steps + 0.3, Fill: heatColor(s0 * s0)})
	}
	for _, s := range []float64{1, 0.5, 0.25, 0.1, 0.02} {
		y := padT + (1-math.Sqrt(s))*lh
		v.LegendTicks = append(v.LegendTicks, heatLegendTick{Y: y, LabelY: y + 4, Label: model.Pct(s)})
	}
	v.LegendX, v.LegendTickX1, v.LegendTickX2, v.LegendLabelX = lx, lx+14, lx+18, lx+21
	v.NoneY, v.NoneFill, v.NoneLabelY = padT+lh+6, heatColor(0), padT+lh+15
	v.CaptionX, v.CaptionY1, v.CaptionY2 = lx+14, padT+lh+34, padT+lh+47
	v.Height = math.Max(v.Height, v.CaptionY2+5) // the legend below a short plot
	return v
}

// windowLineView draws the busiest region's share of each arrival window (the write_hotspot
// rule's figures) against the share of an even spread.
type windowLineView struct {
	Intro     string
	Order     string // the title's: the order and its evidence
	AxisOrder string // the caption's: "arrival order" or "write order"
	Width     int
	Height    float64
	Left      int
	Right     float64 // the plot's right edge
	TickX     int
	Grid      []gridLine
	EvenY     float64
	EvenLabel svgText
	Points    string // the polyline's
	CaptionX  float64
	CaptionY  float64
}

func newWindowLine(rep *model.Report) *windowLineView {
	ws := rep.HotspotWindows
	hs := rep.Hotspot
	if len(ws) == 0 {
		return nil
	}
	const lineH, padT = 90.0, 14.0
	plotW := float64(chartW - padL - padR - 90)
	v := &windowLineView{
		Intro: fmt.Sprintf("Writes in "+orderText(rep)+": %d windows of %s rows%s; the busiest region's share of each window is %s on average, %s at most; an even spread gives %s (%.1fx%s).",
			hs.Windows, model.Count(hs.RowsPerWindow), rep.WindowRows(), model.Pct(hs.MeanTopShare), model.Pct(hs.MaxTopShare), model.Pct(hs.EvenShare), hs.HotFactor, hotspotNotJudged(rep)),
		Order: orderText(rep), AxisOrder: "write order",
		Width: chartW, Height: padT + lineH + 30, Left: padL, Right: padL + plotW, TickX: padL - 6,
		CaptionX: padL + plotW/2, CaptionY: padT + lineH + 22,
	}
	for _, s := range []float64{0, 0.5, 1} {
		y := padT + lineH - s*lineH
		v.Grid = append(v.Grid, gridLine{Y: y, LabelY: y + 4, Label: model.Pct(s)})
	}
	if v.Order == "arrival order" {
		v.AxisOrder = v.Order
	}
	v.EvenY = padT + lineH - hs.EvenShare*lineH
	v.EvenLabel = svgText{padL + plotW + 6, v.EvenY + 4, "even " + model.Pct(hs.EvenShare)}
	pts := make([]string, len(ws))
	cellW := plotW / float64(len(ws))
	for wi, w := range ws {
		pts[wi] = fmt.Sprintf("%.1f,%.1f", padL+(float64(wi)+0.5)*cellW, padT+lineH-w.TopShare*lineH)
	}
	v.Points = strings.Join(pts, " ")
	return v
}

// miniChartView is an alternative's small chart: rows per region as bars on the left, the
// busiest share per window as a line on the right.
type miniChartView struct {
	Width, Height int
	Bars          []miniBar
	CaptionY      int
	LineX         float64 // the line chart's frame
	LineW         float64
	LineH         int
	LineLabelX    float64 // its 100% and 0 labels' right edge
	ZeroY         int
	ShowLine      bool
	EvenY         float64
	EvenX2        float64
	Points        string
}

type miniBar struct {
	X, Y, W, H float64
	Fill       string
}

func newMiniChart(a model.Alternative) miniChartView {
	const W, H = 340, 92
	var top, sum int64
	for _, r := range a.RegionRows {
		top = max(top, r)
		sum += r
	}
	n := len(a.RegionRows)
	half := float64(W-10) / 2
	x0 := half + 10
	v := miniChartView{Width: W, Height: H, CaptionY: H - 2, LineX: x0, LineW: half, LineH: H - 18, LineLabelX: x0 - 2, ZeroY: H - 14}
	if n > 0 && top > 0 {
		bw := (half - 24) / float64(n) // the gap holds the line chart's labels
		mean := float64(sum) / float64(n)
		for i, r := range a.RegionRows {
			bh := float64(r) / float64(top) * (H - 22)
			v.Bars = append(v.Bars, miniBar{X: float64(i) * bw, Y: H - 14 - bh, W: math.Max(bw*0.85, 0.6), H: bh, Fill: barColor(float64(r) / mean)})
		}
	}
	if len(a.WindowTop) > 0 {
		pts := make([]string, len(a.WindowTop))
		for i, s := range a.WindowTop {
			x := x0 + (float64(i)+0.5)/float64(len(a.WindowTop))*half
			pts[i] = fmt.Sprintf("%.1f,%.1f", x, 4+(1-s)*float64(H-18))
		}
		v.ShowLine, v.Points = true, strings.Join(pts, " ")
		v.EvenY, v.EvenX2 = 4+(1-1/float64(max(a.Regions, 1)))*float64(H-18), x0+half
	}
	return v
}

// timeText renders epoch milliseconds as a UTC date and time, as the report prints timestamps.
func timeText(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	if ms%1000 == 0 {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("2006-01-02 15:04:05.000")
}

// durationText renders a bin width for humans.
func durationText(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms >= 2*86400000:
		return fmt.Sprintf("%.1f days", float64(ms)/86400000)
	case ms >= 2*3600000:
		return fmt.Sprintf("%.1f hours", float64(ms)/3600000)
	case ms >= 2*60000:
		return fmt.Sprintf("%.1f minutes", float64(ms)/60000)
	}
	return d.String()
}

// timeTicks are round time ticks over [first, first+span): the largest unit that gives at least
// 4 ticks (1 s ... 1 year).
func timeTicks(first, span int64) []heatTick {
	if span <= 0 {
		return nil
	}
	steps := []int64{1, 10, 100, 1000, 5000, 15000, 60000, 300000, 900000, 3600000, 6 * 3600000, 86400000, 7 * 86400000, 30 * 86400000, 365 * 86400000}
	step := steps[0]
	for _, s := range steps {
		if span/s >= 4 {
			step = s
		}
	}
	var out []heatTick
	t := (first + step - 1) / step * step
	if first < 0 && first%step != 0 {
		t = first / step * step
	}
	for ; t <= first+span && len(out) < 16; t += step {
		label := timeText(t)
		if step >= 86400000 {
			label = time.UnixMilli(t).UTC().Format("2006-01-02")
		} else if len(out) > 0 && t/86400000 == out[0].day {
			label = time.UnixMilli(t).UTC().Format(clockFormat(step))
		}
		out = append(out, heatTick{at: float64(t-first) / float64(span), label: label, day: t / 86400000})
	}
	return out
}

// valueText renders a value of a declared integer write order in full (a sequence's values
// must stay distinct, where shortCount would round them).
func valueText(v int64) string { return strconv.FormatInt(v, 10) }

// valueTicks are round value ticks over [first, first+span) of a declared integer write order.
func valueTicks(first, span int64) []heatTick {
	if span <= 0 {
		return nil
	}
	step := max(int64(niceStep(float64(span), 8)), 1)
	var out []heatTick
	t := (first + step - 1) / step * step
	if first < 0 {
		t = first / step * step
		if t < first {
			t += step
		}
	}
	for ; t <= first+span && len(out) < 16; t += step {
		out = append(out, heatTick{at: float64(t-first) / float64(span), label: valueText(t)})
	}
	return out
}

func clockFormat(step int64) string {
	switch {
	case step < 1000:
		return "15:04:05.000"
	case step < 60000:
		return "15:04:05"
	}
	return "15:04"
}
