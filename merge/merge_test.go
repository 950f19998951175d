package merge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rekey/rekey/merge"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

const canaryData = "canary: not rekey's to touch"

// writeRun writes a complete run's output into dir by hand: one region, one data file per
// entry of paths (the file is created at region-0000/part-0000N.parquet and listed in the
// manifest under the given path, so a crafted path points wherever the test wants).
func writeRun(t *testing.T, dir string, paths ...string) {
	t.Helper()
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{{Name: "id", Type: pipeline.TypeBigint, KeyPos: 0}}}
	m := output.NewManifest(schema, pipeline.RegionPlan{Type: pipeline.TypeBigint, Strategy: "single"}, "parquet", 0)
	m.MappingFingerprint = "fp"
	if err := os.MkdirAll(filepath.Join(dir, "data", "region-0000"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		name := filepath.Join(dir, "data", "region-0000", "part-0000"+string(rune('0'+i))+".parquet")
		if err := os.WriteFile(name, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
		m.Regions[0].Files = append(m.Regions[0].Files, output.FileEntry{Path: p, Rows: 1, Bytes: 4})
		m.Regions[0].Rows++
		m.RowsIn++
		m.RowsWritten++
	}
	// written as raw JSON: WriteManifest is the writer's path, the test wants what a file holds
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, output.ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, output.DDLFile), []byte("CREATE TABLE t (id BIGINT NOT NULL, PRIMARY KEY(id));\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mergeRun does what `rekey merge` does: read, check, write.
func mergeRun(dirs []string, out string, mode merge.Mode) error {
	ctx := context.Background()
	st, err := store.NewLocal(out)
	if err != nil {
		return err
	}
	open := func(_ context.Context, dir string) (store.Store, error) { return store.NewLocal(dir) }
	inputs, err := merge.OpenInputs(ctx, dirs, st, open)
	if err != nil {
		return err
	}
	if err := merge.Check(inputs); err != nil {
		return err
	}
	_, err = merge.WriteTo(ctx, inputs, st, mode, "test")
	return err
}

// checkCanary fails the test unless the canary still holds its data, in its place, with no
// second name (a hard link) anywhere.
func checkCanary(t *testing.T, canary string) {
	t.Helper()
	data, err := os.ReadFile(canary)
	if err != nil {
		t.Fatalf("the canary is gone: %v", err)
	}
	if string(data) != canaryData {
		t.Fatalf("the canary was changed: %q", data)
	}
	fi, err := os.Stat(canary)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		t.Fatalf("the canary has %d links: merge hard-linked it into its output", st.Nlink)
	}
}

// TestMergeRefusesPathsOutsideTheInput: before, a crafted manifest.json holding
// {"path":"../canary.parquet"} made `rekey merge` hard-link the canary into its output, and with
// --files move move it out of its place. Every such path is refused before any file is placed, with
// an error naming the manifest and the path, and the canary is left alone.
func TestMergeRefusesPathsOutsideTheInput(t *testing.T) {
	for _, c := range []struct {
		name string
		path func(canary string) string
	}{
		{"dotdot", func(string) string { return "../canary.parquet" }},               // the path that was linked before
		{"absolute", func(canary string) string { return filepath.ToSlash(canary) }}, // /tmp/.../canary.parquet
		{"data/region-dotdot", func(string) string { return "data/region-0000/../../canary.parquet" }},
		{"backslash", func(string) string { return `data\region-0000\..\..\canary.parquet` }},
		{"empty", func(string) string { return "" }},
		{"not-in-a-region", func(string) string { return "canary.parquet" }},
	} {
		for _, mode := range []merge.Mode{merge.Link, merge.Move, merge.Copy} {
			t.Run(c.name+"/"+string(mode), func(t *testing.T) {
				root := t.TempDir()
				canary := filepath.Join(root, "canary.parquet")
				if err := os.WriteFile(canary, []byte(canaryData), 0o644); err != nil {
					t.Fatal(err)
				}
				in := filepath.Join(root, "shard-0")
				bad := c.path(canary)
				// a good file first: refusing must happen before anything is placed
				writeRun(t, in, "data/region-0000/part-00000.parquet", bad)
				out := filepath.Join(root, "out")
				err := mergeRun([]string{in}, out, mode)
				if err == nil {
					t.Fatalf("merge accepted the manifest path %q", bad)
				}
				msg := err.Error()
				if !strings.Contains(msg, filepath.Join(in, output.ManifestFile)) || !strings.Contains(msg, strings.ReplaceAll(bad, `\`, `\\`)) {
					t.Errorf("the error does not name the manifest and the path %q: %v", bad, err)
				}
				if !errors.Is(err, output.ErrUnsafePath) {
					t.Errorf("the error does not wrap output.ErrUnsafePath: %v", err)
				}
				checkCanary(t, canary)
				if _, err := os.Stat(filepath.Join(in, "data", "region-0000", "part-00000.parquet")); err != nil {
					t.Errorf("the input's own file was placed before the refusal: %v", err)
				}
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the refused merge made its output %s (%v)", out, err)
				}
			})
		}
	}
}

// TestMergeRefusesSymlinks: a manifest path that reads as inside the input but goes through a
// symbolic link (a region folder, or the file itself, replaced by a link to the canary) is
// refused too: a hard link of a symlink, or a copy through it, reaches outside the input.
func TestMergeRefusesSymlinks(t *testing.T) {
	for _, c := range []struct {
		name string
		link func(t *testing.T, in, canary string) string // makes the link, returns the listed path
	}{
		{"file", func(t *testing.T, in, canary string) string {
			if err := os.Symlink(canary, filepath.Join(in, "data", "region-0000", "part-00009.parquet")); err != nil {
				t.Fatal(err)
			}
			return "data/region-0000/part-00009.parquet"
		}},
		{"folder", func(t *testing.T, in, canary string) string {
			if err := os.Symlink(filepath.Dir(canary), filepath.Join(in, "data", "region-0001")); err != nil {
				t.Fatal(err)
			}
			return "data/region-0001/canary.parquet"
		}},
	} {
		for _, mode := range []merge.Mode{merge.Link, merge.Move, merge.Copy} {
			t.Run(c.name+"/"+string(mode), func(t *testing.T) {
				root := t.TempDir()
				canary := filepath.Join(root, "canary.parquet")
				if err := os.WriteFile(canary, []byte(canaryData), 0o644); err != nil {
					t.Fatal(err)
				}
				in := filepath.Join(root, "shard-0")
				writeRun(t, in) // makes the folders
				p := c.link(t, in, canary)
				writeRun(t, in, "data/region-0000/part-00000.parquet", p)
				out := filepath.Join(root, "out")
				err := mergeRun([]string{in}, out, mode)
				if err == nil || !errors.Is(err, output.ErrUnsafePath) || !strings.Contains(err.Error(), "symbolic link") ||
					!strings.Contains(err.Error(), filepath.Join(in, output.ManifestFile)) {
					t.Fatalf("merge of a manifest path through a symlink: %v", err)
				}
				checkCanary(t, canary)
				if _, err := os.Lstat(filepath.Join(out, "data", "region-0000", "part-00001.parquet")); err == nil {
					t.Error("the linked file reached the output")
				}
			})
		}
	}
}

// TestMergeRefusesAFileListedTwice: with --files move, the second entry of a file listed twice
// failed after the first was moved, leaving the input half moved; with link, the rows were
// doubled. It is refused before anything is placed.
func TestMergeRefusesAFileListedTwice(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "shard-0")
	writeRun(t, in, "data/region-0000/part-00000.parquet", "data/region-0000/part-00000.parquet")
	err := mergeRun([]string{in}, filepath.Join(root, "out"), merge.Move)
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a file listed twice: %v", err)
	}
	if _, err := os.Stat(filepath.Join(in, "data", "region-0000", "part-00000.parquet")); err != nil {
		t.Errorf("the input's file was moved before the refusal: %v", err)
	}
}

// TestMergeRefusesDamagedRejectsLength: a checkpoint whose rejects_bytes is negative made merge
// panic (slice bounds out of range) when cutting rejects.jsonl to it.
func TestMergeRefusesDamagedRejectsLength(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "shard-0")
	writeRun(t, in, "data/region-0000/part-00000.parquet")
	if err := os.WriteFile(filepath.Join(in, output.RejectsFile), []byte(`{"stream":"s"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, output.CheckpointFile), []byte(`{"version":1,"complete":true,"rejects_bytes":-1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := mergeRun([]string{in}, filepath.Join(root, "out"), merge.Link)
	if err == nil || !strings.Contains(err.Error(), "rejects_bytes") {
		t.Fatalf("a negative rejects_bytes: %v", err)
	}
}

// TestMergeHandMadeRuns is the positive side of the checks above: two well-formed inputs merge,
// every file renumbered into the output, linked (the input keeps its file) or moved.
func TestMergeHandMadeRuns(t *testing.T) {
	for _, mode := range []merge.Mode{merge.Link, merge.Move, merge.Copy} {
		t.Run(string(mode), func(t *testing.T) {
			root := t.TempDir()
			a, b := filepath.Join(root, "shard-0"), filepath.Join(root, "shard-1")
			writeRun(t, a, "data/region-0000/part-00000.parquet", "data/region-0000/part-00001.parquet")
			writeRun(t, b, "data/region-0000/part-00000.parquet")
			out := filepath.Join(root, "out")
			if err := mergeRun([]string{a, b}, out, mode); err != nil {
				t.Fatal(err)
			}
			m, err := outputtest.Manifest(out)
			if err != nil {
				t.Fatal(err)
			}
			if m.Files != 3 || m.RowsWritten != 3 || len(m.Regions[0].Files) != 3 {
				t.Fatalf("merged manifest: %d files, %d rows", m.Files, m.RowsWritten)
			}
			for _, fe := range m.Regions[0].Files {
				p := filepath.Join(out, filepath.FromSlash(fe.Path))
				data, err := os.ReadFile(p)
				if err != nil || !bytes.Equal(data, []byte("data")) {
					t.Errorf("%s: %q %v", fe.Path, data, err)
				}
				// a copy is a file of its own, readable as the inputs' files are; a link is one file twice
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				wantLinks := map[merge.Mode]uint64{merge.Link: 2, merge.Move: 1, merge.Copy: 1}[mode]
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Nlink) != wantLinks {
					t.Errorf("--files %s: %s has %d links, want %d", mode, fe.Path, st.Nlink, wantLinks)
				}
				if mode == merge.Copy && fi.Mode().Perm() != 0o644 {
					t.Errorf("--files copy: %s has mode %v, want 0644", fe.Path, fi.Mode().Perm())
				}
			}
			if left, _ := filepath.Glob(filepath.Join(out, "data", "region-0000", ".*")); len(left) > 0 {
				t.Errorf("--files %s left temporary files %v", mode, left)
			}
			_, err = os.Stat(filepath.Join(a, "data", "region-0000", "part-00001.parquet"))
			if moved := errors.Is(err, os.ErrNotExist); moved != (mode == merge.Move) {
				t.Errorf("--files %s: the input's file moved: %v", mode, moved)
			}
		})
	}
}

// bucket is a local folder seen through store.Store alone, as merge sees a bucket prefix.
type bucket struct{ store.Store }

// copier is a bucket that copies objects itself (as a server-side copy in one bucket would).
type copier struct {
	bucket
	copies int
}

func (c *copier) CopyFrom(ctx context.Context, from store.Store, src, dst string) (bool, error) {
	data, err := from.Get(ctx, src)
	if err != nil {
		return false, err
	}
	c.copies++
	return true, c.Put(ctx, dst, data)
}

// merge goes through store.Store, so shards on a bucket merge into a bucket: files are copied by
// the store when it can (no bytes through rekey), streamed otherwise, moved by removing the input's
// object; the rejects of an input on an object store (checkpointed parts) and of a local one
// (rejects.jsonl cut to its checkpointed length) are concatenated, and bulkload.json reads the
// merged data/.
func TestMergeThroughStores(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []merge.Mode{merge.Copy, merge.Move} {
		for _, serverCopy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/servercopy=%v", mode, serverCopy), func(t *testing.T) {
				root := t.TempDir()
				a, b := filepath.Join(root, "shard-0"), filepath.Join(root, "shard-1")
				writeRun(t, a, "data/region-0000/part-00000.parquet", "data/region-0000/part-00001.parquet")
				writeRun(t, b, "data/region-0000/part-00000.parquet")
				// a: on an "object store", its rejects in two parts and a third never checkpointed
				os.WriteFile(filepath.Join(a, output.CheckpointFile), []byte(`{"version":1,"complete":true,"rejects_parts":2}`), 0o600)
				os.MkdirAll(filepath.Join(a, "rejects"), 0o755)
				for i, line := range []string{"a0\n", "a1\n", "stray\n"} {
					os.WriteFile(filepath.Join(a, filepath.FromSlash(output.RejectsPart(i))), []byte(line), 0o600)
				}
				// b: local, rejects.jsonl longer than checkpointed (a crash after the last cut)
				os.WriteFile(filepath.Join(b, output.CheckpointFile), []byte(`{"version":1,"complete":true,"rejects_bytes":3}`), 0o600)
				os.WriteFile(filepath.Join(b, output.RejectsFile), []byte("b0\nafter\n"), 0o600)
				// the shards started at different times: the merged job stamps cells with the earliest
				os.WriteFile(filepath.Join(a, output.BulkloadFile), []byte(`{"fileType":"parquet","readerConfig":{"filePath":"/elsewhere"},"writerConfig":{"timestamp":2000}}`), 0o644)
				os.WriteFile(filepath.Join(b, output.BulkloadFile), []byte(`{"fileType":"parquet","readerConfig":{"filePath":"/b"},"writerConfig":{"timestamp":1000}}`), 0o644)
				open := func(_ context.Context, dir string) (store.Store, error) {
					l, err := store.NewLocal(dir)
					if dir == b {
						return l, err
					}
					return bucket{l}, err
				}
				outDir := filepath.Join(root, "out")
				l, _ := store.NewLocal(outDir)
				var out store.Store = bucket{l}
				cp := &copier{bucket: bucket{l}}
				if serverCopy {
					out = cp
				}
				inputs, err := merge.OpenInputs(ctx, []string{a, b}, out, open)
				if err != nil {
					t.Fatal(err)
				}
				if err := merge.Check(inputs); err != nil {
					t.Fatal(err)
				}
				res, err := merge.WriteTo(ctx, inputs, out, mode, "test")
				if err != nil {
					t.Fatal(err)
				}
				if serverCopy && (cp.copies != 3 || res.Copied != 0 || res.ServerCopied != 3) {
					t.Fatalf("the store copied %d files, rekey %d: want the store all 3", cp.copies, res.Copied)
				} else if !serverCopy && (res.Copied != 3 || res.ServerCopied != 0) {
					t.Fatalf("rekey copied %d files, want 3", res.Copied)
				}
				m, err := outputtest.Manifest(outDir)
				if err != nil || m.Files != 3 {
					t.Fatalf("merged manifest: %v %v", m, err)
				}
				for _, fe := range m.Regions[0].Files {
					if data, err := os.ReadFile(filepath.Join(outDir, filepath.FromSlash(fe.Path))); err != nil || string(data) != "data" {
						t.Errorf("%s: %q %v", fe.Path, data, err)
					}
				}
				if rej, _ := os.ReadFile(filepath.Join(outDir, output.RejectsFile)); string(rej) != "a0\na1\nb0\n" {
					t.Fatalf("merged rejects %q, want each input's checkpointed rejects once", rej)
				}
				var job lindorm.BulkloadJob
				data, _ := os.ReadFile(filepath.Join(outDir, output.BulkloadFile))
				if json.Unmarshal(data, &job); job.ReaderConfig.FilePath != out.Location("data/"+lindorm.RegionGlob) {
					t.Fatalf("bulkload.json reads %q, want %q", job.ReaderConfig.FilePath, out.Location("data/"+lindorm.RegionGlob))
				}
				if ts := job.WriterConfig.Timestamp; ts == nil || *ts != 1000 {
					t.Fatalf("writerConfig.timestamp %v, want the earliest shard's, 1000", ts)
				}
				_, err = os.Stat(filepath.Join(a, "data", "region-0000", "part-00001.parquet"))
				if moved := errors.Is(err, os.ErrNotExist); moved != (mode == merge.Move) {
					t.Errorf("--files %s: the input's file moved: %v", mode, moved)
				}
			})
		}
	}
}

// TestMergeRefusesNestedOutput: an --out inside an input's data/ was accepted, and a later
// migrate --resume of that input deleted the merged files (they are not in its checkpoint). An
// --out inside an input, an input inside --out, and the same place seen through a symbolic link
// are refused before anything is written, for folders and for bucket prefixes.
func TestMergeRefusesNestedOutput(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	in := filepath.Join(root, "shard-0")
	writeRun(t, in, "data/region-0000/part-00000.parquet")
	if err := os.Symlink(in, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	local := func(_ context.Context, dir string) (store.Store, error) { return store.NewLocal(dir) }
	srv := s3test.StartGofakes3(t, nil)
	bucketStore := func(_ context.Context, prefix string) (store.Store, error) {
		return s3store.Open(ctx, srv.URIFor(prefix), s3test.Getenv(srv.Env))
	}
	for _, c := range []struct {
		name, in, out string
		open          func(context.Context, string) (store.Store, error)
		want          string
	}{
		{"out in the input's data", in, filepath.Join(in, "data", "merged"), local, "is inside the input"},
		{"out in the input", in, filepath.Join(in, "merged"), local, "is inside the input"},
		{"out through a link into the input", in, filepath.Join(root, "link", "data", "merged"), local, "is inside the input"},
		{"input in out", in, root, local, "is inside --out"},
		{"same through a link", in, filepath.Join(root, "link"), local, "both an input and --out"},
		{"prefix: out in the input's data", "orders/shard-0", "orders/shard-0/data/merged", bucketStore, "is inside the input"},
		{"prefix: input in out", "orders/shard-0", "orders", bucketStore, "is inside --out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := c.open(ctx, c.out)
			if err != nil {
				t.Fatal(err)
			}
			_, err = merge.OpenInputs(ctx, []string{c.in}, out, c.open)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("merge %s --out %s: %v, want an error saying %q", c.in, c.out, err, c.want)
			}
		})
	}
	// a sibling whose name starts like the input's is not inside it
	out, _ := store.NewLocal(in + "-merged")
	if _, err := merge.OpenInputs(ctx, []string{in}, out, local); err != nil {
		t.Fatalf("--out beside the input: %v", err)
	}
}

// A run written in time slices (target.write_time) is refused by merge, which would write one
// bulkload job for files that need one per slice; the error names the input and the file.
func TestMergeRefusesTimeSlices(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeRun(t, a, "data/region-0000/part-00000.parquet")
	sliced := "data/region-0000/" + output.SliceFilePrefix(1_793_491_200_000) + "part-00000.parquet"
	writeRun(t, b, sliced)
	if err := os.Rename(filepath.Join(b, "data/region-0000/part-00000.parquet"), filepath.Join(b, filepath.FromSlash(sliced))); err != nil {
		t.Fatal(err)
	}
	err := mergeRun([]string{a, b}, filepath.Join(dir, "out"), merge.Copy)
	if err == nil || !strings.Contains(err.Error(), b+" was written with target.write_time, in time slices") {
		t.Fatalf("merge of a run in time slices: %v", err)
	}
}

// TestMergeRefusesInputsLoadingElsewhere: the merged bulkload.json is the first input's with the
// merged filePath, so inputs whose jobs load into another table's place (another namespace, or
// another LTS data source of LindormTable: a shard run without --namespace prod, or with another
// --lts-target) were merged silently, every row then loaded where the first input's job said.
// Such inputs are refused, each named with where its job loads, before any file is placed.
func TestMergeRefusesInputsLoadingElsewhere(t *testing.T) {
	job := func(src, dst, ns string) string {
		return fmt.Sprintf(`{"src":%q,"dst":%q,"fileType":"Parquet","readerConfig":{"filePath":"/x/data/*/"},`+
			`"writerConfig":{"namespace":%q,"lindormTable":"t","timestamp":1000}}`, src, dst, ns)
	}
	for name, second := range map[string]string{
		"namespace": job("oss_a", "ld", "prod"),
		"target":    job("oss_b", "ld_other", "default"), // src may differ: each input's files are where they are
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			a, b, out := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "out")
			writeRun(t, a, "data/region-0000/part-00000.parquet")
			writeRun(t, b, "data/region-0000/part-00000.parquet")
			if err := os.WriteFile(filepath.Join(a, output.BulkloadFile), []byte(job("oss_a", "ld", "default")), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(b, output.BulkloadFile), []byte(second), 0o644); err != nil {
				t.Fatal(err)
			}
			err := mergeRun([]string{a, b}, out, merge.Copy)
			if err == nil || !strings.Contains(err.Error(), b) || !strings.Contains(err.Error(), output.BulkloadFile) {
				t.Fatalf("inputs whose jobs load elsewhere were merged: %v", err)
			}
			if _, serr := os.Stat(filepath.Join(out, "data")); !os.IsNotExist(serr) {
				t.Errorf("files placed before the refusal: %v", serr)
			}
		})
	}
}
