package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink"
)

// With no terminal (Kubernetes, nohup, CI) progress is a plain line per interval: no carriage
// returns, no colour codes, and the figures a person watching a log needs.
func TestPlainProgressLines(t *testing.T) {
	t.Parallel()
	var c pipeline.Counters
	c.RowsIn.Store(1_200_000)
	c.RowsWritten.Store(1_199_990)
	c.RowsRejected.Store(10)
	f := progressFigures{what: "migrating", counters: &c, bytes: func() int64 { return 64 << 20 }, total: 6_000_000}
	line := plainLine(f, 5*time.Second)
	want := "migrating: 1,200,000 rows read, 1,199,990 written, 10 rejected, 240,000 rows/s, 64.0 MiB written, elapsed 5s, ETA 20s (of ~6,000,000)"
	if line != want {
		t.Fatalf("got  %q\nwant %q", line, want)
	}
	if strings.ContainsAny(line, "\r\x1b") {
		t.Fatal("control characters in a plain progress line")
	}
	f.total = -1
	if line := plainLine(f, 5*time.Second); strings.Contains(line, "ETA") {
		t.Fatalf("an ETA without a known total: %s", line)
	}
	// a phase that only counts rows (verify reading its target) shows no written/rejected figures
	rows := progressFigures{what: "reading target", counters: &c, total: 2_400_000, rowsOnly: true}
	if line, want := plainLine(rows, 5*time.Second), "reading target: 1,200,000 rows, 240,000 rows/s, elapsed 5s, ETA 5s (of ~2,400,000)"; line != want {
		t.Fatalf("got  %q\nwant %q", line, want)
	}
}

// A resumed run's rate counts only the rows this attempt read: the totals include the earlier
// attempt's, read in time this attempt did not spend.
func TestResumedRunRateCountsThisAttempt(t *testing.T) {
	t.Parallel()
	var c pipeline.Counters
	c.RowsIn.Store(1_200_000)
	f := progressFigures{what: "migrating", counters: &c, total: 6_000_000, before: 1_000_000}
	if line := plainLine(f, 5*time.Second); !strings.Contains(line, ", 40,000 rows/s,") || !strings.Contains(line, "ETA 2m0s") {
		t.Fatalf("resumed progress: %s", line)
	}
	s := statsOf(pipeline.Result{RowsIn: 1_200_000, RowsInThisRun: 200_000, Resumed: true, Duration: 5 * time.Second})
	if s.RowsPerSec != 40_000 || s.RowsIn != 1_200_000 {
		t.Fatalf("resumed summary: %+v", s)
	}
}

func TestProgressModes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode string
		tty  bool
		want string
	}{{"auto", true, "bar"}, {"auto", false, "plain"}, {"always", false, "bar"}, {"never", true, "never"}, {"plain", true, "plain"}} {
		if got, err := progressMode(c.mode, c.tty); err != nil || got != c.want {
			t.Errorf("%s (tty %v): %s %v, want %s", c.mode, c.tty, got, err, c.want)
		}
	}
	if _, err := progressMode("fancy", true); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

// A migrate run without a terminal prints plain progress lines on stderr and no colour codes.
func TestMigrateWithoutTerminalHasNoControlCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, stderr := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=200000",
		"--out", dir+"/out", "--progress-interval", "50ms", "--log-level", "info")
	if !strings.Contains(stderr, "migrating: ") || !strings.Contains(stderr, "rows read") {
		t.Fatalf("no plain progress line:\n%s", stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") {
		t.Fatalf("control characters on a non-terminal stderr:\n%q", stderr)
	}
}

// replicate's status follows migrate's progress rules. With no terminal, a plain line every
// --progress-interval; before, --progress auto printed nothing without one.
func TestReplicationStatusLines(t *testing.T) {
	t.Parallel()
	s := replicationStatus{state: "consuming", in: 1_200_000, written: 1_190_000, deletes: 9_000, rejected: 1_000, files: 22,
		bytes: 64 << 20, lag: 12_345, partitions: 3, rate: 24_000.7, elapsed: 50*time.Second + 300*time.Millisecond}
	want := "replicating (consuming): 1,200,000 messages read, 1,190,000 rows written, 9,000 deletes, 1,000 rejected, 24,000 msg/s, 22 files 64.0 MiB, lag 12,345 over 3 partitions, elapsed 50s"
	if got := s.plain(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if strings.ContainsAny(s.plain(), "\r\x1b") || strings.ContainsAny(s.frame(), "\r\x1b\n") {
		t.Fatal("control characters in a status line")
	}
	// into a SQL table: statements, not the files a table has none of
	s = replicationStatus{state: "consuming", in: 1_200, written: 1_100, deletes: 90, rejected: 10, sql: true, statements: 31, partitions: 2, elapsed: 5 * time.Second}
	want = "replicating (consuming): 1,200 messages read, 1,100 rows written, 90 deletes, 10 rejected, 0 msg/s, 31 statements, lag 0 over 2 partitions, elapsed 5s"
	if got := s.plain(); got != want {
		t.Fatalf("into a table: got  %q\nwant %q", got, want)
	}
	if frame := s.frame(); strings.Contains(frame, "files") || !strings.Contains(frame, "31 statements") {
		t.Fatalf("into a table: the terminal line %q", frame)
	}
}

func TestReplicationStatusModes(t *testing.T) {
	t.Parallel()
	var m replicate.Metrics
	m.MessagesIn.Store(500)
	// each mode runs until its status goroutine has written two updates (never: at once)
	run := func(mode string) string {
		var b lockedBuffer
		s := startStatus(&b, mode, time.Millisecond, &m)
		if mode != "never" {
			wait.For(t, func() bool {
				out := b.String()
				return strings.Count(out, "\n") >= 2 || strings.Count(out, "\r") >= 2
			}, mode+": two status updates")
		}
		s.finish()
		return b.String()
	}
	plain := run("plain")
	lines := strings.Split(strings.TrimSuffix(plain, "\n"), "\n")
	if len(lines) < 3 || strings.ContainsAny(plain, "\r\x1b") {
		t.Fatalf("plain: %q", plain)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "replicating (") || !strings.Contains(l, " 500 messages read") {
			t.Fatalf("plain line %q", l)
		}
	}
	bar := run("bar")
	if !strings.HasPrefix(bar, "\r\x1b[K") || !strings.HasSuffix(bar, "\r\x1b[K") || strings.Count(bar, "500 msgs") < 2 || strings.Contains(bar, "\n") {
		t.Fatalf("terminal line: %q", bar)
	}
	if never := run("never"); never != "" {
		t.Fatalf("never: %q", never)
	}
}

// report and verify write nothing: their progress lines count the rows the mapping accepts, and
// never call them written.
func TestProgressOfReadOnlyCommandsSaysAccepted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := "../../mappings/orders.yaml"
	mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=2000", "--out", dir+"/out", "--progress", "never")
	for _, args := range [][]string{
		{"report", "-m", mapping, "--source", "gen:orders?rows=2000", "--progress", "plain"},
		{"verify", "-m", mapping, "--source", "gen:orders?rows=2000", "--target", dir + "/out", "--progress", "plain"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 0 || strings.Contains(stderr, "written") || !strings.Contains(stderr, ": 2,000 rows read, 2,000 accepted, 0 rejected") {
			t.Errorf("rekey %s: exit %d; progress:\n%s", strings.Join(args, " "), code, stderr)
		}
	}
}

// Rows the source reads and leaves out itself (a catch-up's since=, a row whose every cell
// expired) are neither written nor rejected: the progress line counts them, so that its figures
// add up to the rows read as the summary's do.
func TestProgressLineCountsSkippedRows(t *testing.T) {
	t.Parallel()
	var c pipeline.Counters
	c.RowsIn.Store(1_000)
	c.RowsWritten.Store(600)
	c.RowsRejected.Store(10)
	c.RowsSkipped.Store(390)
	f := progressFigures{what: "migrating", counters: &c, total: -1}
	want := "migrating: 1,000 rows read, 600 written, 10 rejected, 390 skipped, 200 rows/s, elapsed 5s"
	if line := plainLine(f, 5*time.Second); line != want {
		t.Fatalf("got  %q\nwant %q", line, want)
	}
	// none skipped: the line as before
	c.RowsSkipped.Store(0)
	if line := plainLine(f, 5*time.Second); strings.Contains(line, "skipped") {
		t.Fatalf("a line naming skipped rows when there are none: %s", line)
	}
}

// A resumed run's summary counts the whole run's rows, and its time and rate are this attempt's
// alone: each line says which, and the rows this attempt read are shown beside the total, so
// that "rows in" over "time" is not read as the rate.
func TestResumedSummarySaysWhatThisAttemptDid(t *testing.T) {
	t.Parallel()
	res := pipeline.Result{RowsIn: 1_200_000, RowsWritten: 1_200_000, RowsInThisRun: 200_000, Resumed: true, Duration: 5 * time.Second}
	var b strings.Builder
	printSummary(&b, "Migration summary", res, summaryOut{label: "output", where: "/out"})
	out := b.String()
	for _, want := range []string{"rows in                 1200000\n", "rows in (this attempt)  200000\n", "time (this attempt)     5s\n", "rows/s (this attempt)   40000\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the summary:\n%s", want, out)
		}
	}
	// into a table: the statements are this attempt's too
	var st sqlsink.Stats
	st.Statements.Store(7)
	if row := statementsRow(true, &st); row != [2]string{"statements (this attempt)", "7 (0 retried after transient errors)"} {
		t.Errorf("the statements of a resumed run into a table: %q", row)
	}
	if row := statementsRow(false, &st); strings.Contains(row[0], "attempt") {
		t.Errorf("the statements of a run of one attempt: %q", row)
	}
	// a run that did not resume: one attempt, no such lines
	b.Reset()
	res.Resumed, res.RowsInThisRun = false, res.RowsIn
	printSummary(&b, "Migration summary", res, summaryOut{label: "output", where: "/out"})
	if strings.Contains(b.String(), "attempt") {
		t.Errorf("a run of one attempt:\n%s", b.String())
	}
}

// The last plain line, printed when the run has ended, gives no ETA: the row estimate (a file's
// size over its sampled rows' size) can be far off, and whatever it was, nothing remains to
// wait for. Before, a 3-row file with one 100 MB line ended on "3 rows read, ..., ETA 60h4m29s
// (of ~3,084,050)".
func TestLastPlainProgressLineHasNoETA(t *testing.T) {
	t.Parallel()
	var c pipeline.Counters
	c.RowsIn.Store(3)
	c.RowsWritten.Store(2)
	c.RowsRejected.Store(1)
	var out strings.Builder
	p := &progress{done: make(chan struct{})}
	p.plain(&out, time.Hour, progressFigures{what: "migrating", counters: &c, total: 3_084_050})
	p.finish()
	line := out.String()
	if !strings.HasPrefix(line, "migrating: 3 rows read, 2 written, 1 rejected, ") || strings.Contains(line, "ETA") {
		t.Fatalf("the last line: %q", line)
	}
}

// A progress line read while workers count never shows more rows written, rejected and skipped
// than read: a worker adds a batch's rows read before its rows written, and the line reads them in
// the other order. Before, it read the rows read first, and a batch counted in between showed up in
// written alone: "1,646,592 rows read, 1,650,688 written".
func TestProgressLineNeverWrittenPastRead(t *testing.T) {
	t.Parallel()
	var c pipeline.Counters
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a worker's counting, as the runner does it
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.RowsIn.Add(3)
			c.RowsSkipped.Add(1)
			c.RowsWritten.Add(1)
			c.RowsRejected.Add(1)
		}
	}()
	defer func() { close(stop); <-done }()
	f := progressFigures{what: "migrating", counters: &c, total: -1}
	for range 2000 {
		line := plainLine(f, time.Second)
		var in, written, rejected, skipped int64
		plain := strings.ReplaceAll(line, ",", "")
		if _, err := fmt.Sscanf(plain, "migrating: %d rows read %d written %d rejected", &in, &written, &rejected); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if strings.Contains(plain, " skipped") { // none skipped yet: no figure
			if _, err := fmt.Sscanf(plain, "migrating: %d rows read %d written %d rejected %d skipped", &in, &written, &rejected, &skipped); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		}
		if written+rejected+skipped > in {
			t.Fatalf("more rows written, rejected and skipped than read: %q", line)
		}
	}
}

// A resumed run's --stats-json says which of its figures are this attempt's, as its summary does:
// rows_in (and the rows written, rejected, files and bytes) are the whole run's, seconds and
// rows_per_sec this attempt's, beside the rows this attempt read. Before, nothing in the file told
// them apart: rows_in / seconds (1,200,000 / 5) read as a rate 6 times the one it gave.
func TestResumedStatsSayWhatThisAttemptDid(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stats.json")
	read := func(res pipeline.Result) map[string]any {
		t.Helper()
		if err := writeStats(path, res); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if data, err := os.ReadFile(path); err != nil || json.Unmarshal(data, &m) != nil {
			t.Fatalf("stats: %v %s", err, data)
		}
		return m
	}
	m := read(pipeline.Result{RowsIn: 1_200_000, RowsWritten: 1_200_000, RowsInThisRun: 200_000, Resumed: true, Duration: 5 * time.Second})
	if m["resumed"] != true || m["rows_in_this_attempt"] != 200_000.0 || m["rows_in"] != 1_200_000.0 || m["rows_per_sec"] != 40_000.0 {
		t.Fatalf("a resumed run's stats: %v", m)
	}
	// a run of one attempt: the attempt's rows are the run's
	m = read(pipeline.Result{RowsIn: 1_000, RowsWritten: 1_000, RowsInThisRun: 1_000, Duration: time.Second})
	if m["resumed"] != false || m["rows_in_this_attempt"] != 1_000.0 {
		t.Fatalf("a run's stats: %v", m)
	}
}

// lastLine is the last line of out that starts with prefix ("" when none).
func lastLine(out, prefix string) string {
	var last string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			last = l
		}
	}
	return last
}

// addsUp tells whether a progress line's rows accepted, rejected and skipped add up to its rows
// read ("reading source: 200,000 rows read, 20,069 accepted, 0 rejected, 179,931 skipped, ...").
func addsUp(t *testing.T, line, what string) bool {
	t.Helper()
	var in, kept, rejected, skipped int64
	plain := strings.ReplaceAll(line, ",", "")
	if _, err := fmt.Sscanf(plain, what+": %d rows read %d accepted %d rejected", &in, &kept, &rejected); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if strings.Contains(plain, " skipped") {
		if _, err := fmt.Sscanf(plain, what+": %d rows read %d accepted %d rejected %d skipped", &in, &kept, &rejected, &skipped); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	return in > 0 && kept+rejected+skipped == in
}

// A sampled report's progress line counts the rows the sample passed over as skipped, as its
// --stats-json does, so that its figures add up to the rows read. Before, it showed "200,000 rows
// read, 20,069 accepted, 0 rejected" and nothing of the other 179,931.
func TestSampledReportProgressAddsUp(t *testing.T) {
	t.Parallel()
	code, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=20000", "--sample", "10%",
		"--progress", "plain", "--progress-interval", "1h", "--tmp", t.TempDir(), "-q")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if line := lastLine(out, "analysing: "); !addsUp(t, line, "analysing") {
		t.Fatalf("the rows of the last progress line do not add up: %q", line)
	}
}

// A sampled verify's progress line counts the rows the sample passed over as skipped, as its
// --stats-json does, so that its figures add up to the rows read. Before, it showed "6,000,000
// rows read, 60,156 accepted, 0 rejected" and nothing of the other 5,939,844.
func TestSampledVerifyProgressAddsUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=20000", "--out", out, "--progress", "never")
	code, stdout, stderr := runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=20000", "--target", out,
		"--sample", "10%", "--progress", "plain", "--progress-interval", "1h")
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	if line := lastLine(stderr, "reading source: "); !addsUp(t, line, "reading source") {
		t.Fatalf("the rows of the last progress line do not add up: %q", line)
	}
}
