package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/store"
)

// An unfinished run's checkpoint is read as resume reads it (output.ParseCheckpoint): one that
// lists a file outside data/ or holds a negative count is damaged, and named so.
func TestOpenFolderReadsTheCheckpointAsResumeDoes(t *testing.T) {
	schema := testProgram(t).Target()
	for name, c := range map[string]struct{ checkpoint, want string }{
		"clean":          {`{"version":1,"format":"parquet","files":[{"region":0,"path":"data/region-0000/part-00000.parquet","rows":3}]}`, ""},
		"outside data/":  {`{"version":1,"format":"parquet","files":[{"region":0,"path":"../x.parquet","rows":3}]}`, "climbs out"},
		"negative count": {`{"version":1,"format":"parquet","rejects_bytes":-5}`, "rejects_bytes -5 is negative"},
		"not JSON":       {`{"version":1,`, "unexpected end"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, output.CheckpointFile), []byte(c.checkpoint), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := OpenFolder(context.Background(), localStore(t, dir), dir, schema, "")
			switch {
			case c.want == "" && (err != nil || f.Rows != 3 || len(f.Files) != 1):
				t.Fatalf("a clean checkpoint: %+v, %v", f, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), output.CheckpointFile+" is damaged") || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("err = %v, want %s is damaged: ...%s", err, output.CheckpointFile, c.want)
			}
		})
	}
}

// A file under data/ that an unfinished run's checkpoint does not list (a killed run's part,
// which migrate --resume removes) is noted as not verified, not counted as target rows: the
// listing is the checkpoint, not a manifest.json the output does not have.
func TestUnfinishedRunNotesItsUnlistedFiles(t *testing.T) {
	schema := testProgram(t).Target()
	dir := t.TempDir()
	cp := `{"version":1,"format":"parquet","files":[{"region":0,"path":"data/region-0000/part-00000.parquet","rows":3}]}`
	if err := os.WriteFile(filepath.Join(dir, output.CheckpointFile), []byte(cp), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data", "region-0000"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"part-00000.parquet", "part-00001.parquet"} {
		if err := os.WriteFile(filepath.Join(dir, "data", "region-0000", name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := OpenFolder(context.Background(), localStore(t, dir), dir, schema, "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Unlisted != 0 || len(f.Files) != 1 || !strings.Contains(strings.Join(f.Notes, "\n"), "1 files under data/ that its checkpoint.json does not list") {
		t.Errorf("unlisted %d, files %+v, notes %q", f.Unlisted, f.Files, f.Notes)
	}
}

// rollingObjects is a replicate output that a running replicate commits a roll to between
// verify's read of manifest.json and its listing of data/: the roll's manifest is written, then
// its file renamed into data/, as replicate does.
type rollingObjects struct {
	store.Store
	roll func() // commits the roll, once, at the first listing
}

func (o *rollingObjects) List(ctx context.Context, prefix string) ([]store.Info, error) {
	if o.roll != nil {
		o.roll()
		o.roll = nil
	}
	return o.Store.List(ctx, prefix)
}

// A replicate output verified while replicate runs: a roll committed between the read of its
// manifest and the listing of data/ has its files listed by the manifest replicate wrote for it,
// not files "not listed" whose rows are extra.
func TestReplicateOutputWithARollCommittedWhileOpened(t *testing.T) {
	p := testProgram(t)
	schema := p.Target()
	dir := t.TempDir()
	st := localStore(t, dir)
	rows := migrated(t, p, testRecords(10)).list()
	roll := func(n int) (output.FileEntry, replicate.SegmentEntry) {
		path := fmt.Sprintf("data/region-0000/roll-%d.parquet", n)
		if err := os.MkdirAll(filepath.Join(dir, "data", "region-0000"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := sinktest.WriteParquet(filepath.Join(dir, filepath.FromSlash(path)), schema, rows[5*n:5*n+5]); err != nil {
			t.Fatal(err)
		}
		fe := output.FileEntry{Path: path, Rows: 5}
		return fe, replicate.SegmentEntry{Region: 0, Partition: 0, FirstOffset: int64(5 * n), RollLast: int64(5*n + 4), Data: &fe}
	}
	manifest := func(segs ...replicate.SegmentEntry) {
		m := replicate.Manifest{Manifest: *output.NewManifest(schema, pipeline.RegionPlan{}, "parquet", 0)}
		m.Replication = replicate.Replication{Topic: "t", Segments: segs,
			Partitions: []replicate.PartitionEntry{{Partition: 0, NextOffset: segs[len(segs)-1].RollLast + 1}}}
		data, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, output.ManifestFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, first := roll(0)
	manifest(first)
	objs := &rollingObjects{Store: st, roll: func() {
		_, second := roll(1)
		manifest(first, second)
	}}
	f, err := OpenFolder(context.Background(), objs, dir, schema, "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Unlisted != 0 || len(f.Files) != 2 || f.Replication.Partitions[0].NextOffset != 10 {
		t.Fatalf("a roll committed while the output was opened: %d files, %d of them not listed, up to offset %d; want both rolls listed, up to 10",
			len(f.Files), f.Unlisted, f.Replication.Partitions[0].NextOffset)
	}
}

// A data file manifest.json lists where the bulk load does not read it (its job reads the files
// directly inside each region folder, data/*/, and skips names starting with _ or .) fails
// verify, naming it: its rows would never reach the table. Before, verify read such a file (a
// file renamed to _part-00000.parquet, or moved into a subfolder, with the manifest edited to
// match) as target rows and said EQUAL.
func TestListedFileTheBulkLoadSkipsFails(t *testing.T) {
	p := testProgram(t)
	schema := p.Target()
	recs := testRecords(20)
	rows := migrated(t, p, recs).list()
	for _, path := range []string{"data/region-0000/_part-00000.parquet", "data/region-0000/.part-00000.parquet", "data/region-0000/old/part-00000.parquet"} {
		t.Run(path, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := sinktest.WriteParquet(file, schema, rows); err != nil {
				t.Fatal(err)
			}
			m := output.NewManifest(schema, pipeline.RegionPlan{}, "parquet", 0)
			m.Regions = []output.RegionInfo{{Index: 0, Rows: int64(len(rows)), Files: []output.FileEntry{{Path: path, Rows: int64(len(rows))}}}}
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, output.ManifestFile), data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := OpenFolder(context.Background(), localStore(t, dir), dir, schema, "")
			if err == nil {
				res, err := Run(context.Background(), Config{Program: p, Source: &sliceSource{recs}, Folder: f, TmpDir: t.TempDir(), Workers: 2})
				if err == nil && res.Equal {
					t.Fatalf("a listed file the bulk load skips verified EQUAL: %+v", res)
				}
			}
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "bulk load") {
				t.Fatalf("want an error naming %s and the bulk load, got %v", path, err)
			}
		})
	}
}
