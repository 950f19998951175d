package output

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

func TestCheckRelPath(t *testing.T) {
	for _, ok := range []string{
		"data/region-0000/part-00000.parquet", "data/region-0012/part-00003.csv", "data/region-12345/p-3-0-9.sql",
		"data/region-0000/sub/part.parquet",
	} {
		if err := CheckRelPath(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"":                                      "empty",
		"../canary.parquet":                     "climbs out", // once linked by merge from a crafted manifest
		"data/region-0000/../../canary.parquet": "climbs out",
		"data/region-0000/..":                   "climbs out",
		"..":                                    "climbs out",
		"/etc/passwd":                           "absolute",
		"//host/share/x":                        "absolute",
		`data\region-0000\..\..\x`:              "backslash",
		`C:\x`:                                  "backslash",
		"data/region-0000/./part.parquet":       "clean form",
		"data/region-0000//part.parquet":        "clean form",
		"data/region-0000/part.parquet/":        "clean form",
		"part-00000.parquet":                    "region folder",
		"data/region-0000":                      "region folder",
		"regions/part.parquet":                  "region folder",
		"data/region-/part.parquet":             "region folder",
		"data/region-00a0/part.parquet":         "region folder",
		"checkpoint.json":                       "region folder",
		"region-0000/part-00000.parquet":        "earlier rekey", // data files live under data/
		"data/part-00000.parquet":               "region folder",
		"deletes/region-0000/p.sql":             "region folder",
		"data/region-0000/a\x00b":               "NUL",
	} {
		err := CheckRelPath(bad)
		if err == nil || !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want an ErrUnsafePath saying %q", bad, err, why)
		}
	}
	if err := CheckRelPathIn("deletes/region-0003/p.sql", "deletes"); err != nil {
		t.Errorf("a delete file under deletes/ refused: %v", err)
	}
	if p, err := SafeRelPath("out", "data/region-0001/part-00000.parquet"); err != nil || p != filepath.Join("out", "data/region-0001", "part-00000.parquet") {
		t.Errorf("SafeRelPath: %q %v", p, err)
	}
	if p, err := SafeRelPath("out", "../x"); err == nil || p != "" {
		t.Errorf("SafeRelPath(../x): %q %v", p, err)
	}
}

func TestStatRelPath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "out")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "data", "region-0000"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "data", "region-0000", "part-00000.parquet"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(root, "canary"), []byte("x"), 0o644))
	must(os.Symlink(filepath.Join(root, "canary"), filepath.Join(dir, "data", "region-0000", "link.parquet")))
	must(os.Symlink(root, filepath.Join(dir, "data", "region-0001")))

	full, fi, err := StatRelPath(dir, "data/region-0000/part-00000.parquet")
	if err != nil || !fi.Mode().IsRegular() || full != filepath.Join(dir, "data", "region-0000", "part-00000.parquet") {
		t.Errorf("a regular file: %q %v %v", full, fi, err)
	}
	for _, bad := range []string{"data/region-0000/link.parquet", "data/region-0001/canary"} {
		if _, _, err := StatRelPath(dir, bad); !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s through a link: %v", bad, err)
		}
	}
	if _, _, err := StatRelPath(dir, "data/region-0000/gone.parquet"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	if _, _, err := StatRelPath(dir, "../canary"); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("../canary: %v", err)
	}
	// the output directory itself may be reached through a link (a mounted volume, say)
	must(os.Symlink(dir, filepath.Join(root, "out-link")))
	if _, _, err := StatRelPath(filepath.Join(root, "out-link"), "data/region-0000/part-00000.parquet"); err != nil {
		t.Errorf("through a linked output directory: %v", err)
	}
}

// The rejects, the replay files and the checkpoint are the output's private files (0600 in a
// local folder); the data and the files beside it are not.
func TestPrivateName(t *testing.T) {
	for name, want := range map[string]bool{
		CheckpointFile: true, RejectsFile: true, ReplayPrefix + "csv": true, ReplayPrefix + "jsonl": true,
		RejectsPart(3): true, ReplayPartsDir + "/part-00003.csv": true,
		ManifestFile: false, DDLFile: false, BulkloadFile: false, LockFile: false, MergePlanFile: false,
		RegionDir(0) + "/part-00000.parquet": false,
	} {
		if got := PrivateName(name); got != want {
			t.Errorf("PrivateName(%q) = %v, want %v", name, got, want)
		}
	}
}

// A data file's name is read back as DataFile writes it; anything else (a temporary file, a
// folder that is not a region's, a region number written otherwise) is not a data file.
func TestParseDataFile(t *testing.T) {
	if region, seq, ok := ParseDataFile(DataFile(7, 12, "", "parquet"), ""); !ok || region != 7 || seq != 12 {
		t.Errorf("ParseDataFile(%q) = %d, %d, %v", DataFile(7, 12, "", "parquet"), region, seq, ok)
	}
	if got := DataFile(7, 12, "", "csv"); got != "data/region-0007/part-00012.csv" {
		t.Errorf("DataFile = %q", got)
	}
	shard := ShardFilePrefix(pipeline.Shard{Index: 2, Count: 4})
	if got := DataFile(7, 12, shard, "csv"); got != "data/region-0007/s0002-part-00012.csv" {
		t.Errorf("DataFile of a shard = %q", got)
	}
	if region, seq, ok := ParseDataFile("data/region-0007/s0002-part-00012.csv", shard); !ok || region != 7 || seq != 12 {
		t.Errorf("ParseDataFile of a shard's file = %d, %d, %v", region, seq, ok)
	}
	for _, c := range []struct{ name, prefix string }{
		{"data/region-0007/.rekey-tmp-part-00012.parquet", ""}, {"data/region-7/part-00012.parquet", ""},
		{"data/regions/part-00012.parquet", ""}, {"region-0007/part-00012.parquet", ""}, {"data/region-0007/x/part-00012.parquet", ""},
		{"data/region-0007/part-x.parquet", ""}, {"data/region-0007/part-00012", ""}, {"rejects/part-00012.jsonl", ""},
		{"data/region-0007/s0001-part-00012.parquet", shard}, {"data/region-0007/s0001-part-00012.parquet", ""},
	} {
		if _, _, ok := ParseDataFile(c.name, c.prefix); ok {
			t.Errorf("ParseDataFile(%q, %q) took it for a data file", c.name, c.prefix)
		}
	}
}

// A time slice's file prefix reads back as its start from the file's path; names of no slice
// (a plain file, a shard's, a malformed prefix) read as none.
func TestFileSlice(t *testing.T) {
	for _, start := range []int64{-1, 0, 1_793_491_200_000, 99_999_999_999_999} {
		p := DataFile(3, 12, SliceFilePrefix(start), "parquet")
		got, ok := FileSlice(p)
		if !ok || got != start {
			t.Errorf("%s: slice %d %v, want %d", p, got, ok, start)
		}
		if _, _, ok := ParseDataFile(p, SliceFilePrefix(start)); !ok {
			t.Errorf("%s does not parse as a data file of its prefix", p)
		}
	}
	for _, p := range []string{"data/region-0000/part-00000.parquet", "data/region-0000/s0002-part-00000.parquet",
		"data/region-0000/w12-part-00000.parquet", "data/region-0000/wx793491200000-part-00000.parquet", "data/region-0000/w01793491200000-part-0.csv"} {
		if start, ok := FileSlice(p); ok {
			t.Errorf("%s: slice %d, want none", p, start)
		}
	}
}

// A loader outside rekey (the bulkload job) names an output's folder by an absolute path when
// it is local and by its key prefix inside the bucket otherwise; a bucket's tools name its
// objects without the query, each store with its own copy command.
func TestLoaderPathAndBucketTools(t *testing.T) {
	abs, err := filepath.Abs("out")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		location string
		inBucket bool
		want     string
	}{
		{"out", false, filepath.ToSlash(filepath.Join(abs, DataDir)) + "/"},
		{"oss://bkt/runs/o?endpoint=http://x", true, "runs/o/" + DataDir + "/"},
		{"s3://bkt", true, DataDir + "/"},
		{"s3://bkt/", true, DataDir + "/"},
	} {
		if got, err := LoaderPath(c.location, DataDir, c.inBucket); err != nil || got != c.want {
			t.Errorf("LoaderPath(%q) = %q, %v; want %q", c.location, got, err, c.want)
		}
	}
	for _, bad := range []string{"gs://bkt/p", "s3:///p", "out"} {
		if got, err := LoaderPath(bad, DataDir, true); err == nil {
			t.Errorf("LoaderPath(%q) in a bucket = %q, want an error", bad, got)
		}
	}
	if got := BucketLocation("oss://bkt/runs/o/?endpoint=http://x&region=r"); got != "oss://bkt/runs/o" {
		t.Errorf("BucketLocation = %q", got)
	}
	if CopyCommand("oss://bkt/p") != "ossutil cp" || CopyCommand("s3://bkt/p") != "aws s3 cp" {
		t.Errorf("copy commands: %q, %q", CopyCommand("oss://bkt/p"), CopyCommand("s3://bkt/p"))
	}
}
