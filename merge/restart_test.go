package merge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rekey/rekey/merge"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

var errCrash = errors.New("crash point")

// place is where a test's inputs and outputs live: local folders, or prefixes of one bucket.
type place struct {
	name string
	open func(t *testing.T, at string) store.Store // at: a relative name under the test's root
}

// shards writes two inputs (three files, each with its own bytes) under root/at and returns
// their names; on a bucket they are uploaded object by object.
func shards(t *testing.T, p place, at string) []string {
	t.Helper()
	local := t.TempDir()
	var names []string
	for i, files := range [][]string{{"data/region-0000/part-00000.parquet", "data/region-0000/part-00001.parquet"}, {"data/region-0000/part-00000.parquet"}} {
		dir := filepath.Join(local, fmt.Sprintf("shard-%d", i))
		writeRun(t, dir, files...)
		for j, f := range files {
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f)), []byte(fmt.Sprintf("s%d-%d", i, j)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		name := at + fmt.Sprintf("/shard-%d", i)
		copyTree(t, dir, p.open(t, name))
		names = append(names, name)
	}
	return names
}

func copyTree(t *testing.T, dir string, to store.Store) {
	t.Helper()
	ctx := context.Background()
	from, _ := store.NewLocal(dir)
	objs, err := from.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		data, err := from.Get(ctx, o.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := to.Put(ctx, o.Name, data); err != nil {
			t.Fatal(err)
		}
	}
}

// contents is every object of st with its bytes; the manifest without its creation time.
func contents(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	objs, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range objs {
		data, err := st.Get(ctx, o.Name)
		if err != nil {
			t.Fatal(err)
		}
		if o.Name == output.ManifestFile {
			var m output.Manifest
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			m.CreatedAt = time.Time{}
			data, _ = json.Marshal(m)
		}
		got[o.Name] = string(data)
	}
	return got
}

// runMerge is `rekey merge` through the package: open the inputs, check them, write.
func runMerge(t *testing.T, p place, ins []string, out string, mode merge.Mode) error {
	ctx := context.Background()
	inputs, err := merge.OpenInputs(ctx, ins, p.open(t, out), func(_ context.Context, at string) (store.Store, error) { return p.open(t, at), nil })
	if err != nil {
		return err
	}
	if err := merge.Check(inputs); err != nil {
		return err
	}
	_, err = merge.WriteTo(ctx, inputs, p.open(t, out), mode, "test")
	return err
}

// folders is a place on local folders: the outputs (names ending in "/out") under outRoot, the
// rest under inRoot.
func folders(name, inRoot, outRoot string) place {
	return place{name, func(t *testing.T, at string) store.Store {
		root := inRoot
		if strings.HasSuffix(at, "/out") {
			root = outRoot
		}
		st, err := store.NewLocal(filepath.Join(root, filepath.FromSlash(at)))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}}
}

// bucket is a place on prefixes of srv's bucket.
func bucketOn(name string, srv *s3test.Server) place {
	return place{name, func(t *testing.T, at string) store.Store {
		st, err := s3store.Open(context.Background(), srv.URIFor(at), s3test.Getenv(srv.Env))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}}
}

// otherFilesystem is a folder on another filesystem than dir (tmpfs), or "" when there is none.
func otherFilesystem(t *testing.T, dir string) string {
	other, err := os.MkdirTemp("/dev/shm", "rekey-merge-")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	a, errA := os.Stat(dir)
	b, errB := os.Stat(other)
	if errA != nil || errB != nil {
		return ""
	}
	if sa, ok := a.Sys().(*syscall.Stat_t); !ok || sa.Dev == b.Sys().(*syscall.Stat_t).Dev {
		return ""
	}
	return other
}

// TestMergeRestartsFromEveryCrashPoint: a `merge --files move` interrupted between two files left
// them split between the inputs and the output, and merge then refused the inputs ("lists ...
// which is missing") and advised removing the output, the only copy of the moved files. Now a
// merge stopped at any step (after its plan, after each file is placed, after each input file is
// removed, after the manifest) and run again finishes with exactly what an uninterrupted merge
// makes, and --files move leaves no data file in the inputs. In folders (also across
// filesystems, where a move is a copy and a removal), on gofakes3 and on versitygw, for every
// --files mode.
func TestMergeRestartsFromEveryCrashPoint(t *testing.T) {
	for _, name := range []string{"folder", "across filesystems", "gofakes3", "versitygw"} {
		t.Run(name, func(t *testing.T) {
			var p place
			switch name {
			case "folder":
				root := t.TempDir()
				p = folders(name, root, root)
			case "across filesystems": // a rename fails (EXDEV): move copies, then removes
				root := t.TempDir()
				other := otherFilesystem(t, root)
				if other == "" {
					t.Skip("no second filesystem (/dev/shm) here")
				}
				p = folders(name, other, root)
			case "gofakes3":
				p = bucketOn(name, s3test.StartGofakes3(t, nil))
			case "versitygw":
				p = bucketOn(name, s3test.StartVersitygw(t)) // skipped when the binary is missing
			}
			for _, mode := range []merge.Mode{merge.Move, merge.Copy, merge.Link} {
				t.Run(string(mode), func(t *testing.T) {
					base := strings.ReplaceAll(t.Name(), "/", "-")
					// the uninterrupted merge, and the steps it takes
					ins := shards(t, p, base+"/ref")
					var steps []string
					restore := merge.SetAfterStep(func(s string) error { steps = append(steps, s); return nil })
					err := runMerge(t, p, ins, base+"/ref/out", mode)
					restore()
					if err != nil {
						t.Fatal(err)
					}
					want := contents(t, p.open(t, base+"/ref/out"))
					if len(want) == 0 || len(steps) < 5 {
						t.Fatalf("reference merge: %d objects, steps %v", len(want), steps)
					}
					for k, crashAt := range steps {
						at := fmt.Sprintf("%s/crash-%d", base, k)
						ins := shards(t, p, at)
						out := at + "/out"
						restore := merge.SetAfterStep(func(s string) error {
							if s == crashAt {
								return errCrash
							}
							return nil
						})
						err := runMerge(t, p, ins, out, mode)
						restore()
						if !errors.Is(err, errCrash) {
							t.Fatalf("crash at %q: the merge returned %v", crashAt, err)
						}
						if err := runMerge(t, p, ins, out, mode); err != nil {
							t.Fatalf("merge run again after a crash at %q: %v", crashAt, err)
						}
						if got := contents(t, p.open(t, out)); !reflect.DeepEqual(got, want) {
							t.Fatalf("after a crash at %q and a second run the output holds\n%v\nan uninterrupted merge\n%v", crashAt, got, want)
						}
						for _, in := range ins {
							objs, err := p.open(t, in).List(context.Background(), output.DataDir+"/")
							if err != nil {
								t.Fatal(err)
							}
							if left := len(objs); (mode == merge.Move) != (left == 0) {
								t.Fatalf("crash at %q, --files %s: %s holds %d data files after the merge", crashAt, mode, in, left)
							}
						}
					}
				})
			}
		})
	}
}

// TestMergeDamagedPlanKeepsTheOutput: a plan that cannot be read stops the merge with an error
// that says to keep --out (with --files move some files may be only there), never to remove it.
func TestMergeDamagedPlanKeepsTheOutput(t *testing.T) {
	root := t.TempDir()
	p := folders("folder", root, root)
	ins := shards(t, p, "d")
	if err := os.MkdirAll(filepath.Join(root, "d", "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d", "out", output.MergePlanFile), []byte("{\"version\":1,"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runMerge(t, p, ins, "d/out", merge.Move)
	if err == nil || !strings.Contains(err.Error(), "is damaged") || !strings.Contains(err.Error(), "keep them") || strings.Contains(err.Error(), "remove") {
		t.Fatalf("merge into an output with a damaged plan: %v", err)
	}
}
