package store_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/storetest"
)

func TestLocalConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestLocalCommitAs: a local folder's writer commits its object under a name chosen once it is
// finished (replicate names a roll's files after its last offset): the temporary file, named
// after the name it was created with, is renamed to it; nothing else is left.
func TestLocalCommitAs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Create(ctx, "data/region-0000/p0001-0000000000000010-aaaaaaaa.parquet")
	if err != nil {
		t.Fatal(err)
	}
	rn, ok := w.(store.Renamer)
	if !ok {
		t.Fatalf("a local folder's writer %T is not a store.Renamer", w)
	}
	if _, err := w.Write([]byte("rows")); err != nil {
		t.Fatal(err)
	}
	if err := rn.Finish(); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "data", "region-0000", store.TempPrefix+"p0001-0000000000000010-aaaaaaaa.parquet")
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("finished: %v", err)
	}
	if objs, _ := s.List(ctx, ""); len(objs) != 0 {
		t.Fatalf("visible before its commit: %v", objs)
	}
	n, err := rn.CommitAs(ctx, "data/region-0000/p0001-0000000000000010-0000000000000019.parquet")
	if err != nil || n != 4 {
		t.Fatalf("CommitAs: %d, %v", n, err)
	}
	if objs, _ := s.List(ctx, ""); len(objs) != 1 || objs[0].Name != "data/region-0000/p0001-0000000000000010-0000000000000019.parquet" {
		t.Errorf("committed: %v", objs)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temporary file stays: %v", err)
	}
	if _, err := rn.CommitAs(ctx, "../x"); err == nil {
		t.Error("a second commit, and a bad name, passed")
	}
}

// TestLocalFolderThatIsALink: an output folder given by a symbolic link to it (--out /data/out,
// a link to a bigger disk) is the folder it leads to: List("") names every object in it, as
// List("data/") does, and Sweep("") removes what unfinished writers left there. A List that saw
// nothing would take a folder holding a previous run for an empty one: a fresh run would then
// write beside the old files, and a --resume would start over beside them.
func TestLocalFolderThatIsALink(t *testing.T) {
	ctx := context.Background()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := store.NewLocal(link)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"checkpoint.json", "data/region-0000/part-00000.parquet"} {
		if err := s.Put(ctx, name, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	w, err := s.Create(ctx, "data/region-0000/part-00001.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("unfinished")); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "data/"} {
		objs, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range objs {
			names = append(names, o.Name)
		}
		want := []string{"checkpoint.json", "data/region-0000/part-00000.parquet"}
		if prefix == "data/" {
			want = want[1:]
		}
		if !slices.Equal(names, want) {
			t.Errorf("List(%q) through the link: %q, want %q", prefix, names, want)
		}
	}
	if err := s.Sweep(ctx, ""); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(real, "data", "region-0000", store.TempPrefix+"part-00001.parquet")
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("Sweep(\"\") through the link left the unfinished writer's file: %v", err)
	}
}

// TestLocalCreateDoesNotFollowALinkAtItsTemporaryName: a symbolic link where an object's
// temporary file goes leads outside the folder: Create refuses it, naming it, and the file it
// leads to keeps its bytes. Before, Put wrote the object's bytes into that file and renamed the
// link to the object's name.
func TestLocalCreateDoesNotFollowALinkAtItsTemporaryName(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, store.TempPrefix+"manifest.json")); err != nil {
		t.Fatal(err)
	}
	s, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Put(ctx, "manifest.json", []byte("{}\n"))
	if data, _ := os.ReadFile(outside); string(data) != "precious\n" {
		t.Fatalf("the file the link leads to now holds %q (Put: %v)", data, err)
	}
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Put through a link at its temporary name: %v, want it refused as a symbolic link", err)
	}
}

// TestLocalCreateRefusesAFolderThatIsALink: a folder inside the store that is a symbolic link
// (data/ leading elsewhere) is refused by Create, naming it, as Get, Stat and Open refuse it:
// nothing is written where it leads. Before, objects were written through it, outside the
// folder, where List never saw them (a run's output then looked empty to the next run, which
// replaced them) and where reading them back (verify, a resume's checks) was refused.
func TestLocalCreateRefusesAFolderThatIsALink(t *testing.T) {
	ctx := context.Background()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	s, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Put(ctx, "data/region-0000/part-00000.parquet", []byte("rows"))
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("Put wrote %d entries where the link leads (Put: %v)", len(ents), err)
	}
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "data is a symbolic link") {
		t.Fatalf("Put under a folder that is a link: %v, want it refused naming data as a symbolic link", err)
	}
	// CommitAs's name is checked too
	w, err := s.Create(ctx, "p.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.(store.Renamer).CommitAs(ctx, "data/region-0001/p.parquet"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("CommitAs under a folder that is a link: %v, want it refused", err)
	}
	w.Abort()
	// and so is a hard link or a move into it (merge --files link|move)
	from, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := from.Put(ctx, "data/region-0002/part-00000.parquet", []byte("rows")); err != nil {
		t.Fatal(err)
	}
	for _, move := range []bool{false, true} {
		if _, err := store.Link(from, "data/region-0002/part-00000.parquet", s, "data/region-0002/part-00000.parquet", move); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("Link (move %v) under a folder that is a link: %v, want it refused", move, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("CommitAs or Link wrote %d entries where the link leads", len(ents))
	}
}
