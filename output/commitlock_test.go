package output

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/store"
)

// TestFolderCommitLockSharesRevisions: two members of a folder each open its commit lock; a
// revision one bumps is the one the other reads when it locks next, and SweepOwned removes only
// the temporary files whose pending names the holder owns.
func TestFolderCommitLockSharesRevisions(t *testing.T) {
	ctx := context.Background()
	dir, a, b := twoFolderMembers(t)
	if a.Exclusive() || b.Exclusive() {
		t.Error("a folder's commit lock is exclusive: its members could not share it")
	}
	if rev, err := a.Lock(ctx); err != nil || rev != 0 {
		t.Fatalf("a new folder: revision %d, %v", rev, err)
	}
	if err := a.Bump(1); err != nil {
		t.Fatal(err)
	}
	a.Unlock()
	if rev, err := b.Lock(ctx); err != nil || rev != 1 {
		t.Fatalf("the other member reads revision %d (%v), want 1", rev, err)
	}
	folder := filepath.Join(dir, "data", "region-0000")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	mine, theirs := store.TempPrefix+"p0001-0000000000000010-aaaaaaaa.parquet", store.TempPrefix+"p0002-0000000000000010-bbbbbbbb.parquet"
	for _, f := range []string{mine, theirs} {
		if err := os.WriteFile(filepath.Join(folder, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := b.SweepOwned(ctx, []string{"data/region-0000", "data/region-0001"}, func(name string) bool {
		return name == "p0001-0000000000000010-aaaaaaaa.parquet"
	})
	b.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(folder, mine)); !os.IsNotExist(err) {
		t.Errorf("an owned leftover stays: %v", err)
	}
	if _, err := os.Stat(filepath.Join(folder, theirs)); err != nil {
		t.Errorf("another member's file was removed: %v", err)
	}
}

// TestBucketCommitLockIsOneMembers: on an object store one process holds the prefix's commit
// lock; a second is refused while the first runs, and takes it once the first released it.
func TestBucketCommitLockIsOneMembers(t *testing.T) {
	defer func(ttl, settle time.Duration) { LockTTL, lockSettle = ttl, settle }(LockTTL, lockSettle)
	LockTTL, lockSettle = 600*time.Millisecond, 10*time.Millisecond // the second holder sees a renewal soon
	ctx := context.Background()
	st := newBucket(t, t.TempDir())
	a, err := OpenCommitLock(ctx, st, "s3://b/p", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Exclusive() {
		t.Error("an object store's commit lock is shared")
	}
	if _, err := OpenCommitLock(ctx, st, "s3://b/p", nil); !errors.Is(err, ErrRefusedResume) {
		t.Fatalf("a second holder: %v", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	b, err := OpenCommitLock(ctx, st, "s3://b/p", nil)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	b.Release()
}

// twoFolderMembers opens the commit lock of a new folder (dir) twice, as two members of it do.
func twoFolderMembers(t *testing.T) (dir string, a, b CommitLock) {
	t.Helper()
	dir = t.TempDir()
	st, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*CommitLock{&a, &b} {
		if *l, err = OpenCommitLock(context.Background(), st, dir, nil); err != nil {
			t.Fatal(err)
		}
		l := *l
		t.Cleanup(func() { l.Release() })
	}
	return dir, a, b
}

// TestFolderCommitLockWaitEndsWithItsContext: before, a member waiting for the folder's lock
// (another process holding it: a member frozen in its commit, an earlier rekey that held it for
// its whole run) waited whatever its context said, so a second Ctrl-C, meant to abort at once,
// hung there. The wait ends when the context does.
func TestFolderCommitLockWaitEndsWithItsContext(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoFolderMembers(t)
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Unlock() // lets a wait that ignores its context end with the test
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := b.Lock(wctx)
		if err == nil {
			b.Unlock()
		}
		done <- err
	}()
	cancel()
	var got error
	if !wait.Until(func() bool {
		select {
		case got = <-done:
			return true
		default:
			return false
		}
	}, 10*time.Second) {
		t.Fatal("the wait for the lock went on after its context ended")
	}
	if !errors.Is(got, context.Canceled) {
		t.Errorf("the wait ended with %v, want the context's end", got)
	}
}

// TestFolderCommitLockIsNotASymlink: a symbolic link named like replicate.lock leads outside the
// output: opening the commit lock is refused, naming it, and the file it leads to (here an empty
// one) is not written (before, each commit wrote the manifest's revision over its start).
func TestFolderCommitLockIsNotASymlink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, ReplicateLockFile)); err != nil {
		t.Fatal(err)
	}
	st, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenCommitLock(context.Background(), st, dir, nil)
	if err == nil {
		defer l.Release()
		if _, err := l.Lock(context.Background()); err == nil {
			l.Bump(7)
			l.Unlock()
		}
		data, _ := os.ReadFile(outside)
		t.Fatalf("the commit lock was opened through a symbolic link; the file it leads to holds %q", data)
	}
	if !strings.Contains(err.Error(), ReplicateLockFile) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v, want it to name %s as a symbolic link", err, ReplicateLockFile)
	}
	if data, _ := os.ReadFile(outside); len(data) != 0 {
		t.Fatalf("the file the link leads to now holds %q", data)
	}
}
