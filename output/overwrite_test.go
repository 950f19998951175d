package output

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// removalWatch removes names one at a time, as a folder does, and after each looks at what a run
// killed there would leave: a manifest listing a file no longer there claims a complete run whose
// rows are partly gone.
type removalWatch struct {
	*store.Local
	t       *testing.T
	claimed []string // after a removal: the manifest was there, a file it lists was not
}

func (w *removalWatch) Remove(ctx context.Context, names ...string) error {
	for _, name := range names {
		if err := w.Local.Remove(ctx, name); err != nil {
			return err
		}
		m, err := ReadManifest(ctx, w.Local)
		if store.IsNotExist(err) {
			continue
		} else if err != nil {
			w.t.Fatal(err)
		}
		for _, r := range m.Regions {
			for _, f := range r.Files {
				if _, err := w.Local.Stat(ctx, f.Path); store.IsNotExist(err) {
					w.claimed = append(w.claimed, fmt.Sprintf("after removing %s: %s lists %s, gone", name, ManifestFile, f.Path))
				}
			}
		}
	}
	return nil
}

// --overwrite of a finished output removes its manifest before anything else: a run killed while
// it removes the rest leaves no manifest that claims a complete run whose files are partly gone
// (a loader, verify or merge would take the folder for complete), only what a resume or a second
// --overwrite finishes.
func TestOverwriteRemovesTheManifestFirst(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	local, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []pipeline.FileInfo
	var entries []FileEntry
	for i := range 3 {
		path := DataFile(0, i, "", "parquet")
		data := []byte(fmt.Sprintf("rows of file %d", i))
		if err := local.Put(ctx, path, data); err != nil {
			t.Fatal(err)
		}
		files = append(files, pipeline.FileInfo{Path: path, Rows: 1, Bytes: int64(len(data))})
		entries = append(entries, FileEntry{Path: path, Rows: 1, Bytes: int64(len(data))})
	}
	if err := saveCheckpoint(ctx, local, &pipeline.Checkpoint{Fingerprint: "fp", Format: "parquet", Files: files, RowsIn: 3, RowsWritten: 3, Complete: true}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{RejectsFile, DDLFile, BulkloadFile} {
		if err := local.Put(ctx, name, []byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteManifest(ctx, local, &Manifest{Format: "parquet", Regions: []RegionInfo{{Files: entries}}, RowsIn: 3, RowsWritten: 3, Files: 3}); err != nil {
		t.Fatal(err)
	}
	w := &removalWatch{Local: local, t: t}
	o, err := Open(ctx, w, Spec{Dir: dir, Fingerprint: "fp", Format: "parquet", Overwrite: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	if len(w.claimed) > 0 {
		t.Fatalf("a run killed during --overwrite's removal leaves a manifest of files that are gone:\n  %s", strings.Join(w.claimed, "\n  "))
	}
	if left, err := local.List(ctx, ""); err != nil || len(left) != 1 || left[0].Name != LockFile {
		t.Fatalf("--overwrite left %v (%v)", left, err)
	}
}
