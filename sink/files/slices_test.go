package files_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// sliceSink is a SliceSink of slices width wide, at most max, over dir.
func sliceSink(t *testing.T, dir string, width time.Duration, max int) (*files.SliceSink, pipeline.TargetSchema) {
	t.Helper()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("9", "h", "q")
	st := sinktest.Folder(t, dir)
	s, err := files.NewSliceSink(files.SliceConfig{Width: width, Max: max, New: func(ctx context.Context, prefix string) (*files.Sink, error) {
		return files.New(ctx, files.Config{Store: st, Schema: schema, Plan: plan, Format: parquet.New(), Memory: 4 << 20, NamePrefix: prefix}, zaptest.NewLogger(t))
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s, schema
}

// Rows go to the slice of their newest cell time (a row without times to the slice without a
// time); each slice's files are named by its prefix and carry its newest time; a rejected row is
// reported at its place in the rows written, not at its place in its slice.
func TestSliceSinkRoutesRowsByNewestTime(t *testing.T) {
	dir := t.TempDir()
	s, schema := sliceSink(t, dir, time.Hour, 8)
	rows := sinktest.AllTypesRows(40, 9, sinktest.VarcharPlan("9", "h", "q"))
	const hour = int64(3_600_000)
	want := map[string][]string{}
	wantNewest := map[string]int64{}
	for i := range rows {
		rows[i].Times = make([]int64, len(schema.Columns))
		switch i % 4 {
		case 0: // no time
		default:
			rows[i].Times[2] = 10*hour + int64(i)
			rows[i].Times[3] = int64(i%4)*hour + 5 // older: the newest decides
		}
		if i%4 == 3 {
			rows[i].Times[4] = 12*hour + int64(i) // a cell two hours later
		}
	}
	rows[5].Values[0] = pipeline.Null // a null key: rejected
	for i := range rows {
		if i == 5 {
			continue
		}
		newest := files.Newest(rows[i].Times)
		p := output.SliceFilePrefix(-1)
		if newest > 0 {
			p = output.SliceFilePrefix(newest - newest%hour)
		}
		want[p] = append(want[p], sinktest.CanonRow(schema, rows[i].Values)[0])
		wantNewest[p] = max(wantNewest[p], newest)
	}
	err := s.Write(context.Background(), rows)
	var re *files.RejectError
	if !errors.As(err, &re) || len(re.Rows) != 1 || re.Rows[0].Index != 5 {
		t.Fatalf("Write: %v, want the reject of row 5", err)
	}
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for name, pf := range readAll(t, dir, infos, schema, sinktest.VarcharPlan("9", "h", "q")) {
		start, ok := output.FileSlice(name)
		if !ok {
			t.Fatalf("%s: no slice", name)
		}
		for _, r := range pf.Rows {
			got[output.SliceFilePrefix(start)] = append(got[output.SliceFilePrefix(start)], r[0])
		}
	}
	for _, fi := range infos {
		start, _ := output.FileSlice(fi.Path)
		if p := output.SliceFilePrefix(start); fi.NewestTime != wantNewest[p] {
			t.Errorf("%s: newest time %d, want %d", fi.Path, fi.NewestTime, wantNewest[p])
		}
	}
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Errorf("keys per slice\n%v\nwant\n%v", sorted(got), sorted(want))
	}
	if len(want) != 3 {
		t.Fatalf("the rows span %d slices, want 3 (none, 10h, 12h)", len(want))
	}
}

// A slice's newest time, which stamps its bulkload job, is the newest of the rows its files
// hold: a rejected row is not loaded, so its time (later than the rows written) stamps nothing.
func TestSliceNewestTimeLeavesRejectedRowsOut(t *testing.T) {
	s, schema := sliceSink(t, t.TempDir(), time.Hour, 8)
	rows := sinktest.AllTypesRows(4, 9, sinktest.VarcharPlan("9", "h", "q"))
	const hour = int64(3_600_000)
	for i := range rows {
		rows[i].Times = make([]int64, len(schema.Columns))
		rows[i].Times[2] = 10*hour + int64(i)
	}
	rows[3].Values[0] = pipeline.Null // a null key: rejected, and the newest of its slice
	err := s.Write(context.Background(), rows)
	var re *files.RejectError
	if !errors.As(err, &re) || len(re.Rows) != 1 || re.Rows[0].Index != 3 {
		t.Fatalf("Write: %v, want the reject of row 3", err)
	}
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) == 0 {
		t.Fatal("no files committed")
	}
	for _, fi := range infos {
		if want := 10*hour + 2; fi.NewestTime != want {
			t.Errorf("%s: newest time %d, want %d (row 2's: row 3 was rejected)", fi.Path, fi.NewestTime, want)
		}
	}
}

// A row that would open a slice past the cap fails the write, saying to widen the slices.
func TestSliceSinkCap(t *testing.T) {
	s, schema := sliceSink(t, t.TempDir(), time.Millisecond, 2)
	rows := sinktest.AllTypesRows(3, 9, sinktest.VarcharPlan("9", "h", "q"))
	for i := range rows {
		rows[i].Times = make([]int64, len(schema.Columns))
		rows[i].Times[2] = int64(1000 + i)
	}
	err := s.Write(context.Background(), rows)
	if err == nil || !strings.Contains(err.Error(), "more than 2 time slices of 1ms: widen them (--time-slice") {
		t.Fatalf("Write of 3 slices, at most 2: %v", err)
	}
	if err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func sorted(m map[string][]string) map[string][]string {
	for _, v := range m {
		sort.Strings(v)
	}
	return m
}

// A slice opened while another slice is writing its files (a row of a new write time arriving
// late in the run) leaves that slice's files in flight alone: every row of both slices is in
// the files committed.
func TestSliceOpenedLateLeavesOtherSlicesFilesInFlight(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("9", "h", "q")
	// a small budget: the first slice's regions cut chunks, and so start files, early
	s := smallSlices(t, dir, schema, plan, false)
	const hour = int64(3_600_000)
	rows := sinktest.AllTypesRows(30000, 3, plan)
	for i := range rows {
		rows[i].Times = make([]int64, len(schema.Columns))
		rows[i].Times[2] = 10 * hour
		if i >= 20000 {
			rows[i].Times[2] = 12 * hour
		}
	}
	writeThousands(t, s, rows[:20000])
	inFlight := 0
	for _, f := range listFiles(t, dir) {
		if atomicfile.IsTemp(f) {
			inFlight++
		}
	}
	if inFlight == 0 {
		t.Fatal("the first slice has no file in flight: the test needs one")
	}
	writeThousands(t, s, rows[20000:]) // opens the second slice
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir, infos, schema, plan)
	sameRows(t, schema, rows, got)
}

// Sorted slices on a local folder spill their runs into the same region folders: each slice's
// runs are its own, so both slices spill, merge and commit every one of their rows.
func TestSortedSlicesKeepTheirRunsApart(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("9", "h", "q")
	// a small budget: each slice spills several runs per region
	s := smallSlices(t, dir, schema, plan, true)
	const hour = int64(3_600_000)
	rows := sinktest.AllTypesRows(30000, 4, plan)
	for i := range rows {
		rows[i].Times = make([]int64, len(schema.Columns))
		rows[i].Times[2] = (10 + int64(i%2)*2) * hour
	}
	writeThousands(t, s, rows)
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir, infos, schema, plan)
	sameRows(t, schema, rows, got)
	for _, f := range listFiles(t, dir) {
		if atomicfile.IsTemp(f) {
			t.Errorf("left %s", f)
		}
	}
}

// smallSlices is a sink of hourly slices into the folder dir, each slice's sink with a 1 MiB
// budget (so its regions cut chunks early), sorted or not.
func smallSlices(t *testing.T, dir string, schema pipeline.TargetSchema, plan pipeline.RegionPlan, sorted bool) *files.SliceSink {
	t.Helper()
	st := sinktest.Folder(t, dir)
	s, err := files.NewSliceSink(files.SliceConfig{Width: time.Hour, Max: 8, New: func(ctx context.Context, prefix string) (*files.Sink, error) {
		return files.New(ctx, files.Config{Store: st, Schema: schema, Plan: plan, Format: parquet.New(), Memory: 1 << 20, Sort: sorted, NamePrefix: prefix}, zaptest.NewLogger(t))
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeThousands writes rows to s 1,000 at a time.
func writeThousands(t *testing.T, s *files.SliceSink, rows []pipeline.Row) {
	t.Helper()
	for i := 0; i < len(rows); i += 1000 {
		if err := s.Write(context.Background(), rows[i:min(i+1000, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
}
