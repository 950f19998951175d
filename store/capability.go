package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The optional abilities of a store (a path on the local disk, hard links and renames, a
// server-side copy), resolved here as database/sql resolves a driver's optional interfaces:
// callers ask for the ability and get the fallback where a store lacks it, never asserting on
// a type themselves.

// LocalPath returns the folder a store keeps its objects in when it is a local folder (Dir):
// what needs a path on this machine (an flock, a spill beside the output) asks for it; ok is
// false for an object store.
func LocalPath(st Store) (path string, ok bool) {
	if d, isDir := st.(Dir); isDir {
		return d.Path(), true
	}
	return "", false
}

// DisplayName is how messages name the store st opened from given (--out): a local folder as
// given, an object store by its location (no query, no secret).
func DisplayName(st Store, given string) string {
	if _, ok := LocalPath(st); ok {
		return given
	}
	return st.Location("")
}

// MakeRoot creates the folder of a local store (and its parents) if it is missing, so that a
// folder that cannot be made fails before anything is read; an object store has none to make.
func MakeRoot(st Store) error {
	if p, ok := LocalPath(st); ok {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("create the folder %s: %w", p, err)
		}
	}
	return nil
}

// ResolvedLocation is st's location ending in a separator, through symbolic links for a local
// folder (as far as it exists), so that one output nested in another shows as a prefix of it.
func ResolvedLocation(st Store) string {
	p, ok := LocalPath(st)
	if !ok {
		return st.Location("")
	}
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
			break
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
	return filepath.Join(p, rest) + string(filepath.Separator)
}

// CanLink tells whether Link can place objects of from in to: both are local folders.
func CanLink(from, to Store) bool {
	_, ok := LocalPath(from)
	_, ok2 := LocalPath(to)
	return ok && ok2
}

// Link puts the committed object src of from at dst of to without copying its bytes: a hard
// link, or with move a rename, between two local folders. done is false, with no error, when
// the stores cannot (either is not a local folder, or they are on two filesystems, or dst is
// there already), and the caller copies the bytes instead (and, moving, removes src once the
// copy is committed). The caller makes the new names durable with SyncFolder.
func Link(from Store, src string, to Store, dst string, move bool) (done bool, err error) {
	if !CanLink(from, to) {
		return false, nil
	}
	fromDir, _ := LocalPath(from)
	toDir, _ := LocalPath(to)
	if err := CheckName(src); err != nil {
		return false, err
	}
	if err := CheckName(dst); err != nil {
		return false, err
	}
	if err := checkFolders(toDir, dst); err != nil {
		return false, err
	}
	srcPath, dstPath := filepath.Join(fromDir, filepath.FromSlash(src)), filepath.Join(toDir, filepath.FromSlash(dst))
	if err := os.MkdirAll(filepath.Dir(dstPath), 0o755); err != nil {
		return false, err
	}
	if move {
		err := os.Rename(srcPath, dstPath)
		if err != nil && errors.Is(err, syscall.EXDEV) {
			return false, nil
		}
		return err == nil, err
	}
	err = os.Link(srcPath, dstPath)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrExist) || isCrossDevice(err):
		return false, nil
	}
	return false, fmt.Errorf("hard-link %s: %w (use --files copy)", srcPath, err)
}

func isCrossDevice(err error) bool {
	var le *os.LinkError
	return errors.As(err, &le) && (strings.Contains(le.Err.Error(), "cross-device") || strings.Contains(le.Err.Error(), "not permitted") || strings.Contains(le.Err.Error(), "not supported"))
}

// SyncFolder makes the names Link placed under folder of st durable (an fsync of the folder on
// a disk); an object store's objects are durable once placed.
func SyncFolder(st Store, folder string) error {
	p, ok := LocalPath(st)
	if !ok {
		return nil
	}
	if folder != "" {
		p = filepath.Join(p, filepath.FromSlash(folder))
	}
	return SyncDir(p)
}

// ServerCopy copies the object src of from to dst of to by the server, with no byte through
// rekey, when to can (Copier: within one bucket or endpoint). done is false, with no error,
// when it cannot, and the caller copies the bytes.
func ServerCopy(ctx context.Context, from Store, src string, to Store, dst string) (done bool, err error) {
	c, ok := to.(Copier)
	if !ok {
		return false, nil
	}
	return c.CopyFrom(ctx, from, src, dst)
}
