package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"
	"testing"

	"github.com/rekey/rekey/report/render"
)

// The report shows the TTL plan check shows (transform's TTLPlan, one text for both): the table
// TTL and what Lindorm counts it from, in the text, the JSON and the HTML; a mapping with neither
// a TTL nor write times shows none.
func TestReportShowsTTLPlan(t *testing.T) {
	withTTL := strings.Replace(fmt.Sprintf(eventsYAML, "[kind][id]"), "  primary_key:", "  options: {TTL: 86400}\n  primary_key:", 1)
	withWriteTime := strings.Replace(fmt.Sprintf(eventsYAML, "[kind][id]"), "  primary_key:", "  write_time: true\n  primary_key:", 1)
	for _, c := range []struct {
		name, yml string
		tableTTL  int // the source table's TTL, as a Cassandra source gives it
		want      string
	}{
		{"options TTL, counted from the copy", withTTL, 0, "TTL plan: 86400 s, counted by Lindorm from each cell's timestamp, the time the cell is written (no target.write_time)"},
		{"source TTL with write times", withWriteTime, 3600, "TTL plan: 3600 s, counted by Lindorm from each cell's timestamp, the cell's source write time (target.write_time)"},
		{"neither", fmt.Sprintf(eventsYAML, "[kind][id]"), 0, ""},
	} {
		rep := runReport(t, c.yml, events(2000), func(cfg *Config) {
			if err := cfg.Program.TakeTableTTL(c.tableTTL); err != nil {
				t.Fatal(err)
			}
		})
		if !strings.HasPrefix(rep.Mapping.TTLPlan, c.want) || (c.want == "") != (rep.Mapping.TTLPlan == "") {
			t.Fatalf("%s: the report's TTL plan is %q, want %q...", c.name, rep.Mapping.TTLPlan, c.want)
		}
		var text, js, page bytes.Buffer
		if err := render.WriteText(&text, rep); err != nil {
			t.Fatal(err)
		}
		if err := render.WriteJSON(&js, rep); err != nil {
			t.Fatal(err)
		}
		if err := render.WriteHTML(&page, rep); err != nil {
			t.Fatal(err)
		}
		if c.want == "" {
			if strings.Contains(text.String(), "TTL plan") || strings.Contains(js.String(), "ttl_plan") || strings.Contains(page.String(), "TTL plan") {
				t.Errorf("%s: a TTL plan is shown for a mapping with neither a TTL nor write times", c.name)
			}
			continue
		}
		if !strings.Contains(text.String(), "\n"+rep.Mapping.TTLPlan+"\n") {
			t.Errorf("%s: the text does not show the TTL plan:\n%s", c.name, text.String())
		}
		if !strings.Contains(js.String(), `"ttl_plan": "`+rep.Mapping.TTLPlan) {
			t.Errorf("%s: the JSON has no ttl_plan:\n%.600s", c.name, js.String())
		}
		if !strings.Contains(page.String(), html.EscapeString(rep.Mapping.TTLPlan)) {
			t.Errorf("%s: the HTML does not show the TTL plan", c.name)
		}
	}
}
