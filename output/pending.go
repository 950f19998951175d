package output

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rekey/rekey/store"
)

// PendingFile is a file of an output whose name is known only once it is finished: rekey
// replicate names a roll's files after the roll's last offset.
//
// On a local (or shared, mounted) folder it is written under a temporary name beside its final
// one (store.TempPrefix + the pending name, which CommitLock.SweepOwned reads), which a reader
// skipping dot-files (the bulk load) never sees, and renamed (store.Renamer) only once the
// manifest that commits it names it (Stage, then Commit): a crash between the two leaves the
// rename to whoever holds the output next (RenameStaged), never a final name no manifest lists.
//
// On an object store an upload is named when it starts, so the file is spooled to an unlinked
// local file (a crash leaves nothing) and uploaded under its final name when it is staged,
// visible once complete (before the manifest names it: an object cannot be renamed).
type PendingFile struct {
	st       store.Store
	local    store.Renamer // a folder's writer; nil: spooled
	temp     string        // a folder's file's temporary name in st
	spool    *os.File
	uploaded bool
}

// Staged is a file of a committed roll on a folder, still under its temporary name Temp, to be
// renamed to its final name Name: the manifest lists Name (and this rename) before the rename, so
// that the folder never shows a file no manifest lists.
type Staged struct {
	Temp string `json:"temporary"`
	Name string `json:"name"`
}

// Check refuses a rename read back from a manifest that would leave its folder: Name is a
// committed name in the output, Temp a temporary name beside it.
func (s Staged) Check() error {
	if err := store.CheckName(s.Name); err != nil {
		return err
	}
	dir, base := path.Split(s.Temp)
	if dir != path.Dir(s.Name)+"/" || !strings.HasPrefix(base, store.TempPrefix) || strings.ContainsAny(base, `/\`) || !filepath.IsLocal(base) {
		return fmt.Errorf("%q is not a temporary name beside %q: %w", s.Temp, s.Name, ErrUnsafePath)
	}
	return nil
}

// CreatePending starts a file under folder dir of st, named pending until it commits; spoolDir
// holds the spool of an object store's file ("": os.TempDir()).
func CreatePending(ctx context.Context, st store.Store, dir, pending, spoolDir string) (*PendingFile, error) {
	if _, ok := st.(store.Dir); ok {
		w, err := st.Create(ctx, dir+"/"+pending)
		if err != nil {
			return nil, err
		}
		rn, ok := w.(store.Renamer)
		if !ok {
			w.Abort()
			return nil, fmt.Errorf("create %s: the folder's writer cannot commit under another name", st.Location(dir+"/"+pending))
		}
		return &PendingFile{st: st, local: rn, temp: dir + "/" + store.TempPrefix + pending}, nil
	}
	f, err := os.CreateTemp(spoolDir, "rekey-roll-*"+path.Ext(pending))
	if err != nil {
		if spoolDir == "" {
			spoolDir = os.TempDir()
		}
		return nil, fmt.Errorf("create a spool file in %s: %w (set TMPDIR or the spool folder to a folder with room for a roll per partition)", spoolDir, err)
	}
	// unlinked at once: the open file keeps its bytes until the upload, a crash leaves nothing
	_ = os.Remove(f.Name())
	return &PendingFile{st: st, spool: f}, nil
}

func (p *PendingFile) Write(b []byte) (int, error) {
	if p.local != nil {
		return p.local.Write(b)
	}
	return p.spool.Write(b)
}

// Finish ends the writing: a folder's file is made durable (fsynced) under its temporary name;
// a spool file stays open for its upload.
func (p *PendingFile) Finish() error {
	if p.local != nil {
		return p.local.Finish()
	}
	return nil
}

// Stage readies the finished file to be committed as name once a manifest lists name. On a
// folder the file stays under its temporary name: Stage checks it is still there (the next owner
// of a replicated partition removes a former owner's files) and returns the rename that Commit
// does (RenameStaged after a crash). On an object store the file is uploaded under name now, and
// Stage returns nil.
func (p *PendingFile) Stage(ctx context.Context, name string) (*Staged, error) {
	if p.local != nil {
		root, _ := store.LocalPath(p.st)
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p.temp))); err != nil {
			return nil, fmt.Errorf("commit %s: its temporary file: %w", p.st.Location(name), err)
		}
		return &Staged{Temp: p.temp, Name: name}, nil
	}
	defer p.spool.Close()
	if _, err := p.spool.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("commit %s: rewind the spool file: %w", name, err)
	}
	w, err := p.st.Create(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", p.st.Location(name), err)
	}
	if _, err := io.Copy(w, p.spool); err != nil {
		w.Abort()
		return nil, fmt.Errorf("commit %s: %w", p.st.Location(name), err)
	}
	if _, err := w.Commit(ctx); err != nil {
		w.Abort()
		return nil, fmt.Errorf("commit %s: %w", p.st.Location(name), err)
	}
	p.uploaded = true
	return nil, nil
}

// Commit gives the staged file its final name: a rename on a folder (fsynced with its folder);
// on an object store Stage uploaded it already.
func (p *PendingFile) Commit(ctx context.Context, name string) error {
	if p.local == nil {
		if !p.uploaded {
			return fmt.Errorf("commit %s: the file was not staged", p.st.Location(name))
		}
		return nil
	}
	if _, err := p.local.CommitAs(ctx, name); err != nil {
		return fmt.Errorf("commit %s: %w", p.st.Location(name), err)
	}
	return nil
}

// RenameStaged does the renames of staged files that a crash left undone (the manifest that
// lists them is written): a file renamed already is left as it is. A file that is under neither
// name is an error, naming it.
func RenameStaged(ctx context.Context, st store.Store, files []Staged) error {
	root, ok := store.LocalPath(st)
	if !ok || len(files) == 0 {
		return nil
	}
	dirs := map[string]bool{}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := f.Check(); err != nil {
			return err
		}
		tmp, final := filepath.Join(root, filepath.FromSlash(f.Temp)), filepath.Join(root, filepath.FromSlash(f.Name))
		err := os.Rename(tmp, final)
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(final); serr == nil {
				continue // renamed before the crash
			}
			return fmt.Errorf("commit %s: neither it nor its temporary file %s is there: a committed file is lost", st.Location(f.Name), path.Base(f.Temp))
		}
		if err != nil {
			return fmt.Errorf("commit %s: %w", st.Location(f.Name), err)
		}
		dirs[filepath.Dir(final)] = true
	}
	for d := range dirs {
		if err := store.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// Abort throws the uncommitted file away.
func (p *PendingFile) Abort() {
	if p.local != nil {
		p.local.Abort()
		return
	}
	if !p.uploaded {
		p.spool.Close()
	}
}

// Abandon leaves the file as a killed process would (fault tests): a folder's temporary file
// stays (closed) for the partition's next owner to remove; a spool file is unlinked already.
func (p *PendingFile) Abandon() {
	if p.local != nil {
		p.local.Finish()
		return
	}
	if !p.uploaded {
		p.spool.Close()
	}
}
