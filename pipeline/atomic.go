package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rekey/rekey/internal/atomicfile"
)

// TempPrefix starts the name of every file rekey has not committed yet. A reader that skips
// dot-files never sees a partial file, and a resumed run deletes leftovers with this prefix.
// The local store (store) writes through it; these helpers serve what is not a Store yet.
const TempPrefix = atomicfile.TempPrefix

// TempPath returns the temporary name a file is written under before Commit renames it.
func TempPath(final string) string {
	return filepath.Join(filepath.Dir(final), TempPrefix+filepath.Base(final))
}

// IsTemp tells whether a file name is an uncommitted temporary.
func IsTemp(name string) bool { return strings.HasPrefix(filepath.Base(name), TempPrefix) }

// CommitFile makes a finished temporary file durable under its final name: fsync the data,
// rename, fsync the directory so the rename itself survives a crash. f is closed.
func CommitFile(f *os.File, final string) error {
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

// WriteFileAtomicMode is WriteFileAtomic with the file's permissions (before the umask).
func WriteFileAtomicMode(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(TempPath(path), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := CommitFile(f, path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// SyncDir fsyncs a directory, making renames and creations inside it durable.
func SyncDir(dir string) error { return atomicfile.SyncDir(dir) }

// WriteJSONAtomic writes v as indented JSON, ending with a newline, to path with WriteFileAtomic.
func WriteJSONAtomic(path string, v any) error {
	return WriteJSONAtomicMode(path, v, 0o644)
}

// WriteJSONAtomicMode is WriteJSONAtomic with the file's permissions (before the umask).
func WriteJSONAtomicMode(path string, v any, perm os.FileMode) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFileAtomicMode(path, append(data, '\n'), perm)
}

// ReadJSON decodes the JSON file at path into v. It returns false, and no error, when there is
// no such file; what names the file in the error when it cannot be read ("read checkpoint: ...").
func ReadJSON(path, what string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", what, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s is damaged: %w", path, err)
	}
	return true, nil
}
