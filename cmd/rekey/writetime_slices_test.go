package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

const sliceMapping = `version: 1
source:
  name: wt.slices
target:
  table: slices
  primary_key: "[id]"
  write_time: true
`

// sliceDay is a UTC midnight: the default slices are whole UTC days.
var sliceDay = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// seedSliceRows writes n rows into wt.slices (id int, a text, b int) whose cells carry write
// times over three days, a row's cells sometimes a day apart, some rows without b; it returns
// each row's newest write time in milliseconds.
func seedSliceRows(t *testing.T, cas *cassandratest.Cluster, n int) map[int]int64 {
	t.Helper()
	if err := cas.CreateTable("wt", "slices", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}, {Name: "b", Type: "int"}},
		[]string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	newest := map[int]int64{}
	if err := cas.InsertMany("wt", "slices", n, func(i int, row map[string]any) error {
		aAt := sliceDay + int64(i%3)*86_400_000 + int64(i)*60_000 + 7 // a distinct millisecond per row
		row["id"] = i
		row["a"] = cqltest.Cell{Value: fmt.Sprint("a", i), WriteTime: aAt * 1000}
		newest[i] = aAt
		if i%4 != 0 { // every fourth row has no b
			bAt := aAt + 3_600_000
			if i%5 == 0 { // b a day after a: the row goes to b's day
				bAt = aAt + 86_400_000
			}
			row["b"] = cqltest.Cell{Value: i, WriteTime: bAt * 1000}
			newest[i] = bAt
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return newest
}

// sliceSchema is the target schema of sliceMapping.
var sliceSchema = pipeline.TargetSchema{Table: "slices", KeyLen: 1, Columns: []pipeline.Column{
	{Name: "id", Type: pipeline.TypeInteger}, {Name: "a", Type: pipeline.TypeVarchar}, {Name: "b", Type: pipeline.TypeInteger}}}

// sliceOutput reads a finished output of sliceMapping: the ids in the files of each slice (by
// the slice's file-name prefix), read back with the independent Parquet reader, and the jobs of
// bulkload.json.
func sliceOutput(t *testing.T, out string) (ids map[string][]int, jobs []lindorm.BulkloadJob, m *output.Manifest) {
	t.Helper()
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	files, err := sinktest.SliceFiles(out, m, sliceSchema)
	if err != nil {
		t.Fatal(err)
	}
	ids = map[string][]int{}
	for p, pfs := range files {
		for _, pf := range pfs {
			for _, row := range pf.Values {
				ids[p] = append(ids[p], int(row[0].Num))
			}
		}
	}
	for _, v := range ids {
		sort.Ints(v)
	}
	data, err := os.ReadFile(filepath.Join(out, output.BulkloadFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &jobs); err != nil {
		t.Fatalf("%s is not a list of jobs: %v\n%s", output.BulkloadFile, err, data)
	}
	return ids, jobs, m
}

// A migration into files with target.write_time (the real node in the real-peer tier) writes
// each row into the files of the time slice of its newest cell write time (UTC days by default)
// and bulkload.json lists one job per slice, oldest first, each reading only its slice's files
// and stamping them with the newest write time of the slice's rows; the next steps list the
// jobs in that order. Slices too narrow for the rows' spread are refused, saying to widen them.
func TestWriteTimeFilesOneJobPerSlice(t *testing.T) {
	cas := cassandratest.Open(t)
	const n = 70
	newest := seedSliceRows(t, cas, n)
	wantIDs := map[string][]int{}
	wantTime := map[string]int64{}
	for id, at := range newest {
		p := output.SliceFilePrefix(at - at%86_400_000)
		wantIDs[p] = append(wantIDs[p], id)
		wantTime[p] = max(wantTime[p], at)
	}
	for _, v := range wantIDs {
		sort.Ints(v)
	}
	if len(wantIDs) != 4 {
		t.Fatalf("the seed spans %d days, want 4", len(wantIDs))
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", sliceMapping)
	out := filepath.Join(dir, "out")
	source := cas.URI("wt", "slices", "splits=4&page_size=9")
	text := mustRun(t, "migrate", "-m", mapping, "--source", source, "--out", out, "--regions", "3", "--progress", "never")
	ids, jobs, m := sliceOutput(t, out)
	if m.RowsWritten != n {
		t.Fatalf("manifest: %d rows written, want %d", m.RowsWritten, n)
	}
	if fmt.Sprint(ids) != fmt.Sprint(wantIDs) {
		t.Errorf("ids per slice\n%v\nwant\n%v", ids, wantIDs)
	}
	if len(jobs) != len(wantIDs) {
		t.Fatalf("%d jobs, want one per slice: %d", len(jobs), len(wantIDs))
	}
	var last int64
	for i, job := range jobs {
		prefix := job.ReaderConfig.FilePath[strings.LastIndex(job.ReaderConfig.FilePath, "/")+1:]
		prefix = strings.TrimSuffix(prefix, "*")
		wantPath := filepath.ToSlash(filepath.Join(out, output.DataDir)) + "/" + lindorm.RegionGlob + prefix + "*"
		if job.ReaderConfig.FilePath != wantPath {
			t.Errorf("job %d: filePath %q, want %q", i, job.ReaderConfig.FilePath, wantPath)
		}
		ts := job.WriterConfig.Timestamp
		if ts == nil || *ts != wantTime[prefix] {
			t.Errorf("job %d (%s): timestamp %v, want the slice's newest write time %d", i, prefix, ts, wantTime[prefix])
			continue
		}
		if *ts <= last {
			t.Errorf("job %d: timestamp %d after %d: the jobs are not oldest first", i, *ts, last)
		}
		last = *ts
		at := strings.Index(text, "files "+job.ReaderConfig.FilePath+", timestamp "+time.UnixMilli(*ts).UTC().Format(time.RFC3339Nano))
		if at < 0 {
			t.Errorf("the next steps do not list job %d:\n%s", i, text)
		}
	}
	// one slice a millisecond wide per row: more than the 64 slices a run may open
	code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", source, "--out", filepath.Join(dir, "narrow"), "--time-slice", "1ms", "--progress", "never")
	if code != exitFailed || !strings.Contains(stdout+stderr, "widen them (--time-slice") {
		t.Errorf("slices of 1ms: exit %d, want %d saying to widen them\n%s%s", code, exitFailed, stdout, stderr)
	}
}

// Against the real node (the stand-in has no default_time_to_live): a migration into files with
// target.write_time leaves out the cells whose write time plus the table's TTL has passed, and
// its summary counts them and the row left with no cell, as a migration into a table does.
func TestWriteTimeFilesSummaryCountsExpiredCells(t *testing.T) {
	cas := cassandratest.Open(t)
	sess := cas.Session(t)
	now := time.Now().UnixMicro()
	old := now - 2*3600*1_000_000 // past the table's TTL counted from the write time
	for _, s := range []string{
		`CREATE KEYSPACE IF NOT EXISTS wtfiles WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`DROP TABLE IF EXISTS wtfiles.slices`,
		`CREATE TABLE wtfiles.slices (id int PRIMARY KEY, a text, b int) WITH default_time_to_live = 3600`,
		fmt.Sprintf(`INSERT INTO wtfiles.slices (id, a, b) VALUES (1, 'a1', 1) USING TIMESTAMP %d`, now),
		fmt.Sprintf(`INSERT INTO wtfiles.slices (id, a) VALUES (2, 'a2') USING TIMESTAMP %d`, now),
		fmt.Sprintf(`UPDATE wtfiles.slices USING TIMESTAMP %d SET b = 2 WHERE id = 2`, old),
		fmt.Sprintf(`INSERT INTO wtfiles.slices (id, a, b) VALUES (3, 'a3', 3) USING TIMESTAMP %d`, old),
	} {
		if err := sess.Query(s).Exec(); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", strings.Replace(sliceMapping, "wt.slices", "wtfiles.slices", 1))
	out := filepath.Join(dir, "out")
	text := mustRun(t, "migrate", "-m", mapping, "--source", cas.URI("wtfiles", "slices", ""), "--out", out, "--regions", "1", "--progress", "never")
	if !regexp.MustCompile(`rows written +2\n`).MatchString(text) {
		t.Errorf("the summary does not say 2 rows written:\n%s", text)
	}
	for _, want := range []string{
		"rows skipped (older than since=, or every cell expired)",
		"cells expired",
		"3 (write time + the table's TTL already past",
		"1 rows with no cell left",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary does not say %q:\n%s", want, text)
		}
	}
	ids, _, _ := sliceOutput(t, out)
	var all []int
	for _, v := range ids {
		all = append(all, v...)
	}
	sort.Ints(all)
	if fmt.Sprint(all) != "[1 2]" {
		t.Errorf("rows in the files %v, want [1 2]: row 3's cells all expired", all)
	}
}

// A run that fails for opening more time slices than it may says to start over with wider
// slices (--overwrite, or a new --out), not to --resume: a resume keeps the first attempt's
// --time-slice, refuses another, and would fail again at the same slice.
func TestWriteTimeFilesTooManySlicesSaysStartOver(t *testing.T) {
	cas := cassandratest.Open(t)
	seedSliceRows(t, cas, 70)
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", sliceMapping)
	out := filepath.Join(dir, "narrow")
	source := cas.URI("wt", "slices", "")
	code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", source, "--out", out, "--time-slice", "1ms", "--progress", "never")
	msg := stdout + stderr
	if code != exitFailed || !strings.Contains(msg, "widen them (--time-slice") {
		t.Fatalf("slices of 1ms: exit %d, want %d saying to widen them\n%s", code, exitFailed, msg)
	}
	if strings.Contains(msg, "with --resume") || !strings.Contains(msg, "--overwrite") {
		t.Errorf("the failure says to resume, which keeps the 1ms slices, or not how to start over:\n%s", msg)
	}
	// what it says works: start over, wider
	mustRun(t, "migrate", "-m", mapping, "--source", source, "--out", out, "--overwrite", "--time-slice", "24h", "--progress", "never")
}
