package verify

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Verify's buckets hold keys and rows: a run removes the spill folders that killed runs left
// under its --tmp (their pid gone), and its own when it ends.
func TestVerifySweepsKilledRunsSpills(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(tmp, fmt.Sprintf("rekey-verify-%d-123", dead.Process.Pid))
	if err := os.MkdirAll(killed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(killed, "source-000"), []byte("keys and rows"), 0o600); err != nil {
		t.Fatal(err)
	}
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
