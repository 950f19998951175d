// Package atomicfile writes a file committed whole on a local disk: the temporary name a file has
// until it is committed, the fsync of a folder that makes a rename inside it durable (both shared
// with the local store, package store), and the helpers for the files rekey writes beside no store
// (generated data, the summary, a report, verify's repair file).
package atomicfile

import (
	"encoding/json"
	"fmt"
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

// WriteFile writes data to path whole or not at all, with the file's permissions (before the
// umask): a temporary name, then Commit.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(TempPath(path), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
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
