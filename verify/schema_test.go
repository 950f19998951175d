package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A Parquet target whose columns are not the mapping's is refused before any row is compared,
// naming the column: one missing, or one of another type than the mapping's column is written as.
func TestParquetTargetOfAnotherSchemaIsAnError(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(100)
	rows := migrated(t, p, recs).list()
	for _, c := range []struct {
		change func(*pipeline.Column)
		want   string
	}{
		{func(c *pipeline.Column) { c.Precision = 12 },
			"column amount is FIXED_LEN_BYTE_ARRAY(6) (DECIMAL(12,2)), the mapping's DECIMAL(10,2) is written as FIXED_LEN_BYTE_ARRAY(5) (DECIMAL(10,2))"},
		{func(c *pipeline.Column) { c.Name = "amount_usd" }, "it has no column amount: is it a file of table t?"},
	} {
		schema := p.Target()
		schema.Columns = append([]pipeline.Column(nil), schema.Columns...)
		for i := range schema.Columns {
			if schema.Columns[i].Name == "amount" {
				c.change(&schema.Columns[i])
			}
		}
		folder := writeFolder(t, schema, rows)
		_, err := Run(context.Background(), Config{Program: p, Source: &sliceSource{recs}, Folder: folder, TmpDir: t.TempDir(), Workers: 2})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error saying %q, got %v", c.want, err)
		}
	}
}
