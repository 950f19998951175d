package report

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/rekey/rekey/internal/spill/spilltest"
)

// The collision check's temp files hold source values: a report removes the spill folders that
// killed reports left under its --tmp (their pid gone), and its own when it ends.
func TestReportSweepsKilledReportsSpills(t *testing.T) {
	tmp := t.TempDir()
	killed := spilltest.Killed(t, tmp, "rekey-report-")
	runReport(t, fmt.Sprintf(readingsYAML, "[device_id][ts]", ""), readings(500), func(c *Config) { c.TmpDir = tmp })
	if _, err := os.Stat(killed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the spill folder of a killed report is still there: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in --tmp: %v", left)
	}
}
