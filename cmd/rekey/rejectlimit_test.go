package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/output/outputtest"
)

// A run stopped for too many rejects counts one set of rows everywhere: the summary's rows in
// and rows rejected, the error's "R of N rows rejected" and rejects.jsonl (one line per rejected
// row, each once) agree, because what was read up to the stop is committed. --resume with a
// higher --max-rejects then finishes with every bad row rejected exactly once.
func TestTooManyRejectsCountsAgree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("userid,orderid,channel,ts,status,location,amount\n")
	const rows, every = 20000, 50
	for i := 0; i < rows; i++ {
		orderid := fmt.Sprint(i)
		if i%every == 0 {
			orderid = fmt.Sprintf("o%d", i) // not a bigint: rejected
		}
		fmt.Fprintf(&sb, "u%d,%s,taobao,1700000000000,PAID,Hangzhou,%d.25\n", i, orderid, i%100)
	}
	csv := writeFile(t, dir, "orders.csv", sb.String())
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	out := filepath.Join(dir, "out")
	args := []string{"migrate", "-m", mapping, "--source", "file:" + csv, "--out", out, "--progress", "never", "--workers", "4"}
	code, stdout, stderr := runCLI(t, args...)
	if code != exitFailed || !strings.Contains(stderr, "too many rejected rows") {
		t.Fatalf("2%% bad rows with --max-rejects 1%%: exit %d\n%s%s", code, stdout, stderr)
	}
	summary := func(name string) int64 {
		m := regexp.MustCompile(`(?m)^  ` + name + ` +(\d+)$`).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("no %q in the summary:\n%s", name, stdout)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	in, rejected, written := summary("rows in"), summary("rows rejected"), summary("rows written")
	m := regexp.MustCompile(`(\d+) of (\d+) rows rejected`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("the error gives no counts:\n%s", stderr)
	}
	errRejected, _ := strconv.ParseInt(m[1], 10, 64)
	errIn, _ := strconv.ParseInt(m[2], 10, 64)
	lines := rejectLines(t, out)
	if in == 0 || rejected == 0 || in != errIn || rejected != errRejected || int64(len(lines)) != rejected || written+rejected != in {
		t.Errorf("summary: %d in, %d written, %d rejected; error: %d of %d; rejects.jsonl: %d rows", in, written, rejected, errRejected, errIn, len(lines))
	}
	if code, stdout, stderr := runCLI(t, append(args, "--resume", "--max-rejects", "-1")...); code != 1 {
		t.Fatalf("--resume --max-rejects -1: exit %d\n%s%s", code, stdout, stderr)
	}
	rowsOut, man := outputRows(t, out)
	if lines := rejectLines(t, out); len(lines) != rows/every || man.RowsRejected != rows/every || len(rowsOut) != rows-rows/every {
		t.Errorf("after --resume: %d rows written, manifest %d rejected, rejects.jsonl %d rows; want %d and %d", len(rowsOut), man.RowsRejected, len(lines), rows-rows/every, rows/every)
	}
}

// rejectLines reads rejects.jsonl of the output dir: its rows' positions, each once (a position
// listed twice fails the test).
func rejectLines(t *testing.T, dir string) []string {
	t.Helper()
	var positions []string
	seen := map[string]bool{}
	for _, line := range readLines(t, filepath.Join(dir, "rejects.jsonl")) {
		var r struct {
			Position string `json:"position"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("rejects.jsonl: %v: %s", err, line)
		}
		if seen[r.Position] {
			t.Errorf("rejects.jsonl lists %s twice", r.Position)
		}
		seen[r.Position] = true
		positions = append(positions, r.Position)
	}
	return positions
}

// A run that fails (here: over --max-rejects) prints its figures and writes them to --stats-json
// too, so that the file and the summary agree. Before, only a completed run wrote the file: one
// left there by an earlier run stayed, with another run's figures.
func TestStatsJSONOfAFailedRunIsItsSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := writeFile(t, dir, "in.csv", "userid,orderid,channel,ts,status,location,amount\n"+
		"u1,x,taobao,2026-01-01T00:00:00Z,PAID,X,1.00\nu2,y,taobao,2026-01-01T00:00:00Z,PAID,X,1.00\n")
	stats := writeFile(t, dir, "stats.json", `{"rows_in": 999, "rows_written": 999}`) // an earlier run's
	code, stdout, stderr := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+src, "--out", filepath.Join(dir, "out"),
		"--max-rejects", "0", "--progress", "never", "--stats-json", stats)
	if code != exitFailed || !strings.Contains(stdout, "Migration failed") || !strings.Contains(stdout, "rows rejected  2") {
		t.Fatalf("exit %d, want %d with a summary of the 2 rows rejected\n%s%s", code, exitFailed, stdout, stderr)
	}
	data, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	var st runStats
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if st.RowsIn != 2 || st.RowsRejected != 2 || st.RowsWritten != 0 {
		t.Errorf("--stats-json of the failed run: %s, want the summary's 2 rows in, 2 rejected", data)
	}
}

// A resumed run's progress line counts the bytes of the earlier attempts' files, as its rows
// read do and as the summary's bytes do. Before, the last line of a resume said "5,000,000
// rows read ... 43.7 MiB written" (the rows of the whole run, the bytes of this attempt) above a
// summary of 56.9 MiB.
func TestResumedProgressCountsEarlierBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("userid,orderid,channel,ts,status,location,amount\n")
	for i := 0; i < 20000; i++ {
		orderid := fmt.Sprint(i)
		if i%50 == 0 {
			orderid = fmt.Sprintf("o%d", i) // not a bigint: rejected, over the default 1%
		}
		fmt.Fprintf(&sb, "u%d,%s,taobao,1700000000000,PAID,Hangzhou,%d.25\n", i, orderid, i%100)
	}
	csv := writeFile(t, dir, "orders.csv", sb.String())
	out := filepath.Join(dir, "out")
	args := []string{"migrate", "-m", filepath.Join("..", "..", "mappings", "orders.yaml"), "--source", "file:" + csv, "--out", out, "--workers", "4"}
	if code, stdout, stderr := runCLI(t, append(args, "--progress", "never")...); code != exitFailed {
		t.Fatalf("2%% bad rows: exit %d\n%s%s", code, stdout, stderr)
	}
	if cp, err := outputtest.Checkpoint(out); err != nil || cp.RowsWritten == 0 {
		t.Fatalf("the stopped run committed no row, nothing for the resume to count: %v", err)
	}
	code, stdout, stderr := runCLI(t, append(args, "--resume", "--max-rejects", "-1", "--progress", "plain")...)
	if code != 1 {
		t.Fatalf("--resume: exit %d\n%s%s", code, stdout, stderr)
	}
	summary := regexp.MustCompile(`(?m)^  bytes +(.+)$`).FindStringSubmatch(stdout)
	lines := regexp.MustCompile(`migrating: .*, ([^,]+) written, elapsed`).FindAllStringSubmatch(stderr, -1)
	if summary == nil || len(lines) == 0 || lines[len(lines)-1][1] != summary[1] {
		t.Errorf("the last progress line and the summary disagree on the bytes written:\n%s%s", stderr, stdout)
	}
}
