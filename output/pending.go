package output

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/rekey/rekey/store"
)

// PendingFile is a file of an output whose name is known only once it is finished: rekey
// replicate names a roll's files after the roll's last offset.
//
// On a local (or shared, mounted) folder it is written under a temporary name beside its final
// one (store.TempPrefix + the pending name, which CommitLock.SweepOwned reads) and renamed when
// it commits (store.Renamer).
//
// On an object store an upload is named when it starts, so the file is spooled to an unlinked
// local file (a crash leaves nothing) and uploaded under its final name when it commits, visible
// once complete.
type PendingFile struct {
	st    store.Store
	local store.Renamer // a folder's writer; nil: spooled
	spool *os.File
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
		return &PendingFile{st: st, local: rn}, nil
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

// Commit gives the finished file its final name: a rename on a folder (fsynced with its folder),
// an upload on an object store.
func (p *PendingFile) Commit(ctx context.Context, name string) error {
	if p.local != nil {
		if _, err := p.local.CommitAs(ctx, name); err != nil {
			return fmt.Errorf("commit %s: %w", p.st.Location(name), err)
		}
		return nil
	}
	defer p.spool.Close()
	if _, err := p.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("commit %s: rewind the spool file: %w", name, err)
	}
	w, err := p.st.Create(ctx, name)
	if err != nil {
		return fmt.Errorf("commit %s: %w", p.st.Location(name), err)
	}
	if _, err := io.Copy(w, p.spool); err != nil {
		w.Abort()
		return fmt.Errorf("commit %s: %w", p.st.Location(name), err)
	}
	if _, err := w.Commit(ctx); err != nil {
		w.Abort()
		return fmt.Errorf("commit %s: %w", p.st.Location(name), err)
	}
	return nil
}

// Abort throws the uncommitted file away.
func (p *PendingFile) Abort() {
	if p.local != nil {
		p.local.Abort()
		return
	}
	p.spool.Close()
}

// Abandon leaves the file as a killed process would (fault tests): a folder's temporary file
// stays (closed) for the partition's next owner to remove; a spool file is unlinked already.
func (p *PendingFile) Abandon() {
	if p.local != nil {
		p.local.Finish()
		return
	}
	p.spool.Close()
}
