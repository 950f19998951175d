package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The shards of one shared output (--shard i/N --shared-out) write its files with the same --sort
// and --max-file-size: a shard run otherwise than a shard already there is refused (exit 2),
// naming the setting and both values. Before, shard 1 without the --sort of shard 0 was accepted,
// and the output that merge finishes held sorted and unsorted files.
func TestSharedOutShardsShareTheSettingsOfTheirFiles(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	shard := func(i string, more ...string) []string {
		return append([]string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=2000", "--out", out,
			"--shard", i + "/3", "--shared-out", "--progress", "never"}, more...)
	}
	mustRun(t, shard("0", "--sort")...)
	for _, c := range []struct {
		args []string
		want string
	}{
		{shard("1"), "--sort: true in shard 0/3, false here"},
		{shard("2", "--sort", "--max-file-size", "1MiB"), "--max-file-size: 256.0 MiB in shard 0/3, 1.0 MiB here"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("rekey %s: exit %d, want 2 with %q\n%s%s", strings.Join(c.args, " "), code, c.want, stdout, stderr)
		}
	}
	mustRun(t, shard("1", "--sort")...)
}
