package verify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
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
