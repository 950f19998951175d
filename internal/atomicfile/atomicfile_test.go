package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileDoesNotFollowALinkAtItsTemporaryName: a symbolic link where the temporary file
// goes (planted in a shared folder such as /tmp, whose names are predictable) is not written
// through: the file it leads to keeps its bytes, and the file written is a regular file of its
// own with the mode asked for. Before, the link was opened, its target overwritten with the
// data, and the link renamed to the final name.
func TestWriteFileDoesNotFollowALinkAtItsTemporaryName(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(dir, "out.csv")
	if err := os.Symlink(outside, TempPath(final)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(final, []byte("a,b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(outside); string(data) != "precious\n" {
		t.Errorf("the file the link leads to now holds %q", data)
	}
	fi, err := os.Lstat(final)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is %v, want a regular file 0600", final, fi.Mode())
	}
	if data, _ := os.ReadFile(final); string(data) != "a,b\n" {
		t.Errorf("%s holds %q", final, data)
	}
}

// TestCreateTempReplacesAWiderLeftover: a temporary file a killed run left (here 0644) is not
// reused with its mode: the new one has the mode asked for.
func TestCreateTempReplacesAWiderLeftover(t *testing.T) {
	final := filepath.Join(t.TempDir(), "repair.jsonl")
	if err := os.WriteFile(TempPath(final), []byte("old rows\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := CreateTemp(final, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != 0 {
		t.Errorf("temporary file: mode %v, %d bytes; want 0600, empty", fi.Mode().Perm(), fi.Size())
	}
}
