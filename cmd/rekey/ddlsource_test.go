package main

import (
	"strings"
	"testing"
)

// ddl refuses a --source its region plan does not read (exit 2, naming --source and the plan):
// a hex prefix of a fixed count (orders.yaml: 16 regions) or explicit split keys are placed
// without data, and a file source gives no schema. Before, ddl opened the file and printed the
// same statement as without it, the user led to think the split keys came from the data. A plan
// placed from the data (regions.size, quantile split keys) still reads it.
func TestDDLRefusesASourceItsPlanDoesNotRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 2000, 1)
	for _, args := range [][]string{
		{"ddl", "-m", "../../mappings/orders.yaml", "--source", "file:" + src},
		{"ddl", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--regions", "64"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "--source") || !strings.Contains(stderr, "leave --source out") {
			t.Errorf("rekey %s: exit %d, want 2 refusing --source:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	// regions.size: the source's size sets the count; the statement is printed
	mapping := writeFile(t, dir, "sized.yaml", strings.Replace(readText(t, "../../mappings/orders.yaml"), "  count: 16", "  size: 1MiB", 1))
	if out := mustRun(t, "ddl", "-m", mapping, "--source", "file:"+src); !strings.Contains(out, "CREATE TABLE") {
		t.Errorf("ddl of a sized plan with --source:\n%s", out)
	}
}
