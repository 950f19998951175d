// Package atomicfile writes a file committed whole on a local disk: the temporary name a file has
// until it is committed, the fsync of a folder that makes a rename inside it durable (both shared
// with the local store, package store), and the helpers for the files rekey writes beside no store
// (generated data, the summary, a report, verify's repair file).
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TempPrefix starts the name of every file rekey has not committed yet. A reader that skips
// dot-files (Spark, LTS) never sees a partial file, and a resume's sweep deletes leftovers with it.
const TempPrefix = ".rekey-tmp-"

// TempPath returns the temporary name a file is written under before Commit renames it.
func TempPath(final string) string {
	return filepath.Join(filepath.Dir(final), TempPrefix+filepath.Base(final))
}

// IsTemp tells whether a file name is an uncommitted temporary.
func IsTemp(name string) bool { return strings.HasPrefix(filepath.Base(name), TempPrefix) }

// Commit makes a finished temporary file durable under its final name: fsync the data, rename,
// fsync the directory so the rename itself survives a crash. f is closed.
func Commit(f *os.File, final string) error {
	tmp := f.Name()
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("commit %s: %w", final, err)
	}
	return SyncDir(filepath.Dir(final))
}

// CreateTemp creates final's temporary file (TempPath), new, with perm (before the umask), for
// Commit. What is there already, a leftover of a killed run or anything else under that
// predictable name, is removed rather than opened: a symbolic link (planted in a shared folder
// such as /tmp) would lead the bytes to the file it names, outside the folder, and a leftover
// would keep its own mode. A name that cannot be removed (another user's, in a sticky folder)
// fails the create.
func CreateTemp(final string, perm os.FileMode) (*os.File, error) {
	tmp := TempPath(final)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("create %s: remove the temporary file %s left there: %w", final, tmp, err)
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", final, err)
	}
	return f, nil
}

// WriteFile writes data to path whole or not at all, with the file's permissions (before the
// umask): a temporary name (CreateTemp), then Commit.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := CreateTemp(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := Commit(f, path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// WriteJSON writes v as indented JSON, ending with a newline, to path with WriteFile (0644).
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFile(path, append(data, '\n'), 0o644)
}

// SyncDir fsyncs a folder, making renames and creations inside it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
