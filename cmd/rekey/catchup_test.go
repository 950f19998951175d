package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

const eventsMapping = `version: 1
source:
  name: app.events
target:
  table: events
  primary_key: "[id]"
  columns:
    v: v
regions:
  count: 2
`

// TestCatchupWithSinceAndNextSince: a migrate with since= writes only the rows with a cell
// written since then and reports the older ones as skipped (rows in = written + rejected +
// skipped); it prints and records the since= of the next catch-up, and running the printed
// command reads only the rows written after the first run started (and the undated key-only
// rows, which are read since they cannot be dated, then rejected as key_only_row: Lindorm cannot
// store a row of key columns only).
func TestCatchupWithSinceAndNextSince(t *testing.T) {
	c := cassandratest.Open(t)
	if err := c.CreateTable("app", "events", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}},
		[]string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	older, newer := now.Add(-2*time.Hour).UnixMicro(), now.Add(-time.Hour).UnixMicro()
	insert := func(from, n int, kind func(i int) int64) {
		t.Helper()
		if err := c.InsertMany("app", "events", n, func(i int, r map[string]any) error {
			r["id"] = from + i
			if wt := kind(from + i); wt >= 0 {
				r["v"] = cqltest.Cell{Value: fmt.Sprint("v", from+i), WriteTime: wt}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// ids 0..299: a third older than since, a third newer, a third key-only (undated: read, rejected)
	rejectsExit := func(args ...string) string { // a run whose key-only rows were rejected: exit 1
		t.Helper()
		code, out, errs := runCLI(t, args...)
		if code != exitRejects {
			t.Fatalf("rekey %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, exitRejects, out, errs)
		}
		return out
	}
	insert(0, 300, func(i int) int64 { return [3]int64{older, newer, -1}[i%3] })
	dir := t.TempDir()
	m := writeFile(t, dir, "events.yaml", eventsMapping)
	since := now.Add(-90 * time.Minute).UTC().Format(time.RFC3339)
	out1 := filepath.Join(dir, "first")
	stdout := rejectsExit("migrate", "-m", m, "--source", c.URI("app", "events", "splits=8&since="+since), "--out", out1, "--progress", "never")

	if !regexp.MustCompile(`rows in\s+300\n`).MatchString(stdout) || !regexp.MustCompile(`rows written\s+100\n`).MatchString(stdout) ||
		!regexp.MustCompile(`key_only_row\s+100\n`).MatchString(stdout) || !regexp.MustCompile(`rows skipped \(older than since=\)\s+100\n`).MatchString(stdout) {
		t.Fatalf("summary does not show 300 in = 100 written + 100 rejected + 100 skipped:\n%s", stdout)
	}
	rows, man := outputRows(t, out1)
	if len(rows) != 100 || man.RowsIn != 300 || man.RowsWritten != 100 || man.RowsSkipped != 100 || man.RowsRejected != 100 {
		t.Fatalf("output %d rows; manifest in %d written %d rejected %d skipped %d", len(rows), man.RowsIn, man.RowsWritten, man.RowsRejected, man.RowsSkipped)
	}
	if man.NextSince == nil || man.NextSince.After(now) || now.Sub(*man.NextSince) > catchupMargin+time.Minute {
		t.Fatalf("manifest next_since %v: want this run's start less %s", man.NextSince, catchupMargin)
	}
	next := man.NextSince.Format(time.RFC3339)
	if !strings.Contains(stdout, "next since") || !strings.Contains(stdout, next) {
		t.Fatalf("summary does not give the next since %s:\n%s", next, stdout)
	}
	cmd := regexp.MustCompile(`rekey migrate -m (\S+) --source '([^']+)' --out NEW_OUT`).FindStringSubmatch(stdout)
	if cmd == nil || !strings.Contains(cmd[2], "since="+next) || strings.Contains(cmd[2], "since="+since) {
		t.Fatalf("Next steps give no catch-up command with since=%s:\n%s", next, stdout)
	}

	// the same catch-up in two shards merges into the same counts, skipped shown
	var shards []string
	for i := range 2 {
		shards = append(shards, filepath.Join(dir, fmt.Sprint("shard-", i)))
		rejectsExit("migrate", "-m", m, "--source", c.URI("app", "events", "since="+since), "--shard", fmt.Sprintf("%d/2", i),
			"--out", shards[i], "--progress", "never")
	}
	merged := mustRun(t, "merge", shards[0], shards[1], "--out", filepath.Join(dir, "merged"))
	if !regexp.MustCompile(`rows in\s+300\n`).MatchString(merged) || !regexp.MustCompile(`rows skipped \(older than since=\)\s+100\n`).MatchString(merged) ||
		!strings.Contains(merged, "next since") {
		t.Fatalf("merge summary does not show 100 rows skipped and the next since:\n%s", merged)
	}

	// rows written after the first run: the printed command catches them up
	insert(1000, 30, func(int) int64 { return 0 }) // 0: written now
	out2 := filepath.Join(dir, "second")
	stdout = rejectsExit("migrate", "-m", strings.Trim(cmd[1], "'"), "--source", cmd[2], "--out", out2, "--progress", "never")
	_, man = outputRows(t, out2)
	if man.RowsIn != 330 || man.RowsWritten != 30 || man.RowsRejected != 100 || man.RowsSkipped != 200 {
		t.Fatalf("second catch-up: in %d written %d rejected %d skipped %d; want 330, 30, 100 (key-only), 200\n%s",
			man.RowsIn, man.RowsWritten, man.RowsRejected, man.RowsSkipped, stdout)
	}
}

// TestCatchupIntoSQLTable: a catch-up into a SQL table shows the skipped rows and the next
// since, and the printed next catch-up runs as is against the same table and state folder.
func TestCatchupIntoSQLTable(t *testing.T) {
	c := cassandratest.Open(t)
	if err := c.CreateTable("app", "events", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}},
		[]string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	older := time.Now().Add(-2 * time.Hour).UnixMicro()
	if err := c.InsertMany("app", "events", 40, func(i int, r map[string]any) error {
		r["id"] = i
		r["v"] = cqltest.Cell{Value: fmt.Sprint("v", i), WriteTime: [2]int64{older, 0}[i%2]} // 0: written now
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	srv := mysqltest.GMS(t)
	dir := t.TempDir()
	m := writeFile(t, dir, "events.yaml", eventsMapping)
	srv.Exec(t, "CREATE TABLE events (id INT NOT NULL, v VARCHAR(255), PRIMARY KEY (id))")
	state := filepath.Join(dir, "state")
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	stdout := mustRun(t, "migrate", "-m", m, "--source", c.URI("app", "events", "since="+since), "--out", srv.URI(""),
		"--state", state, "--sql-conns", "1", "--progress", "never") // go-mysql-server: one connection, as the SQL tests use it
	if !regexp.MustCompile(`rows written\s+20\n`).MatchString(stdout) || !regexp.MustCompile(`rows skipped \(older than since=\)\s+20\n`).MatchString(stdout) ||
		!strings.Contains(stdout, "next since") {
		t.Fatalf("summary does not show 20 written, 20 skipped and the next since:\n%s", stdout)
	}
	cmd := regexp.MustCompile(`rekey migrate -m (\S+) --source '([^']+)' --out (\S+) --overwrite --state (\S+)`).FindStringSubmatch(stdout)
	if cmd == nil {
		t.Fatalf("no next catch-up command:\n%s", stdout)
	}
	// the rows written just before the first run fall within the margin: read again, upserted
	stdout = mustRun(t, "migrate", "-m", cmd[1], "--source", cmd[2], "--out", cmd[3], "--overwrite", "--state", cmd[4], "--sql-conns", "1", "--progress", "never")
	if !regexp.MustCompile(`rows written\s+20\n`).MatchString(stdout) || !regexp.MustCompile(`rows skipped \(older than since=\)\s+20\n`).MatchString(stdout) {
		t.Fatalf("second catch-up:\n%s", stdout)
	}
	var n int
	if err := srv.DB(t).QueryRow("SELECT COUNT(*) FROM events").Scan(&n); err != nil || n != 20 {
		t.Fatalf("%d rows in the table (%v), want 20", n, err)
	}
}

// TestReportCountsRowsSinceLeftOut: a report of a catch-up (since=) reads every row of the table
// and analyses those written since; the older rows it read and left out are counted and shown
// as skipped, and its --stats-json adds up (rows_in = rows_written + rows_rejected +
// rows_skipped), as migrate's and verify's do.
func TestReportCountsRowsSinceLeftOut(t *testing.T) {
	c := cassandratest.Open(t)
	if err := c.CreateTable("app", "events", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}},
		[]string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	older, newer := now.Add(-2*time.Hour).UnixMicro(), now.Add(-time.Hour).UnixMicro()
	if err := c.InsertMany("app", "events", 300, func(i int, r map[string]any) error {
		r["id"] = i
		r["v"] = cqltest.Cell{Value: fmt.Sprint("v", i), WriteTime: [3]int64{older, newer, older}[i%3]}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := writeFile(t, dir, "events.yaml", eventsMapping)
	stats := filepath.Join(dir, "stats.json")
	since := now.Add(-90 * time.Minute).UTC().Format(time.RFC3339)
	stdout := mustRun(t, "report", "-m", m, "--source", c.URI("app", "events", "splits=8&since="+since), "--stats-json", stats,
		"--progress", "never", "--tmp", dir)
	var st runStats
	if data, err := os.ReadFile(stats); err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("stats: %v %s", err, data)
	}
	if st.RowsIn != 300 || st.RowsSkipped != 200 || st.RowsWritten != 100 || st.RowsWritten+st.RowsRejected+st.RowsSkipped != st.RowsIn {
		t.Fatalf("stats %+v: want 300 rows in = 100 accepted + 200 skipped (older than since=)", st)
	}
	if !regexp.MustCompile(`rows skipped\s+200 `).MatchString(stdout) {
		t.Fatalf("the report does not show the 200 rows older than since= it left out:\n%s", stdout)
	}
}
