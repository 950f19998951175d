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
