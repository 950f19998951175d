package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/report/render"
)

// A declared integer write order (a sequence, not a time) draws the heatmap by its values: the
// axis is labelled with the column's values, never as dates, and the page says so.
func TestHTMLHeatmapDeclaredIntegerOrder(t *testing.T) {
	const n = 3001
	src := &memSource{n: n, make: func(i int) []pipeline.Value {
		id := int64(i*7919%n) + 1_000_000 // every id once, in hash-like order
		return []pipeline.Value{pipeline.Int(id), pipeline.Text("wechat"), pipeline.Text(fmt.Sprint(i))}
	}}
	rep := runReport(t, fmt.Sprintf(ordersYAML, "[id]"), src, func(c *Config) {
		c.Order = model.OrderHints{Column: "id", ColumnOrigin: "--write-order"}
	})
	th := rep.TimeHeatmap
	if rep.WriteOrder.Evidence != model.OrderDeclared || th == nil || th.Axis != "value" || len(th.Bins) == 0 {
		t.Fatalf("write order %+v, heatmap %+v: want the id values' axis", rep.WriteOrder, th)
	}
	if th.StartMillis > 1_000_000 || th.StartMillis+th.BinMillis*int64(len(th.Bins)) <= 1_000_000+n-1 {
		t.Errorf("bins from %d, %d of %d: do not cover the ids", th.StartMillis, len(th.Bins), th.BinMillis)
	}
	var buf bytes.Buffer
	if err := render.WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	root := parseXHTML(t, buf.Bytes())
	var ticks []string
	var label string
	root.walk(func(n *xmlNode) {
		if n.XMLName.Local == "svg" && n.attr("id") == "heatmap" {
			n.walk(func(c *xmlNode) {
				switch {
				case c.XMLName.Local == "text" && c.attr("class") == "tick":
					ticks = append(ticks, c.Text)
				case c.XMLName.Local == "text" && c.attr("class") == "label" && strings.HasSuffix(c.Text, "→"):
					label = c.Text
				}
			})
		}
	})
	var values []int64
	for _, tk := range ticks {
		if v, err := strconv.ParseInt(tk, 10, 64); err == nil && v >= 1_000_000 && v < 1_000_000+n {
			values = append(values, v)
		}
	}
	if len(values) < 3 || label != "id →" {
		t.Errorf("x axis %q (ticks %q): want id values", label, ticks)
	}
	page := buf.String()
	if strings.Contains(page, "1970-01-01") || !strings.Contains(page, "declared the row&#39;s creation time by --write-order, by its values") {
		t.Errorf("the heatmap is not described as the id's values:\n%s", page[strings.Index(page, "Write heatmap"):][:600])
	}
}
