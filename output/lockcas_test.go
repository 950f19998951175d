package output

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

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
