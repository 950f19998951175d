package replicate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Where a roll's files go until the roll commits.
//
// On a local (or shared, mounted) folder, each file is written under a temporary name beside its
// final one and renamed when the roll commits, under the folder's lock.
//
// On an object store a file's name cannot change once it is uploaded, and a segment's name holds
// the roll's last offset, which is known only when the roll closes. So a roll's files are written
// to unlinked spool files on local disk (the roll's size, per partition: --roll-size bounds it)
// and uploaded under their final names when the roll commits, each made visible by its own
// complete upload; the manifest, written after every upload, is still the commit point. A crash
// leaves no spool file (they were unlinked when created), perhaps objects the manifest does not
// list (removed when the partition is next assigned, through List and Remove) and unfinished
// uploads (aborted by Sweep at start).

// onStore tells whether the output is an object store (the roll's files are spooled locally).
func (r *Replicator) onStore() bool { return r.lock != nil }

// createFile starts one of a roll's files, to be committed as relDir/<segment name>.ext.
func (r *Replicator) createFile(relDir string, partition int, first int64, ext string, perm os.FileMode) (*os.File, error) {
	if r.onStore() {
		f, err := os.CreateTemp(r.cfg.SpoolDir, "rekey-roll-*."+ext)
		if err != nil {
			return nil, fmt.Errorf("create a spool file in %s: %w (set TMPDIR or the spool folder to a folder with room for a roll per partition)", r.spoolDir(), err)
		}
		// unlinked at once: the open file keeps its bytes until the upload, a crash leaves nothing
		_ = os.Remove(f.Name())
		return f, nil
	}
	dir := filepath.Join(r.cfg.OutDir, filepath.FromSlash(relDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	return os.OpenFile(filepath.Join(dir, r.tmpName(partition, first, ext)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
}

func (r *Replicator) spoolDir() string {
	if r.cfg.SpoolDir != "" {
		return r.cfg.SpoolDir
	}
	return os.TempDir()
}

// finishFile ends the writing of a roll's file: on a folder it is fsynced and closed under its
// temporary name; a spool file stays open for its upload.
func (r *Replicator) finishFile(f *os.File) error {
	if r.onStore() {
		return nil
	}
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// commitFile gives a finished file its final name rel: a rename on a folder (the caller fsyncs
// the folders), an upload on an object store (visible once complete; the spool file is closed).
func (r *Replicator) commitFile(ctx context.Context, f *os.File, rel string) error {
	if !r.onStore() {
		if err := os.Rename(f.Name(), filepath.Join(r.cfg.OutDir, filepath.FromSlash(rel))); err != nil {
			return fmt.Errorf("commit %s: %w", rel, err)
		}
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("commit %s: rewind the spool file: %w", rel, err)
	}
	w, err := r.cfg.Store.Create(ctx, rel)
	if err != nil {
		return fmt.Errorf("commit %s: %w", r.cfg.Store.Location(rel), err)
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Abort()
		return fmt.Errorf("commit %s: %w", r.cfg.Store.Location(rel), err)
	}
	if _, err := w.Commit(ctx); err != nil {
		w.Abort()
		return fmt.Errorf("commit %s: %w", r.cfg.Store.Location(rel), err)
	}
	return nil
}

// dropFile closes an uncommitted file; remove: a folder's temporary file is removed too (false:
// left as a kill would leave it). A spool file is unlinked already.
func (r *Replicator) dropFile(f *os.File, remove bool) {
	f.Close()
	if remove && !r.onStore() {
		os.Remove(f.Name())
	}
}
