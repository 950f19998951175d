package advise

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// The fix incremental_key_column gives for a VARBINARY first column puts the hash prefix in a key
// column of its own before the blob: md5(b).substr(0,4) + b makes text of the blob's bytes, and
// rejects every row whose bytes are not UTF-8.
func TestIncrementalFindingOfABinaryKeyKeepsItBinary(t *testing.T) {
	kcs := []model.KeyColumn{{Name: "b", Expr: "b", Type: "VARBINARY"}}
	f := incrementalFinding(kcs, 0, model.KeyOrder{Why: "rises with every row"}, "judged on 3,000 rows", 16, 3000)
	if !strings.Contains(f.Message, "[md5(b).substr(0,4) AS b_hash][b]") || strings.Contains(f.Message, "+ b") {
		t.Errorf("finding: %s; want the fix [md5(b).substr(0,4) AS b_hash][b]", f.Message)
	}
	kcs[0].Type = "VARCHAR"
	if f := incrementalFinding(kcs, 0, model.KeyOrder{Why: "rises"}, "", 16, 3000); !strings.Contains(f.Message, "[md5(b).substr(0,4) + b]") {
		t.Errorf("text finding: %s", f.Message)
	}
}
