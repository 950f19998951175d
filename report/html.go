package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/transform"
)

// WriteHTML writes the report as one self-contained page: inline CSS and SVG, no script, no
// network. The markup is well-formed XML (XHTML-compatible: every element closed, only the five
// XML entities), so tools can parse it with an XML parser.
//
// Charts: rows per region (one <rect class="bar"> per region), a heatmap of key ranges (region
// groups, labelled by their start keys) against time (one <rect class="cell"> per time slice and
// key range, like TiDB's Key Visualizer: time runs left to right, the key space top to bottom):
// the mapping's timestamp column when it has one, else the windows of the input in arrival
// order; the busiest region's share per window, and for every alternative a small bar chart and
// share line.
func WriteHTML(w io.Writer, rep *Report) error {
	h := &htmlWriter{}
	h.page(rep)
	_, err := io.WriteString(w, h.sb.String())
	return err
}

type htmlWriter struct {
	sb strings.Builder
}

func (h *htmlWriter) raw(s ...string) {
	for _, x := range s {
		h.sb.WriteString(x)
	}
}

func (h *htmlWriter) rawf(format string, args ...any) { fmt.Fprintf(&h.sb, format, args...) }

// esc escapes text and attribute values for XML and HTML alike.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&#39;")
		default:
			if r < 0x20 && r != '\n' && r != '\t' || r == 0xfffe || r == 0xffff {
				b.WriteString("\uFFFD") // not allowed in XML
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (h *htmlWriter) text(s string) { h.sb.WriteString(esc(s)) }

const css = `
:root { --ink: #1f2430; --muted: #5b6475; --line: #e3e6ec; --bg: #f6f7f9; --card: #ffffff;
  --err: #c62828; --warn: #b26a00; --ok: #2e7d32; --info: #3b5b92; --accent: #2f5fb3; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; letter-spacing: -0.01em; }
h2 { font-size: 16px; margin: 30px 0 10px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 0 0 6px; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px; }
.sub { color: var(--muted); }
header { display: flex; justify-content: space-between; align-items: flex-start; gap: 24px;
  background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 18px 22px; }
header .pk { margin-top: 8px; padding: 6px 10px; background: #f1f4fa; border-radius: 6px; display: inline-block; }
.verdict { text-align: right; min-width: 210px; }
.badge { display: inline-block; font-weight: 700; border-radius: 6px; padding: 4px 12px; color: #fff; font-size: 15px; }
.badge.FAIL { background: var(--err); } .badge.WARN { background: var(--warn); } .badge.OK { background: var(--ok); }
.kpis { display: grid; grid-template-columns: repeat(7, 1fr); gap: 10px; margin-top: 14px; }
.kpi { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.kpi .v { font-size: 19px; font-weight: 650; } .kpi .l { color: var(--muted); font-size: 12px; }
.kpi.bad .v { color: var(--err); } .kpi.warn .v { color: var(--warn); }
table { border-collapse: collapse; width: 100%; background: var(--card); }
th, td { text-align: left; padding: 5px 9px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: #fafbfc; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.sev { display: inline-block; min-width: 62px; text-align: center; border-radius: 4px; padding: 1px 6px;
  font-size: 11px; font-weight: 700; letter-spacing: 0.04em; color: #fff; }
.sev.error { background: var(--err); } .sev.warning { background: var(--warn); } .sev.info { background: #8a94a6; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }
.alts { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 12px; }
svg.mini { width: 100%; height: auto; display: block; margin: 4px 0 6px; }
.alt { position: relative; }
.alt.mine { border: 2px solid var(--accent); }
.alt .tag { position: absolute; top: -10px; right: 12px; background: var(--accent); color: #fff; font-size: 11px;
  font-weight: 700; padding: 1px 8px; border-radius: 10px; }
.grade { font-weight: 700; text-transform: uppercase; font-size: 11px; padding: 1px 7px; border-radius: 4px; color: #fff; }
.grade.good { background: var(--ok); } .grade.fair { background: var(--warn); } .grade.poor { background: var(--err); }
.alt .pk { margin: 6px 0; word-break: break-all; }
.alt table td, .alt table th { padding: 2px 6px; font-size: 12px; }
.trade { color: var(--muted); font-size: 12.5px; margin-top: 6px; }
.alt tr.query td { font-size: 11.5px; color: var(--muted); }
p.advice { background: #fff6e5; border-left: 3px solid var(--warn); padding: 6px 10px; margin: 0 0 8px; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #3a4150; }
svg .axis { stroke: #9aa3b2; stroke-width: 1; }
svg .grid { stroke: #edf0f4; stroke-width: 1; }
svg .tick { font-size: 11px; } svg .label { font-size: 12px; font-weight: 600; }
svg .key { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 10.5px; }
svg .mean { stroke: #1f2430; stroke-dasharray: 5 4; stroke-width: 1.2; }
svg .even { stroke: #2e7d32; stroke-dasharray: 5 4; stroke-width: 1.2; }
svg .line { fill: none; stroke: #c62828; stroke-width: 1.6; }
.legend { display: flex; gap: 16px; align-items: center; color: var(--muted); font-size: 12px; margin: 4px 0 8px; }
.sw { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -2px; margin-right: 5px; }
pre.sql { background: #1f2430; color: #e8ecf3; padding: 10px 12px; border-radius: 8px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
footer { color: var(--muted); font-size: 12px; margin-top: 30px; }
`

func (h *htmlWriter) page(rep *Report) {
	h.raw(`<!DOCTYPE html>`, "\n", `<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>`)
	h.raw(`<meta name="viewport" content="width=device-width, initial-scale=1"/><title>`)
	h.text("rekey report: " + rep.Mapping.Table)
	h.raw(`</title><style>`, css, `</style></head><body><main>`)
	h.header(rep)
	h.findings(rep)
	h.regionChart(rep)
	h.heatmap(rep)
	h.keySection(rep)
	h.uniqueness(rep)
	h.alternatives(rep)
	h.recommendation(rep)
	h.raw(`<footer>`)
	h.text(fmt.Sprintf("%s · schema %s · mapping fingerprint %s", rep.Generator, rep.Schema, rep.Mapping.Fingerprint))
	h.raw(`</footer></main></body></html>`, "\n")
}

func verdictWord(v Verdict) string {
	switch {
	case v.Errors > 0:
		return "FAIL"
	case v.Warnings > 0:
		return "WARN"
	}
	return "OK"
}

func (h *htmlWriter) header(rep *Report) {
	h.raw(`<header><div><h1>Key distribution report · `)
	h.text(rep.Mapping.Table)
	h.raw(`</h1><div class="sub">mapping <code>`)
	h.text(rep.Mapping.File)
	h.raw(`</code> · source <code>`)
	h.text(rep.Source.URI)
	h.raw(`</code>`)
	if rep.Source.Sampled {
		h.raw(` · sampled: `)
		h.text(rep.Source.Sample)
	}
	h.raw(`</div><div class="pk mono">PRIMARY KEY `)
	h.text(rep.Mapping.PrimaryKey)
	h.raw(`</div></div><div class="verdict"><span class="badge `, verdictWord(rep.Verdict), `">`, verdictWord(rep.Verdict), `</span><div class="sub" style="margin-top:6px">`)
	v := rep.Verdict
	h.text(fmt.Sprintf("%d error%s · %d warning%s · %d note%s", v.Errors, plural(v.Errors), v.Warnings, plural(v.Warnings), v.Infos, plural(v.Infos)))
	h.raw(`<br/>exit code `, fmt.Sprint(v.ExitCode), `</div></div></header>`)

	t := rep.Totals
	kpi := func(label, value, class string) {
		h.raw(`<div class="kpi `, class, `"><div class="v">`)
		h.text(value)
		h.raw(`</div><div class="l">`)
		h.text(label)
		h.raw(`</div></div>`)
	}
	h.raw(`<div class="kpis">`)
	kpi("rows read", count(t.RowsRead), "")
	cls := ""
	if t.RowsRejected > 0 {
		cls = "warn"
	}
	kpi("rows rejected", count(t.RowsRejected), cls)
	cls = ""
	if rep.Uniqueness.CollisionRows > 0 {
		cls = "bad"
	}
	kpi("rows overwritten", count(rep.Uniqueness.CollisionRows), cls)
	kpi("target data", transform.FormatSize(t.EstimatedTargetBytes), "")
	kpi("regions ("+rep.Plan.Strategy+")", fmt.Sprint(rep.Plan.Regions), "")
	cls = ""
	if rep.Distribution.RowsMaxMean >= balanceMaxMean {
		cls = "warn"
	}
	kpi("rows max / mean", fmt.Sprintf("%.2f", rep.Distribution.RowsMaxMean), cls)
	cls = ""
	if rep.Hotspot.HotFactor >= hotFactorWarn {
		cls = "warn"
	}
	kpi("write hot factor", fmt.Sprintf("%.1fx", rep.Hotspot.HotFactor), cls)
	h.raw(`</div>`)
}

func (h *htmlWriter) findings(rep *Report) {
	h.raw(`<h2>Findings</h2><table><thead><tr><th style="width:80px">severity</th><th style="width:190px">rule</th><th>finding</th></tr></thead><tbody>`)
	for _, f := range rep.Findings {
		h.raw(`<tr class="finding"><td><span class="sev `, f.Severity, `">`, strings.ToUpper(f.Severity), `</span></td><td><code>`)
		h.text(f.Rule)
		h.raw(`</code></td><td>`)
		h.text(f.Message)
		h.raw(`</td></tr>`)
	}
	h.raw(`</tbody></table>`)
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

const (
	chartW = 1120
	padL   = 64
	padR   = 16
)

func barColor(ratio float64) string {
	switch {
	case ratio > 2:
		return "#e45756"
	case ratio > 1.25:
		return "#f2a23a"
	}
	return "#4c78a8"
}

func (h *htmlWriter) regionChart(rep *Report) {
	n := len(rep.Regions)
	h.raw(`<h2>Rows per region</h2><div class="card">`)
	h.raw(`<div class="legend"><span><span class="sw" style="background:#4c78a8"></span>within 25% of the mean</span>`,
		`<span><span class="sw" style="background:#f2a23a"></span>up to 2x the mean</span>`,
		`<span><span class="sw" style="background:#e45756"></span>over 2x the mean</span>`,
		`<span><svg xmlns="http://www.w3.org/2000/svg" width="26" height="10"><line x1="0" y1="5" x2="26" y2="5" class="mean"/></svg> mean</span>`)
	h.text(fmt.Sprintf(" · %d regions, %s from %s · max/mean %.2f · CV %.2f", n, rep.Plan.Strategy, rep.Plan.Origin, rep.Distribution.RowsMaxMean, rep.Distribution.CV))
	h.raw(`</div>`)
	const H, padT, padB = 260, 10, 44
	plotW, plotH := float64(chartW-padL-padR), float64(H-padT-padB)
	var top, sum int64
	for _, r := range rep.Regions {
		top = max(top, r.Rows)
		sum += r.Rows
	}
	step := niceStep(float64(top), 5)
	ymax := math.Max(step*math.Ceil(float64(top)/step), step)
	h.rawf(`<svg xmlns="http://www.w3.org/2000/svg" id="regions-chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, chartW, H, chartW, H)
	h.raw(`<title>rows per region</title>`)
	for v := 0.0; v <= ymax+step/2; v += step {
		y := padT + plotH - v/ymax*plotH
		h.rawf(`<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padL, y, chartW-padR, y)
		h.rawf(`<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y+4, shortCount(v))
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
		h.rawf(`<rect class="bar" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s" rx="1.5">`, x+gap/2, padT+plotH-bh, math.Max(bw-gap, 0.8), bh, barColor(ratio))
		h.raw(`<title>`)
		h.text(fmt.Sprintf("region %d [%s, %s): %s rows (%s), %s", r.Index, orInf(r.Start, "-inf"), orInf(r.End, "+inf"), count(r.Rows), pct(r.Share), transform.FormatSize(r.Bytes)))
		h.raw(`</title></rect>`)
		if i%labelEvery == 0 {
			h.rawf(`<text class="tick" x="%.1f" y="%d" text-anchor="middle">%d</text>`, x+bw/2, H-padB+16, i)
		}
	}
	if mean > 0 && ymax > 0 {
		y := padT + plotH - mean/ymax*plotH
		h.rawf(`<line class="mean" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padL, y, chartW-padR, y)
	}
	h.rawf(`<line class="axis" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padL, padT+plotH, chartW-padR, padT+plotH)
	h.rawf(`<text class="label" x="%.1f" y="%d" text-anchor="middle">region (in key order)</text>`, padL+plotW/2, H-6)
	h.rawf(`<text class="label" transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">rows</text>`, padT+plotH/2)
	h.raw(`</svg></div>`)
}

func orInf(s, inf string) string {
	if s == "" {
		return inf
	}
	return s
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

// maxHeatRows bounds the heatmap's region rows: beyond it adjacent regions are grouped.
const maxHeatRows = 128

// heatGrid is a heatmap to draw: cols x rows cells, each a share in [0,1].
type heatGrid struct {
	id     string
	title  string
	cols   int
	rows   int
	share  func(c, r int) float64
	tip    func(c, r int) string // a cell's tooltip ("" for none)
	yLabel []string              // per row: the key range's start key
	xTicks []heatTick
	xLabel string
}

type heatTick struct {
	at    float64 // 0..1 along the x axis
	label string
	day   int64 // for time ticks: the day (later ticks of the same day show the time only)
}

// heatRowLabels are the start keys of the heatmap's rows (region groups): the key ranges.
func heatRowLabels(rep *Report, rows, group int) []string {
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

func (h *htmlWriter) heatmap(rep *Report) {
	hs := rep.Hotspot
	n := rep.Plan.Regions
	group := max((n+maxHeatRows-1)/maxHeatRows, 1)
	rowsN := (n + group - 1) / group
	regionsOf := func(g int) string {
		if group > 1 {
			return fmt.Sprintf("regions %d-%d", g*group, min((g+1)*group, n)-1)
		}
		return fmt.Sprintf("region %d", g)
	}
	if th := rep.TimeHeatmap; th != nil && len(th.Bins) > 0 {
		bins := th.Bins
		h.raw(`<h2>Write heatmap: key ranges × write order (`)
		h.text(th.Column)
		h.raw(`)</h2><div class="card"><div class="sub" style="margin-bottom:6px">`)
		// a declared integer write order (a sequence) is binned by its values, not by dates
		values := th.Axis == "value"
		at, width, ticks := timeText, durationText, timeTicks
		if values {
			at, width, ticks = valueText, func(w int64) string { return valueText(w) + " values" }, valueTicks
			h.text("The horizontal axis is the write order: " + rep.WriteOrder.Description + ", by its values. ")
		} else {
			h.text("The time axis is the write order: " + rep.WriteOrder.Description + ". ")
		}
		h.text(fmt.Sprintf("The accepted rows by their %s (left to right, %d slices of %s from %s) and by key range (top to bottom: each row starts at the region's split key, in key order). Each cell is the share of a slice's rows whose keys land in that key range: data written in this order by a key that leads with it draws one dark diagonal (every slice in one region); a key that spreads writes is an even tint.%s",
			th.Column, len(bins), width(th.BinMillis), at(th.StartMillis), nullNote(th.NullRows)))
		h.raw(`</div>`)
		first, span := th.StartMillis, th.BinMillis*int64(len(bins))
		g := heatGrid{id: "heatmap", title: "share of each time slice's rows per key range", cols: len(bins), rows: len(th.Rows),
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
				return fmt.Sprintf("%s to %s, %s (from %s): %s rows, %s", at(b.StartMillis), at(b.StartMillis+th.BinMillis), regionsOf(r), labelOr(th.Rows[r].Start), count(k), pct(share))
			},
			yLabel: heatRowLabels(rep, len(th.Rows), th.RegionsPerRow), xTicks: ticks(first, span), xLabel: th.Column + " →"}
		h.drawHeat(g)
		h.raw(`</div>`)
	} else {
		ws := rep.HotspotWindows
		h.raw(`<h2>Write heatmap: key ranges × `)
		h.text(orderText(rep))
		h.raw(`</h2><div class="card">`)
		h.raw(`<div class="sub" style="margin-bottom:6px">`)
		h.text(fmt.Sprintf("The input in "+orderText(rep)+", cut into %d windows of %s rows (left to right); each cell is the share of a window's writes that lands in a key range (top to bottom: each row starts at the region's split key, in key order). A monotonic key draws one dark diagonal (each window writes one region); a good spread is an even tint.",
			hs.Windows, count(hs.RowsPerWindow)))
		h.raw(`</div>`)
		if len(ws) == 0 || n == 0 {
			h.raw(`<p class="sub">No accepted rows.</p></div>`)
			return
		}
		total := ws[len(ws)-1].FirstRow + ws[len(ws)-1].Rows
		var ticks []heatTick
		xstep := niceStep(float64(total), 8)
		for v := 0.0; v <= float64(total); v += xstep {
			ticks = append(ticks, heatTick{at: v / float64(max(total, 1)), label: shortCount(v)})
		}
		g := heatGrid{id: "heatmap", title: "share of each window's writes per key range", cols: len(ws), rows: rowsN,
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
				return fmt.Sprintf("window %d (rows %s-%s), %s: %s rows, %s", c, count(w.FirstRow), count(w.FirstRow+w.Rows-1), regionsOf(r), count(k), pct(share))
			},
			yLabel: heatRowLabels(rep, rowsN, group), xTicks: ticks, xLabel: "rows in " + orderText(rep) + " →"}
		h.drawHeat(g)
		h.raw(`</div>`)
	}
	h.windowLine(rep)
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
	return fmt.Sprintf(" %s rows have no value and are not shown.", count(n))
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

// drawHeat draws a heatmap with its axes and colour legend.
func (h *htmlWriter) drawHeat(g heatGrid) {
	if g.cols == 0 || g.rows == 0 {
		return
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
	H := padT + plotH + 40
	cellW := plotW / float64(g.cols)
	h.rawf(`<svg xmlns="http://www.w3.org/2000/svg" id="%s" width="%d" height="%.0f" viewBox="0 0 %d %.0f" role="img">`, g.id, chartW, H, chartW, H)
	h.raw(`<title>`)
	h.text(g.title)
	h.raw(`</title>`)
	titles := g.cols*g.rows <= 6000
	h.raw(`<g shape-rendering="crispEdges">`)
	for c := 0; c < g.cols; c++ {
		x := left + float64(c)*cellW
		for r := 0; r < g.rows; r++ {
			share := g.share(c, r)
			y := padT + float64(r)*cellH
			h.rawf(`<rect class="cell" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s">`, x, y, cellW+0.05, cellH+0.05, heatColor(share))
			if titles && g.tip != nil {
				h.raw(`<title>`)
				h.text(g.tip(c, r))
				h.raw(`</title>`)
			}
			h.raw(`</rect>`)
		}
	}
	h.raw(`</g>`)
	// axes: key ranges down the left (each row's start key), the x ticks below
	h.rawf(`<rect x="%.1f" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#9aa3b2"/>`, left, padT, plotW, plotH)
	yEvery := int(math.Ceil(float64(g.rows) / 16))
	for r := 0; r < g.rows; r += yEvery {
		h.rawf(`<text class="tick key" x="%.1f" y="%.1f" text-anchor="end">`, left-6, padT+float64(r)*cellH+math.Min(cellH, 14)/2+4)
		h.text(clip(g.yLabel[r], 24))
		h.raw(`</text>`)
	}
	h.rawf(`<text class="label" transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">key range (region start key)</text>`, padT+plotH/2)
	for _, t := range g.xTicks {
		x := left + t.at*plotW
		h.rawf(`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, padT+plotH, x, padT+plotH+4)
		h.rawf(`<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">`, x, padT+plotH+16)
		h.text(t.label)
		h.raw(`</text>`)
	}
	h.rawf(`<text class="label" x="%.1f" y="%.1f" text-anchor="middle">`, left+plotW/2, padT+plotH+32)
	h.text(g.xLabel)
	h.raw(`</text>`)
	// legend: vertical gradient of the colour scale
	lx := float64(chartW - padR - legendW + 26)
	lh := math.Min(plotH, 200)
	const steps = 40
	for i := 0; i < steps; i++ {
		s0 := 1 - float64(i)/steps
		share := s0 * s0
		h.rawf(`<rect class="legend-step" x="%.1f" y="%.2f" width="14" height="%.2f" fill="%s"/>`, lx, padT+float64(i)*lh/steps, lh/steps+0.3, heatColor(share))
	}
	for _, s := range []float64{1, 0.5, 0.25, 0.1, 0.02} {
		y := padT + (1-math.Sqrt(s))*lh
		h.rawf(`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, lx+14, y, lx+18, y)
		h.rawf(`<text class="tick" x="%.1f" y="%.1f">%s</text>`, lx+21, y+4, pct(s))
	}
	h.rawf(`<rect x="%.1f" y="%.1f" width="14" height="10" fill="%s" stroke="#d5d9e0"/>`, lx, padT+lh+6, heatColor(0))
	h.rawf(`<text class="tick" x="%.1f" y="%.1f">none</text>`, lx+21, padT+lh+15)
	h.rawf(`<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">share of a</text>`, lx+14, padT+lh+34)
	h.rawf(`<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">column's rows</text>`, lx+14, padT+lh+47)
	h.raw(`</svg>`)
}

// windowLine draws the busiest region's share of each arrival window (the write_hotspot rule's
// figures).
func (h *htmlWriter) windowLine(rep *Report) {
	ws := rep.HotspotWindows
	hs := rep.Hotspot
	if len(ws) == 0 {
		return
	}
	h.raw(`<div class="card" style="margin-top:10px"><div class="sub" style="margin-bottom:6px">`)
	h.text(fmt.Sprintf("Writes in "+orderText(rep)+": %d windows of %s rows; the busiest region's share of each window is %s on average, %s at most; an even spread gives %s (%.1fx).",
		hs.Windows, count(hs.RowsPerWindow), pct(hs.MeanTopShare), pct(hs.MaxTopShare), pct(hs.EvenShare), hs.HotFactor))
	h.raw(`</div>`)
	const lineH, padT = 90.0, 14.0
	plotW := float64(chartW - padL - padR - 90)
	H := padT + lineH + 30
	h.rawf(`<svg xmlns="http://www.w3.org/2000/svg" id="window-line" width="%d" height="%.0f" viewBox="0 0 %d %.0f" role="img">`, chartW, H, chartW, H)
	h.raw(`<title>busiest region's share of each window, in `)
	h.text(orderText(rep))
	h.raw(`</title>`)
	y0 := padT
	for _, s := range []float64{0, 0.5, 1} {
		y := y0 + lineH - s*lineH
		h.rawf(`<line class="grid" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`, padL, y, padL+plotW, y)
		h.rawf(`<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y+4, pct(s))
	}
	ey := y0 + lineH - hs.EvenShare*lineH
	h.rawf(`<line class="even" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`, padL, ey, padL+plotW, ey)
	h.rawf(`<text class="tick" x="%.1f" y="%.1f" fill="#2e7d32">even %s</text>`, padL+plotW+6, ey+4, pct(hs.EvenShare))
	var pts []string
	cellW := plotW / float64(len(ws))
	for wi, w := range ws {
		x := padL + (float64(wi)+0.5)*cellW
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y0+lineH-w.TopShare*lineH))
	}
	h.raw(`<polyline class="line" points="`, strings.Join(pts, " "), `"/>`)
	h.rawf(`<text class="label" x="%.1f" y="%.1f" text-anchor="middle">busiest region's share of each window, windows in write order →</text>`, padL+plotW/2, y0+lineH+22)
	h.raw(`</svg></div>`)
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

func (h *htmlWriter) kv(rows [][2]string) {
	h.raw(`<table>`)
	for _, r := range rows {
		h.raw(`<tr><th style="width:42%">`)
		h.text(r[0])
		h.raw(`</th><td>`)
		h.text(r[1])
		h.raw(`</td></tr>`)
	}
	h.raw(`</table>`)
}

func (h *htmlWriter) keySection(rep *Report) {
	k, fc, t := rep.Key, rep.FirstColumn, rep.Totals
	h.raw(`<h2>Rows, key shape and first column</h2><div class="grid2"><div class="card"><h3>Totals and key shape</h3>`)
	shape := "variable length"
	if k.FixedLength {
		shape = "fixed length"
	}
	rows := [][2]string{
		{"rows read / analysed", count(t.RowsRead) + " / " + count(t.RowsAnalysed)},
		{"rows accepted / rejected", count(t.RowsOK) + " / " + count(t.RowsRejected)},
	}
	for _, c := range sortedCodes(t.RejectCodes) {
		rows = append(rows, [2]string{"  rejected: " + c, count(t.RejectCodes[c])})
	}
	rows = append(rows,
		[2]string{"target bytes (uncompressed)", transform.FormatSize(t.TargetBytes) + " read, about " + transform.FormatSize(t.EstimatedTargetBytes) + " in all"},
		[2]string{"key columns", fmt.Sprint(k.Columns)},
		[2]string{"key bytes min / mean / p99 / max", fmt.Sprintf("%d / %.1f / %d / %d (%s)", k.MinBytes, k.MeanBytes, k.P99Bytes, k.MaxBytes, shape)},
		[2]string{"keys over 2 KB", count(k.OverLimit)},
		[2]string{"time", fmt.Sprintf("%.2f s (%s rows/s)", t.Seconds, count(int64(t.RowsPerSec)))},
	)
	h.kv(rows)
	if len(t.RejectExamples) > 0 {
		h.raw(`<h3 style="margin-top:10px">Rejected rows (examples)</h3><table><tr><th>position</th><th>code</th><th>message</th></tr>`)
		for _, e := range t.RejectExamples {
			h.raw(`<tr><td class="mono">`)
			h.text(e.Position)
			h.raw(`</td><td>`)
			h.text(e.Code)
			h.raw(`</td><td>`)
			h.text(e.Message)
			h.raw(`</td></tr>`)
		}
		h.raw(`</table>`)
	}
	h.raw(`</div><div class="card"><h3>First key column: `)
	h.text(fc.Name + " " + fc.Type)
	h.raw(`</h3>`)
	d := count(fc.Distinct)
	if !fc.DistinctExact {
		d = "about " + d + " (HyperLogLog)"
	}
	fr := [][2]string{
		{"distinct values", d},
		{"monotonic (>= / <= previous row)", pct(fc.MonotonicUp) + " / " + pct(fc.MonotonicDown)},
	}
	if isTextType(fc.Type) {
		fr = append(fr, [2]string{"common prefix", fmt.Sprintf("\"%s\" (%d bytes)", fc.CommonPrefix, fc.PrefixBytes)})
	}
	if fc.OtherMaxShare > 0 {
		fr = append(fr, [2]string{"any value not listed", "at most " + pct(fc.OtherMaxShare) + " of the rows"})
	}
	h.kv(fr)
	if len(fc.Top) > 0 {
		h.raw(`<table style="margin-top:8px"><tr><th>top value</th><th class="n">rows</th><th class="n">share</th></tr>`)
		for i, tv := range fc.Top {
			if i >= 6 {
				break
			}
			h.raw(`<tr><td class="mono">`)
			h.text(tv.Value)
			h.raw(`</td><td class="n">`)
			h.text(count(tv.Rows))
			h.raw(`</td><td class="n">`)
			h.text(shareRange(tv))
			h.raw(`</td></tr>`)
		}
		h.raw(`</table>`)
	}
	h.raw(`</div></div>`)
	h.raw(`<div class="card" style="margin-top:14px"><table><tr><th>key column</th><th>type</th><th>expression</th><th>from</th><th class="n">max bytes</th><th class="n">JSON-like</th><th class="n">long text</th></tr>`)
	for _, c := range rep.Mapping.KeyColumns {
		t := c.Type
		if c.Desc {
			t += " DESC"
		}
		h.raw(`<tr><td class="mono">`)
		h.text(c.Name)
		h.raw(`</td><td>`)
		h.text(t)
		h.raw(`</td><td class="mono">`)
		h.text(c.Expr)
		h.raw(`</td><td>`)
		h.text(strings.Join(c.Sources, ", "))
		h.raw(`</td><td class="n">`, fmt.Sprint(c.MaxBytes), `</td><td class="n">`, count(c.JSONLike), `</td><td class="n">`, count(c.LongText), `</td></tr>`)
	}
	h.raw(`</table></div>`)
}

func (h *htmlWriter) uniqueness(rep *Report) {
	u := rep.Uniqueness
	h.raw(`<h2>Uniqueness</h2><div class="card"><p style="margin:0 0 8px">`)
	exact := "Exact count over every row."
	if !u.Exact {
		exact = "Counted on the sample only."
	}
	h.text(fmt.Sprintf("%s distinct target keys; %s keys are produced by more than one distinct source row, so %s rows would be silently overwritten by bulkload; %s rows are identical repeats (not a loss). %s",
		count(u.Keys), count(u.CollidingKeys), count(u.CollisionRows), count(u.DuplicateRows), exact))
	h.raw(`</p>`)
	if sg := u.Suggestion; sg != nil {
		h.raw(`<p class="advice"><b>Advice:</b> `)
		h.text(sg.Message)
		h.raw(`</p>`)
		if len(sg.DifferIn) > 0 {
			var parts []string
			for _, d := range sg.DifferIn {
				parts = append(parts, fmt.Sprintf("%s %s", d.Column, count(d.Pairs)))
			}
			h.raw(`<p class="sub">`)
			h.text(fmt.Sprintf("Pairs of colliding rows that differ, per column (of %s compared): %s.", count(sg.Pairs), strings.Join(parts, ", ")))
			h.raw(`</p>`)
		}
	}
	if len(u.Examples) > 0 {
		h.raw(`<table><tr><th>target key</th><th>position</th>`)
		for _, c := range u.SourceColumns {
			h.raw(`<th>`)
			h.text(c)
			h.raw(`</th>`)
		}
		h.raw(`</tr>`)
		for _, ex := range u.Examples {
			for i, o := range ex.Origins {
				h.raw(`<tr><td class="mono">`)
				if i == 0 {
					h.text(strings.Join(ex.Key, " | "))
					h.raw(`<div class="sub">`)
					h.text(fmt.Sprintf("%d distinct source rows, %d rows", ex.Sources, ex.Rows))
					switch {
					case ex.SameKeySources && len(ex.DifferIn) > 0:
						h.text("; they differ only in " + listText(ex.DifferIn) + ", which the key does not read")
					case ex.SameKeySources:
						h.text("; they differ only in columns the key does not read")
					case len(ex.DifferIn) > 0:
						h.text("; they differ in " + listText(ex.DifferIn))
					}
					h.raw(`</div>`)
				}
				h.raw(`</td><td class="mono">`)
				h.text(o.Position)
				h.raw(`</td>`)
				for _, c := range u.SourceColumns {
					h.raw(`<td class="mono">`)
					h.text(o.Values[c])
					h.raw(`</td>`)
				}
				h.raw(`</tr>`)
			}
		}
		h.raw(`</table>`)
	}
	h.raw(`</div>`)
}

func (h *htmlWriter) alternatives(rep *Report) {
	if len(rep.Alternatives) == 0 {
		return
	}
	a0 := rep.Alternatives[0]
	h.raw(`<h2>Advisor: alternative key designs</h2><p class="sub">`)
	h.text(fmt.Sprintf("The same analysis for designs derived from the mapping, on an order-preserving %s-row subsample, each over %d regions; rows lost are counted over every row, as the uniqueness check counts them. Ranked by rows lost, then by declared queries that would scan the whole table, write spread (grade), queries that read rows they filter out, scans, the standard reads, and hot factor. Reads: regions a full-key GET, a SCAN of one value, and a range SCAN touch (all = every region).", count(a0.Rows+a0.Rejected), a0.Regions))
	h.raw(`</p>`)
	if len(rep.Queries) > 0 {
		h.raw(`<table class="queries"><tr><th>query</th><th>declared in</th></tr>`)
		for i, q := range rep.Queries {
			h.raw(`<tr><td class="mono">`)
			h.text(fmt.Sprintf("q%d  %s", i+1, q.Query))
			h.raw(`</td><td>`)
			h.text(q.Origin)
			h.raw(`</td></tr>`)
		}
		h.raw(`</table>`)
	} else {
		h.raw(`<p class="sub">Declare the queries the table serves (queries: in the mapping, or --query) to rank the designs by them.</p>`)
	}
	h.raw(`<div class="alts">`)
	for _, a := range rep.Alternatives {
		cls := "card alt"
		if a.IsMapping {
			cls += " mine"
		}
		h.raw(`<div class="`, cls, `" data-id="`, esc(a.ID), `">`)
		if a.IsMapping {
			h.raw(`<span class="tag">the mapping</span>`)
		}
		h.raw(`<h3>#`, fmt.Sprint(a.Rank), ` `)
		h.text(a.Name)
		h.raw(` <span class="grade `, esc(a.Grade), `">`)
		h.text(a.Grade)
		h.raw(`</span></h3><div class="pk mono">`)
		h.text(a.PrimaryKey)
		h.raw(`</div>`)
		if a.Error != "" {
			h.raw(`<p class="trade">cannot build: `)
			h.text(a.Error)
			h.raw(`</p></div>`)
			continue
		}
		h.miniChart(a)
		h.raw(`<table><tr><th>hot factor</th><td>`)
		h.text(fmt.Sprintf("%.1fx", a.HotFactor))
		h.raw(`</td><th>max/mean</th><td>`)
		h.text(fmt.Sprintf("%.2f", a.RowsMaxMean))
		h.raw(`</td></tr><tr><th>monotonic</th><td>`)
		h.text(pct(a.Monotonic))
		h.raw(`</td><th>rows lost</th><td>`)
		lost := count(a.LostRows)
		if !a.OverwrittenExact {
			lost = "~" + lost
		}
		h.text(lost)
		h.raw(`</td></tr><tr><th>GET / scan</th><td>`)
		h.text(readText(a.Reads.Get) + " / " + readText(a.Reads.PrefixScan))
		h.raw(`</td><th>range scan</th><td>`)
		h.text(readText(a.Reads.RangeScan))
		h.raw(`</td></tr>`)
		for i, q := range a.Queries {
			h.raw(`<tr class="query"><th>`)
			h.text(fmt.Sprintf("q%d", i+1))
			h.raw(`</th><td colspan="3">`)
			h.text(planText(q) + " · " + q.Note)
			h.raw(`</td></tr>`)
		}
		h.raw(`</table><div class="trade">`)
		h.text(a.TradeOff)
		h.raw(`</div></div>`)
	}
	h.raw(`</div>`)
}

// miniChart: rows per region as small bars, the busiest share per window as a line.
func (h *htmlWriter) miniChart(a Alternative) {
	const W, H = 340, 92
	h.rawf(`<svg xmlns="http://www.w3.org/2000/svg" class="mini" width="%d" height="%d" viewBox="0 0 %d %d">`, W, H, W, H)
	var top, sum int64
	for _, r := range a.RegionRows {
		top = max(top, r)
		sum += r
	}
	n := len(a.RegionRows)
	half := float64(W-10) / 2
	if n > 0 && top > 0 {
		bw := (half - 24) / float64(n) // the gap holds the line chart's labels
		mean := float64(sum) / float64(n)
		for i, r := range a.RegionRows {
			bh := float64(r) / float64(top) * (H - 22)
			h.rawf(`<rect class="mini-bar" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`, float64(i)*bw, H-14-bh, math.Max(bw*0.85, 0.6), bh, barColor(float64(r)/mean))
		}
	}
	h.rawf(`<text class="tick" x="0" y="%d">rows per region</text>`, H-2)
	x0 := half + 10
	h.rawf(`<rect x="%.1f" y="4" width="%.1f" height="%d" fill="#fafbfc" stroke="#e3e6ec"/>`, x0, half, H-18)
	h.rawf(`<text class="tick" x="%.1f" y="12" text-anchor="end" font-size="9" fill="#8a94a6">100%%</text>`, x0-2)
	h.rawf(`<text class="tick" x="%.1f" y="%d" text-anchor="end" font-size="9" fill="#8a94a6">0</text>`, x0-2, H-14)
	if len(a.WindowTop) > 0 {
		var pts []string
		for i, s := range a.WindowTop {
			x := x0 + (float64(i)+0.5)/float64(len(a.WindowTop))*half
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, 4+(1-s)*float64(H-18)))
		}
		ey := 4 + (1-1/float64(max(a.Regions, 1)))*float64(H-18)
		h.rawf(`<line class="even" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, ey, x0+half, ey)
		h.raw(`<polyline class="line" points="`, strings.Join(pts, " "), `"/>`)
	}
	h.rawf(`<text class="tick" x="%.1f" y="%d">busiest share per window</text>`, x0, H-2)
	h.raw(`</svg>`)
}

func (h *htmlWriter) recommendation(rep *Report) {
	r := rep.Recommendation
	h.raw(`<h2>Recommended pre-split</h2><div class="card">`)
	one := func(label string, a RegionAdvice) {
		h.raw(`<h3 style="margin-top:6px">`)
		h.text(fmt.Sprintf("%s: %d region%s", label, a.Regions, plural(a.Regions)))
		h.raw(`</h3><p class="sub" style="margin:0 0 14px">`)
		h.text(a.Basis)
		if a.Strategy != "" {
			h.text(" · strategy " + a.Strategy)
		}
		h.raw(`</p>`)
		if a.SQL != "" {
			h.raw(`<pre class="sql">WITH (`)
			h.text(a.SQL)
			h.raw(`)</pre>`)
		}
	}
	one("Bulkload", r.Bulkload)
	if r.API != nil {
		one("API writes", *r.API)
	} else {
		h.raw(`<p class="sub">API writes: run with --nodes N for nodes × 4 regions and their split keys.</p>`)
	}
	h.raw(`</div>`)
}
