package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/store"
)

// bucket is a local folder seen through store.Store alone, as pipeline sees an object store: no
// path, so no flock and no appending. Its Store field is the folder itself (a store.Dir).
type bucket struct{ store.Store }

func newBucket(t *testing.T, dir string) bucket {
	l, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bucket{l}
}

// readParts concatenates the objects under folder/, checking each starts with header.
func readParts(t *testing.T, st store.Store, folder, header string) []string {
	t.Helper()
	objs, err := st.List(context.Background(), folder+"/")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, o := range objs {
		data, err := st.Get(context.Background(), o.Name)
		if err != nil {
			t.Fatal(err)
		}
		text, ok := strings.CutPrefix(string(data), header)
		if !ok {
			t.Fatalf("%s does not start with the header %q", o.Name, header)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(text, "\n"), "\n")...)
	}
	return lines
}

// An object store cannot append, so rejects.jsonl could not be cut back to its checkpointed length
// on resume. Rejects go out as numbered parts, one per cut, counted by the checkpoint: killed at
// each crash point, and with a part committed after the last checkpoint (a kill between the two), a resume
// leaves every reject listed once, and the replay parts likewise.
func TestObjectStoreRejectsExactlyOnceAcrossResumes(t *testing.T) {
	bad := map[int64]bool{}
	var want []string
	for si := 0; si < 3; si++ {
		for j := 7; j < 3000; j += 101 {
			bad[int64(si*1_000_000+j)] = true
			want = append(want, fmt.Sprintf("garbage %d/%d", si, j))
		}
	}
	sort.Strings(want)
	for _, point := range crashPoints(50) {
		t.Run(point.name, func(t *testing.T) {
			src := &replaySource{seqSource{streams: 3, rows: 3000, batch: 50, bad: bad, rawIDs: true, pauseAfter: point.pauseAfter}}
			cfg := testConfig(t, src, &memSink{}, copyTransform{})
			st := newBucket(t, cfg.OutDir)
			ctx, kill := context.WithCancel(context.Background())
			defer kill()
			var hit *atomic.Bool
			cfg.Store, hit = withCrash(st, point, kill)
			cfg.CheckpointEvery = time.Millisecond
			r, _ := newRunner(t, cfg)
			if _, err := r.Run(ctx, nil, nil); err == nil || !hit.Load() {
				t.Fatalf("the run was not killed at its crash point: err %v", err)
			}
			src.pauseAfter, cfg.Store = 0, st
			cp, err := ReadCheckpoint(context.Background(), st)
			if err != nil || cp == nil {
				t.Fatalf("no checkpoint after the kill: %v", err)
			}
			// a part committed by the killed run after its last checkpoint
			stray := `{"position":"s0:7","code":"parse","raw":"garbage 0/7"}` + "\n"
			// (the resumed run's parts would replace part N; one far past them would stay)
			for _, n := range []int{cp.RejectParts, cp.RejectParts + 500} {
				if err := st.Put(context.Background(), RejectsPart(n), []byte(stray)); err != nil {
					t.Fatal(err)
				}
				st.Put(context.Background(), fmt.Sprintf("%s/part-%05d.txt", ReplayPartsDir, n), []byte("header\ngarbage 0/7\n"))
			}
			o, err := Open(context.Background(), st, Spec{Fingerprint: cfg.Fingerprint, Format: cfg.Format, Source: cfg.Source, Resume: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cp = o.Checkpoint
			r2, _ := newRunner(t, cfg)
			res, err := r2.Run(context.Background(), nil, cp)
			o.Close()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range readParts(t, st, RejectsPartsDir, "") {
				var rj Reject
				if err := json.Unmarshal([]byte(line), &rj); err != nil {
					t.Fatalf("rejects line %q: %v", line, err)
				}
				got = append(got, rj.Raw)
			}
			sort.Strings(got)
			if strings.Join(got, "|") != strings.Join(want, "|") || res.RowsRejected != int64(len(want)) {
				t.Fatalf("rejects parts hold %d lines (%d rejected), want %d once each", len(got), res.RowsRejected, len(want))
			}
			replay := readParts(t, st, ReplayPartsDir, "header\n")
			sort.Strings(replay)
			if strings.Join(replay, "|") != strings.Join(want, "|") {
				t.Fatalf("replay parts hold %d rows, want %d once each", len(replay), len(want))
			}
			final, _ := ReadCheckpoint(context.Background(), st)
			if objs, _ := st.List(context.Background(), RejectsPartsDir+"/"); len(objs) != final.RejectParts {
				t.Fatalf("%d rejects parts, the checkpoint counts %d", len(objs), final.RejectParts)
			}
		})
	}
}

// An object store has no flock; the lock is an object with an expiry that the run renews. A second
// run is refused while it is fresh, takes it over once it is stale (a killed run), and Close
// removes it.
func TestObjectStoreLock(t *testing.T) {
	defer func(ttl, settle time.Duration) { LockTTL, lockSettle = ttl, settle }(LockTTL, lockSettle)
	// long enough that a renewal every LockTTL/3 keeps it on a busy machine
	LockTTL, lockSettle = 3*time.Second, 10*time.Millisecond
	st := newBucket(t, t.TempDir())
	ctx := context.Background()
	first, err := Open(context.Background(), st, Spec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lock := func() (info objectLockInfo) {
		b, err := st.Get(ctx, LockFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &info); err != nil {
			t.Fatal(err)
		}
		return info
	}
	// outlives its first expiry: the heartbeat renews it
	firstExpiry := lock().Expires
	wait.For(t, func() bool { return time.Now().After(firstExpiry) && lock().Expires.After(time.Now()) }, "the lock renewed past its first expiry")
	if _, err := Open(context.Background(), st, Spec{Resume: true}, nil); err == nil || !strings.Contains(err.Error(), "in use by another rekey run") {
		t.Fatalf("second run on a locked output: %v", err)
	}
	first.Close()
	if _, err := st.Stat(ctx, LockFile); !store.IsNotExist(err) {
		t.Fatalf("Close left the lock: %v", err)
	}
	// a killed run's lock: not renewed, it expires
	stale, _ := json.Marshal(objectLockInfo{Holder: "pid 1 on gone", Token: "x", Renewed: time.Now().Add(-time.Hour), Expires: time.Now().Add(-time.Minute)})
	st.Put(ctx, LockFile, stale)
	second, err := Open(context.Background(), st, Spec{Resume: true}, nil)
	if err != nil {
		t.Fatalf("a stale lock was not taken over: %v", err)
	}
	second.Close()
}

// A run that ended without removing its lock (SIGKILL, or the store unreachable at the end:
// "the server stopped mid-upload", then restarted) must not block the next run on the same
// machine for LockTTL (2 minutes): the lock names its process, which is gone. Before the fix
// `--resume` was refused with "in use by another rekey run" until the lock expired. A live
// holder is still refused, and a holder on another machine is waited for.
func TestObjectStoreLockOfAnEndedRunIsTakenOver(t *testing.T) {
	defer func(settle time.Duration) { lockSettle = settle }(lockSettle)
	lockSettle = 10 * time.Millisecond
	if bootID() == "" {
		t.Skip("no boot id on this system: locks wait for their expiry")
	}
	ctx := context.Background()
	st := newBucket(t, t.TempDir())
	host, _ := os.Hostname()
	lockOf := func(pid int, host, token string) {
		data, _ := json.Marshal(objectLockInfo{Holder: fmt.Sprintf("pid %d on %s", pid, host), Token: token, Host: host, Boot: bootID(), PID: pid, PIDNS: pidNS(),
			Renewed: time.Now(), Expires: time.Now().Add(time.Hour)})
		if err := st.Put(ctx, LockFile, data); err != nil {
			t.Fatal(err)
		}
	}
	// a run of this process that could not remove its lock (its store was down at the end)
	first, err := Open(context.Background(), st, Spec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := st.Get(ctx, LockFile)
	first.Close()
	st.Put(ctx, LockFile, left)
	second, err := Open(context.Background(), st, Spec{Resume: true}, nil)
	if err != nil {
		t.Fatalf("the lock of a run of this process that ended was not taken over: %v", err)
	}
	// ... while that second run holds it, a third is refused (without --resume, which would wait
	// for the second's next renewal first)
	if _, err := Open(context.Background(), st, Spec{}, nil); err == nil || !strings.Contains(err.Error(), "in use by another rekey run") {
		t.Fatalf("a held lock was taken over: %v", err)
	}
	second.Close()

	// a killed process on this machine
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	lockOf(dead.Process.Pid, host, "dead")
	third, err := Open(context.Background(), st, Spec{Resume: true}, nil)
	if err != nil {
		t.Fatalf("the lock of a dead process was not taken over: %v", err)
	}
	third.Close()

	// a live process on this machine, and a process on another machine, each renewing its lock:
	// refused (one on another machine that does not renew it is waited for:
	// TestResumeWaitsForTheLockOfARunKilledElsewhere)
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	renewed := func(pid int, host, token string) store.Store {
		lockOf(pid, host, token)
		return renewsLock{st, func() { lockOf(pid, host, token) }}
	}
	if _, err := Open(context.Background(), renewed(live.Process.Pid, host, "live"), Spec{Resume: true}, nil); err == nil || !strings.Contains(err.Error(), "in use by another rekey run") {
		t.Fatalf("a live holder's lock: %v", err)
	}
	if _, err := Open(context.Background(), renewed(dead.Process.Pid, "elsewhere", "remote"), Spec{Resume: true}, nil); err == nil || !strings.Contains(err.Error(), "in use by another rekey run") {
		t.Fatalf("another machine's lock: %v", err)
	}
}

// What a writer left unfinished during the run (an upload whose start or abort lost its answer
// to a stall; a temporary file here) is gone once the run completes, not left for the next
// resume, which a successful run never has.
func TestCompleteRunSweepsUnfinishedWrites(t *testing.T) {
	cfg := testConfig(t, &seqSource{streams: 2, rows: 500, batch: 50}, &memSink{}, copyTransform{})
	st := newBucket(t, cfg.OutDir)
	cfg.Store = st
	w, err := st.Create(context.Background(), DataDir+"/region-0000/part-09999.x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	// never committed nor aborted
	r, err := newRunner(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(cfg.OutDir, DataDir, "region-0000", store.TempPrefix+"*"))
	if len(left) > 0 {
		t.Fatalf("unfinished writes left after a complete run: %v", left)
	}
}

// renewsLock is a bucket whose lock is renewed by another, live run (another machine's) each
// time a run reads it: a heartbeat, met without waiting for one.
type renewsLock struct {
	bucket
	renew func()
}

func (s renewsLock) Get(ctx context.Context, name string) ([]byte, error) {
	if name == LockFile {
		s.renew()
	}
	return s.bucket.Get(ctx, name)
}

// A retried shard (a Kubernetes Job's replacement pod, scheduled on another node than the pod
// that was killed) runs --resume while the killed run's lock has not expired yet: it waits for
// the lock to expire and takes it over, as replicate does. Before, it was refused at once with
// exit 2 ("in use by another rekey run"), which migrate-job.yaml's podFailurePolicy takes for
// invalid use and fails the index for good. A lock that is renewed meanwhile (a live run) is
// still refused.
func TestResumeWaitsForTheLockOfARunKilledElsewhere(t *testing.T) {
	defer func(ttl, settle time.Duration) { LockTTL, lockSettle = ttl, settle }(LockTTL, lockSettle)
	LockTTL, lockSettle = 500*time.Millisecond, 10*time.Millisecond
	ctx := context.Background()
	st := newBucket(t, t.TempDir())
	lockOf := otherNodesLock("rekey-orders-3")
	if err := st.Put(ctx, LockFile, lockOf(time.Now())); err != nil {
		t.Fatal(err)
	}
	o, err := Open(ctx, st, Spec{Resume: true}, nil)
	if err != nil {
		t.Fatalf("--resume after a run killed on another machine: %v, want the lock taken over once it expired", err)
	}
	o.Close()

	if err := st.Put(ctx, LockFile, lockOf(time.Now())); err != nil {
		t.Fatal(err)
	}
	live := renewsLock{st, func() { _ = st.Put(ctx, LockFile, lockOf(time.Now())) }}
	if _, err := Open(ctx, live, Spec{Resume: true}, nil); !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), "in use by another rekey run") {
		t.Fatalf("--resume while another machine's run renews its lock: %v, want refused", err)
	}
}

// The finishing step's retry (merge-job.yaml's next pod, on another node than the merge that was
// killed) waits for the killed merge's lock to expire and takes it over, as a shard's --resume
// does. Before, Lock refused it at once with exit 2, and the Job's few retries, 10, 20 and 40
// seconds apart, all ended before the lock's 2 minutes: the Job failed. A lock renewed meanwhile
// (a second merge running) is still refused.
func TestLockWaitsForTheLockOfAMergeKilledElsewhere(t *testing.T) {
	defer func(ttl, settle time.Duration) { LockTTL, lockSettle = ttl, settle }(LockTTL, lockSettle)
	LockTTL, lockSettle = 500*time.Millisecond, 10*time.Millisecond
	ctx := context.Background()
	st := newBucket(t, t.TempDir())
	lockOf := otherNodesLock("rekey-orders-merge-x7k2p")
	if err := st.Put(ctx, LockFile, lockOf(time.Now())); err != nil {
		t.Fatal(err)
	}
	o, err := Lock(ctx, st, "merged", nil)
	if err != nil {
		t.Fatalf("a merge after one killed on another machine: %v, want the lock taken over once it expired", err)
	}
	o.Close()

	if err := st.Put(ctx, LockFile, lockOf(time.Now())); err != nil {
		t.Fatal(err)
	}
	live := renewsLock{st, func() { _ = st.Put(ctx, LockFile, lockOf(time.Now())) }}
	if _, err := Lock(ctx, live, "merged", nil); !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), "in use by another rekey run") {
		t.Fatalf("a merge while another machine's merge renews its lock: %v, want refused", err)
	}
}

// Containers have a PID namespace each, and an Indexed Job's pods share a host name
// (rekey-orders-3, the Job's name and the index): the replacement of a pod that is still running on
// the same node (the Job deleted and applied again while its pods finish; a second Job of the same
// name) finds a lock naming its own host, boot id and pid (1 in both containers). That holder is
// another process, alive: its lock is not taken over. Before, the lock was taken as this process's
// own ended run and the two pods wrote one shard at once.
func TestObjectStoreLockOfAnotherContainerIsNotTakenOver(t *testing.T) {
	defer func(settle time.Duration) { lockSettle = settle }(lockSettle)
	lockSettle = 10 * time.Millisecond
	if bootID() == "" {
		t.Skip("no boot id on this system: locks wait for their expiry")
	}
	ctx := context.Background()
	st := newBucket(t, t.TempDir())
	host, _ := os.Hostname()
	data, _ := json.Marshal(objectLockInfo{Holder: "pid 1 on " + host, Token: "other-container", Host: host, Boot: bootID(), PID: os.Getpid(),
		PIDNS: "pid:[4026599999]", Renewed: time.Now(), Expires: time.Now().Add(time.Hour)})
	if err := st.Put(ctx, LockFile, data); err != nil {
		t.Fatal(err)
	}
	o, err := Open(ctx, st, Spec{}, nil)
	if err == nil {
		o.Close()
		t.Fatal("the lock of a live process in another PID namespace (same host name, boot id and pid) was taken over")
	}
	if !strings.Contains(err.Error(), "in use by another rekey run") {
		t.Fatalf("%v, want refused: the output is in use", err)
	}
}

// otherNodesLock returns the lock a run on another node (host, pid 1 of its container) wrote
// when it last renewed it at renewed.
func otherNodesLock(host string) func(renewed time.Time) []byte {
	return func(renewed time.Time) []byte {
		data, _ := json.Marshal(objectLockInfo{Holder: "pid 1 on " + host, Token: "killed", Host: host, Boot: "another-node", PID: 1,
			Renewed: renewed, Expires: renewed.Add(LockTTL)})
		return data
	}
}
