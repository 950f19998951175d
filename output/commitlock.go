package output

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/store"
)

// CommitLock is what the members of a rekey replicate consumer group writing one output take for
// each change of its shared files (replicate.json, ddl.sql and bulkload.json at start, a roll's
// files and manifest.json, a partition's clean-up when it is assigned). Where they are is what
// differs:
//
//   - members SHARE a local (or mounted) folder: each takes an flock on ReplicateLockFile for those
//     moments only, and the file holds the manifest's revision, so that a member rereads
//     manifest.json when another one changed it;
//   - on an object store, which offers no lock members could share, ONE member holds the prefix's
//     lock (StoreLock) for its whole run: Lock only checks that it still does.
type CommitLock interface {
	// Lock waits for the lock and returns the output's revision: when it differs from the one
	// the holder last saw, another writer changed the shared files since.
	Lock(ctx context.Context) (rev int64, err error)
	// Bump announces revision rev, the next one, before the shared files change (the lock is
	// held): a writer killed between the two leaves the others rereading unchanged files,
	// never trusting a stale copy.
	Bump(rev int64) error
	Unlock()
	// Exclusive tells whether the lock is this process's alone for its whole run (an object
	// store): the consumer group may then have no other member.
	Exclusive() bool
	// SweepOwned removes, under folders, the unfinished (temporary) files whose final names
	// owned accepts: what a killed writer left of what this holder now owns (the lock is held).
	// On an object store, unfinished uploads were aborted when the lock was taken.
	SweepOwned(ctx context.Context, folders []string, owned func(name string) bool) error
	// Release gives the lock up.
	Release() error
	// Abandon leaves the lock as a killed process would (fault tests).
	Abandon()
}

// OpenCommitLock opens the commit lock of the replication output st (out names it in messages).
// On a folder it removes the temporary files a killed member left at its top (only written
// under the lock). On an object store it takes the prefix's lock, waiting for a stale one to
// expire, and aborts the unfinished uploads a killed member left when the prefix holds a
// replication or nothing (anything else the run refuses before writing, and its uploads are left
// alone); a lock held by a live process is refused with an error wrapping ErrRefusedResume.
func OpenCommitLock(ctx context.Context, st store.Store, out string, log *zap.Logger) (CommitLock, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if d, ok := st.(store.Dir); ok {
		return openFolderCommitLock(ctx, d.Path(), log)
	}
	lock, err := LockStore(ctx, st, out, log, true)
	if err != nil {
		return nil, err
	}
	// A prefix holding anything but a replication is refused before the run writes there
	// (CheckReplicationOutput): the uploads in flight under it are no killed member's, and a
	// sweep aborts those under rekey's names (SweepOwn), whoever's. replicate.json names a
	// replication at once; only a prefix without it is listed.
	_, err = st.Stat(ctx, ReplicateStateFile)
	if store.IsNotExist(err) {
		err = CheckReplicationOutput(ctx, st, out)
	}
	switch {
	case err == nil:
		if err := SweepOwn(ctx, st); err != nil {
			lock.Release()
			return nil, fmt.Errorf("--out %s: %w", out, err)
		}
	case !errors.Is(err, ErrRefusedResume):
		lock.Release()
		return nil, err
	}
	return &bucketCommitLock{lock: lock}, nil
}

// folderCommitLock is the flock on a shared folder's ReplicateLockFile.
type folderCommitLock struct {
	dir string
	f   *os.File
	log *zap.Logger
}

func openFolderCommitLock(ctx context.Context, dir string, log *zap.Logger) (*folderCommitLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	// not through a symbolic link: each commit writes the revision into the file, which would
	// be whatever file outside the output the link leads to
	f, err := os.OpenFile(filepath.Join(dir, ReplicateLockFile), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("open %s: it is a symbolic link, which could lead outside the output: remove it while no member runs (rekey makes the lock file itself)", filepath.Join(dir, ReplicateLockFile))
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", ReplicateLockFile, err)
	}
	l := &folderCommitLock{dir: dir, f: f, log: log}
	if _, err := l.Lock(ctx); err != nil {
		f.Close()
		return nil, err
	}
	defer l.Unlock()
	// temporary files at the top of the folder are only written under this lock: whoever holds
	// it may remove those a killed member left
	if err := l.SweepOwned(ctx, []string{""}, func(string) bool { return true }); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (l *folderCommitLock) path() string { return filepath.Join(l.dir, ReplicateLockFile) }

func (l *folderCommitLock) Lock(ctx context.Context) (int64, error) {
	fd := int(l.f.Fd())
	err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == syscall.EWOULDBLOCK {
		// members hold it for a roll's manifest and renames: a long wait is not one of them
		slow := time.AfterFunc(time.Minute, func() {
			l.log.Warn("waiting over a minute for the output folder's lock, held by another process (an earlier rekey replicate, which held it for its whole run?)",
				zap.String("lock", l.path()))
		})
		err = waitFlock(ctx, fd)
		slow.Stop()
	}
	if err != nil {
		return 0, fmt.Errorf("lock %s: %w", l.path(), err)
	}
	if err := l.current(); err != nil {
		l.Unlock()
		return 0, err
	}
	rev, err := l.readRev()
	if err != nil {
		l.Unlock()
		return 0, err
	}
	return rev, nil
}

// current checks that the file this process locked is still the folder's lock file. One removed
// while the process held it open (by hand, by a clean-up of .lock files) is another file than
// the one a member started since creates and locks: the two would change the shared files at
// once, each trusting its own copy of manifest.json, and remove each other's committed files.
func (l *folderCommitLock) current() error {
	held, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("lock %s: %w", l.path(), err)
	}
	now, err := os.Lstat(l.path())
	if err == nil && os.SameFile(held, now) {
		return nil
	}
	how := "removed"
	if err == nil {
		how = "replaced"
	}
	return fmt.Errorf("lock %s: the file was %s while this process held it open, so processes started since lock another one: "+
		"this one stops before it changes the output; run it again (it locks the folder's file), and never remove %s while members run",
		l.path(), how, ReplicateLockFile)
}

// waitFlock takes the exclusive flock of fd, held by another process, once it is released, or
// returns ctx's error when ctx ends first: a blocking flock cannot be interrupted, and a holder
// that never lets go (a frozen process, an earlier rekey that held it for its whole run) would
// keep even an abort waiting. It tries again every few milliseconds, as members hold the lock
// for moments.
func waitFlock(ctx context.Context, fd int) error {
	delay := time.Millisecond
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			return err
		}
		delay = min(2*delay, 20*time.Millisecond)
		t.Reset(delay)
	}
}

func (l *folderCommitLock) Unlock() { syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }

// FlockFile takes the exclusive flock of the file at path (created, never through a symbolic
// link), which processes sharing its folder take in turn for a moment's change of a file there,
// waiting while another one holds it until ctx ends; unlock releases it.
func FlockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	fd := int(f.Fd())
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == syscall.EWOULDBLOCK {
		err = waitFlock(ctx, fd)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the flock
}

// readRev reads the revision in the lock file (0 when empty).
func (l *folderCommitLock) readRev() (int64, error) {
	var b [24]byte
	n, err := l.f.ReadAt(b[:], 0)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("read %s: %w", ReplicateLockFile, err)
	}
	s := strings.TrimSpace(string(b[:n]))
	if s == "" {
		return 0, nil
	}
	rev, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is damaged (%q): remove it while no member runs", l.path(), s)
	}
	return rev, nil
}

func (l *folderCommitLock) Bump(rev int64) error {
	// revisions only grow, so the new number overwrites the old one wholly: no truncation,
	// which a crash could leave as an empty file reading as revision 0
	if _, err := l.f.WriteAt([]byte(strconv.FormatInt(rev, 10)+"\n"), 0); err != nil {
		return fmt.Errorf("write %s: %w", ReplicateLockFile, err)
	}
	return nil
}

func (l *folderCommitLock) Exclusive() bool { return false }

func (l *folderCommitLock) SweepOwned(ctx context.Context, folders []string, owned func(string) bool) error {
	for _, folder := range folders {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := filepath.Join(l.dir, filepath.FromSlash(folder)) // "": the top
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		for _, e := range ents {
			final, ok := strings.CutPrefix(e.Name(), store.TempPrefix)
			if !ok || e.IsDir() || !owned(final) {
				continue
			}
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove %s, left by an interrupted writer: %w", path.Join(folder, e.Name()), err)
			}
		}
	}
	return nil
}

// Release closes the lock file, which releases the flock.
func (l *folderCommitLock) Release() error { return l.f.Close() }

// Abandon is Release: the kernel releases a killed process's flock.
func (l *folderCommitLock) Abandon() { l.f.Close() }

// bucketCommitLock is an object store prefix's lock, this process's alone: its revision is only
// this process's count of changes.
type bucketCommitLock struct {
	lock *StoreLock
	mu   sync.Mutex
	rev  int64
}

func (l *bucketCommitLock) Lock(ctx context.Context) (int64, error) {
	if err := l.lock.Held(ctx); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rev, nil
}

func (l *bucketCommitLock) Bump(rev int64) error {
	l.mu.Lock()
	l.rev = rev
	l.mu.Unlock()
	return nil
}

func (l *bucketCommitLock) Unlock()         {}
func (l *bucketCommitLock) Exclusive() bool { return true }

func (l *bucketCommitLock) SweepOwned(context.Context, []string, func(string) bool) error {
	return nil
}

func (l *bucketCommitLock) Release() error { return l.lock.Release() }
func (l *bucketCommitLock) Abandon()       { l.lock.Abandon() }
