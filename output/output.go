package output

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/pipeline"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/store"
)

// LockFile is held by the run writing an output, for as long as it runs. On a local folder it is
// an flock, which the kernel releases when the process dies, so a killed run never leaves a stale
// lock. On an object store, which has no locks, it is an object naming its holder that the run
// renews every LockTTL/3; a lock not renewed for LockTTL is stale (its run was killed) and may be
// taken over.
const LockFile = ".rekey.lock"

// LockTTL is how long an object-store lock stays valid without being renewed.
var LockTTL = 2 * time.Minute

// Spec says what a run will write into an output; Open checks that the output's checkpoint, if
// any, was written by the same job.
type Spec struct {
	Dir         string          // the output as the user named it, for messages (default: the store's location)
	Fingerprint string          // of the resolved mapping
	Format      string          // data file format ("parquet", "csv")
	Source      pipeline.Source // its Identity, if it has one, must match the checkpoint's
	Regions     int             // the region count asked for on the command line (0: not given)
	Resume      bool
	// Overwrite replaces a previous run's output (rekey's files only) instead of refusing it.
	Overwrite bool
	// Verify is the data format, when it can check that a committed file of the checkpoint is
	// whole (a Parquet footer) before a resume trusts it. Size is checked first. Optional.
	Verify Verifier
	// Target names the table a run into a SQL table writes ("" for files): a resume must write
	// the same one.
	Target string
}

// Verifier checks that a data file is whole (sink/files.Verifier: a Parquet footer).
type Verifier interface {
	Verify(r io.ReaderAt, size int64) error
}

// Output is an output directory opened for one run: locked, and checked against its checkpoint.
type Output struct {
	Dir string // where the output is, for people (Store.Location(""))
	// Store is the output, fenced: each commit, replacement or removal first checks that this
	// run still holds the lock (Held), so a run that lost it writes nothing more. Write through
	// it, not through the store given to Open.
	Store store.Store
	// Checkpoint is the run to continue, nil for a fresh start. When Complete is set the
	// source was read to its end: only the final files (manifest...) may be missing.
	Checkpoint *pipeline.Checkpoint
	lock       *os.File    // local folders
	objLock    *objectLock // object stores
	log        *zap.Logger
	peers      []shardPeer // a shard's: the other shards of its shared output, with a checkpoint
	regions    int         // Spec.Regions, recorded in the checkpoints
	shared     *os.File    // a shard's, on a folder: its shared flock of the whole output's lock
	target     string      // Spec.Target, recorded in the checkpoints
}

// ErrRefusedResume is wrapped by Open's errors when the directory cannot be resumed or
// reused as asked: a usage error, not a failure of a run.
var ErrRefusedResume = errors.New("refused")

// refusal is an error that is ErrRefusedResume without saying so in its text.
type refusal struct{ error }

func (refusal) Is(target error) bool { return target == ErrRefusedResume }

func refuse(format string, args ...any) error { return refusal{fmt.Errorf(format, args...)} }

// HoldsFilesError is Open's refusal of a new run (neither --resume nor --overwrite) into an
// output that already holds files; it is ErrRefusedResume.
type HoldsFilesError struct{ Dir string }

func (e *HoldsFilesError) Error() string {
	return fmt.Sprintf("--out %s already holds files (a previous run?): pass --resume to finish an interrupted run there, --overwrite to replace it, or choose a new --out directory", e.Dir)
}

func (*HoldsFilesError) Is(target error) bool { return target == ErrRefusedResume }

// Open locks the output st for this run and decides where the run starts:
//   - a fresh run needs an empty (or absent) directory;
//   - --resume continues from the checkpoint once it has checked that the mapping, format, region
//     count and source are the same and that every file the checkpoint lists is intact, and
//     deletes what the interrupted run wrote after its last checkpoint;
//   - --resume of a run that crashed before its first checkpoint starts over, after removing what
//     that run left (only rekey's own files: a directory holding anything else is refused).
//
// Close the Output when the run ends to release the lock.
func Open(ctx context.Context, st store.Store, spec Spec, logger *zap.Logger) (*Output, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	if spec.Dir == "" {
		spec.Dir = st.Location("")
	}
	o, err := lockOutput(ctx, st, spec.Dir, logger, spec.Resume)
	if err != nil {
		return nil, err
	}
	o.regions, o.target = spec.Regions, spec.Target
	if err := o.open(ctx, spec, logger); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// Lock takes the lock of the output st for a run that writes there without a checkpoint to
// resume (rekey merge), as Open does: a second run on the same output is refused (an error
// wrapping ErrRefusedResume) naming the first, and the Output's Store is fenced. An object
// store's lock that is not renewed (a merge killed on another machine, which merge-job.yaml's
// next pod runs again) is waited for and taken over, as Open does with --resume. dir names the
// output in messages. Close the Output to release the lock.
func Lock(ctx context.Context, st store.Store, dir string, logger *zap.Logger) (*Output, error) {
	return lockOutput(ctx, st, dir, logger, true)
}

// lockOutput is Lock; with waitStale (--resume, merge: a retried Kubernetes pod may start on
// another node while the killed run's lock has not expired yet) an object store's lock that is
// not renewed is waited for and taken over, as LockStore does.
func lockOutput(ctx context.Context, st store.Store, dir string, logger *zap.Logger, waitStale bool) (*Output, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	o := &Output{Dir: dir, Store: st, log: logger}
	if d, ok := st.(store.Dir); ok {
		if err := os.MkdirAll(d.Path(), 0o755); err != nil {
			return nil, fmt.Errorf("--out %s: create the output folder: %w", dir, err)
		}
		lock, err := lockDir(d.Path(), dir)
		if err != nil {
			return nil, err
		}
		o.lock = lock
	} else {
		lock, err := waitLockObject(ctx, st, dir, logger, waitStale)
		if err != nil {
			return nil, err
		}
		o.objLock = lock
	}
	o.Store = fence(st, o.Held)
	return o, nil
}

// LockLeavesFile tells whether taking the lock of st would create its lock file (and st's folder)
// where there is none yet: a local folder's stays after the run (its flock goes with the
// process, and a lock file removed could be locked by two runs), where a bucket's lock object is
// removed when released. A run that may be refused after its lock can check first, so that it
// leaves the output as it found it.
func LockLeavesFile(st store.Store) bool {
	d, ok := st.(store.Dir)
	if !ok {
		return false
	}
	_, err := os.Lstat(filepath.Join(d.Path(), LockFile))
	return err != nil
}

func (o *Output) open(ctx context.Context, spec Spec, logger *zap.Logger) error {
	st := o.Store
	// What unfinished writers of an earlier run left is never an object, so it is not listed; it
	// goes first once the output is this run's to write (empty, or rekey's to overwrite or start
	// over). In a bucket a sweep aborts the unfinished uploads under rekey's names (SweepOwn), which
	// another tool may use too: a refused run, whose --out may be that tool's folder, sweeps nothing.
	sweep := func() error {
		if err := SweepOwn(ctx, st); err != nil {
			return fmt.Errorf("--out %s: %w", spec.Dir, err)
		}
		return nil
	}
	objs, err := st.List(ctx, "")
	if err != nil {
		return fmt.Errorf("--out %s: %w", spec.Dir, err)
	}
	var names, tops []string
	for _, obj := range objs {
		if obj.Name == LockFile {
			continue
		}
		names = append(names, obj.Name)
		top, _, _ := strings.Cut(obj.Name, "/")
		if len(tops) == 0 || tops[len(tops)-1] != top {
			tops = append(tops, top)
		}
	}
	if len(names) == 0 {
		return sweep() // a fresh start, with or without --resume
	}
	if slices.Contains(tops, ShardsDir) {
		return refuse("--out %s holds the shards of a migration written together (%s/): run a shard there with --shard i/N --shared-out, finish them with rekey merge --out %s, or choose a new --out directory", spec.Dir, ShardsDir, spec.Dir)
	}
	if slices.Contains(tops, ReplicateStateFile) {
		return refuse("--out %s holds a replication (rekey replicate: %s), not a migration: rekey replicate continues it; migrate into a new --out directory", spec.Dir, ReplicateStateFile)
	}
	if spec.Overwrite && !spec.Resume {
		if foreign := append(notRekeyFiles(tops, finalFiles), notRekeyData(names)...); len(foreign) > 0 {
			return refuse("--overwrite: %s holds files rekey did not write (%s): it is not a rekey output; choose a new --out directory", spec.Dir, strings.Join(foreign, ", "))
		}
		if err := sweep(); err != nil {
			return err
		}
		// The manifest first, on its own: a run killed while the rest goes must not leave one
		// that claims a complete run whose files are partly gone.
		if slices.Contains(names, ManifestFile) {
			if err := st.Remove(ctx, ManifestFile); err != nil {
				return fmt.Errorf("--overwrite: remove the previous run's %s: %w", ManifestFile, err)
			}
		}
		if err := st.Remove(ctx, names...); err != nil {
			return fmt.Errorf("--overwrite: remove the previous run's output: %w", err)
		}
		logger.Info("--overwrite: removed the previous run's output", zap.String("out", spec.Dir), zap.Int("files", len(names)))
		return nil
	}
	if !spec.Resume {
		return &HoldsFilesError{Dir: spec.Dir}
	}
	cp, err := ReadCheckpoint(ctx, st)
	if ov := (*OtherVersionError)(nil); errors.As(err, &ov) {
		return refuse("--resume: %v: resume it with the rekey that began the run, or start over with --overwrite or in a new --out directory", err)
	} else if errors.Is(err, ErrCheckpointEdited) {
		return refuse("--resume: %v; the run cannot be resumed: put back the checkpoint as rekey wrote it, or start over with --overwrite or in a new --out directory", err)
	} else if err != nil {
		return refuse("--resume: %v; the run cannot be resumed: start over in a new --out directory", err)
	}
	if cp == nil {
		// The run died before its first checkpoint: nothing it wrote is committed.
		if foreign := append(notRekeyFiles(tops, nil), notRekeyData(names)...); len(foreign) > 0 {
			return refuse("--resume: %s has no %s and holds files rekey did not write (%s): it is not an interrupted rekey run; choose a new --out directory",
				spec.Dir, CheckpointFile, strings.Join(foreign, ", "))
		}
		if err := sweep(); err != nil {
			return err
		}
		if err := st.Remove(ctx, names...); err != nil {
			return fmt.Errorf("remove what the interrupted run left: %w", err)
		}
		logger.Info("no checkpoint: the interrupted run committed nothing; starting over", zap.String("out", spec.Dir), zap.Int("files", len(names)))
		return nil
	}
	if err := checkResume(cp, spec); err != nil {
		return err
	}
	if damaged := verifyFiles(ctx, st, cp.Files, spec.Verify); len(damaged) > 0 {
		return refuse("--resume: %d of the %d files %s lists are damaged, so the rows they held are lost:\n  %s\nthe run cannot be resumed without losing rows: start over in a new --out directory (or restore the files)",
			len(damaged), len(cp.Files), CheckpointFile, strings.Join(damaged, "\n  "))
	}
	if lost := verifyRejects(ctx, st, cp, names); len(lost) > 0 {
		return refuse("--resume: the rejected rows %s counts are gone:\n  %s\nthe run cannot be resumed without losing the record of those rows: start over in a new --out directory (or restore the files)",
			CheckpointFile, strings.Join(lost, "\n  "))
	}
	removed, err := removeUncommitted(ctx, st, cp)
	if err != nil {
		return err
	}
	if len(removed) > 0 {
		logger.Info("removed files written after the last checkpoint", zap.Int("files", len(removed)))
	}
	o.Checkpoint = cp
	return nil
}

// checkResume refuses a checkpoint written by another job: mapping, format, regions, source.
func checkResume(cp *pipeline.Checkpoint, spec Spec) error {
	var diffs []string
	if cp.Fingerprint != spec.Fingerprint {
		diffs = append(diffs, fmt.Sprintf("mapping: fingerprint %s then, %s now", cp.Fingerprint, spec.Fingerprint))
	}
	if cp.Format != "" && spec.Format != "" && cp.Format != spec.Format {
		diffs = append(diffs, fmt.Sprintf("--format: %s then, %s now", cp.Format, spec.Format))
	}
	if spec.Regions > 0 && spec.Regions != regionsAsked(cp) {
		diffs = append(diffs, fmt.Sprintf("--regions: %d then, %d now", regionsAsked(cp), spec.Regions))
	}
	// the rows up to the checkpoint are in the table the run wrote, not in another one
	if cp.Target != "" && spec.Target != "" && cp.Target != spec.Target {
		diffs = append(diffs, fmt.Sprintf("--out: %s then, %s now", cp.Target, spec.Target))
	}
	if cp.Source != nil && spec.Source != nil {
		if a, ok := spec.Source.(pipeline.IdentityAdopter); ok {
			if err := a.AdoptIdentity(cp.Source); err != nil {
				return refuse("--resume: %v", err)
			}
		}
		if now := pipeline.SourceIdentity(spec.Source); now != nil {
			for _, d := range cp.Source.Diff(now) {
				diffs = append(diffs, "source "+d)
			}
		}
	}
	if len(diffs) > 0 {
		return refuse("--resume: %s was written by another job than this one:\n  %s\nresume with the same mapping, --source (unchanged input), --format and --regions (into a SQL table: the same table), or start over in a new --out directory",
			spec.Dir, strings.Join(diffs, "\n  "))
	}
	return nil
}

// verifyFiles checks that every committed file is still there, whole: the size is the one
// committed, and verify (if any) accepts it. It returns one line per damaged file.
func verifyFiles(ctx context.Context, st store.Store, files []pipeline.FileInfo, verify Verifier) []string {
	var damaged []string
	for _, f := range files {
		info, err := st.Stat(ctx, f.Path)
		switch {
		case store.IsNotExist(err):
			damaged = append(damaged, f.Path+": missing")
			continue
		case err != nil:
			damaged = append(damaged, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		case info.Size != f.Bytes:
			damaged = append(damaged, fmt.Sprintf("%s: %d bytes, %d when committed", f.Path, info.Size, f.Bytes))
			continue
		}
		if verify != nil {
			if err := verifyOne(ctx, st, f, verify); err != nil {
				damaged = append(damaged, fmt.Sprintf("%s: %v", f.Path, err))
			}
		}
	}
	return damaged
}

// verifyRejects checks that the rejects cp counts are still there: in a folder, rejects.jsonl
// and the replay file (rejected-rows.EXT) at least as long as cp says (longer is a killed run's
// lines, which the resume cuts off); in a bucket, its numbered rejects parts. names lists the
// output. It returns one line per file that is missing or short.
func verifyRejects(ctx context.Context, st store.Store, cp *pipeline.Checkpoint, names []string) []string {
	var lost []string
	atLeast := func(name string, want int64) {
		info, err := st.Stat(ctx, name)
		switch {
		case store.IsNotExist(err):
			lost = append(lost, name+": missing")
		case err != nil:
			lost = append(lost, fmt.Sprintf("%s: %v", name, err))
		case info.Size < want:
			lost = append(lost, fmt.Sprintf("%s: %d bytes, %d when committed", name, info.Size, want))
		}
	}
	if _, local := store.LocalPath(st); !local {
		for i := range cp.RejectParts {
			atLeast(RejectsPart(i), 1)
		}
		return lost
	}
	if cp.RejectsBytes > 0 {
		atLeast(RejectsFile, cp.RejectsBytes)
	}
	if cp.ReplayBytes > 0 {
		replay := ReplayPrefix + "*"
		for _, n := range names {
			if strings.HasPrefix(n, ReplayPrefix) && !strings.Contains(n, "/") {
				replay = n
			}
		}
		atLeast(replay, cp.ReplayBytes)
	}
	return lost
}

func verifyOne(ctx context.Context, st store.Store, f pipeline.FileInfo, verify Verifier) error {
	r, err := st.Open(ctx, f.Path)
	if err != nil {
		return err
	}
	defer r.Close()
	return verify.Verify(r, f.Bytes)
}

// notRekeyFiles lists the names among an output's top-level entries that no rekey run writes
// before its first checkpoint, nor among final (the files it writes when it ends).
func notRekeyFiles(names, final []string) []string {
	var foreign []string
	for _, n := range names {
		early := n == DataDir || n == RejectsFile || strings.HasPrefix(n, ReplayPrefix) || n == CheckpointFile ||
			n == RejectsPartsDir || n == ReplayPartsDir || atomicfile.IsTemp(n)
		if !early && !slices.Contains(final, n) {
			foreign = append(foreign, n)
		}
	}
	return foreign
}

// notRekeyData lists the names under data/ that no rekey run writes: data/ is a common folder
// name, and another tool's files there are not rekey's to remove. Rekey's are its data files,
// data/region-NNNN/[PREFIX]part-NNNNN.EXT (PREFIX a shard's or a time slice's), and its
// temporary files.
func notRekeyData(names []string) []string {
	var foreign []string
	for _, n := range names {
		if !strings.HasPrefix(n, DataDir+"/") || atomicfile.IsTemp(n) {
			continue
		}
		prefix, _, _ := strings.Cut(path.Base(n), dataFilePrefix)
		if _, _, ok := ParseDataFile(n, prefix); ok && (prefix == "" || isShardFilePrefix(prefix) || prefix == sliceNone || isSlicePrefix(n)) {
			continue
		}
		foreign = append(foreign, n)
	}
	return foreign
}

// isShardFilePrefix tells whether prefix is one ShardFilePrefix gives ("s0002-").
func isShardFilePrefix(prefix string) bool {
	if !strings.HasPrefix(prefix, "s") || !strings.HasSuffix(prefix, "-") {
		return false
	}
	digits := prefix[1 : len(prefix)-1]
	if len(digits) < 4 {
		return false
	}
	_, err := strconv.ParseUint(digits, 10, 31)
	return err == nil
}

// isSlicePrefix tells whether the data file rel is a time slice's (SliceFilePrefix).
func isSlicePrefix(rel string) bool {
	_, ok := FileSlice(rel)
	return ok
}

// CheckLocalDir refuses an --out that looks like a URI rekey does not write to (mysql://...,
// s3://...), which would otherwise become a local folder named "mysql:".
func CheckLocalDir(dir string) error {
	if scheme, _, ok := strings.Cut(dir, "://"); ok && !strings.ContainsAny(scheme, `/\`) {
		return refuse("--out %q: rekey does not write to %s:// outputs; --out takes a local directory", dir, scheme)
	}
	return nil
}

// OpenToRead opens the output uri names to read it (rekey verify's --target): a local folder
// (a path, or file:PATH), which must exist, or an object store's prefix (s3://, oss://;
// credentials from getenv). where names it in messages: the folder's absolute path, or the
// prefix's location.
func OpenToRead(ctx context.Context, uri string, getenv func(string) string) (st store.Store, where string, err error) {
	if !store.IsLocal(uri) {
		if st, err = store.Open(ctx, uri, getenv); err != nil {
			return nil, "", err
		}
		return st, st.Location(""), nil
	}
	dir := strings.TrimPrefix(uri, "file:")
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, "", err
	}
	if !fi.IsDir() {
		return nil, "", fmt.Errorf("not a folder: give the --out folder of the migration")
	}
	l, err := store.NewLocal(dir)
	if err != nil {
		return nil, "", err
	}
	return l, l.Path(), nil
}

// OpenStateFolder opens the local folder that keeps the checkpoint and rejects of a run into a
// SQL table (--state), refusing a URI: its private files (PrivateName) are created 0600.
func OpenStateFolder(dir string) (store.Store, error) {
	if err := CheckLocalDir(dir); err != nil {
		return nil, err
	}
	return store.NewLocal(dir, store.PrivateNames(PrivateName))
}

// Close releases the lock.
func (o *Output) Close() error {
	if o == nil {
		return nil
	}
	var err error
	if o.lock != nil {
		err = o.lock.Close() // closing the descriptor releases the flock
		o.lock = nil
	}
	if o.objLock != nil {
		err = o.objLock.release()
		o.objLock = nil
	}
	if o.shared != nil {
		o.shared.Close()
		o.shared = nil
	}
	return err
}

// lockDir takes dir's exclusive lock, or says who holds it; out names it in messages.
func lockDir(dir, out string) (*os.File, error) {
	f, err := flockDir(dir, out, syscall.LOCK_EX,
		"--out %s is in use by another rekey run (%s): wait for it to end or stop it; two runs must never write one output")
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(holderInfo()+"\n"), 0)
	}
	return f, nil
}

// lockDirShared takes a shared lock of dir's lock file, which the shards of a shared output hold
// together, for as long as they run; a run holding it alone (a run of the whole table, a merge)
// refuses them, and is refused while they run. out names the output in messages.
func lockDirShared(dir, out string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: create the output folder: %w", out, err)
	}
	return flockDir(dir, out, syscall.LOCK_SH,
		"--out %s is in use by a rekey run of the whole table or a merge (%s): shards with --shared-out write an output only shards write; wait for it to end, or choose another --out")
}

// flockDir locks dir's lock file as how says (LOCK_EX, LOCK_SH) without waiting; held elsewhere,
// it refuses with inUse, given out and the holder the file names.
func flockDir(dir, out string, how int, inUse string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	// not through a symbolic link: the holder's name is written into the file, which would
	// replace whatever file outside the output the link leads to
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, refuse("lock %s: %s is a symbolic link, which could lead outside the output: remove it (rekey makes the lock file itself)", out, path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", out, err)
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, refuse(inUse, out, who)
		}
		return nil, fmt.Errorf("lock %s: %w", out, err)
	}
	return f, nil
}

// closeFile closes f, if any.
func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func holderInfo() string {
	host, _ := os.Hostname()
	return "pid " + strconv.Itoa(os.Getpid()) + " on " + host + ", started " + time.Now().UTC().Format(time.RFC3339)
}

// objectLock is the lock of an output on an object store: the object LockFile, renewed while
// the run goes on. Where the store offers conditional writes (store.ConditionalPutter) each
// write of the lock is conditional on the version last seen; elsewhere two runs starting
// within the same instant could both write it: the read-back after a pause catches all but an
// exact tie, and the stake (two runs writing one output) is named in every refusal.
type objectLock struct {
	st   store.Store
	info objectLockInfo
	stop chan struct{}
	done chan struct{}
	log  *zap.Logger
	lost atomic.Pointer[error] // set once the lock was found not to be ours: it never comes back
	// cas, when the store offers it, makes each write of the lock conditional on version, the
	// lock as this run last read or wrote it ("": absent): a renewal after a take-over, or two
	// runs taking over at once, fail instead of overwriting the other run's lock.
	cas     store.ConditionalPutter
	version string
}

type objectLockInfo struct {
	Holder  string    `json:"holder"`
	Token   string    `json:"token"`
	Renewed time.Time `json:"renewed"`
	Expires time.Time `json:"expires"`
	// Host, Boot and PID name the holding process, so that a run on the same machine can tell
	// that the holder is gone (killed, or failed while the store was unreachable and could not
	// remove its lock) without waiting for the lock to expire.
	Host string `json:"host,omitempty"`
	Boot string `json:"boot,omitempty"` // the kernel's boot id: same host name, same machine
	PID  int    `json:"pid,omitempty"`
	// PIDNS is the holder's PID namespace: a container has its own, where pids repeat (the first
	// process of every container is pid 1) and the pids of other containers cannot be checked.
	PIDNS string `json:"pidns,omitempty"`
}

// heldLocks holds the tokens of the object-store locks this process holds: a lock naming this
// process but not held is a run of this process that ended (rekey embedded, or tests).
var heldLocks sync.Map

// bootID identifies this boot of this machine ("" where the kernel does not say).
func bootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// pidNS identifies this process's PID namespace ("" where the kernel does not say).
func pidNS() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// holderGone tells whether the process that wrote a lock is known to have ended: it ran on this
// machine (host name and boot id) in this PID namespace and its pid is no longer alive, or it is
// this process and the lock is none it holds. Otherwise (another machine, another container,
// whose host name may be this one's, an older lock without these fields, a pid in use again) the
// lock counts until it expires.
func (h objectLockInfo) holderGone() bool {
	host, _ := os.Hostname()
	boot := bootID()
	if h.PID <= 0 || h.Host == "" || h.Host != host || h.Boot == "" || h.Boot != boot || h.PIDNS != pidNS() {
		return false
	}
	if h.PID == os.Getpid() {
		_, held := heldLocks.Load(h.Token)
		return !held
	}
	return errors.Is(syscall.Kill(h.PID, 0), syscall.ESRCH)
}

// lockSettle is how long lockObject waits before reading its lock back.
var lockSettle = 500 * time.Millisecond

func lockObject(ctx context.Context, st store.Store, out string, log *zap.Logger) (*objectLock, error) {
	cas, _ := st.(store.ConditionalPutter)
	var version string // of the lock found, for the conditional write that takes it
	var data []byte
	var err error
	if cas != nil {
		data, version, err = cas.GetVersion(ctx, LockFile)
	} else {
		data, err = st.Get(ctx, LockFile)
	}
	if err == nil {
		var held objectLockInfo
		switch {
		case json.Unmarshal(data, &held) != nil || !time.Now().Before(held.Expires):
		case held.holderGone():
			log.Info("taking over the lock of a run that ended without removing it", zap.String("holder", held.Holder))
		default:
			return nil, refuse("--out %s is in use by another rekey run (%s, lock renewed %s): wait for it to end or stop it; two runs must never write one output. A run that was killed leaves this lock until %s; after that it is taken over",
				out, held.Holder, held.Renewed.Format(time.RFC3339), held.Expires.Format(time.RFC3339))
		}
	} else if !store.IsNotExist(err) {
		return nil, fmt.Errorf("lock %s: %w", out, err)
	}
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return nil, fmt.Errorf("lock %s: %w", out, err)
	}
	host, _ := os.Hostname()
	l := &objectLock{st: st, info: objectLockInfo{Holder: holderInfo(), Token: hex.EncodeToString(token[:]), Host: host, Boot: bootID(), PID: os.Getpid(), PIDNS: pidNS()},
		stop: make(chan struct{}), done: make(chan struct{}), log: log, cas: cas, version: version}
	heldLocks.Store(l.info.Token, true)
	if err := l.renew(ctx); errors.Is(err, ErrLockLost) {
		heldLocks.Delete(l.info.Token)
		return nil, refuse("--out %s was locked by another rekey run starting at the same time: two runs must never write one output", out)
	} else if err != nil {
		heldLocks.Delete(l.info.Token)
		return nil, fmt.Errorf("lock %s: %w", out, err)
	}
	if l.cas == nil || !l.conditionsHonoured(ctx, version) {
		// another run that wrote the lock at the same time: the last write wins, and both read it back
		time.Sleep(lockSettle)
		data, err = st.Get(ctx, LockFile)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", out, err)
		}
		var now objectLockInfo
		if json.Unmarshal(data, &now) != nil || now.Token != l.info.Token {
			heldLocks.Delete(l.info.Token)
			return nil, refuse("--out %s was locked by another rekey run (%s) starting at the same time: two runs must never write one output", out, now.Holder)
		}
	}
	go l.heartbeat()
	return l, nil
}

// neverAVersion is an If-Match version no object has: conditionsHonoured's probe.
const neverAVersion = `"rekey-probe-matches-no-object"`

// conditionsHonoured tells whether the server evaluated the condition this run's lock was just
// taken with (If-None-Match when tookFrom is "", else If-Match), so that no other run can hold
// it too and the lock needs no settle and read-back. It repeats the write under a condition that
// must fail now: a server that ignores conditions (OSS's PutObject documents neither) lets it
// through, which rewrites this run's own lock with the same bytes, and the read-back stays.
func (l *objectLock) conditionsHonoured(ctx context.Context, tookFrom string) bool {
	data, err := json.Marshal(l.info)
	if err != nil {
		return false
	}
	probe := neverAVersion
	if tookFrom == "" {
		probe = "" // the lock exists now: If-None-Match must refuse
	}
	version, err := l.cas.PutIf(ctx, LockFile, data, probe)
	switch {
	case errors.Is(err, store.ErrChanged):
		return true
	case err == nil:
		l.version = version
		l.log.Info("the store ignores conditional writes: the output's lock is read back after it settles")
	}
	return false
}

// StoreLock is the output lock of an object store taken by a process that does not go through
// Open (rekey replicate, which continues its output instead of resuming a checkpoint).
type StoreLock struct{ l *objectLock }

// LockStore takes st's output lock (the renewed object LockFile) for as long as this process
// writes there; out names the output in messages. A lock held by a live run is refused with an
// error wrapping ErrRefusedResume. With waitStale, a lock that is not renewed (its run was
// killed) is waited for until it expires, at most LockTTL, and taken over; a lock renewed
// meanwhile is refused. Release it when done.
func LockStore(ctx context.Context, st store.Store, out string, log *zap.Logger, waitStale bool) (*StoreLock, error) {
	if log == nil {
		log = zap.NewNop()
	}
	l, err := waitLockObject(ctx, st, out, log, waitStale)
	if err != nil {
		return nil, err
	}
	return &StoreLock{l: l}, nil
}

// waitLockObject is lockObject; with waitStale a refusal for a lock that is not renewed (its run
// was killed, on another machine: one on this machine is taken over at once) waits until the lock
// expires and takes it over, at most LockTTL; a lock renewed meanwhile (a live run) is refused.
func waitLockObject(ctx context.Context, st store.Store, out string, log *zap.Logger, waitStale bool) (*objectLock, error) {
	var seen time.Time // the Renewed of the lock found first
	poll := min(LockTTL/12, 5*time.Second)
	for {
		l, err := lockObject(ctx, st, out, log)
		if err == nil {
			return l, nil
		}
		if !waitStale || !errors.Is(err, ErrRefusedResume) {
			return nil, err
		}
		data, gerr := st.Get(ctx, LockFile)
		var held objectLockInfo
		switch {
		case store.IsNotExist(gerr):
			continue // released meanwhile
		case gerr != nil:
			return nil, fmt.Errorf("lock %s: %w", out, gerr)
		case json.Unmarshal(data, &held) != nil:
			return nil, err
		case seen.IsZero():
			seen = held.Renewed
			log.Warn("waiting for the output's lock: held by a run that may have been killed; taken over once it expires unless it is renewed",
				zap.String("holder", held.Holder), zap.Time("expires", held.Expires))
		case !held.Renewed.Equal(seen):
			return nil, err // renewed: its run is alive
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(poll, time.Until(held.Expires)+10*time.Millisecond)):
		}
	}
}

// Held reads the lock back: an error wrapping ErrLockLost when it is no longer this process's
// (it was not renewed for LockTTL, a pause or a partition from the store, and another run may
// have taken it over). Call it before a commit that must not race with another writer.
func (s *StoreLock) Held(ctx context.Context) error { return s.l.held(ctx) }

// Release stops renewing the lock and removes it.
func (s *StoreLock) Release() error { return s.l.release() }

// Abandon stops renewing the lock and leaves it, as a killed process would (fault tests).
func (s *StoreLock) Abandon() {
	close(s.l.stop)
	<-s.l.done
}

// renew writes the lock with a new expiry: conditionally where the store can, so that it fails
// with ErrLockLost, rather than overwrite it, when another run wrote the lock since.
func (l *objectLock) renew(ctx context.Context) error {
	now := time.Now().UTC()
	l.info.Renewed, l.info.Expires = now, now.Add(LockTTL)
	data, err := json.Marshal(l.info)
	if err != nil {
		return err
	}
	if l.cas != nil {
		version, err := l.cas.PutIf(ctx, LockFile, data, l.version)
		switch {
		case err == nil:
			l.version = version
			return nil
		case errors.Is(err, store.ErrChanged):
			// A write that landed and lost its answer is sent again by the client, conditional
			// on the version before it, and refused because of itself: the lock then holds
			// exactly what this run wrote (its token, which no other run has), and is kept.
			if now, version, gerr := l.cas.GetVersion(ctx, LockFile); gerr == nil && bytes.Equal(now, data) {
				l.version = version
				return nil
			}
			lost := fmt.Errorf("%w: another rekey run wrote it (took the output over) since this run last did: this run stopped without writing there any more", ErrLockLost)
			l.lost.CompareAndSwap(nil, &lost)
			return *l.lost.Load()
		case errors.Is(err, errors.ErrUnsupported):
			l.log.Info("the store refuses conditional writes: the output's lock is written plainly and read back", zap.Error(err))
			l.cas = nil
		default:
			return err
		}
	}
	return l.st.Put(ctx, LockFile, data)
}

// held reads the lock back and fails, with an error wrapping ErrLockLost, when it is no longer
// this run's: another run's token, no lock at all, or this run's but expired (a run that let
// its lock expire may be being taken over at this very moment). Once lost, always lost. An
// error reading it is returned as is: the write it guards must not go ahead either.
func (l *objectLock) held(ctx context.Context) error {
	if lost := l.lost.Load(); lost != nil {
		return *lost
	}
	data, err := l.st.Get(ctx, LockFile)
	if err != nil && !store.IsNotExist(err) {
		return fmt.Errorf("check the output's lock: %w", err)
	}
	var now objectLockInfo
	var lost error
	switch {
	case err != nil:
		lost = fmt.Errorf("%w: %s was removed, so another rekey run may be writing the output: this run stopped without writing there any more", ErrLockLost, LockFile)
	case json.Unmarshal(data, &now) != nil || now.Token != l.info.Token:
		lost = fmt.Errorf("%w: another rekey run (%s) took over the output after this one stopped renewing its lock for %s (paused, or cut off from the store): this run stopped without writing there any more",
			ErrLockLost, now.Holder, LockTTL)
	case !time.Now().Before(now.Expires):
		lost = fmt.Errorf("%w: it expired at %s (not renewed for %s: paused, or cut off from the store) and another rekey run may be taking the output over: this run stopped without writing there any more",
			ErrLockLost, now.Expires.Format(time.RFC3339), LockTTL)
	default:
		return nil
	}
	l.lost.CompareAndSwap(nil, &lost)
	return *l.lost.Load()
}

func (l *objectLock) heartbeat() {
	defer close(l.done)
	t := time.NewTicker(LockTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			// Checked first: a run resuming from a pause must not overwrite the lock of the
			// run that took over meanwhile.
			err := l.held(context.Background())
			if errors.Is(err, ErrLockLost) {
				l.log.Warn("stopped renewing the output's lock: it is no longer this run's", zap.Error(err))
				return
			}
			if err == nil {
				err = l.renew(context.Background())
			}
			if err != nil {
				l.log.Warn("could not renew the output's lock; it expires unless a later renewal succeeds", zap.Error(err))
			}
		}
	}
}

// release stops renewing the lock and removes it, unless it is no longer this run's (another
// run's lock is that run's to remove). When the store cannot be reached the lock stays; the
// next run on this machine sees that its holder ended (holderGone), one elsewhere waits for it
// to expire.
func (l *objectLock) release() error {
	close(l.stop)
	<-l.done
	heldLocks.Delete(l.info.Token)
	ctx := context.Background()
	data, err := l.st.Get(ctx, LockFile)
	if store.IsNotExist(err) {
		return nil
	}
	var now objectLockInfo
	if err == nil && (json.Unmarshal(data, &now) != nil || now.Token != l.info.Token) {
		return nil
	}
	return l.st.Remove(ctx, LockFile)
}
