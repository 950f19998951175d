package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rekey/rekey/store"
)

// hidden is a local folder seen through Store alone, as an object store is: no path.
type hidden struct{ store.Store }

func local(t *testing.T, dir string) *store.Local {
	t.Helper()
	l, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The abilities of a local folder are offered through the store package's functions, and a
// store without them gets the fallback (done false, no error), never a type assertion by callers.
func TestAbilitiesAndTheirFallbacks(t *testing.T) {
	ctx := context.Background()
	a, b := local(t, t.TempDir()), local(t, filepath.Join(t.TempDir(), "made", "here"))
	if err := store.MakeRoot(b); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(b.Path()); err != nil || !fi.IsDir() {
		t.Fatalf("MakeRoot did not create the folder: %v", err)
	}
	if err := store.MakeRoot(hidden{a}); err != nil {
		t.Fatalf("MakeRoot of a store without a folder: %v", err)
	}
	if err := a.Put(ctx, "data/region-0000/part-00000.parquet", []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "data/region-0000/part-00001.parquet", []byte("def")); err != nil {
		t.Fatal(err)
	}

	// without a path on either side: nothing linked, the caller copies
	for _, pair := range [][2]store.Store{{hidden{a}, b}, {a, hidden{b}}} {
		if store.CanLink(pair[0], pair[1]) {
			t.Error("CanLink without a local folder on both sides")
		}
		if done, err := store.Link(pair[0], "data/region-0000/part-00000.parquet", pair[1], "x/p.parquet", false); done || err != nil {
			t.Errorf("Link without a local folder: %v, %v", done, err)
		}
	}
	if done, err := store.ServerCopy(ctx, a, "data/region-0000/part-00000.parquet", b, "x/p.parquet"); done || err != nil {
		t.Errorf("ServerCopy by a store that cannot: %v, %v", done, err)
	}

	// a hard link keeps the source; a move takes it
	if done, err := store.Link(a, "data/region-0000/part-00000.parquet", b, "data/region-0003/part-00000.parquet", false); !done || err != nil {
		t.Fatalf("hard link: %v, %v", done, err)
	}
	if done, err := store.Link(a, "data/region-0000/part-00001.parquet", b, "data/region-0003/part-00001.parquet", true); !done || err != nil {
		t.Fatalf("move: %v, %v", done, err)
	}
	if err := store.SyncFolder(b, "data/region-0003"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"data/region-0003/part-00000.parquet": "abc", "data/region-0003/part-00001.parquet": "def"} {
		if got, err := b.Get(ctx, name); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if _, err := a.Stat(ctx, "data/region-0000/part-00000.parquet"); err != nil {
		t.Errorf("a hard link removed its source: %v", err)
	}
	if _, err := a.Stat(ctx, "data/region-0000/part-00001.parquet"); !store.IsNotExist(err) {
		t.Errorf("a move left its source: %v", err)
	}
	// a name that is there already is not replaced: the caller copies (and finds it placed)
	if done, err := store.Link(a, "data/region-0000/part-00000.parquet", b, "data/region-0003/part-00000.parquet", false); done || err != nil {
		t.Errorf("link onto an existing name: %v, %v", done, err)
	}
	if _, err := store.Link(a, "../outside", b, "x", false); err == nil {
		t.Error("Link took a name outside the folder")
	}

	// names for messages, and nesting seen through a symbolic link
	if got := store.DisplayName(a, "out/x"); got != "out/x" {
		t.Errorf("DisplayName of a folder: %q", got)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a.Path(), link); err != nil {
		t.Fatal(err)
	}
	if got, want := store.ResolvedLocation(local(t, filepath.Join(link, "sub"))), store.ResolvedLocation(a)+"sub"+string(filepath.Separator); got != want {
		t.Errorf("ResolvedLocation through a link: %q, want %q", got, want)
	}
}
