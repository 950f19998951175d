package lindorm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
)

// A time slice holds rows the copy read at different instants: a row read early, then changed
// in Cassandra (a change replicate applies at its write time), shares its slice with rows written
// after that change and read later. A slice whose newest write time is after the run started
// is stamped with the run's start: a stamp later than that would beat the change made to the
// early row after the copy read it, and the stale copy would stay for good. A slice written
// before the run started keeps its newest write time.
func TestSliceJobsStampNoLaterThanTheRunsStart(t *testing.T) {
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	started := time.UnixMilli(day + 86_400_000 + 3_600_000) // the second day, 01:00
	old := day + 5_000                                      // the first day's newest write
	during := started.UnixMilli() + 600_000                 // written 10 minutes into the copy
	res := pipeline.Result{StartedAt: started, Files: []pipeline.FileInfo{
		{Path: "data/region-0000/" + output.SliceFilePrefix(day) + "part-00000.parquet", Rows: 1, NewestTime: old},
		{Path: "data/region-0000/" + output.SliceFilePrefix(day+86_400_000) + "part-00000.parquet", Rows: 2, NewestTime: during},
		{Path: "data/region-0000/" + output.SliceFilePrefix(-1) + "part-00000.parquet", Rows: 1},
	}}
	jobs, err := lindorm.SliceJobs(orders(), res, lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: "out"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, j := range jobs {
		if j.WriterConfig.Timestamp == nil {
			t.Fatalf("job %s without a timestamp", j.ReaderConfig.FilePath)
		}
		_, glob, _ := strings.Cut(j.ReaderConfig.FilePath, "data/*/")
		got[glob] = *j.WriterConfig.Timestamp
	}
	want := map[string]int64{
		output.SliceFilePrefix(day) + "*":            old,
		output.SliceFilePrefix(day+86_400_000) + "*": started.UnixMilli(),
		output.SliceFilePrefix(-1) + "*":             started.UnixMilli(),
	}
	if len(got) != len(want) {
		t.Fatalf("jobs %v, want %v", got, want)
	}
	for p, ts := range want {
		if got[p] != ts {
			t.Errorf("job %s: timestamp %d, want %d (the run started at %d)", p, got[p], ts, started.UnixMilli())
		}
	}
}
