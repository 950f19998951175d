package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A finished shared output (shards with --shared-out, then merge --out) keeps its source in its
// shards' checkpoints, none at its top: merged beside a whole run of the same source (or beside a
// copy of itself), merge compared no source and wrote every row twice. It refuses them, naming
// both inputs, and still merges a finished shared output beside a run of another source.
func TestMergeRefusesASharedOutputBesideARunOfItsSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	export, _ := ordersExport(t, dir)
	other := ordersCSV(t, dir, "other.csv", 100, 7)
	for _, c := range []struct{ name, source, other string }{
		{"gen", "gen:orders?rows=300", "gen:orders?rows=300&seed=9"},
		{"files", "file:" + export, "file:" + other},
	} {
		shared := filepath.Join(dir, c.name+"-shared")
		for i := range 2 {
			mustRun(t, "migrate", "-m", mapping, "--source", c.source, "--shard", fmt.Sprintf("%d/2", i), "--shared-out", "--regions", "4", "--out", shared, "--progress", "never")
		}
		mustRun(t, "merge", "--out", shared)
		whole := filepath.Join(dir, c.name+"-whole")
		mustRun(t, "migrate", "-m", mapping, "--source", c.source, "--regions", "4", "--out", whole, "--progress", "never")
		code, stdout, stderr := runCLI(t, "merge", shared, whole, "--out", filepath.Join(dir, c.name+"-twice"))
		if code != 2 || !strings.Contains(stderr, shared) || !strings.Contains(stderr, whole) {
			t.Errorf("%s: merge of a shared output and a whole run of its source: exit %d, want 2 naming both\n%s%s", c.name, code, stdout, stderr)
		}
		another := filepath.Join(dir, c.name+"-another")
		mustRun(t, "migrate", "-m", mapping, "--source", c.other, "--regions", "4", "--out", another, "--progress", "never")
		if code, stdout, stderr := runCLI(t, "merge", shared, another, "--out", filepath.Join(dir, c.name+"-both")); code != 0 {
			t.Errorf("%s: merge of a shared output and a run of another source: exit %d\n%s%s", c.name, code, stdout, stderr)
		}
	}
}

// An input that holds the complete shards of a shared output not finished yet was refused
// saying to finish it with `rekey migrate ... --resume`, which has nothing to resume (every shard
// is complete). The refusal says to finish it with `rekey merge --out` on it.
func TestMergeOfAnUnfinishedSharedOutputSaysToFinishIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	shared := filepath.Join(dir, "shared")
	for i := range 2 {
		mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=100", "--shard", fmt.Sprintf("%d/2", i), "--shared-out", "--regions", "4", "--out", shared, "--progress", "never")
	}
	code, stdout, stderr := runCLI(t, "merge", shared, "--out", filepath.Join(dir, "merged"))
	if code != 2 || !strings.Contains(stderr, "rekey merge --out "+shared) || strings.Contains(stderr, "--resume") {
		t.Errorf("merge of an unfinished shared output: exit %d, want 2 saying to finish it with rekey merge --out %s\n%s%s", code, shared, stdout, stderr)
	}
}

// A merge run again once it finished found its own output and refused it as an --out that
// "already holds files", saying to merge into a new --out: a second copy of a complete merge.
// It says the merge into it is complete and what to do with it, still writing nothing (exit 2).
func TestMergeRunAgainAfterItFinishedSaysItIsComplete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	var shards []string
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=100", "--shard", fmt.Sprintf("%d/2", i), "--regions", "4", "--out", out, "--progress", "never")
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged")
	args := append([]string{"merge"}, append(shards, "--out", merged)...)
	mustRun(t, args...)
	code, stdout, stderr := runCLI(t, args...)
	if code != 2 || !strings.Contains(stderr, "complete") || strings.Contains(stderr, "merge into a new --out") {
		t.Errorf("merge run again after it finished: exit %d, want 2 saying the output is complete\n%s%s", code, stdout, stderr)
	}
}
