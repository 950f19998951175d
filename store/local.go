package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/rekey/rekey/internal/atomicfile"
)

// TempPrefix starts the name of every file the local store has not committed yet. A reader that
// skips dot-files (Spark, LTS) never sees a partial file, and Sweep deletes leftovers with it.
const TempPrefix = atomicfile.TempPrefix

// ErrBadName is wrapped by the errors of a Store given a name that is not a clean relative
// slash-separated path (absolute, "..", a backslash, a temporary name).
var ErrBadName = errors.New("bad object name")

// CheckName refuses a name no store accepts: empty, absolute, climbing out with "..", not in
// clean form, holding a backslash or NUL, or with a segment that starts with TempPrefix.
func CheckName(name string) error {
	why := NameProblem(name)
	if why == "" {
		for _, seg := range strings.Split(name, "/") {
			if strings.HasPrefix(seg, TempPrefix) {
				why = "is a temporary name"
			}
		}
	}
	if why != "" {
		return fmt.Errorf("%w %q: it %s", ErrBadName, name, why)
	}
	return nil
}

// NameProblem says why name is not a clean, relative, slash-separated path that stays inside
// its root ("is absolute", "climbs out with .."...), or "" when it is one. CheckName and
// output.CheckRelPath (paths read from manifests and checkpoints) share it.
func NameProblem(name string) string {
	switch {
	case name == "":
		return "is empty"
	case strings.ContainsRune(name, '\\'):
		return "holds a backslash (names are slash-separated)"
	case strings.IndexByte(name, 0) >= 0:
		return "holds a NUL byte"
	case path.IsAbs(name) || filepath.IsAbs(filepath.FromSlash(name)) || filepath.VolumeName(filepath.FromSlash(name)) != "":
		return "is absolute"
	case name == ".." || strings.HasPrefix(name, "../") || strings.HasSuffix(name, "/..") || strings.Contains(name, "/../"):
		return "climbs out with .."
	case path.Clean(name) != name || strings.HasSuffix(name, "/"):
		return "is not in clean form (. or empty segments)"
	case !filepath.IsLocal(filepath.FromSlash(name)):
		return "is not local to its root"
	}
	return ""
}

// Local is a Store on a local folder. Create writes "<folder>/.rekey-tmp-<base>"; Commit fsyncs
// it, renames it to its name and fsyncs the folder (and every folder it had to create), so a
// crash leaves either the whole object or nothing but a temporary file that Sweep removes.
type Local struct {
	root    string
	private func(name string) bool
}

var _ Dir = (*Local)(nil)

// LocalOption sets up a Local store (NewLocal, or Open given a folder).
type LocalOption func(*Local)

// PrivateNames makes the store create the objects private matches 0600, the owner's only, and
// the rest 0644 (before the umask). The store knows no names: the output that writes through
// it tells which of its objects are private (output.PrivateName).
func PrivateNames(private func(name string) bool) LocalOption {
	return func(l *Local) { l.private = private }
}

// NewLocal opens the folder dir as a store (it is created by the first write). Its objects are
// created 0644 unless an option says otherwise.
func NewLocal(dir string, opts ...LocalOption) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", dir, err)
	}
	l := &Local{root: abs}
	for _, o := range opts {
		o(l)
	}
	return l, nil
}

// Path is the folder's absolute path.
func (l *Local) Path() string { return l.root }

func (l *Local) full(name string) string { return filepath.Join(l.root, filepath.FromSlash(name)) }

func (l *Local) perm(name string) os.FileMode {
	if l.private != nil && l.private(name) {
		return 0o600
	}
	return 0o644
}

// Location is the object's absolute path; a name ending in "/" (or "") keeps the slash.
func (l *Local) Location(name string) string {
	p := l.full(name)
	if name == "" || strings.HasSuffix(name, "/") {
		p += string(filepath.Separator)
	}
	return p
}

// Create starts writing name under a temporary name in the same folder.
func (l *Local) Create(_ context.Context, name string) (Writer, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if err := checkFolders(l.root, name); err != nil {
		return nil, err
	}
	final := l.full(name)
	dir := filepath.Dir(final)
	tmp := filepath.Join(dir, TempPrefix+filepath.Base(final))
	var f *os.File
	err := retryVanishedFolder(func() error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if afterMkdirs != nil {
			afterMkdirs(dir)
		}
		var err error
		// not through a symbolic link, which would lead the bytes outside the folder
		f, err = os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_NOFOLLOW, l.perm(name))
		return err
	})
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("create %s: %w: %s is a symbolic link, which could lead outside %s: remove it", name, ErrBadName, tmp, l.root)
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	if err := f.Chmod(l.perm(name)); err != nil { // a leftover may be wider
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	return &localWriter{root: l.root, f: f, tmp: tmp, final: final, name: name}, nil
}

// checkFolders refuses name, in the store at root, when a folder on its way that exists already
// is a symbolic link, as lstat does for reading: a link could lead outside the store although the
// name reads as inside (root itself may be one). The folders still missing are made by Create.
func checkFolders(root, name string) error {
	segs := strings.Split(name, "/")
	p := root
	for i, s := range segs[:len(segs)-1] {
		p = filepath.Join(p, s)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // missing (Create makes it), or not a folder (Create says so)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w %q: %s is a symbolic link, which could lead outside %s: make it a folder, or give --out the folder it leads to", ErrBadName, name, path.Join(segs[:i+1]...), root)
		}
	}
	return nil
}

// listVisit, when set (by tests), runs as List's walk comes to each path.
var listVisit func(p string)

// afterMkdirs, when set (by tests), runs between Create's making of the folder and its opening
// of the file: where another process may remove the folder.
var afterMkdirs func(dir string)

// retryVanishedFolder runs op again when it fails because a folder does not exist: another
// process sharing the output (a shard of it) removes the folders it leaves empty, and may remove
// one between this process's making of it and its use.
func retryVanishedFolder(op func() error) error {
	for attempt := 0; ; attempt++ {
		err := op()
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt == 3 {
			return err
		}
	}
}

type localWriter struct {
	root       string
	f          *os.File // nil once finished
	tmp, final string
	name       string
	n          int64
	committed  bool
	aborted    bool
}

func (w *localWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *localWriter) Commit(context.Context) (int64, error) {
	if w.committed || w.aborted {
		return 0, fmt.Errorf("commit %s: the writer is already closed", w.name)
	}
	if err := w.Finish(); err != nil {
		return 0, err
	}
	err := retryVanishedFolder(func() error {
		if err := os.MkdirAll(filepath.Dir(w.final), 0o755); err != nil { // CommitAs's folder
			return err
		}
		return os.Rename(w.tmp, w.final)
	})
	if err != nil {
		return 0, fmt.Errorf("commit %s: %w", w.name, err)
	}
	w.committed = true
	// The rename, and every folder on the way to it (the output's own folder included), must
	// survive a crash: a folder this writer found may be one another process sharing the output
	// made (or made again) and has not synced into its parent yet.
	for d := filepath.Dir(w.final); ; d = filepath.Dir(d) {
		if err := SyncDir(d); err != nil {
			return 0, err
		}
		if d == filepath.Dir(w.root) || !strings.HasPrefix(d, filepath.Dir(w.root)) {
			break
		}
	}
	return w.n, nil
}

// Finish fsyncs and closes the temporary file.
func (w *localWriter) Finish() error {
	if w.f == nil {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", w.name, err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.name, err)
	}
	w.f = nil
	return nil
}

// CommitAs commits the object under name instead of the one it was created with.
func (w *localWriter) CommitAs(ctx context.Context, name string) (int64, error) {
	if err := CheckName(name); err != nil {
		return 0, err
	}
	if err := checkFolders(w.root, name); err != nil {
		return 0, err
	}
	w.final, w.name = filepath.Join(w.root, filepath.FromSlash(name)), name
	return w.Commit(ctx)
}

func (w *localWriter) Abort() error {
	if w.committed || w.aborted {
		return nil
	}
	w.aborted = true
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if err := os.Remove(w.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("abort %s: %w", w.name, err)
	}
	return nil
}

// SyncDir fsyncs a folder, making renames and creations inside it durable.
func SyncDir(dir string) error { return atomicfile.SyncDir(dir) }

// Put writes data through a temporary file, fsync and rename.
func (l *Local) Put(ctx context.Context, name string, data []byte) error {
	w, err := l.Create(ctx, name)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Abort()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := w.Commit(ctx); err != nil {
		w.Abort()
		return err
	}
	return nil
}

// lstat checks name and that no folder or file on its way is a symbolic link: a link could
// lead outside the store although the name reads as inside (root itself may be one).
func (l *Local) lstat(name string) (string, fs.FileInfo, error) {
	if err := CheckName(name); err != nil {
		return "", nil, err
	}
	p := l.root
	segs := strings.Split(name, "/")
	var fi fs.FileInfo
	var err error
	for i, s := range segs {
		p = filepath.Join(p, s)
		if fi, err = os.Lstat(p); err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, fmt.Errorf("%w %q: %s is a symbolic link, which could lead outside %s", ErrBadName, name, path.Join(segs[:i+1]...), l.root)
		}
	}
	if !fi.Mode().IsRegular() {
		return "", nil, fmt.Errorf("%s is not a regular file (%s): %w", name, fi.Mode().Type(), ErrNotExist)
	}
	return p, fi, nil
}

// Get reads a whole object.
func (l *Local) Get(_ context.Context, name string) ([]byte, error) {
	p, _, err := l.lstat(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// Stat describes an object.
func (l *Local) Stat(_ context.Context, name string) (Info, error) {
	_, fi, err := l.lstat(name)
	if err != nil {
		return Info{}, err
	}
	return Info{Name: name, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

// Open opens an object for random access.
func (l *Local) Open(_ context.Context, name string) (Reader, error) {
	p, _, err := l.lstat(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &localReader{File: f, size: fi.Size()}, nil
}

type localReader struct {
	*os.File
	size int64
}

func (r *localReader) Size() int64 { return r.size }

// List walks the folder under prefix; temporary files, folders, links and anything but regular
// files are not objects.
func (l *Local) List(_ context.Context, prefix string) ([]Info, error) {
	dir := l.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		if err := CheckName(prefix[:i]); err != nil {
			return nil, err
		}
		dir = l.full(prefix[:i])
	}
	dir = l.walkStart(dir)
	var out []Info
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if listVisit != nil {
			listVisit(p)
		}
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a folder removed meanwhile (empty: another shard's pruning)
			}
			return err
		}
		if strings.HasPrefix(d.Name(), TempPrefix) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		} else if err != nil {
			return err
		}
		out = append(out, Info{Name: name, Size: fi.Size(), Modified: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.Location(prefix), err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// walkStart is the path List and Sweep walk the folder dir from. The root may be a symbolic
// link to the output's folder (lstat accepts it), and WalkDir does not descend into a link it is
// given: a trailing separator makes the walk start in the folder the link leads to, so that the
// root's objects are not missed (an output holding a previous run would look empty).
func (l *Local) walkStart(dir string) string {
	if dir == l.root && !strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + string(filepath.Separator)
	}
	return dir
}

// Remove deletes the objects, then the folders they leave empty (not the root).
func (l *Local) Remove(_ context.Context, names ...string) error {
	dirs := map[string]bool{}
	for _, name := range names {
		if err := CheckName(name); err != nil {
			return err
		}
		p := l.full(name)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", name, err)
		}
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		l.pruneDirs(d)
	}
	return nil
}

// pruneDirs removes dir and its parents while they are empty (an error means not empty).
func (l *Local) pruneDirs(dir string) {
	for d := dir; d != l.root && strings.HasPrefix(d, l.root+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			if _, err := os.Stat(d); err == nil {
				SyncDir(d) // the entries removed from it
			}
			return
		}
	}
}

// Sweep removes the temporary files under prefix.
func (l *Local) Sweep(_ context.Context, prefix string) error {
	dir := l.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		if err := CheckName(prefix[:i]); err != nil {
			return err
		}
		dir = l.full(prefix[:i])
	}
	dir = l.walkStart(dir)
	swept := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a folder removed meanwhile (empty: another shard's pruning)
			}
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), TempPrefix) {
			return nil
		}
		// the name it was to be committed under decides whether prefix covers it
		rel, _ := filepath.Rel(l.root, filepath.Join(filepath.Dir(p), strings.TrimPrefix(d.Name(), TempPrefix)))
		if !strings.HasPrefix(filepath.ToSlash(rel), prefix) {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		swept[filepath.Dir(p)] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("sweep %s: %w", l.Location(prefix), err)
	}
	for d := range swept {
		l.pruneDirs(d) // folders only the unfinished writers needed
	}
	return nil
}
