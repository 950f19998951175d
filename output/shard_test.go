package output

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// sharedOutputs are the stores a shared output is tested on: a folder, and a versitygw bucket.
// unfinished lists the unfinished writes under data/ by the names they are to be committed under.
type sharedOutput struct {
	name string
	open func(t *testing.T) (st store.Store, unfinished func() []string)
}

var sharedOutputs = []sharedOutput{
	{"folder", func(t *testing.T) (store.Store, func() []string) {
		dir := t.TempDir()
		st, err := store.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		return st, func() []string {
			var names []string
			filepath.WalkDir(filepath.Join(dir, DataDir), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), store.TempPrefix) {
					rel, _ := filepath.Rel(dir, filepath.Join(filepath.Dir(p), strings.TrimPrefix(d.Name(), store.TempPrefix)))
					names = append(names, filepath.ToSlash(rel))
				}
				return nil
			})
			return names
		}
	}},
	{"versitygw", func(t *testing.T) (store.Store, func() []string) {
		srv := s3test.StartVersitygw(t)
		st, err := s3store.Open(context.Background(), srv.URI, s3test.Getenv(srv.Env))
		if err != nil {
			t.Fatal(err)
		}
		return st, func() []string {
			names, err := st.Unfinished(context.Background(), DataDir+"/")
			if err != nil {
				t.Fatal(err)
			}
			return names
		}
	}},
}

// inFlight starts writing name through st with more than a multipart part, so that a bucket has
// an upload in progress under that name (a folder, a temporary file), and leaves it unfinished.
func inFlight(t *testing.T, st store.Store, name string, unfinished func() []string) store.Writer {
	t.Helper()
	w, err := st.Create(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte("x"), 9<<20)); err != nil {
		t.Fatal(err)
	}
	wait.For(t, func() bool { return slices.Contains(unfinished(), name) }, name+" in flight")
	return w
}

func commitFile(t *testing.T, st store.Store, name string) int64 {
	t.Helper()
	w, err := st.Create(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("data of " + name))
	n, err := w.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// N shards write one output together, each with its own lock, checkpoint and files. Shard 0 is
// killed after its checkpoint, having committed a file since and with an upload in flight; it
// resumes while shard 1 runs, with a committed file and an upload in flight in the same region
// folders. The resume removes only shard 0's leftovers: shard 1's file stays and its upload
// still commits. A second run of shard 1 is refused by shard 1's lock.
func TestShardResumeRemovesOnlyItsOwnFiles(t *testing.T) {
	for _, c := range sharedOutputs {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			root, unfinished := c.open(t)
			sh0, sh1 := pipeline.Shard{Index: 0, Count: 2}, pipeline.Shard{Index: 1, Count: 2}
			spec := Spec{Fingerprint: "fp", Format: "parquet"}
			run0, err := OpenShard(ctx, root, sh0, spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			kept0 := "data/region-0000/s0000-part-00000.parquet"
			n := commitFile(t, run0.Store, kept0)
			journal, err := run0.Journal(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := journal.Cut(ctx, &pipeline.Checkpoint{Fingerprint: "fp", Format: "parquet", Files: []pipeline.FileInfo{{Path: kept0, Bytes: n}}}); err != nil {
				t.Fatal(err)
			}
			after0 := "data/region-0001/s0000-part-00001.parquet"
			commitFile(t, run0.Store, after0)
			flying0 := "data/region-0001/s0000-part-00002.parquet"
			inFlight(t, run0.Store, flying0, unfinished) // never finished: the process is killed

			run1, err := OpenShard(ctx, root, sh1, spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer run1.Close()
			kept1 := "data/region-0001/s0001-part-00000.parquet"
			commitFile(t, run1.Store, kept1)
			flying1 := "data/region-0001/s0001-part-00001.parquet"
			w1 := inFlight(t, run1.Store, flying1, unfinished)

			journal.Close()
			run0.Close() // the kill: shard 0's lock is free again
			resumed, err := OpenShard(ctx, root, sh0, Spec{Fingerprint: "fp", Format: "parquet", Resume: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resumed.Close()
			if resumed.Checkpoint == nil || len(resumed.Checkpoint.Files) != 1 {
				t.Fatalf("shard 0 resumed from %+v, want its checkpoint", resumed.Checkpoint)
			}
			for name, want := range map[string]bool{kept0: true, after0: false, kept1: true} {
				if _, err := root.Stat(ctx, name); (err == nil) != want {
					t.Errorf("%s after shard 0's resume: %v, want present %v", name, err, want)
				}
			}
			if got := unfinished(); !slices.Equal(got, []string{flying1}) {
				t.Errorf("unfinished writes after shard 0's resume: %v, want shard 1's alone (%s)", got, flying1)
			}
			if _, err := w1.Commit(ctx); err != nil {
				t.Fatalf("shard 1's upload in flight during shard 0's resume: %v", err)
			}
			if _, err := OpenShard(ctx, root, sh1, spec, nil); !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), "in use by another rekey run") {
				t.Errorf("a second run of shard 1 while it runs: %v, want refused by its lock", err)
			}
			if _, err := root.Stat(ctx, ShardDir(sh0)+"/"+CheckpointFile); err != nil {
				t.Errorf("shard 0's checkpoint is not in its folder: %v", err)
			}
		})
	}
}

// A shared output holds only the shards of one migration: a run of the whole table, shards of
// another count, or a shard of a finished migration (unless resumed) are refused, saying what to
// do; a run of the whole table is refused in an output holding shards.
func TestSharedOutputRefusesMixing(t *testing.T) {
	ctx := context.Background()
	spec := Spec{Fingerprint: "fp", Format: "parquet"}
	newShared := func(t *testing.T) store.Store {
		st, err := store.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o, err := OpenShard(ctx, st, pipeline.Shard{Index: 0, Count: 2}, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		commitFile(t, o.Store, "data/region-0000/s0000-part-00000.parquet")
		o.Close()
		return st
	}
	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want refused saying %q", err, want)
		}
	}
	t.Run("other count", func(t *testing.T) {
		_, err := OpenShard(ctx, newShared(t), pipeline.Shard{Index: 1, Count: 3}, spec, nil)
		refused(t, err, "with the same N")
	})
	t.Run("whole run into shards", func(t *testing.T) {
		for _, s := range []Spec{spec, {Fingerprint: "fp", Resume: true}, {Fingerprint: "fp", Overwrite: true}} {
			_, err := Open(ctx, newShared(t), s, nil)
			refused(t, err, "holds the shards of a migration")
		}
	})
	t.Run("shard into a whole run", func(t *testing.T) {
		dir := t.TempDir()
		st, _ := store.NewLocal(dir)
		o, err := Open(ctx, st, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		commitFile(t, o.Store, "data/region-0000/part-00000.parquet")
		o.Close()
		_, err = OpenShard(ctx, st, pipeline.Shard{Index: 0, Count: 2}, spec, nil)
		refused(t, err, "a data file of a run of the whole table")
		if err := os.WriteFile(filepath.Join(dir, CheckpointFile), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = OpenShard(ctx, st, pipeline.Shard{Index: 0, Count: 2}, spec, nil)
		refused(t, err, "holds a run of the whole table")
	})
	t.Run("finished", func(t *testing.T) {
		st := newShared(t)
		if err := st.Put(ctx, ManifestFile, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		_, err := OpenShard(ctx, st, pipeline.Shard{Index: 1, Count: 2}, spec, nil)
		refused(t, err, "holds a finished migration")
	})
	t.Run("no shard", func(t *testing.T) {
		st, _ := store.NewLocal(t.TempDir())
		_, err := OpenShard(ctx, st, pipeline.Shard{}, spec, nil)
		refused(t, err, "needs --shard")
	})
}

// A shard's store lists, writes and removes its own data files only.
func TestShardStoreSeesItsOwnFiles(t *testing.T) {
	ctx := context.Background()
	root, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := ShardStore(root, pipeline.Shard{Index: 0, Count: 2})
	b := ShardStore(root, pipeline.Shard{Index: 1, Count: 2})
	commitFile(t, a, "data/region-0000/s0000-part-00000.parquet")
	commitFile(t, b, "data/region-0000/s0001-part-00000.parquet")
	if err := a.Put(ctx, CheckpointFile, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	objs, err := a.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	if want := []string{CheckpointFile, "data/region-0000/s0000-part-00000.parquet"}; !slices.Equal(names, want) {
		t.Errorf("shard 0 lists %v, want %v", names, want)
	}
	if _, err := a.Create(ctx, "data/region-0000/s0001-part-00001.parquet"); err == nil {
		t.Error("shard 0 created a file named as shard 1's")
	}
	if err := a.Remove(ctx, "data/region-0000/s0001-part-00000.parquet"); err == nil {
		t.Error("shard 0 removed shard 1's file")
	}
	if got := a.Location(CheckpointFile); got != root.Location("shards/0000-of-0002/checkpoint.json") {
		t.Errorf("shard 0's checkpoint is at %s", got)
	}
}

// Shard 10000 and up names its files with more than four digits (s10000-part-...): they are a
// shard's, not a whole run's. Before, a shard starting beside them was refused.
func TestShardOfDataNamesOfLargeIndexes(t *testing.T) {
	for _, sh := range []pipeline.Shard{{Index: 2, Count: 4}, {Index: 10000, Count: 10001}, {Index: 123456, Count: 200000}} {
		name := "data/region-0003/" + ShardFilePrefix(sh) + "part-00007.parquet"
		if got := shardOfData(name); got != sh.Index {
			t.Errorf("%s: shard %d, want %d", name, got, sh.Index)
		}
	}
	for _, name := range []string{"data/region-0003/part-00007.parquet", "data/region-0003/s12-part.parquet", "data/region-0003/sabcd-part.parquet", "data/region-0003/s-part.parquet"} {
		if got := shardOfData(name); got >= 0 {
			t.Errorf("%s: shard %d, want none", name, got)
		}
	}
}
