package main

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
)

// The summary of a copy with write times says how many of the cells it left out as expired
// Cassandra still holds (a TTL of their own, or none, past the table's counted from their write
// time), and what to do to keep them.
func TestSummarySaysWhichExpiredCellsCassandraStillHolds(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	printSummary(&b, "Migration summary", pipeline.Result{RowsIn: 3, RowsWritten: 2, RowsSkipped: 1},
		summaryOut{label: "state", where: "/st", cells: &cassandra.CellTimeStats{ExpiredCells: 3, ExpiredRows: 1, OtherTTL: 4, OtherTTLLeftOut: 2}})
	out := b.String()
	for _, want := range []string{"cells expired", "cells of another TTL", "of them left out", "2 (Cassandra still holds them", "without target.write_time"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the summary:\n%s", want, out)
		}
	}
	b.Reset()
	printSummary(&b, "Migration summary", pipeline.Result{RowsIn: 3, RowsWritten: 3},
		summaryOut{label: "state", where: "/st", cells: &cassandra.CellTimeStats{OtherTTL: 1}})
	if strings.Contains(b.String(), "left out (") || strings.Contains(b.String(), "still holds") {
		t.Errorf("no cell of another TTL was left out:\n%s", b.String())
	}
}

// The counts of cells left out or of another TTL are what this attempt read: a resumed run's
// summary, whose totals include the earlier attempt, says they are this attempt's.
func TestResumedSummaryCountsCellTimesOfThisAttempt(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	printSummary(&b, "Migration summary", pipeline.Result{RowsIn: 10, RowsWritten: 9, RowsSkipped: 1, RowsInThisRun: 4, Resumed: true},
		summaryOut{label: "state", where: "/st", cells: &cassandra.CellTimeStats{ExpiredCells: 3, ExpiredRows: 1, OtherTTL: 2, OtherTTLLeftOut: 1}})
	out := b.String()
	for _, want := range []string{"cells expired (this attempt)", "cells of another TTL (this attempt)", "of them left out (this attempt)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the summary of a resumed run:\n%s", want, out)
		}
	}
}
