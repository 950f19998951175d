package main

import (
	"context"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// The objects are read back with an independent reader (parquet-go). The same job goes to a local
// folder and to an S3 server (gofakes3, in process, so `go test ./...` covers it without
// versitygw); every data object is read back through the store (List, then Open: ranged GETs) with
// parquet-go; each region's objects must hold the rows of the local run's files of that region (the
// same rows, order aside). The manifests agree, and the bucket holds the data objects the manifest
// lists and nothing more under data/.
func TestObjectStoreReadBackEqualsLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := s3test.StartGofakes3(t, nil)
	const rows = 6000
	src := ordersCSV(t, dir, "orders.csv", rows, 7)
	local := filepath.Join(dir, "local")
	job := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--regions", "4",
		"--max-file-size", "16KiB", "--progress", "never"}
	if code, stdout, stderr := runCLIWithEnv(t, srv.Env, append(job, "--out", local)...); code != 0 {
		t.Fatalf("to a folder: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLIWithEnv(t, srv.Env, append(job, "--out", srv.URI)...); code != 0 {
		t.Fatalf("to %s: exit %d\n%s%s", srv.URI, code, stdout, stderr)
	}

	ctx := context.Background()
	st, err := store.Open(ctx, srv.URI, s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	lm, err := lindorm.ReadManifest(local)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := lindorm.GetManifest(ctx, st)
	if err != nil {
		t.Fatalf("the store's manifest: %v", err)
	}
	if sm.RowsIn != rows || sm.RowsWritten != rows || sm.RowsWritten != lm.RowsWritten || len(sm.Regions) != len(lm.Regions) {
		t.Fatalf("store manifest in=%d written=%d regions=%d; local written=%d regions=%d", sm.RowsIn, sm.RowsWritten, len(sm.Regions), lm.RowsWritten, len(lm.Regions))
	}
	var listed []string
	for _, r := range sm.Regions {
		for _, f := range r.Files {
			listed = append(listed, f.Path)
		}
	}
	sort.Strings(listed)
	objs, err := st.List(ctx, "data/")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	if !reflect.DeepEqual(names, listed) {
		t.Fatalf("data objects %v, the manifest lists %v", names, listed)
	}
	if len(objs) <= len(sm.Regions) {
		t.Fatalf("%d data objects: the job should roll several files per region", len(objs))
	}

	// Where a region's files roll, and the order of its rows, depend on how the parallel workers
	// interleave, which varies from run to run: compare each region's rows as sorted sets.
	schema := compileFile(t, "../../mappings/orders.yaml").Target()
	got := make([][][]string, len(sm.Regions))
	for _, r := range sm.Regions {
		for _, f := range r.Files {
			o, err := st.Open(ctx, f.Path)
			if err != nil {
				t.Fatal(err)
			}
			if o.Size() != f.Bytes {
				t.Errorf("%s: Open says %d bytes, the manifest %d", f.Path, o.Size(), f.Bytes)
			}
			pf, err := sinktest.ReadParquetAt(o, o.Size(), st.Location(f.Path), schema)
			o.Close()
			if err != nil {
				t.Fatalf("read back %s: %v", f.Path, err)
			}
			if int64(len(pf.Rows)) != f.Rows {
				t.Errorf("%s: %d rows read back, the manifest says %d", f.Path, len(pf.Rows), f.Rows)
			}
			got[r.Index] = append(got[r.Index], pf.Rows...)
		}
	}
	var total int
	for _, r := range lm.Regions {
		var want [][]string
		for _, f := range r.Files {
			pf, err := sinktest.ReadParquet(filepath.Join(local, filepath.FromSlash(f.Path)), schema)
			if err != nil {
				t.Fatalf("the local run's %s: %v", f.Path, err)
			}
			want = append(want, pf.Rows...)
		}
		sortRows(want)
		sortRows(got[r.Index])
		if len(want) == 0 || !reflect.DeepEqual(got[r.Index], want) {
			t.Fatalf("region %d: %d rows read back from the store, the local run wrote %d; first rows %v / %v",
				r.Index, len(got[r.Index]), len(want), head(got[r.Index]), head(want))
		}
		total += len(want)
	}
	if total != rows {
		t.Fatalf("%d rows read back, want %d", total, rows)
	}
}

func head(rows [][]string) string {
	if len(rows) == 0 {
		return "(none)"
	}
	return strings.Join(rows[0], ",")
}

func sortRows(rows [][]string) {
	sort.Slice(rows, func(i, j int) bool { return strings.Join(rows[i], "\x00") < strings.Join(rows[j], "\x00") })
}
