package report

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
)

// A window of changes in which one order is updated again and again (its status, by every event
// of the order): the report counts the writes of each key per window of writes, in write order,
// and names the hot row; a table whose rows are each written once has none.
func TestSingleRowHotspot(t *testing.T) {
	yml := `
version: 1
source:
  name: shop.order_changes
  columns: {orderid: bigint, status: text, ts: timestamp}
  write_order: ts
target:
  table: orders
  primary_key: "[md5(orderid).substr(0,4) + orderid AS pk]"
regions:
  count: 16
`
	hot := &memSource{n: 20000, make: func(i int) []pipeline.Value {
		id := int64(1_000_000 + i)
		if i%5 == 0 {
			id = 42 // a fifth of the changes update one order
		}
		return []pipeline.Value{pipeline.Int(id), pipeline.Text("s" + string(rune('a'+i%7))), pipeline.Int(guideBase + int64(i))}
	}}
	rep := runReport(t, yml, hot, func(c *Config) {
		c.Workers = 1
		c.Order = model.OrderHints{Column: "ts", ColumnOrigin: "source.write_order"}
	})
	h := rep.HotRows
	if h.Order != model.OrderDeclared || h.Windows != collide.HotRowWindows || len(h.Top) != 1 || h.Top[0].Key[0] == "" || h.Top[0].WindowShare < 0.15 || h.Top[0].WindowShare > 0.25 {
		t.Fatalf("hot rows %+v", h)
	}
	f := wantSeverity(t, rep, "single_row_hotspot", model.SevWarning)
	for _, want := range []string{"key " + strings.Join(h.Top[0].Key, "|") + " takes", "a single-row hotspot, which no key design spreads", "you can only resolve this issue by scaling up the specification of the node"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("the finding does not say %q: %s", want, f.Message)
		}
	}

	// every row written once
	cold := &memSource{n: 20000, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(1_000_000 + i)), pipeline.Text("paid"), pipeline.Int(guideBase + int64(i))}
	}}
	rep = runReport(t, yml, cold, func(c *Config) {
		c.Workers = 1
		c.Order = model.OrderHints{Column: "ts", ColumnOrigin: "source.write_order"}
	})
	if len(rep.HotRows.Top) != 0 {
		t.Errorf("hot rows in a table written once: %+v", rep.HotRows)
	}
	if f := wantSeverity(t, rep, "single_row_hotspot", model.SevInfo); !strings.HasPrefix(f.Message, "no key is written twice within a window of") {
		t.Errorf("single_row_hotspot: %s", f.Message)
	}
}
