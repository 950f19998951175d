package verify

import (
	"errors"
	"os"
	"testing"

	"github.com/rekey/rekey/internal/spill/spilltest"
)

// Verify's buckets hold keys and rows: a run removes the spill folders that killed runs left
// under its --tmp (their pid gone), and its own when it ends.
func TestVerifySweepsKilledRunsSpills(t *testing.T) {
	tmp := t.TempDir()
	killed := spilltest.Killed(t, tmp, "rekey-verify-")
	p := testProgram(t)
	recs := testRecords(100)
	if res := runLookup(t, p, recs, migrated(t, p, recs), func(c *Config) { c.TmpDir = tmp }); !res.Equal {
		t.Fatalf("not equal: %+v", res)
	}
	if _, err := os.Stat(killed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the spill folder of a killed run is still there: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in --tmp: %v", left)
	}
}
