package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
)

// A run of files keeps its rejected rows as read (rejected-rows.csv, under the input's header)
// to be migrated again once fixed; a merge of the shards' outputs kept only rejects.jsonl, so the
// merged output had no file to run them again from. The merged output holds every input's
// rejected rows as read, each input's under its header (rejected-rows/part-NNNNN.csv, the layout
// of a run in a bucket), the rows those of a single run; `--source file:MERGED/rejected-rows/`
// reads exactly them, and merge names them.
func TestMergeKeepsTheRejectedRowsAsRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	export := exportWithBadRows(t, dir)
	single := filepath.Join(dir, "single")
	if code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+export, "--regions", "4", "--out", single, "--progress", "never"); code != exitRejects {
		t.Fatalf("single run: exit %d\n%s%s", code, stdout, stderr)
	}
	want := readLines(t, filepath.Join(single, "rejected-rows.csv"))[1:]
	slices.Sort(want)
	var shards []string
	for i := range 2 {
		shard := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		if code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+export, "--shard", fmt.Sprintf("%d/2", i), "--regions", "4", "--out", shard, "--progress", "never"); code != exitRejects {
			t.Fatalf("shard %d: exit %d\n%s%s", i, code, stdout, stderr)
		}
		shards = append(shards, shard)
	}
	merged := filepath.Join(dir, "merged")
	code, stdout, stderr := runCLI(t, "merge", shards[0], shards[1], "--out", merged)
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	replay := filepath.Join(merged, output.ReplayPartsDir)
	if !strings.Contains(stdout, replay) {
		t.Errorf("merge does not name the rejected rows as read (%s):\n%s", replay, stdout)
	}
	parts, _ := filepath.Glob(filepath.Join(replay, "part-*.csv"))
	var got []string
	for _, p := range parts {
		lines := readLines(t, p)
		if len(lines) == 0 || lines[0]+"\n" != ordersHeader {
			t.Errorf("%s: %q, want the input's header first", p, lines)
			continue
		}
		got = append(got, lines[1:]...)
	}
	slices.Sort(got)
	if len(want) != 4 || !slices.Equal(got, want) {
		t.Fatalf("the merged rejected rows as read: %q (in %d parts), a single run's: %q", got, len(parts), want)
	}
	again := filepath.Join(dir, "again")
	code, stdout, stderr = runCLI(t, "migrate", "-m", mapping, "--source", "file:"+replay, "--regions", "4", "--out", again, "--progress", "never")
	if code != exitRejects || !strings.Contains(stdout, "rows in        4\n") {
		t.Errorf("migrate of the merged rejected rows: exit %d\n%s%s", code, stdout, stderr)
	}
}

const ordersHeader = "userid,orderid,channel,ts,status,location,amount\n"

// exportWithBadRows writes 4 orders CSV files of 50 rows into dir/export, one row of each with an
// orderid that is not a bigint, and returns the folder.
func exportWithBadRows(t *testing.T, dir string) string {
	t.Helper()
	export := filepath.Join(dir, "export")
	if err := os.Mkdir(export, 0o755); err != nil {
		t.Fatal(err)
	}
	for f := range 4 {
		var b strings.Builder
		b.WriteString(ordersHeader)
		for i := range 50 {
			orderid := fmt.Sprint(f*100 + i)
			if i == 7 {
				orderid = fmt.Sprintf("bad%d", f) // not a bigint
			}
			fmt.Fprintf(&b, "u%d,%s,taobao,1700000000000,PAID,Hangzhou,%d.25\n", i, orderid, i)
		}
		writeFile(t, export, fmt.Sprintf("o%d.csv", f), b.String())
	}
	return export
}

// A single run's summary counts its rejected rows by code under "rows rejected"; a merge of its
// shards printed the total alone. Both forms of merge count them by code, summed over the shards'
// checkpoints.
func TestMergeCountsRejectsByCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	export := exportWithBadRows(t, dir)
	code, single, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+export, "--regions", "4", "--out", filepath.Join(dir, "single"), "--progress", "never")
	const byCode = "rows rejected  4\n    type         4\n"
	if code != exitRejects || !strings.Contains(single, byCode) {
		t.Fatalf("single run: exit %d, want its rejects by code %q\n%s%s", code, byCode, single, stderr)
	}
	var shards []string
	shared := filepath.Join(dir, "shared")
	for i := range 2 {
		shard := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		for _, out := range [][]string{{"--out", shard}, {"--out", shared, "--shared-out"}} {
			args := append([]string{"migrate", "-m", mapping, "--source", "file:" + export, "--shard", fmt.Sprintf("%d/2", i), "--regions", "4", "--progress", "never"}, out...)
			if code, stdout, stderr := runCLI(t, args...); code != exitRejects {
				t.Fatalf("shard %d: exit %d\n%s%s", i, code, stdout, stderr)
			}
		}
		shards = append(shards, shard)
	}
	for _, args := range [][]string{{"merge", shards[0], shards[1], "--out", filepath.Join(dir, "merged")}, {"merge", "--out", shared}} {
		if code, stdout, stderr := runCLI(t, args...); code != 0 || !strings.Contains(stdout, byCode) {
			t.Errorf("%s: exit %d, want the rejects by code %q\n%s%s", strings.Join(args, " "), code, byCode, stdout, stderr)
		}
	}
}
