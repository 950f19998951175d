package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// LockFile is held (flock) by the run writing an output directory, for as long as it runs. The
// kernel releases it when the process dies, so a killed run never leaves a stale lock.
const LockFile = ".rekey.lock"

// OutputSpec says what a run will write into an output directory; OpenOutput checks that the
// directory's checkpoint, if any, was written by the same job.
type OutputSpec struct {
	Dir         string
	Fingerprint string // of the resolved mapping
	Format      string // data file format ("parquet", "csv")
	Source      Source // its Identity, if it has one, must match the checkpoint's
	Regions     int    // the region count asked for on the command line (0: not given)
	Resume      bool
	// Overwrite replaces a previous run's output (rekey's files only) instead of refusing it.
	Overwrite bool
	// FinalFiles are the names of the files a finished run writes beside the data (manifest...):
	// with the data, rejects and checkpoint, what Overwrite may remove.
	FinalFiles []string
	// VerifyFile checks one committed file of the checkpoint (a Parquet footer, say) before a
	// resume trusts it; path is absolute. Size is checked before it is called. Optional.
	VerifyFile func(path string, f FileInfo) error
}

// Output is an output directory opened for one run: locked, and checked against its checkpoint.
type Output struct {
	Dir string
	// Checkpoint is the run to continue, nil for a fresh start. When Complete is set the
	// source was read to its end: only the final files (manifest...) may be missing.
	Checkpoint *Checkpoint
	lock       *os.File
}

// ErrRefusedResume is wrapped by OpenOutput's errors when the directory cannot be resumed or
// reused as asked: a usage error, not a failure of a run.
var ErrRefusedResume = errors.New("refused")

// refusal is an error that is ErrRefusedResume without saying so in its text.
type refusal struct{ error }

func (refusal) Is(target error) bool { return target == ErrRefusedResume }

func refuse(format string, args ...any) error { return refusal{fmt.Errorf(format, args...)} }

// OpenOutput locks dir for this run and decides where the run starts:
//   - a fresh run needs an empty (or absent) directory;
//   - --resume continues from the checkpoint once it has checked that the mapping, format, region
//     count and source are the same and that every file the checkpoint lists is intact, and
//     deletes what the interrupted run wrote after its last checkpoint;
//   - --resume of a run that crashed before its first checkpoint starts over, after removing what
//     that run left (only rekey's own files: a directory holding anything else is refused).
//
// Close the Output when the run ends to release the lock.
func OpenOutput(spec OutputSpec, logger *zap.Logger) (*Output, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	if err := CheckLocalDir(spec.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	lock, err := lockDir(spec.Dir)
	if err != nil {
		return nil, err
	}
	o := &Output{Dir: spec.Dir, lock: lock}
	if err := o.open(spec, logger); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func (o *Output) open(spec OutputSpec, logger *zap.Logger) error {
	entries, err := os.ReadDir(spec.Dir)
	if err != nil {
		return fmt.Errorf("--out %s: %w", spec.Dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != LockFile {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil // a fresh start, with or without --resume
	}
	if spec.Overwrite && !spec.Resume {
		if foreign := notRekeyFiles(names, spec.FinalFiles); len(foreign) > 0 {
			return refuse("--overwrite: %s holds files rekey did not write (%s): it is not a rekey output; choose a new --out directory", spec.Dir, strings.Join(foreign, ", "))
		}
		removed, err := removeRunFiles(spec.Dir, names)
		if err != nil {
			return err
		}
		logger.Info("--overwrite: removed the previous run's output", zap.String("out", spec.Dir), zap.Int("entries", removed))
		return nil
	}
	if !spec.Resume {
		return refuse("--out %s already holds files (a previous run?): pass --resume to finish an interrupted run there, --overwrite to replace it, or choose a new --out directory", spec.Dir)
	}
	cp, err := LoadCheckpoint(spec.Dir)
	if err != nil {
		return refuse("--resume: %v; the run cannot be resumed: start over in a new --out directory", err)
	}
	if cp == nil {
		// The run died before its first checkpoint: nothing it wrote is committed.
		if foreign := notRekeyFiles(names, nil); len(foreign) > 0 {
			return refuse("--resume: %s has no %s and holds files rekey did not write (%s): it is not an interrupted rekey run; choose a new --out directory",
				spec.Dir, CheckpointFile, strings.Join(foreign, ", "))
		}
		removed, err := removeRunFiles(spec.Dir, names)
		if err != nil {
			return err
		}
		logger.Info("no checkpoint: the interrupted run committed nothing; starting over", zap.String("out", spec.Dir), zap.Int("files", removed))
		return nil
	}
	if err := checkResume(cp, spec); err != nil {
		return err
	}
	if damaged := verifyFiles(spec.Dir, cp.Files, spec.VerifyFile); len(damaged) > 0 {
		return refuse("--resume: %d of the %d files %s lists are damaged, so the rows they held are lost:\n  %s\nthe run cannot be resumed without losing rows: start over in a new --out directory (or restore the files)",
			len(damaged), len(cp.Files), CheckpointFile, strings.Join(damaged, "\n  "))
	}
	removed, err := RemoveUncommitted(spec.Dir, cp.Files)
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
func checkResume(cp *Checkpoint, spec OutputSpec) error {
	var diffs []string
	if cp.Fingerprint != spec.Fingerprint {
		diffs = append(diffs, fmt.Sprintf("mapping: fingerprint %s then, %s now", cp.Fingerprint, spec.Fingerprint))
	}
	if cp.Format != "" && spec.Format != "" && cp.Format != spec.Format {
		diffs = append(diffs, fmt.Sprintf("--format: %s then, %s now", cp.Format, spec.Format))
	}
	if spec.Regions > 0 && spec.Regions != cp.Plan.Count() {
		diffs = append(diffs, fmt.Sprintf("--regions: %d then, %d now", cp.Plan.Count(), spec.Regions))
	}
	if cp.Source != nil && spec.Source != nil {
		if a, ok := spec.Source.(IdentityAdopter); ok {
			if err := a.AdoptIdentity(cp.Source); err != nil {
				return refuse("--resume: %v", err)
			}
		}
		if now := SourceIdentity(spec.Source); now != nil {
			for _, d := range cp.Source.Diff(now) {
				diffs = append(diffs, "source "+d)
			}
		}
	}
	if len(diffs) > 0 {
		return refuse("--resume: %s was written by another job than this one:\n  %s\nresume with the same mapping, --source (unchanged input), --format and --regions, or start over in a new --out directory",
			spec.Dir, strings.Join(diffs, "\n  "))
	}
	return nil
}

// verifyFiles checks that every committed file is still there, whole: the path stays inside dir,
// the size is the one committed, and verify (if any) accepts it. It returns one line per damaged file.
func verifyFiles(dir string, files []FileInfo, verify func(string, FileInfo) error) []string {
	var damaged []string
	for _, f := range files {
		path, st, err := StatRelPath(dir, f.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			damaged = append(damaged, f.Path+": missing")
			continue
		case err != nil:
			damaged = append(damaged, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		case st.Size() != f.Bytes:
			damaged = append(damaged, fmt.Sprintf("%s: %d bytes, %d when committed", f.Path, st.Size(), f.Bytes))
			continue
		}
		if verify != nil {
			if err := verify(path, f); err != nil {
				damaged = append(damaged, fmt.Sprintf("%s: %v", f.Path, err))
			}
		}
	}
	return damaged
}

// notRekeyFiles lists the names among a directory's top-level entries that no rekey run writes
// before its first checkpoint, nor among final (the files it writes when it ends).
func notRekeyFiles(names, final []string) []string {
	var foreign []string
	for _, n := range names {
		early := n == DataDir || n == RejectsFile || strings.HasPrefix(n, ReplayPrefix) || n == CheckpointFile || IsTemp(n)
		if !early && !slices.Contains(final, n) {
			foreign = append(foreign, n)
		}
	}
	return foreign
}

// removeRunFiles deletes a run's entries of dir (names, all of them rekey's own).
func removeRunFiles(dir string, names []string) (int, error) {
	for _, n := range names {
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return 0, fmt.Errorf("remove what the interrupted run left: %w", err)
		}
	}
	return len(names), SyncDir(dir)
}

// CheckLocalDir refuses an --out that looks like a URI rekey does not write to (mysql://...,
// s3://...), which would otherwise become a local folder named "mysql:".
func CheckLocalDir(dir string) error {
	if scheme, _, ok := strings.Cut(dir, "://"); ok && !strings.ContainsAny(scheme, `/\`) {
		return refuse("--out %q: rekey does not write to %s:// outputs; --out takes a local directory", dir, scheme)
	}
	return nil
}

// Close releases the lock.
func (o *Output) Close() error {
	if o == nil || o.lock == nil {
		return nil
	}
	err := o.lock.Close() // closing the descriptor releases the flock
	o.lock = nil
	return err
}

// lockDir takes dir's exclusive lock, or says who holds it.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, refuse("--out %s is in use by another rekey run (%s): wait for it to end or stop it; two runs must never write one output", dir, who)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	host, _ := os.Hostname()
	info := "pid " + strconv.Itoa(os.Getpid()) + " on " + host + ", started " + time.Now().UTC().Format(time.RFC3339)
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(info+"\n"), 0)
	}
	return f, nil
}
