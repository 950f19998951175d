package main

import (
	"strings"
	"testing"
)

// Issue 11.5: silent clamps. --regions 0 quietly used the mapping's count and --regions 100000
// quietly became 65,536 regions: both are errors now (exit 2) that say what to do.
func TestRegionsFlagIsNeverClampedSilently(t *testing.T) {
	for _, c := range []struct{ regions, want string }{
		{"0", "want at least 1 region"},
		{"100000", "at most 65536 regions"},
	} {
		for _, cmd := range []string{"ddl", "check"} {
			code, _, errs := runCLI(t, cmd, "-m", "../../mappings/orders.yaml", "--regions", c.regions)
			if code != 2 || !strings.Contains(errs, c.want) {
				t.Errorf("%s --regions %s: exit %d: %s", cmd, c.regions, code, errs)
			}
		}
	}
}

// Issue 11.5: `--shard` read "--shard rekey merge" in --help (pflag takes a backquoted word in a
// usage string as the value's name), and check/ddl listed scan flags that do nothing there.
func TestHelpListsOnlyFlagsThatApply(t *testing.T) {
	_, out, _ := runCLI(t, "migrate", "--help")
	if !strings.Contains(out, "--shard string") {
		t.Fatalf("migrate --help: %s", out)
	}
	for _, cmd := range []string{"check", "ddl"} {
		_, out, _ := runCLI(t, cmd, "--help")
		if strings.Contains(out, "--shard") || strings.Contains(out, "--rate") {
			t.Errorf("%s --help lists --shard or --rate:\n%s", cmd, out)
		}
	}
}
