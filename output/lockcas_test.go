package output

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// A run paused past its lock's TTL goes on with a renewal due while another run has taken the
// lock over. The renewal is a write conditional on the lock as the run last wrote it
// (If-Match, which versitygw evaluates), so it fails instead of overwriting the other run's
// lock, which would fence out the live run and let the paused one write; Close leaves the
// other run's lock alone.
func TestObjectStoreLockRenewalKeepsATakeOver(t *testing.T) {
	defer func(ttl, settle time.Duration) { LockTTL, lockSettle = ttl, settle }(LockTTL, lockSettle)
	LockTTL, lockSettle = time.Hour, 10*time.Millisecond // no heartbeat: the test renews
	srv := s3test.StartVersitygw(t)
	ctx := context.Background()
	st, err := s3store.Open(ctx, srv.URI, s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	first, err := Open(context.Background(), st, Spec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	taken, _ := json.Marshal(objectLockInfo{Holder: "pid 1 on elsewhere", Token: "other", Renewed: time.Now(), Expires: time.Now().Add(time.Hour)})
	if err := st.Put(ctx, LockFile, taken); err != nil {
		t.Fatal(err)
	}
	if err := first.objLock.renew(ctx); !errors.Is(err, ErrLockLost) {
		t.Errorf("renewal after a take-over: %v, want ErrLockLost", err)
	}
	if err := first.Held(ctx); !errors.Is(err, ErrLockLost) {
		t.Errorf("Held after a take-over: %v, want ErrLockLost", err)
	}
	first.Close()
	if data, err := st.Get(ctx, LockFile); err != nil || string(data) != string(taken) {
		t.Fatalf("the other run's lock after the paused run's renewal and Close: %q, %v", data, err)
	}
}

// A lock taken by a conditional write that the server evaluates (versitygw does) is held by
// this run alone: Open does not wait for the lock to settle and read it back (half a second of
// every run into a bucket). Two runs starting at once on such a store: exactly one gets it.
func TestObjectStoreLockTakenConditionallyNeedsNoSettle(t *testing.T) {
	defer func(settle time.Duration) { lockSettle = settle }(lockSettle)
	lockSettle = time.Hour // a run that waits for it never opens
	srv := s3test.StartVersitygw(t)
	ctx := context.Background()
	st, err := s3store.Open(ctx, srv.URI, s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		opened := make(chan *Output, 2)
		refused := make(chan error, 2)
		for range 2 {
			go func() {
				o, err := Open(ctx, st, Spec{}, nil) // --resume would wait for the winner's renewal
				if err != nil {
					refused <- err
					return
				}
				opened <- o
			}()
		}
		var winner *Output
		for range 2 {
			select {
			case o := <-opened:
				if winner != nil {
					t.Fatalf("round %d: both runs starting at once hold the lock", round)
				}
				winner = o
			case err := <-refused:
				if !errors.Is(err, ErrRefusedResume) {
					t.Fatalf("round %d: %v", round, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("round %d: Open waited for the lock to settle although the server evaluates conditional writes", round)
			}
		}
		if winner == nil {
			t.Fatalf("round %d: neither run got the lock", round)
		}
		winner.Close()
	}
}

// ignoresConditions is a store whose server accepts If-Match and If-None-Match and ignores
// them, as a server that does not implement them may. beforeGet runs before each Get.
type ignoresConditions struct {
	store.Store
	beforeGet func()
}

func (s *ignoresConditions) GetVersion(ctx context.Context, name string) ([]byte, string, error) {
	data, err := s.Store.Get(ctx, name)
	return data, "v", err
}

func (s *ignoresConditions) PutIf(ctx context.Context, name string, data []byte, _ string) (string, error) {
	return "v", s.Put(ctx, name, data)
}

func (s *ignoresConditions) Get(ctx context.Context, name string) ([]byte, error) {
	if s.beforeGet != nil {
		s.beforeGet()
	}
	return s.Store.Get(ctx, name)
}

// Where the server ignores the conditions, a conditional take proves nothing: the lock is still
// read back after it settles, and a run that wrote it last (another run starting at the same
// time, its write landing while this one waits) keeps it.
func TestObjectStoreLockIsReadBackWhereConditionsAreIgnored(t *testing.T) {
	defer func(settle time.Duration) { lockSettle = settle }(lockSettle)
	lockSettle = 10 * time.Millisecond
	ctx := context.Background()
	st := &ignoresConditions{Store: newBucket(t, t.TempDir())}
	other, _ := json.Marshal(objectLockInfo{Holder: "pid 1 on elsewhere", Token: "other", Renewed: time.Now(), Expires: time.Now().Add(time.Hour)})
	st.beforeGet = func() {
		if _, err := st.Store.Get(ctx, LockFile); err == nil { // this run has written its lock
			if err := st.Put(ctx, LockFile, other); err != nil {
				t.Error(err)
			}
		}
	}
	if o, err := Open(ctx, st, Spec{}, nil); err == nil || !strings.Contains(err.Error(), "starting at the same time") {
		if o != nil {
			o.Close()
		}
		t.Fatalf("a run whose lock was overwritten by another starting at the same time: %v", err)
	}
}

// answerLost is a bucket whose next conditional write, once lose is set, lands but loses its
// answer: the client sends it again, still conditional on the version before, and the server
// refuses it (the object has changed: by that very write).
type answerLost struct {
	*s3store.Store
	lose atomic.Bool
}

func (s *answerLost) PutIf(ctx context.Context, name string, data []byte, ifVersion string) (string, error) {
	v, err := s.Store.PutIf(ctx, name, data, ifVersion)
	if err == nil && s.lose.CompareAndSwap(true, false) {
		return s.Store.PutIf(ctx, name, data, ifVersion) // the retry
	}
	return v, err
}

// A renewal whose write landed but whose answer was lost (the retry is refused: the lock is no
// longer the version it was conditional on) keeps the lock: the lock holds this run's token, so
// the change was this run's own. Taking it for another run's take-over stopped a live run,
// alone on its output, saying another run had taken the output over.
func TestObjectStoreLockRenewalWhoseAnswerWasLost(t *testing.T) {
	defer func(ttl time.Duration) { LockTTL = ttl }(LockTTL)
	LockTTL = time.Hour // no heartbeat: the test renews
	srv := s3test.StartVersitygw(t)
	ctx := context.Background()
	s3, err := s3store.Open(ctx, srv.URI, s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	st := &answerLost{Store: s3}
	o, err := Open(ctx, st, Spec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	st.lose.Store(true)
	if err := o.objLock.renew(ctx); err != nil {
		t.Fatalf("a renewal that landed, its answer lost: %v", err)
	}
	if err := o.Held(ctx); err != nil {
		t.Fatalf("Held after it: %v", err)
	}
	if err := o.objLock.renew(ctx); err != nil {
		t.Fatalf("the next renewal: %v", err)
	}
}

// A run refused an output that holds another tool's files (a migrate, with or without --resume
// or --overwrite, or a replicate) changes nothing there: the other tool's multipart upload in
// flight under the prefix is left alone. The sweep of unfinished uploads came before the
// refusal and aborted it.
func TestRefusedOutputKeepsOtherUploadsVersitygw(t *testing.T) {
	defer func(settle time.Duration) { lockSettle = settle }(lockSettle)
	lockSettle = 10 * time.Millisecond
	srv := s3test.StartVersitygw(t)
	ctx := context.Background()
	st, err := s3store.Open(ctx, srv.URIFor("shared"), s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "report.csv", []byte("a,b\n")); err != nil {
		t.Fatal(err)
	}
	w, err := st.Create(ctx, "big.bin") // another tool's upload in flight: its first part sent
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write(make([]byte, 9<<20)); err != nil { // over a part: sent in the background
		t.Fatal(err)
	}
	wait.For(t, func() bool { names, _ := st.Unfinished(ctx, ""); return len(names) == 1 }, "the other tool's upload started")
	// rekey replicate's lock on the prefix: the run refuses the folder before it writes
	// (CheckReplicationOutput), so the uploads there are no killed member's to abort
	cl, err := OpenCommitLock(ctx, st, "shared", nil)
	if err != nil {
		t.Fatal(err)
	}
	cl.Release()
	if names, err := st.Unfinished(ctx, ""); err != nil || len(names) != 1 || names[0] != "big.bin" {
		t.Fatalf("after the commit lock of a replication: unfinished uploads %v (%v), want the other tool's big.bin", names, err)
	}
	if err := CheckReplicationOutput(ctx, st, "shared"); !errors.Is(err, ErrRefusedResume) {
		t.Fatalf("CheckReplicationOutput of a folder holding another tool's files: %v, want a refusal", err)
	}
	for _, spec := range []Spec{{}, {Overwrite: true}, {Resume: true}} {
		if o, err := Open(ctx, st, spec, nil); !errors.Is(err, ErrRefusedResume) {
			if o != nil {
				o.Close()
			}
			t.Fatalf("Open %+v of a folder holding another tool's files: %v, want a refusal", spec, err)
		}
		if names, err := st.Unfinished(ctx, ""); err != nil || len(names) != 1 || names[0] != "big.bin" {
			t.Fatalf("after a refused Open %+v: unfinished uploads %v (%v), want the other tool's big.bin", spec, names, err)
		}
	}
}

// A run that starts fresh on a prefix listing no object (a bucket's root, or a prefix other tools
// upload under too) aborts the unfinished uploads a killed rekey run left under rekey's own names,
// and leaves every other upload in flight there alone: it may be another tool's, still writing.
func TestFreshOutputKeepsOtherUploadsVersitygw(t *testing.T) {
	defer func(settle time.Duration) { lockSettle = settle }(lockSettle)
	lockSettle = 10 * time.Millisecond
	srv := s3test.StartVersitygw(t)
	ctx := context.Background()
	st, err := s3store.Open(ctx, srv.URIFor(""), s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	upload := func(name string) { // an upload in flight: its first part sent
		w, err := st.Create(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Abort() })
		if _, err := w.Write(make([]byte, 9<<20)); err != nil { // over a part: sent in the background
			t.Fatal(err)
		}
		wait.For(t, func() bool { names, _ := st.Unfinished(ctx, name); return len(names) > 0 }, name+"'s upload started")
	}
	upload("backups/big.bin")
	starts := []struct {
		what string
		open func() error
	}{
		{"migrate", func() error {
			o, err := Open(ctx, st, Spec{}, nil)
			if err == nil {
				o.Close()
			}
			return err
		}},
		{"replicate", func() error {
			cl, err := OpenCommitLock(ctx, st, "root", nil)
			if err == nil {
				cl.Release()
			}
			return err
		}},
	}
	for _, start := range starts {
		upload(DataDir + "/region-0000/part-00000.parquet") // a killed run's
		upload(RejectsFile)
		if err := start.open(); err != nil {
			t.Fatalf("%s's fresh start: %v", start.what, err)
		}
		if names, err := st.Unfinished(ctx, ""); err != nil || len(names) != 1 || names[0] != "backups/big.bin" {
			t.Fatalf("after %s's fresh start: unfinished uploads %v (%v), want only the other tool's backups/big.bin", start.what, names, err)
		}
	}
}
