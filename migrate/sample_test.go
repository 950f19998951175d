package migrate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/transform"
)

// A quantile plan needs rows to place its split keys. Before, a source that gave none the
// mapping accepts (an empty file, or every row sampled rejected: a wrong type, say) was refused
// with "give a source to sample, or set regions.split_keys", to a user who had given one, and
// nothing said the mapping rejected every row. The refusal now says what the sample held.
func TestPlanWithNoAcceptedSampleRowsSaysWhy(t *testing.T) {
	ctx := context.Background()
	m, err := transform.Load(filepath.Join("..", "mappings", "transactions_by_buyer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	header := "order_number,seller_id,buyer_id,ts,item_id,quantity,amount,status\n"
	var bad strings.Builder
	bad.WriteString(header)
	for i := range 50 {
		bad.WriteString("1,s,b" + string(rune('a'+i%26)) + ",not-a-time,i,1,1.5,done\n")
	}
	for _, c := range []struct{ name, text, want string }{
		{"empty", header, "the source gave no rows to sample"},
		{"every row rejected", bad.String(), "all 50 rows sampled from the source were rejected by the mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.csv")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := file.New(file.Config{Path: path, Schema: prog.Source()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = migrate.PlanRegions(ctx, prog, src, 4, 1000)
			var refused *migrate.Refused
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "give a source") {
				t.Fatalf("plan of 4 quantile regions: %v\nwant a refusal saying %q", err, c.want)
			}
		})
	}
}
