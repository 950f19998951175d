package report

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The collision check's temp files hold source values: a report removes the spill folders that
// killed reports left under its --tmp (their pid gone), and its own when it ends.
func TestReportSweepsKilledReportsSpills(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(tmp, fmt.Sprintf("rekey-report-%d-123", dead.Process.Pid))
	if err := os.MkdirAll(killed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(killed, "text-000"), []byte("source values"), 0o600); err != nil {
		t.Fatal(err)
	}
	runReport(t, fmt.Sprintf(readingsYAML, "[device_id][ts]", ""), readings(500), func(c *Config) { c.TmpDir = tmp })
	if _, err := os.Stat(killed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the spill folder of a killed report is still there: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in --tmp: %v", left)
	}
}
