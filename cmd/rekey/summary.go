package main

import (
	"fmt"
	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/internal/hugeheap"
	"io"
	"math"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

// peakRSS is the process's peak resident set size in bytes (Linux reports KiB).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// runStats is what --stats-json writes: the figures benchmarks compare. A resumed run's rows,
// files and bytes are the whole run's; seconds and rows_per_sec are this attempt's, which read
// rows_in_this_attempt of them, as its summary says.
type runStats struct {
	RowsIn       int64 `json:"rows_in"`
	RowsWritten  int64 `json:"rows_written"`
	RowsRejected int64 `json:"rows_rejected"`
	RowsSkipped  int64 `json:"rows_skipped"`
	Files        int   `json:"files"`
	Bytes        int64 `json:"bytes"`
	Resumed      bool  `json:"resumed"`
	// RowsInThisAttempt is what this attempt read: rows_in less what the earlier attempts of a
	// resumed run read
	RowsInThisAttempt int64   `json:"rows_in_this_attempt"`
	Seconds           float64 `json:"seconds"`
	RowsPerSec        float64 `json:"rows_per_sec"`
	PeakRSS           int64   `json:"peak_rss_bytes"`
}

func statsOf(res pipeline.Result) runStats {
	s := runStats{RowsIn: res.RowsIn, RowsWritten: res.RowsWritten, RowsRejected: res.RowsRejected, RowsSkipped: res.RowsSkipped,
		Files: len(res.Files), Resumed: res.Resumed, RowsInThisAttempt: res.RowsInThisRun, Seconds: res.Duration.Seconds(), PeakRSS: peakRSS()}
	for _, f := range res.Files {
		s.Bytes += f.Bytes
	}
	// the rate of this attempt: a resumed run's totals include rows an earlier attempt read
	if s.Seconds > 0 {
		s.RowsPerSec = float64(res.RowsInThisRun) / s.Seconds
	}
	return s
}

// secondsDuration is the time a result gives in seconds (a report's or a verify's, which their
// summaries show), as --stats-json takes it: the same seconds again, to the nanosecond.
func secondsDuration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}

func writeStats(path string, res pipeline.Result) error {
	if path == "" {
		return nil
	}
	return atomicfile.WriteJSON(path, statsOf(res))
}

// summaryOut is where a run wrote, as its summary shows it.
type summaryOut struct {
	label   string               // "output" (a folder or bucket of files) or "state" (a SQL target's local folder)
	where   string               // the --out (or state folder) as given
	rejects string               // where the rejected rows are (RejectsLocation)
	replay  string               // the rejected rows as read, to run again (ReplayLocation); "" when none
	plan    *pipeline.RegionPlan // the region plan of a files output; nil for a SQL table, which has no files
	// nextSince is the since= of the next catch-up of a Cassandra source (nextSince), once complete
	nextSince time.Time
	// cells are the cell write times' counts of a source that carried them (target.write_time)
	cells *cassandra.CellTimeStats
	// sourceTable is the mapping's source.table: the rows skipped are other tables' events
	sourceTable string
	// more are the last rows, in line with the others (a table's name and statements)
	more [][2]string
}

// cellTimeRows are the summary's lines about cells left out as expired and cells of another TTL;
// attempt follows their names (" (this attempt)" in a resumed run: the source counts what it read).
func cellTimeRows(c *cassandra.CellTimeStats, attempt string) [][2]string {
	if c == nil {
		return nil
	}
	rows := [][2]string{{"cells expired" + attempt, fmt.Sprintf("%d (write time + the table's TTL already past: left out, Lindorm would hide them; %d rows with no cell left, counted as skipped)", c.ExpiredCells, c.ExpiredRows)}}
	if c.OtherTTL > 0 {
		rows = append(rows, [2]string{"cells of another TTL" + attempt, fmt.Sprintf("%d (a TTL of their own, or none, unlike the table's: written, and they expire at their write time + the table's TTL, as Lindorm SQL has no per-cell TTL)", c.OtherTTL)})
	}
	if c.OtherTTLLeftOut > 0 {
		rows = append(rows, [2]string{"  of them left out" + attempt, fmt.Sprintf("%d (Cassandra still holds them, for a TTL of their own, or none, or the table's counted from a write later than their USING TIMESTAMP, "+
			"but their write time + the table's TTL has passed: the target hides them; "+
			"to keep them, migrate them without target.write_time, whose cells count the TTL from the load)", c.OtherTTLLeftOut)})
	}
	return rows
}

// filesOut is the summaryOut of the region files m writes in st.
func filesOut(where string, m *migrate.Migration, plan pipeline.RegionPlan) summaryOut {
	st := m.Output().Store
	return summaryOut{label: "output", where: where, rejects: output.RejectsLocation(st), replay: output.ReplayLocation(st, m.Source()), plan: &plan,
		cells: cellTimeStats(m.Source(), m.Program().WriteTime()), sourceTable: m.Program().SourceTable()}
}

// cellTimeStats are the counts of cells left out as expired and of another TTL, when src read
// its cells' write times (target.write_time); nil otherwise.
func cellTimeStats(src pipeline.Source, writeTimes bool) *cassandra.CellTimeStats {
	cs, ok := src.(*cassandra.Source)
	if !ok || !writeTimes {
		return nil
	}
	st := cs.CellTimeStats()
	return &st
}

// printSummary prints a run's figures under a title that says how it ended: "Migration
// summary", "Migration interrupted", "Migration failed" (the figures are what was committed).
// Files, regions and bytes are shown only for an output of files.
func printSummary(w io.Writer, title string, res pipeline.Result, out summaryOut) {
	s := statsOf(res)
	if res.Resumed {
		title += " (resumed; totals include the earlier run)"
	}
	fmt.Fprintln(w, title)
	rows := [][2]string{
		{"rows in", fmt.Sprintf("%d", s.RowsIn)},
		{"rows written", fmt.Sprintf("%d", s.RowsWritten)},
		{"rows rejected", fmt.Sprintf("%d", s.RowsRejected)},
	}
	// the totals are the whole run's; time and rate are this attempt's alone
	attempt := ""
	if res.Resumed {
		attempt = " (this attempt)"
		rows = append(rows[:1], append([][2]string{{"rows in" + attempt, fmt.Sprintf("%d", res.RowsInThisRun)}}, rows[1:]...)...)
	}
	if s.RowsSkipped > 0 {
		// neither written nor rejected: rows in = written + rejected + skipped
		why := "older than since="
		if out.cells != nil {
			why = "older than since=, or every cell expired"
		}
		if out.sourceTable != "" {
			why = "events of other tables than source.table " + out.sourceTable + ": the log names them"
		}
		rows = append(rows, [2]string{"rows skipped (" + why + ")", fmt.Sprintf("%d", s.RowsSkipped)})
	}
	rows = append(rows, cellTimeRows(out.cells, attempt)...)
	codes := make([]string, 0, len(res.RejectCodes))
	for c := range res.RejectCodes {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		rows = append(rows, [2]string{"  " + c, fmt.Sprintf("%d", res.RejectCodes[c])})
	}
	if out.plan != nil {
		rows = append(rows,
			[2]string{"regions", fmt.Sprintf("%d (%s)", out.plan.Count(), out.plan.Strategy)},
			[2]string{"files", fmt.Sprintf("%d", s.Files)},
			[2]string{"bytes", transform.FormatSize(s.Bytes)},
		)
	}
	rows = append(rows,
		[2]string{"time" + attempt, res.Duration.Round(1e7).String()},
		[2]string{"rows/s" + attempt, fmt.Sprintf("%.0f", s.RowsPerSec)},
		[2]string{"peak memory", transform.FormatSize(s.PeakRSS)},
		[2]string{out.label, out.where},
	)
	if s.RowsRejected > 0 {
		rows = append(rows, [2]string{"rejects", out.rejects})
		if out.replay != "" {
			again := out.replay
			if !store.IsBucket(again) { // a bucket's folder is a source URI as it is
				again = "file:" + again
			}
			how := "migrate them into another --out with --source " + again
			if out.plan == nil {
				// a table's state folder: a source inside it is refused, and the same --state
				// holds this run's checkpoint
				how = "move it out of the state folder and migrate it into the table with another --state"
			}
			rows = append(rows, [2]string{"rejected rows", out.replay + " (as read: once fixed, " + how + ")"})
		}
	}
	if !out.nextSince.IsZero() {
		rows = append(rows, [2]string{"next since", out.nextSince.Format(time.RFC3339) + " (for the next catch-up: this run's start less " + catchupMargin.String() + ")"})
	}
	table(w, append(rows, out.more...))
}

// printOversize warns about regions holding more data than the region size: Lindorm would split
// them during the load, so pre-split into more regions instead.
func printOversize(w io.Writer, m *output.Manifest) {
	var over []string
	for _, r := range m.Regions {
		if r.OverSize {
			over = append(over, fmt.Sprintf("%s (%s)", output.RegionName(r.Index), transform.FormatSize(r.Bytes)))
		}
	}
	if len(over) == 0 {
		return
	}
	fmt.Fprintf(w, "\nwarning: %d regions exceed the region size of %s: %s\n", len(over), transform.FormatSize(m.RegionSize), strings.Join(over, ", "))
	fmt.Fprintln(w, "  Lindorm would split them while loading; pre-split into more regions (--regions N or regions.size in the mapping)")
}

// setMemoryBudget makes --memory the Go runtime's soft memory limit, so the whole process stays
// near it, and lets the heap grow further between collections below it (GOGC=400): most of
// what verify and replicate allocate is short-lived batches. GOGC and GOMEMLIMIT in the
// environment win.
func setMemoryBudget(getenv func(string) string, budget int64) {
	setMemoryBudgetGC(getenv, budget, 400)
}

// migrateGCPercent is migrate's collector pace: Go's default. migrate reuses its batches once
// they are written (pipeline.Batch.Release), so its heap is mostly live buffers; a lazier
// collector would only make the process touch more pages, each first touch costing ~10 µs on
// virtual machines that give freed memory back to their host (a shard of a sharded migration
// paid more for that than for its rows).
const migrateGCPercent = 100

// reportGCPercent is report's collector pace. Its live heap is ~100 MB at any input size (the
// collision check's write buffers, bounded sketches and samples, the batches in flight): at
// GOGC=400 the heap grew to the --memory limit, and every page of it is a first touch, which
// costs even on huge pages (the kernel zeroes them; on virtual machines that hand freed memory
// back to their host, the host must supply it again). GOGC=200 holds ~380 MB instead of ~430 and, measured on 5M rows, costs ~10%
// less CPU than 400 and than 100 (whose extra collections cost more than the pages it saves).
const reportGCPercent = 200

// setMemoryBudgetGC is setMemoryBudget with the collector's pace (GOGC) given.
func setMemoryBudgetGC(getenv func(string) string, budget int64, gcPercent int) {
	if getenv("GOMEMLIMIT") == "" && budget > 0 {
		debug.SetMemoryLimit(budget * 8 / 10)
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// heapOnHugePages puts the heap a batch command grows into on transparent huge pages
// (internal/hugeheap), up to its memory budget. Not for replicate: it runs for days, and the
// kernel would keep its busiest hour's heap resident, refilling what the runtime gives back.
func heapOnHugePages(budget int64) {
	if budget > 0 {
		hugeheap.Reserve(budget * 8 / 10)
	}
}

// escapeLines shows the control characters of a message that may name data values (a key, a
// file name) escaped, keeping its own line breaks and the tabs that indent a line (cobra's
// "Did you mean this?" list): layout, not data, as the line breaks are.
func escapeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		body := strings.TrimLeft(l, "\t")
		lines[i] = l[:len(l)-len(body)] + pipeline.EscapeControls(body)
	}
	return strings.Join(lines, "\n")
}
