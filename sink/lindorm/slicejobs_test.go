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

// Slices stamped alike (those written during the copy all take the run's start) are listed by
// their start: bulkload.json and the next steps come out the same on every run.
func TestSliceJobsOfOneStampInSliceOrder(t *testing.T) {
	started := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	hour := int64(3_600_000)
	var files []pipeline.FileInfo
	var want []string
	for i := int64(0); i < 8; i++ {
		start := started.UnixMilli() + i*hour
		files = append(files, pipeline.FileInfo{Path: "data/region-0000/" + output.SliceFilePrefix(start) + "part-00000.parquet", Rows: 1, NewestTime: start + 10})
		want = append(want, output.SliceFilePrefix(start)+"*")
	}
	for run := 0; run < 20; run++ {
		jobs, err := lindorm.SliceJobs(orders(), pipeline.Result{StartedAt: started, Files: files}, lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: "out"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range jobs {
			_, glob, _ := strings.Cut(j.ReaderConfig.FilePath, "data/*/")
			got = append(got, glob)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("run %d: jobs in order %v, want %v", run, got, want)
		}
	}
}
