package output

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rekey/rekey/store"
)

// ErrUnsafePath is wrapped by the errors of CheckRelPath, SafeRelPath and StatRelPath.
var ErrUnsafePath = errors.New("unsafe file path")

// CheckRelPath checks rel, a data file's path read from a manifest or a checkpoint, the way
// rekey writes them: slash-separated, relative, clean, inside a region folder under data/
// ("data/region-0000/part-00000.parquet"). Anything else could make the reader open, link, move
// or delete a file outside the output directory (a crafted "../x", "/etc/x" or
// "data/region-0000/../../x"), so it is refused rather than cleaned.
func CheckRelPath(rel string) error { return CheckRelPathIn(rel, DataDir) }

// CheckRelPathIn is CheckRelPath for files under top/region-NNNN/ (replicate's delete files
// live under deletes/, beside data/).
func CheckRelPathIn(rel, top string) error {
	why := store.NameProblem(rel)
	if why == "" {
		first, rest, _ := strings.Cut(rel, "/")
		folder, rest, ok := strings.Cut(rest, "/")
		switch {
		case first != top && isRegionDir(first):
			why = "is not inside " + top + "/ (written by an earlier rekey, which kept the region folders at the top? finish it with that version, or start over)"
		case first != top || !ok || rest == "" || !isRegionDir(folder):
			why = "is not inside a region folder (" + top + "/" + RegionDirPrefix + "NNNN/...)"
		}
	}
	if why != "" {
		return fmt.Errorf("%w %q: it %s", ErrUnsafePath, rel, why)
	}
	return nil
}

func isRegionDir(name string) bool {
	digits, ok := strings.CutPrefix(name, RegionDirPrefix)
	if !ok || digits == "" {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// SafeRelPath returns rel, a path read from a manifest or checkpoint of the output directory
// dir, joined to dir, once CheckRelPath accepts it. Every reader of such paths goes through it
// (or StatRelPath) before opening, linking, moving or deleting the file.
func SafeRelPath(dir, rel string) (string, error) {
	if err := CheckRelPath(rel); err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}

// StatRelPath is SafeRelPath and then an Lstat of every component of rel under dir: a region
// folder or file that is a symbolic link could lead outside dir although the path reads as
// inside, so links are refused (dir itself may be one). It returns the file's full path and
// its FileInfo; a missing file gives an error wrapping fs.ErrNotExist.
func StatRelPath(dir, rel string) (string, fs.FileInfo, error) {
	full, err := SafeRelPath(dir, rel)
	if err != nil {
		return "", nil, err
	}
	p := dir
	segs := strings.Split(rel, "/")
	var fi fs.FileInfo
	for i, s := range segs {
		p = filepath.Join(p, s)
		if fi, err = os.Lstat(p); err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, fmt.Errorf("%w %q: %s is a symbolic link, which could lead outside %s", ErrUnsafePath, rel, path.Join(segs[:i+1]...), dir)
		}
	}
	return full, fi, nil
}

// DataDir is the folder of an output that holds the data files and nothing else: the bulk
// load reads it whole (Spark lists it recursively and would read anything else as data).
// Everything else (manifest, checkpoint, rejects...) lives beside it.
const DataDir = "data"

// RegionDirPrefix starts the name of every region folder under DataDir.
const RegionDirPrefix = "region-"

// RegionName is the name of region i's folder ("region-0007"), for people.
func RegionName(i int) string { return fmt.Sprintf("%s%04d", RegionDirPrefix, i) }

// RegionDir is the folder of region i, relative to the output directory: "data/region-0007".
func RegionDir(i int) string { return DataDir + "/" + RegionName(i) }

// DataFile is the name of region's data file number seq, relative to the output directory:
// "data/region-0007/part-00012.parquet", its base name after prefix ("" or a shard's
// ShardFilePrefix: "data/region-0007/s0002-part-00012.parquet").
func DataFile(region, seq int, prefix, ext string) string {
	return fmt.Sprintf("%s/%s%s%05d.%s", RegionDir(region), prefix, dataFilePrefix, seq, ext)
}

const dataFilePrefix = "part-"

// ParseDataFile reads the region and number of a data file's name as DataFile writes it with
// prefix (any extension); ok is false for any other name: a temporary one, or one of another
// prefix.
func ParseDataFile(name, prefix string) (region, seq int, ok bool) {
	folder, base, ok := strings.Cut(strings.TrimPrefix(name, DataDir+"/"), "/")
	digits, isRegion := strings.CutPrefix(folder, RegionDirPrefix)
	if !ok || !isRegion || !strings.HasPrefix(name, DataDir+"/") || strings.Contains(base, "/") {
		return 0, 0, false
	}
	region, err := strconv.Atoi(digits)
	if err != nil || region < 0 || RegionDir(region) != DataDir+"/"+folder {
		return 0, 0, false
	}
	rest, ok := strings.CutPrefix(strings.TrimPrefix(base, prefix), dataFilePrefix)
	if !ok {
		return 0, 0, false
	}
	digits, _, ok = strings.Cut(rest, ".")
	if !ok || digits == "" {
		return 0, 0, false
	}
	seq, err = strconv.Atoi(digits)
	if err != nil || seq < 0 {
		return 0, 0, false
	}
	return region, seq, true
}

// PrivateName tells which of an output's files a local folder keeps to its owner (0600): the
// rejects and replay files hold raw input (personal data, perhaps), and the checkpoint names the
// source and its cursors. Everything else is 0644. Give it to the local store that holds an
// output: store.Open(ctx, dir, getenv, store.PrivateNames(output.PrivateName)).
func PrivateName(name string) bool {
	base := path.Base(name)
	return base == CheckpointFile || base == RejectsFile || strings.HasPrefix(base, ReplayPrefix) ||
		strings.HasPrefix(name, RejectsPartsDir+"/") || strings.HasPrefix(name, ReplayPartsDir+"/")
}

// finalFiles are the files a finished migrate writes beside the data: with the data, rejects and
// checkpoint, what --overwrite may remove.
var finalFiles = []string{DDLFile, BulkloadFile, ManifestFile}

// MergePlanFile is the merge plan merge.WriteTo puts in the output before it places any file:
// the inputs, the mode and where every file goes. A merge interrupted at any point (--files move
// leaves the files split between the inputs and the output) is finished by running it again: a
// file already at its destination counts as placed. WriteTo removes the plan once the manifest
// is written.
const MergePlanFile = "merge-plan.json"

// The files of a replication output (rekey replicate), beside data/ as every other non-data file.
const (
	// DeletesDir holds replicate's delete files, SQL that must never be read as data:
	// deletes/region-NNNN/ (DeletesRegionDir).
	DeletesDir = "deletes"
	// RejectsDir holds rejects files, one per object: replicate's, one per roll (or per SQL
	// batch), and migrate's numbered parts on an object store (RejectsPartsDir).
	RejectsDir = "rejects"
	// ReplicateStateFile records what an output replicates (the mapping's fingerprint, the
	// region plan, the topic and group): replicate.json.
	ReplicateStateFile = "replicate.json"
	// ReplicateLockFile is the lock the members of a consumer group sharing a folder take for
	// each change of its shared files (see FolderCommitLock); it holds the manifest's revision.
	ReplicateLockFile = "replicate.lock"
)

// DeletesRegionDir is region i's folder of delete files: "deletes/region-0007".
func DeletesRegionDir(i int) string { return DeletesDir + "/" + RegionName(i) }

// ErrNotRegular is wrapped by StatListed's error for a listed file that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// StatListed checks rel, a data file a manifest or checkpoint of the output st lists, before it
// is linked, copied, moved or deleted: its path (CheckRelPath: errors wrap ErrUnsafePath), on a
// local folder that no component of it is a symbolic link (StatRelPath) and that it is a regular
// file (ErrNotRegular), and that it exists (a missing one wraps store.ErrNotExist). It returns
// the file's size, which the caller compares with the size listed.
func StatListed(ctx context.Context, st store.Store, rel string) (int64, error) {
	dir, local := store.LocalPath(st)
	if !local {
		if err := CheckRelPath(rel); err != nil {
			return 0, err
		}
		info, err := st.Stat(ctx, rel)
		return info.Size, err
	}
	_, fi, err := StatRelPath(dir, rel)
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type())
	}
	return fi.Size(), nil
}

// SliceFilePrefix begins the names of the data files of one time slice of a migration that
// carries write times into files (target.write_time): "w1733011200000-" for the slice that starts
// at that epoch millisecond, "wnone-" (start < 0) for the rows that carry no write time. Each
// slice is loaded by its own bulkload job, whose filePath names the slice's files by this prefix.
func SliceFilePrefix(start int64) string {
	if start < 0 {
		return sliceNone
	}
	return fmt.Sprintf("w%013d-", start)
}

const sliceNone = "wnone-"

// FileSlice reads the time slice of a data file's path as SliceFilePrefix names it: start (-1:
// the rows without a write time); ok is false for a file of no slice.
func FileSlice(rel string) (start int64, ok bool) {
	base := path.Base(rel)
	if strings.HasPrefix(base, sliceNone) {
		return -1, true
	}
	digits, ok := strings.CutPrefix(base, "w")
	if !ok {
		return 0, false
	}
	digits, _, ok = strings.Cut(digits, "-")
	if !ok || len(digits) < 13 {
		return 0, false
	}
	start, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || start < 0 || SliceFilePrefix(start) != "w"+digits+"-" {
		return 0, false
	}
	return start, true
}

// ownNames begins the name of everything rekey writes at the top of an output: its folders and
// files, and the name prefixes of its numbered ones.
var ownNames = []string{
	DataDir + "/", RejectsDir + "/", ReplayPartsDir + "/", DeletesDir + "/", ShardsDir + "/",
	RejectsFile, ReplayPrefix, CheckpointFile, ManifestFile, DDLFile, BulkloadFile, MergePlanFile,
	ReplicateStateFile, ReplicateLockFile, LockFile,
}

// SweepOwn removes what unfinished writers of rekey left in the output st (store.Store's Sweep)
// under rekey's own names alone. A bucket's prefix (its root, say) may hold other tools' uploads
// in flight, which a sweep of the whole prefix would abort; a folder's temporary files are rekey's
// by their names, so it is swept whole, in one walk.
func SweepOwn(ctx context.Context, st store.Store) error {
	if _, local := store.LocalPath(st); local {
		return st.Sweep(ctx, "")
	}
	for _, name := range ownNames {
		if err := st.Sweep(ctx, name); err != nil {
			return err
		}
	}
	return nil
}
