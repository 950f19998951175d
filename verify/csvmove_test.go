package verify

import (
	"context"
	"slices"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// An update that moves its row to another key, whose new row CSV files refuse (an empty string),
// is rejected whole by replicate into CSV files: the old key keeps its row. verify of such an
// output counts the change as rejected and looks for the old row, not for its delete. Before, it
// applied the move's delete alone and called the row replicate kept extra.
func TestCSVRefusedMoveKeepsTheOldRow(t *testing.T) {
	p := testProgram(t)
	schema := p.Target()
	rows := migrated(t, p, testRecords(50)).list()
	moved := slices.Clone(rows[0])
	moved[0], moved[1] = pipeline.Int(1000%7), pipeline.Int(1000)
	moved[schema.Index("name")] = pipeline.Text("")
	changes := func(ctx context.Context, fn func(*ChangeBatch) error) error {
		if err := changesOf(rows)(ctx, fn); err != nil {
			return err
		}
		return fn(&ChangeBatch{Stream: "topic/0", Messages: 1, Rejects: map[string]int64{}, Skipped: map[string]int64{}, Changes: []Change{
			{Seq: 1000, Delete: true, Values: rows[0][:schema.KeyLen]}, {Seq: 1000, Values: moved}}})
	}
	res := runWith(t, Config{Program: p, Changes: changes, Folder: writeCSVFolder(t, schema, rows, func([]string, int) {})}, nil)
	if !res.Equal || res.RowsRejected != 1 || res.RejectCodes[pipeline.CodeCSVValue] != 1 || res.KeysDeleted != 0 {
		t.Fatalf("a move CSV refuses: equal %v, %d rejected %v, %d keys deleted: %s; want equal, the move rejected, nothing deleted",
			res.Equal, res.RowsRejected, res.RejectCodes, res.KeysDeleted, Verdict(res))
	}
}
