package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// The rows a source left out are a Cassandra catch-up's older rows, rows whose cells all
// expired, or a Debezium topic's events of other tables than the mapping's source.table: the
// report's totals name the three, and the HTML's. Before, a report of a topic of several tables
// said its skipped rows were older than since= or expired, which no Kafka source has.
func TestRowsSkippedNameOtherTables(t *testing.T) {
	var b bytes.Buffer
	p := &printer{w: &b}
	p.totals(&model.Report{Totals: model.Totals{RowsRead: 3, RowsSkipped: 2}})
	if !strings.Contains(b.String(), "source.table") {
		t.Errorf("the text totals do not name other tables' events among the rows skipped:\n%s", b.String())
	}
}
