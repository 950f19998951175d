package files_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/store"
)

func newSink(t *testing.T, cfg files.Config) *files.Sink {
	t.Helper()
	s, err := files.New(context.Background(), cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func write(t *testing.T, s *files.Sink, rows []pipeline.Row, batch int) {
	t.Helper()
	for i := 0; i < len(rows); i += batch {
		if err := s.Write(context.Background(), rows[i:min(i+batch, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
}

// listFiles returns every file under dir, relative, slash-separated.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// readAll reads every committed Parquet file, checks each row lies in its folder's region and
// returns the rows per file.
func readAll(t *testing.T, dir string, infos []pipeline.FileInfo, schema pipeline.TargetSchema, plan pipeline.RegionPlan) map[string]*sinktest.ParquetFile {
	t.Helper()
	out := map[string]*sinktest.ParquetFile{}
	for _, fi := range infos {
		pf, err := sinktest.ReadParquet(filepath.Join(dir, filepath.FromSlash(fi.Path)), schema)
		if err != nil {
			t.Fatal(err)
		}
		if len(pf.Rows) == 0 {
			t.Errorf("%s is empty", fi.Path)
		}
		if int64(len(pf.Rows)) != fi.Rows {
			t.Errorf("%s: %d rows, FileInfo says %d", fi.Path, len(pf.Rows), fi.Rows)
		}
		for i, v := range pf.Values {
			if r := plan.Route(v[0]); r != fi.Region {
				t.Fatalf("%s row %d: key %q belongs to region %d, file is in region %d", fi.Path, i, v[0].Str, r, fi.Region)
			}
		}
		out[fi.Path] = pf
	}
	return out
}

func multiset(schema pipeline.TargetSchema, rows [][]pipeline.Value) map[string]int {
	m := map[string]int{}
	for _, r := range rows {
		m[strings.Join(sinktest.CanonRow(schema, r), "|")]++
	}
	return m
}

func sameRows(t *testing.T, schema pipeline.TargetSchema, want []pipeline.Row, files map[string]*sinktest.ParquetFile) {
	t.Helper()
	var w [][]pipeline.Value
	for _, r := range want {
		w = append(w, r.Values)
	}
	var got [][]pipeline.Value
	for _, pf := range files {
		got = append(got, pf.Values...)
	}
	if len(got) != len(w) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(w))
	}
	mw, mg := multiset(schema, w), multiset(schema, got)
	for k, n := range mw {
		if mg[k] != n {
			t.Fatalf("row %s: wrote %d, read %d", k, n, mg[k])
		}
	}
}

func TestRolling(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("9", "h", "q")
	rows := sinktest.AllTypesRows(30000, 3, plan)
	const maxSize = 64 << 10
	s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), MaxFileSize: maxSize, Memory: 4 << 20})
	write(t, s, rows, 500)
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	perRegion := map[int]int{}
	var rowsPerRegion [4]int64
	for _, fi := range infos {
		perRegion[fi.Region]++
		rowsPerRegion[fi.Region] += fi.Rows
		if fi.Bytes > 3*maxSize {
			t.Errorf("%s: %d bytes, far past MaxFileSize %d", fi.Path, fi.Bytes, maxSize)
		}
	}
	for r := 0; r < plan.Count(); r++ {
		if perRegion[r] < 2 {
			t.Errorf("region %d: %d files, want several", r, perRegion[r])
		}
	}
	for _, r := range rows {
		rowsPerRegion[r.Region]--
	}
	for r, n := range rowsPerRegion {
		if n != 0 {
			t.Errorf("region %d: file rows differ from rows written by %d", r, n)
		}
	}
	sameRows(t, schema, rows, readAll(t, dir, infos, schema, plan))
	st := s.Stats()
	if st.Rows != int64(len(rows)) || st.Files != len(infos) {
		t.Errorf("stats: %+v", st)
	}
	// every file on disk is committed, nothing temporary is left
	var want []string
	for _, fi := range infos {
		want = append(want, fi.Path)
	}
	sort.Strings(want)
	if got := listFiles(t, dir); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("files on disk %v, committed %v", got, want)
	}
}

// keyRows are rows whose first key column repeats, so that the DESC second column decides.
func keyRows(n int, plan pipeline.RegionPlan) []pipeline.Row {
	base := sinktest.AllTypesRows(n, 5, plan)
	for i := range base {
		v := base[i].Values
		v[0] = pipeline.Text(fmt.Sprintf("%c%02d", "0afkpuz"[i%7], (i*7919)%40))
		v[1] = pipeline.Int(int64((i * 104729) % 1000))
		base[i].Region = plan.Route(v[0])
	}
	return base
}

func TestSort(t *testing.T) {
	schema := sinktest.AllTypes() // k1 ASC, k2 DESC
	plan := sinktest.VarcharPlan("f", "p")
	for _, tc := range []struct {
		name   string
		memory int64
		commit int // commit after this many rows (0: only at the end)
	}{
		{"in-memory", 64 << 20, 0},
		{"spilled", 1 << 20, 0}, // 64 KiB per region: many runs, merged
		{"two-commits", 1 << 20, 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rows := keyRows(20000, plan)
			s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), Sort: true, Memory: tc.memory, MaxFileSize: 256 << 10})
			var infos []pipeline.FileInfo
			if tc.commit > 0 {
				write(t, s, rows[:tc.commit], 700)
				in, err := s.Commit(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				infos = append(infos, in...)
				write(t, s, rows[tc.commit:], 700)
			} else {
				write(t, s, rows, 700)
			}
			in, err := s.Commit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			infos = append(infos, in...)
			got := readAll(t, dir, infos, schema, plan)
			sameRows(t, schema, rows, got)
			for path, pf := range got {
				for i := 1; i < len(pf.Values); i++ {
					a, b := pf.Values[i-1], pf.Values[i]
					c := strings.Compare(a[0].Str, b[0].Str)
					if c > 0 || c == 0 && a[1].Num < b[1].Num {
						t.Fatalf("%s rows %d,%d out of order: (%s,%d) then (%s,%d)", path, i-1, i, a[0].Str, a[1].Num, b[0].Str, b[1].Num)
					}
				}
			}
			for _, f := range listFiles(t, dir) {
				if atomicfile.IsTemp(f) {
					t.Errorf("left %s", f)
				}
			}
		})
	}
}

// Rows of equal keys keep their arrival order in a sorted file, also when the region spilled
// more runs than one merge takes and some were merged together first: the merged run holds the
// oldest rows, and ties go to it. It was put after the newer runs, so the last version of a key
// written came before the first.
func TestSortKeepsArrivalOrderOfEqualKeysPastOneMerge(t *testing.T) {
	dir := t.TempDir()
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "seq", Type: pipeline.TypeBigint, KeyPos: -1},
		{Name: "pad", Type: pipeline.TypeVarchar, KeyPos: -1}}}
	plan := pipeline.RegionPlan{Type: pipeline.TypeBigint, Strategy: "single"}
	// the least memory: a run every few hundred rows
	s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), Sort: true, Memory: 1})
	var rows []pipeline.Row
	pad := pipeline.Text(strings.Repeat("p", 200))
	for i := 0; i < 60000; i++ {
		rows = append(rows, pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i % 7)), pipeline.Int(int64(i)), pad}})
	}
	write(t, s, rows, 100)
	runs := 0
	for _, f := range listFiles(t, dir) {
		if strings.Contains(f, "run-") {
			runs++
		}
	}
	if runs <= 64 {
		t.Fatalf("%d runs spilled: the test needs more than one merge takes (64)", runs)
	}
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir, infos, schema, plan)
	sameRows(t, schema, rows, got)
	for path, pf := range got {
		for i := 1; i < len(pf.Values); i++ {
			a, b := pf.Values[i-1], pf.Values[i]
			if a[0].Num > b[0].Num || a[0].Num == b[0].Num && a[1].Num > b[1].Num {
				t.Fatalf("%s rows %d,%d: key %d written %d-th, then key %d written %d-th", path, i-1, i, a[0].Num, a[1].Num, b[0].Num, b[1].Num)
			}
		}
	}
}

func TestAbort(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	rows := sinktest.AllTypesRows(20000, 9, plan)
	for _, sorted := range []bool{false, true} {
		s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), MaxFileSize: 32 << 10, Memory: 1 << 20, Sort: sorted})
		write(t, s, rows[:5000], 500)
		committed, err := s.Commit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		before := listFiles(t, dir)
		// more rows: some files rolled (finished and in the store, not returned by Commit), some
		// open, sort runs spilled
		write(t, s, rows[5000:], 500)
		if len(listFiles(t, dir)) == len(before) {
			t.Fatalf("sort=%v: expected files not committed yet mid-run", sorted)
		}
		if err := s.Abort(context.Background()); err != nil {
			t.Fatal(err)
		}
		after := listFiles(t, dir)
		if strings.Join(after, ",") != strings.Join(before, ",") {
			t.Fatalf("sort=%v: after Abort\n%v\nwant the committed files only\n%v", sorted, after, before)
		}
		if err := s.Write(context.Background(), rows[:1]); !errors.Is(err, files.ErrAborted) {
			t.Fatalf("Write after Abort: %v", err)
		}
		readAll(t, dir, committed, schema, plan)
	}
}

func TestCrashAndResume(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	rows := sinktest.AllTypesRows(20000, 11, plan)
	cfg := files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), MaxFileSize: 32 << 10, Memory: 1 << 20}
	s := newSink(t, cfg)
	write(t, s, rows[:8000], 500)
	first, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	write(t, s, rows[8000:], 500)
	// crash: the process dies here. A file has its final name only once it is whole (its
	// footer written: a finished file is committed to the store before Commit returns it, and
	// a resume removes those the checkpoint does not list); every other file is a temporary,
	// whatever byte it was cut at.
	committed := map[string]bool{}
	for _, fi := range first {
		committed[fi.Path] = true
	}
	for _, f := range listFiles(t, dir) {
		if !committed[f] && !atomicfile.IsTemp(f) {
			if _, err := sinktest.ReadParquet(filepath.Join(dir, filepath.FromSlash(f)), schema); err != nil {
				t.Fatalf("file %s has a final name but is not whole: %v", f, err)
			}
		}
	}
	// a new run on the same folder removes the leftovers and continues the numbering
	maxSeq := map[string]int{}
	for _, fi := range first {
		d, name := filepath.Split(fi.Path)
		var seq int
		fmt.Sscanf(name, "part-%05d.parquet", &seq)
		if seq > maxSeq[d] {
			maxSeq[d] = seq
		}
	}
	s2 := newSink(t, cfg)
	for _, f := range listFiles(t, dir) {
		if atomicfile.IsTemp(f) {
			t.Fatalf("leftover %s not removed", f)
		}
	}
	write(t, s2, rows[8000:], 500)
	second, err := s2.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range second {
		if committed[fi.Path] {
			t.Fatalf("resumed run overwrote committed %s", fi.Path)
		}
		d, name := filepath.Split(fi.Path)
		var seq int
		fmt.Sscanf(name, "part-%05d.parquet", &seq)
		if _, ok := maxSeq[d]; ok && seq <= maxSeq[d] {
			t.Fatalf("%s: sequence does not continue after %d", fi.Path, maxSeq[d])
		}
	}
	sameRows(t, schema, rows, readAll(t, dir, append(first, second...), schema, plan))
}

func TestSequenceAfterExisting(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	os.MkdirAll(filepath.Join(dir, "data", "region-0001"), 0o755)
	os.WriteFile(filepath.Join(dir, "data", "region-0001", "part-00041.parquet"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "data", "region-0001", "part-00007.csv"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "data", "region-0001", atomicfile.TempPrefix+"part-00042.parquet"), []byte("partial"), 0o644)
	s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New()})
	rows := sinktest.AllTypesRows(2000, 1, plan)
	write(t, s, rows, 1000)
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, fi := range infos {
		paths = append(paths, fi.Path)
	}
	want := "data/region-0000/part-00000.parquet,data/region-0001/part-00042.parquet"
	if strings.Join(paths, ",") != want {
		t.Fatalf("committed %v, want %s", paths, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "data", "region-0001", "part-00041.parquet")); string(b) != "x" {
		t.Fatal("existing file changed")
	}
}

// failingFormat wraps a format and fails the n-th chunk write, like a full disk.
type failingFormat struct {
	files.Format
	mu    sync.Mutex
	n     int
	count int
}

type failingWriter struct {
	files.FileWriter
	f *failingFormat
	w io.Writer
}

func (f *failingFormat) NewWriter(w io.Writer, schema pipeline.TargetSchema) (files.FileWriter, error) {
	fw, err := f.Format.NewWriter(w, schema)
	return &failingWriter{FileWriter: fw, f: f, w: w}, err
}

func (w *failingWriter) Write(c files.Chunk) error {
	w.f.mu.Lock()
	w.f.count++
	fail := w.f.count == w.f.n
	w.f.mu.Unlock()
	if fail {
		w.w.Write([]byte("PAR1 partial garbage"))
		return errors.New("no space left on device")
	}
	return w.FileWriter.Write(c)
}

func TestWriteFailure(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	rows := sinktest.AllTypesRows(20000, 13, plan)
	ff := &failingFormat{Format: parquet.New(), n: 5}
	s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: ff, MaxFileSize: 32 << 10, Memory: 1 << 20})
	var err error
	for i := 0; i < len(rows) && err == nil; i += 500 {
		err = s.Write(context.Background(), rows[i:i+500])
	}
	if err == nil || !strings.Contains(err.Error(), "no space") {
		t.Fatalf("Write: %v", err)
	}
	if _, err := s.Commit(context.Background()); err == nil {
		t.Fatal("Commit after a failed write succeeded")
	}
	if err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := listFiles(t, dir); len(got) != 0 {
		t.Fatalf("after a failed write and Abort: %v", got)
	}
}

func TestMemory1000Regions(t *testing.T) {
	schema := sinktest.Orders()
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "hex_prefix"}
	for i := 1; i < 1000; i++ {
		plan.Splits = append(plan.Splits, pipeline.Text(fmt.Sprintf("%04x", i*65536/1000)))
	}
	rows := sinktest.OrdersRows(200000, 3, plan)
	for _, f := range []files.Format{parquet.New(), csv.New()} {
		t.Run(f.Name(), func(t *testing.T) {
			dir := t.TempDir()
			const budget = 96 << 20 // 96 KiB per region
			s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: f, Memory: budget})
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := w * 1000; i < len(rows); i += 4000 {
						if err := s.Write(context.Background(), rows[i:i+1000]); err != nil {
							t.Error(err)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			st := s.Stats()
			if st.PeakBuffered > budget {
				t.Errorf("peak buffered %d > budget %d", st.PeakBuffered, budget)
			}
			if st.PeakBuffered < budget/8 {
				t.Errorf("peak buffered %d: the test did not fill the buffers", st.PeakBuffered)
			}
			infos, err := s.Commit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, fi := range infos {
				n += fi.Rows
			}
			// after Commit the buffers are empty: what remains is per-region bookkeeping
			if n != int64(len(rows)) || s.Stats().Buffered > int64(plan.Count())*8<<10 {
				t.Fatalf("committed %d rows of %d, %d bytes still buffered", n, len(rows), s.Stats().Buffered)
			}
			t.Logf("%s: peak %d of %d, %d files", f.Name(), st.PeakBuffered, budget, len(infos))
		})
	}
}

func TestConfigErrors(t *testing.T) {
	schema := sinktest.AllTypes()
	bad := []files.Config{
		{Schema: schema, Format: csv.New()},
		{Store: sinktest.Folder(t, t.TempDir()), Schema: schema},
		{Store: sinktest.Folder(t, t.TempDir()), Format: csv.New()},
		{Store: sinktest.Folder(t, t.TempDir()), Schema: pipeline.TargetSchema{Columns: schema.Columns}, Format: csv.New()},
		{Store: sinktest.Folder(t, t.TempDir()), Schema: schema, Format: csv.New(), Plan: pipeline.RegionPlan{Type: pipeline.TypeBigint, Splits: []pipeline.Value{pipeline.Int(1)}}},
		{Store: sinktest.Folder(t, t.TempDir()), Schema: schema, Format: csv.New(), Memory: -1},
	}
	for i, cfg := range bad {
		if _, err := files.New(context.Background(), cfg, nil); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	schema, rows := sinktest.ForCSV(schema, sinktest.AllTypesRows(1, 1, sinktest.VarcharPlan("h")))
	s := newSink(t, files.Config{Store: sinktest.Folder(t, t.TempDir()), Schema: schema, Plan: sinktest.VarcharPlan("h"), Format: csv.New()})
	rows[0].Region = 5
	if err := s.Write(context.Background(), rows); err == nil {
		t.Error("row with region 5 of 2 accepted")
	}
}

func TestCheckRegions(t *testing.T) {
	plan := sinktest.VarcharPlan("h")
	schema, rows := sinktest.ForCSV(sinktest.AllTypes(), sinktest.AllTypesRows(10, 1, plan))
	s := newSink(t, files.Config{Store: sinktest.Folder(t, t.TempDir()), Schema: schema, Plan: plan, Format: csv.New(), CheckRegions: true})
	rows[3].Region = 1 - rows[3].Region
	if err := s.Write(context.Background(), rows); err == nil || !strings.Contains(err.Error(), "row 3") {
		t.Fatalf("misrouted row: %v", err)
	}
}

// bucket is a local folder seen through store.Store alone, as the sink sees an object store.
type bucket struct{ store.Store }

// The region sink writes through store.Store, so the same code lands files in a bucket. On a store
// that is not a local folder, Sort spills its runs to a local folder (never into the bucket's
// data/), each file is committed as a whole object, and Abort removes what Commit did not return.
func TestSinkOnObjectStore(t *testing.T) {
	dir, spill := t.TempDir(), t.TempDir()
	local, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	rows := sinktest.AllTypesRows(20000, 5, plan)
	for _, sorted := range []bool{false, true} {
		cfg := files.Config{Store: bucket{local}, SpillDir: spill, Schema: schema, Plan: plan, Format: parquet.New(), Sort: sorted, Memory: 1 << 20, MaxFileSize: 64 << 10}
		s := newSink(t, cfg)
		write(t, s, rows[:10000], 500)
		for _, f := range listFiles(t, dir) {
			if strings.Contains(f, "run-") {
				t.Fatalf("sort=%v: a sort run in the store: %s", sorted, f)
			}
		}
		first, err := s.Commit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		write(t, s, rows[10000:], 500)
		second, err := s.Commit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all := append(first, second...)
		sameRows(t, schema, rows, readAll(t, dir, all, schema, plan))
		if len(listFiles(t, dir)) != len(all) {
			t.Fatalf("sort=%v: the store holds %d files, Commit returned %d", sorted, len(listFiles(t, dir)), len(all))
		}
		// Abort with files finished (in the store) and open: only what Commit returned stays
		write(t, s, rows[:5000], 500)
		if err := s.Abort(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := listFiles(t, dir); len(got) != len(all) {
			t.Fatalf("sort=%v: after Abort the store holds %d files, want the %d committed", sorted, len(got), len(all))
		}
		if sorted {
			if left := listFiles(t, spill); len(left) > 0 {
				t.Fatalf("sort runs left after Abort: %v", left)
			}
		}
		if err := local.Remove(context.Background(), names(all)...); err != nil {
			t.Fatal(err)
		}
	}
}

func names(infos []pipeline.FileInfo) []string {
	var out []string
	for _, fi := range infos {
		out = append(out, fi.Path)
	}
	return out
}

// --sort on an output that is not a local folder spills raw rows to the temporary folder: the
// spill folder is private (0700) and so are its run files (0600); the spill folders of a killed
// run (its pid gone) are removed by the next run, those of a live process are left alone.
func TestSortSpillIsPrivateAndKilledRunsAreSwept(t *testing.T) {
	dir, spill := t.TempDir(), t.TempDir()
	local, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(spill, fmt.Sprintf("rekey-sort-%d-123", dead.Process.Pid))
	live := filepath.Join(spill, fmt.Sprintf("rekey-sort-%d-456", os.Getppid()))
	for _, d := range []string{killed, live} {
		if err := os.MkdirAll(filepath.Join(d, "data", "region-0000"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "data", "region-0000", ".rekey-tmp-run-000001"), []byte("raw rows"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	rows := sinktest.AllTypesRows(10000, 5, plan)
	s := newSink(t, files.Config{Store: bucket{local}, SpillDir: spill, Schema: schema, Plan: plan, Format: parquet.New(), Sort: true, Memory: 1 << 20, MaxFileSize: 64 << 10})
	if _, err := os.Stat(killed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the spill folder of a killed run is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the spill folder of a live process was removed: %v", err)
	}
	write(t, s, rows, 500)
	runs := 0
	err = filepath.WalkDir(spill, func(p string, d fs.DirEntry, err error) error {
		if err != nil || strings.HasPrefix(p, live) {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode().Perm(); {
		case p == spill:
		case filepath.Dir(p) == spill && mode != 0o700:
			t.Errorf("spill folder %s: mode %o, want 0700", p, mode)
		case !d.IsDir() && mode != 0o600:
			t.Errorf("sort run %s: mode %o, want 0600", p, mode)
		case !d.IsDir():
			runs++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs == 0 {
		t.Fatal("no sort run was spilled: the test sees nothing")
	}
	if _, err := s.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// With NamePrefix (a shard of a shared output), every file is named with it and a resumed run
// goes on after the highest of its own files, never rewriting one under a name it had committed.
func TestNamePrefixSequenceAfterExisting(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	os.MkdirAll(filepath.Join(dir, "data", "region-0001"), 0o755)
	os.WriteFile(filepath.Join(dir, "data", "region-0001", "s0002-part-00041.parquet"), []byte("x"), 0o644)
	s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), NamePrefix: "s0002-"})
	write(t, s, sinktest.AllTypesRows(2000, 1, plan), 1000)
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(names(infos), ","), "data/region-0000/s0002-part-00000.parquet,data/region-0001/s0002-part-00042.parquet"; got != want {
		t.Fatalf("committed %s, want %s", got, want)
	}
}

// A run that expects few rows for its budget (one shard of many) cuts each region's buffer
// once it holds a quarter of the region's expected share, instead of holding its whole output
// until Commit; a run that expects nothing, or more than the budget holds, cuts as the budget
// says; a cut is never smaller than an eighth of the budget's (a small run keeps its row groups).
func TestExpectedRowsCutBuffersSooner(t *testing.T) {
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	rows := sinktest.AllTypesRows(20000, 7, plan)
	for _, tc := range []struct {
		memory, expected     int64
		minGroups, maxGroups int
	}{
		{64 << 20, 0, 1, 1},                       // the budget holds every row: one row group a file
		{64 << 20, int64(len(rows)) * 1000, 1, 1}, // more rows expected than the budget holds
		{4 << 20, 0, 2, 3},                        // the budget's own cut
		{4 << 20, int64(len(rows)), 4, 6},         // a quarter of each region's share
		{64 << 20, int64(len(rows)), 1, 1},        // a quarter of the share is under an eighth of the budget's cut
	} {
		dir := t.TempDir()
		s := newSink(t, files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(),
			Memory: tc.memory, ExpectedRows: tc.expected})
		write(t, s, rows, 500)
		infos, err := s.Commit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, dir, infos, schema, plan)
		sameRows(t, schema, rows, got)
		for p, pf := range got {
			if pf.RowGroups < tc.minGroups || pf.RowGroups > tc.maxGroups {
				t.Errorf("Memory %d, ExpectedRows %d: %s has %d row groups, want %d to %d", tc.memory, tc.expected, p, pf.RowGroups, tc.minGroups, tc.maxGroups)
			}
		}
	}
}
