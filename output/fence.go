package output

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rekey/rekey/store"
)

// ErrLockLost is wrapped by the errors of every write a run attempts once its output's lock is
// no longer its own: the run was paused (or cut off from the store) for longer than LockTTL, and
// another run may have taken the output over. Such a run must stop without writing there.
var ErrLockLost = errors.New("this run no longer holds the output's lock")

// BeforeFencedWrite, when set, is called before a fenced write checks the lock (tests pause a
// run there, as a stopped process would be, to let another run take the output over).
var BeforeFencedWrite func(op, name string)

// afterCheck, when set, runs between a passed check and the write (tests: a take-over there).
var afterCheck func()

// Held tells whether this run still holds the output's lock; an error wrapping ErrLockLost when
// it does not. Every write through Output.Store calls it first.
//
// What remains: a write that passed the check and is then delayed (a pause between the check
// and the request, a request stuck on the network) still lands after another run took over.
// Closing that window needs a conditional write of the data objects themselves, which object
// stores do not offer across two objects; the check makes it as short as one request.
func (o *Output) Held(ctx context.Context) error {
	switch {
	case o.lock != nil:
		return heldDir(o.lock)
	case o.objLock != nil:
		return o.objLock.held(ctx)
	}
	return fmt.Errorf("%w: the output is closed", ErrLockLost)
}

// heldDir checks that the flocked file is still the folder's lock file. The kernel keeps an
// flock for as long as the process lives, paused or not, so the lock is lost only when its
// file was removed or replaced (someone cleared a lock they took for stuck) and another run
// locked the new file.
func heldDir(f *os.File) error {
	mine, err := f.Stat()
	if err != nil {
		return fmt.Errorf("check the output's lock: %w", err)
	}
	now, err := os.Stat(f.Name())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("check the output's lock: %w", err)
	}
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s was removed while this run held it, so another rekey run may take the output over: this run stopped without writing there any more",
			ErrLockLost, filepath.Base(f.Name()))
	case !os.SameFile(mine, now):
		return fmt.Errorf("%w: %s was replaced while this run held it and another rekey run took over the output: this run stopped without writing there any more",
			ErrLockLost, filepath.Base(f.Name()))
	}
	return nil
}

// fencedStore checks the output's lock before every write that others can see (committing an
// object, replacing one, removing some, aborting unfinished uploads): a run that lost its lock
// changes nothing there.
type fencedStore struct {
	store.Store
	held func(context.Context) error
}

// fencedDir is a fencedStore of a local folder, still a store.Dir for what needs its path.
type fencedDir struct {
	fencedStore
	dir store.Dir
}

func (d fencedDir) Path() string { return d.dir.Path() }

// fencedCopier is a fencedStore of a store that copies objects itself (a bucket: merge's
// server-side copies), still a store.Copier.
type fencedCopier struct {
	fencedStore
	c store.Copier
}

func (s fencedCopier) CopyFrom(ctx context.Context, from store.Store, src, dst string) (bool, error) {
	if err := s.check(ctx, "copy to", dst); err != nil {
		return false, err
	}
	done, err := s.c.CopyFrom(ctx, from, src, dst)
	return done, s.failed(ctx, "copy to", dst, err)
}

// fence wraps st so that its writes check held first.
func fence(st store.Store, held func(context.Context) error) store.Store {
	f := fencedStore{Store: st, held: held}
	if d, ok := st.(store.Dir); ok {
		return fencedDir{fencedStore: f, dir: d}
	}
	if c, ok := st.(store.Copier); ok {
		return fencedCopier{fencedStore: f, c: c}
	}
	return f
}

func (s fencedStore) check(ctx context.Context, op, name string) error {
	if hook := BeforeFencedWrite; hook != nil {
		hook(op, name)
	}
	if err := s.held(ctx); err != nil {
		return fmt.Errorf("%s %s: %w", op, s.Location(name), err)
	}
	if afterCheck != nil {
		afterCheck()
	}
	return nil
}

// failed is the error of a write that passed the check and then failed: when the lock is lost by
// now, another run took the output over meanwhile (its sweep may be why the write failed), and
// the error says so first.
func (s fencedStore) failed(ctx context.Context, op, name string, err error) error {
	if err == nil || errors.Is(err, ErrLockLost) {
		return err
	}
	if herr := s.held(ctx); errors.Is(herr, ErrLockLost) {
		return fmt.Errorf("%s %s: %w (the write failed: %v)", op, s.Location(name), herr, err)
	}
	return err
}

func (s fencedStore) Put(ctx context.Context, name string, data []byte) error {
	if err := s.check(ctx, "write", name); err != nil {
		return err
	}
	return s.failed(ctx, "write", name, s.Store.Put(ctx, name, data))
}

func (s fencedStore) Remove(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	if err := s.check(ctx, "remove", names[0]); err != nil {
		return err
	}
	return s.failed(ctx, "remove", names[0], s.Store.Remove(ctx, names...))
}

func (s fencedStore) Sweep(ctx context.Context, prefix string) error {
	if err := s.check(ctx, "sweep", prefix); err != nil {
		return err
	}
	return s.failed(ctx, "sweep", prefix, s.Store.Sweep(ctx, prefix))
}

func (s fencedStore) Create(ctx context.Context, name string) (store.Writer, error) {
	w, err := s.Store.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return fencedWriter{Writer: w, s: s, name: name}, nil
}

// fencedWriter checks the lock before its Commit makes the object visible.
type fencedWriter struct {
	store.Writer
	s    fencedStore
	name string
}

func (w fencedWriter) Commit(ctx context.Context) (int64, error) {
	if err := w.s.check(ctx, "commit", w.name); err != nil {
		return 0, err
	}
	n, err := w.Writer.Commit(ctx)
	return n, w.s.failed(ctx, "commit", w.name, err)
}
