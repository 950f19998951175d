package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// The key_length and uniqueness notes of a source that gave no rows say so, as the text's
// sections do; they said "no row passed the mapping (see rejects)", sending the reader to
// rejects there were none of, rather than to the source.
func TestUnmeasuredNotesNameEmptySource(t *testing.T) {
	for name, src := range map[string]*memSource{
		"no rows": {n: 0, make: func(int) []pipeline.Value { return nil }},
		"all rejected": {n: 3, make: func(i int) []pipeline.Value {
			return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("nope"), pipeline.Text("x")}
		}},
	} {
		rep := runReport(t, fmt.Sprintf(ordersYAML, "[code(channel, ch)][id]"), src, nil)
		for _, rule := range []string{"key_length", "uniqueness"} {
			f := findingOf(rep, rule)
			if f == nil {
				t.Fatalf("%s: no %s finding", name, rule)
			}
			mentionsRejects := strings.Contains(f.Message, "see rejects") || strings.Contains(f.Message, "see the rejects")
			if empty := rep.Totals.RowsRead == 0; empty == mentionsRejects || empty != strings.Contains(f.Message, "the source gave no rows") {
				t.Errorf("%s (%d rows read, %d rejected): %s says %q", name, rep.Totals.RowsRead, rep.Totals.RowsRejected, rule, f.Message)
			}
		}
	}
}
