// Package merge combines the output directories of runs that migrated one table together,
// typically the N shards of a Cassandra table (migrate --shard i/N), into one bulkload-ready
// directory: data files placed region by region and renumbered, the manifest's totals summed,
// ddl.sql and bulkload.json carried over and rejects.jsonl concatenated.
//
// On an object store the shards' files are copied by the server, not named where they lie: LTS's
// bulkload job reads one filePath, a folder, so the files of one table must sit under one data/
// folder. A merged manifest naming the shards' objects in place would need a job per shard, and
// a shard prefix also holds its manifest, checkpoint and rejects beside data/. A server-side copy
// (CopyObject, or UploadPartCopy ranges over 1 GiB) within one bucket moves no byte through rekey
// and leaves the shards intact (--files move deletes them after); between buckets or servers the
// bytes are streamed through rekey.
package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/formats"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
)

// Mode is how data files reach the output directory.
type Mode string

// Modes.
const (
	Link Mode = "link" // hard links, copies across filesystems
	Copy Mode = "copy"
	Move Mode = "move"
)

// ParseMode reads a --files value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Link, Copy, Move:
		return m, nil
	}
	return "", fmt.Errorf("--files %q: want link, copy or move", s)
}

// Input is one run's output: a local folder or a bucket prefix.
type Input struct {
	Dir        string // as given, for messages
	Store      store.Store
	Manifest   *output.Manifest
	Checkpoint *pipeline.Checkpoint // nil when the run kept none
	DDL        []byte
	// Job is the run's bulkload job: nil when it kept none (a run before rekey wrote one) or a
	// list of them (time slices, which Check refuses).
	Job *lindorm.BulkloadJob
	// Shards are the checkpoints of the shards of a finished shared output (migrate --shard i/N
	// --shared-out, then merge --out), which keeps none at its top: what it read.
	Shards []*pipeline.Checkpoint
}

// read is what in's run read: its checkpoint, or its shards' (a finished shared output).
func (in *Input) read() []*pipeline.Checkpoint {
	if in.Checkpoint != nil {
		return []*pipeline.Checkpoint{in.Checkpoint}
	}
	return in.Shards
}

// RejectCodes sums the inputs' rejected rows by code, as their checkpoints (or their shards')
// count them; ok is false when an input keeps no count (a merged output: its checkpoints are not
// there), when a partial sum would mislead.
func RejectCodes(inputs []*Input) (codes map[string]int64, ok bool) {
	codes = map[string]int64{}
	for _, in := range inputs {
		read := in.read()
		if len(read) == 0 {
			return nil, false
		}
		for _, cp := range read {
			for c, n := range cp.RejectCodes {
				codes[c] += n
			}
		}
	}
	return codes, true
}

// source names the source in's run read, to compare with another input's: its checkpoint's, or
// for a finished shared output the source its shards split (without the shard and the files
// each read, which checkFilesReadOnce compares); nil when unknown.
func (in *Input) source() pipeline.Identity {
	if in.Checkpoint != nil {
		return in.Checkpoint.Source
	}
	if len(in.Shards) == 0 {
		return nil
	}
	id := in.Shards[0].Source.WithoutShard()
	delete(id, "input") // a shard's record of the whole input it split
	return id
}

// Result is what Write made.
type Result struct {
	Manifest *output.Manifest // the merged manifest, as written to the output
	// Local says the inputs and the output are local folders, between which files are
	// hard-linked or renamed (store.CanLink), or copied where they cannot be.
	Local  bool
	Linked int // files hard-linked or renamed
	Copied int // files whose bytes rekey copied (across filesystems in link mode, or between stores)
	// ServerCopied counts the files the output store copied itself (store.Copier: a server-side
	// copy within one bucket), with no byte through rekey.
	ServerCopied int
	// ReplayParts counts the replay files written (output.ReplayPart): the inputs' rejected
	// records as read, each under its input's header.
	ReplayParts int
}

// ErrRead is wrapped by OpenInputs' and OpenShards' errors that are failures to read an input
// (its store does not answer, a read fails) rather than a refusal of the inputs given: the same
// command may succeed once the store answers.
var ErrRead = errors.New("merge: an input cannot be read")

// readError is an error that is ErrRead without saying so in its text.
type readError struct{ error }

func (e readError) Unwrap() error      { return e.error }
func (readError) Is(target error) bool { return target == ErrRead }

// readFailed marks err, a store's failure to answer for an input, as ErrRead; a store's refusal
// of what the user gave (store.IsUsage) and a file that is not there stay as they are.
func readFailed(err error) error {
	if err == nil || store.IsUsage(err) || store.IsNotExist(err) {
		return err
	}
	return readError{err}
}

// OpenInputs reads the manifest, checkpoint and ddl.sql of every input: open opens each one (a
// folder, s3://...). out is the output, which must not be one of them.
func OpenInputs(ctx context.Context, dirs []string, out store.Store, open func(context.Context, string) (store.Store, error)) ([]*Input, error) {
	outAt := store.ResolvedLocation(out)
	prev, err := readPlan(ctx, out)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var inputs []*Input
	for n, d := range dirs {
		st, err := open(ctx, d)
		if err != nil {
			// a bucket input the store refuses may hold a password: quote it masked
			return nil, readFailed(fmt.Errorf("%s: %w", sourceuri.Redact(d), err))
		}
		at := store.ResolvedLocation(st)
		switch {
		case at == outAt:
			return nil, fmt.Errorf("%s is both an input and --out", d)
		case strings.HasPrefix(outAt, at):
			// a later migrate --resume of the input deletes what its checkpoint does not list
			return nil, fmt.Errorf("--out %s is inside the input %s: a migrate --resume of that input would delete the merged files; give an --out outside every input", out.Location(""), d)
		case strings.HasPrefix(at, outAt):
			return nil, fmt.Errorf("the input %s is inside --out %s: the merged output would hold another run's files; give an --out outside every input", d, out.Location(""))
		}
		if seen[at] {
			return nil, fmt.Errorf("%s is given twice", d)
		}
		seen[at] = true
		in := &Input{Dir: d, Store: st}
		// a replication's manifest reads as a migration's, but its DELETE statements apply
		// after its data files, segment by segment: merged, its data would load without them
		if _, err := st.Stat(ctx, output.ReplicateStateFile); err == nil {
			return nil, fmt.Errorf("%s holds a replication (rekey replicate: %s), not a migration: its DELETE statements (%s/) apply after its data files, segment by segment in the order its %s lists, "+
				"and a merge would load its data without them; load it as it is", d, output.ReplicateStateFile, output.DeletesDir, output.ManifestFile)
		} else if !store.IsNotExist(err) {
			return nil, readFailed(fmt.Errorf("%s: %w", d, err))
		}
		if _, err := st.Stat(ctx, output.ManifestFile); err != nil {
			if !store.IsNotExist(err) {
				return nil, readFailed(fmt.Errorf("%s: %w", d, err))
			}
			// a mistyped path holds no run at all: there is nothing to finish with --resume
			if all, lerr := st.List(ctx, ""); lerr == nil && len(all) == 0 {
				return nil, fmt.Errorf("%s holds nothing (no such folder, or an empty one): give the --out of a complete migrate run", d)
			}
			// the shards of one --out (--shared-out) are finished by merge, not by a resume
			if shards, serr := output.SharedShards(ctx, st); serr == nil && len(shards) > 0 {
				return nil, fmt.Errorf("%s holds the shards of a migration that wrote one --out together (--shared-out), not finished (no %s): finish it first with rekey merge --out %s", d, output.ManifestFile, d)
			}
			return nil, fmt.Errorf("%s holds no complete run (no %s): finish it first (rekey migrate ... --resume)", d, output.ManifestFile)
		}
		if in.Manifest, err = output.ReadManifest(ctx, st); err != nil {
			return nil, err
		}
		if in.Checkpoint, err = output.ReadCheckpoint(ctx, st); err != nil {
			return nil, err
		}
		if in.Checkpoint != nil && !in.Checkpoint.Complete {
			return nil, fmt.Errorf("%s: its checkpoint says the run did not finish", d)
		}
		if in.Checkpoint == nil {
			if in.Shards, err = shardCheckpoints(ctx, st); err != nil {
				return nil, fmt.Errorf("%s: %w", d, err)
			}
		}
		placed := func(string) bool { return false }
		if prev != nil && n < len(prev.Inputs) && prev.Inputs[n] == st.Location("") {
			// an interrupted --files move: what it moved is in out, not in the input
			placed = func(src string) bool { return prev.placedBefore(ctx, out, n, src) }
		}
		if err := checkFiles(ctx, in, placed); err != nil {
			return nil, err
		}
		if in.DDL, err = st.Get(ctx, output.DDLFile); err != nil {
			return nil, readFailed(fmt.Errorf("%s: %w", d, err))
		}
		if in.Job, err = readJob(ctx, st); err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		inputs = append(inputs, in)
	}
	return inputs, nil
}

// checkFiles verifies, before any file is placed, that every data file in's manifest lists is a
// regular file inside in.Dir, listed once, or one an interrupted merge already placed in the
// output. A crafted manifest must not make merge link, copy or move a file from elsewhere
// ({"path":"../canary.parquet"}), and a refusal half way through --files move would leave the
// input half moved.
func checkFiles(ctx context.Context, in *Input, placed func(src string) bool) error {
	if !plainName(in.Manifest.Format) { // it names the merged files
		return fmt.Errorf("%s: format %q is not a file format name", in.Store.Location(output.ManifestFile), in.Manifest.Format)
	}
	listed := map[string]bool{}
	for i, r := range in.Manifest.Regions {
		for _, fe := range r.Files {
			if err := sourceFile(ctx, in, i, fe); err != nil && !(store.IsNotExist(err) && placed(fe.Path)) {
				return err
			}
			if listed[fe.Path] {
				return fmt.Errorf("%s lists %s twice: was it edited by hand?", in.Store.Location(output.ManifestFile), fe.Path)
			}
			listed[fe.Path] = true
		}
	}
	return nil
}

// sourceFile checks a data file in's manifest lists in region i (output.StatListed), refusing
// paths outside the input, paths through symbolic links, anything but a regular file, and a file
// whose size is not the one listed (cut short by an incomplete copy: merged, the bulk load would
// fail on it or lose its rows).
func sourceFile(ctx context.Context, in *Input, region int, fe output.FileEntry) error {
	manifest := in.Store.Location(output.ManifestFile)
	size, err := output.StatListed(ctx, in.Store, fe.Path)
	switch {
	case err == nil && size != fe.Bytes:
		return fmt.Errorf("%s lists %s of %d bytes, and it holds %d bytes: the file is damaged (an incomplete copy?); restore it from the run that wrote it, or run that migration again", manifest, fe.Path, fe.Bytes, size)
	case err == nil:
		return nil
	case errors.Is(err, output.ErrUnsafePath):
		return fmt.Errorf("%s: region %d: %w; merge reads files inside each input only", manifest, region, err)
	case store.IsNotExist(err):
		return fmt.Errorf("%s lists %s, which is missing: %w", manifest, fe.Path, err)
	case errors.Is(err, output.ErrNotRegular):
		return fmt.Errorf("%s lists %s, which is %w", manifest, fe.Path, err)
	}
	return fmt.Errorf("%s lists %s: %w", manifest, fe.Path, err)
}

func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// Check refuses inputs that do not belong to one migration, naming the inputs to run again: those
// that differ from the most inputs (on a tie, from the first).
func Check(inputs []*Input) error {
	if err := checkNoSlices(inputs); err != nil {
		return err
	}
	if err := checkOneJob(inputs); err != nil {
		return err
	}
	if err := checkSameTarget(inputs); err != nil {
		return err
	}
	if err := checkSameSource(inputs); err != nil {
		return err
	}
	if err := checkShards(inputs); err != nil {
		return err
	}
	if err := checkFilesReadOnce(inputs); err != nil {
		return err
	}
	return checkShardRanges(inputs)
}

// checkFilesReadOnce refuses two inputs that read the same bytes of one file, wherever it lies:
// a run of a folder and a run of one file in it, say, which checkSameSource does not tell apart
// (their sources are named otherwise). A file is the same when its path, size and modification
// time (a bucket's: ETag) are: an export rewritten at one path between two runs holds other rows.
// An input read with a row window (?skip=, ?limit=) is left out: its rows of a file cannot be
// told from its identity.
func checkFilesReadOnce(inputs []*Input) error {
	readBy := map[string][]byteRange{} // file -> the inputs that read it, and which bytes
	for _, in := range inputs {
		for _, cp := range in.read() {
			id := cp.Source
			if _, ok := id["skip"]; ok {
				continue
			}
			if _, ok := id["limit"]; ok {
				continue
			}
			// a file's keys in the identity start with prefix: its size, modified time (a
			// bucket's: etag) and the range read
			type read struct{ loc, prefix string }
			var reads []read
			if f, ok := id["file"]; ok {
				reads = append(reads, read{f, ""})
			} else if dir, ok := id["dir"]; ok {
				for _, k := range slices.Sorted(maps.Keys(id)) {
					if strings.HasPrefix(k, "file[") && strings.HasSuffix(k, "].size") {
						name := strings.TrimSuffix(strings.TrimPrefix(k, "file["), "].size")
						reads = append(reads, read{strings.TrimSuffix(dir, "/") + "/" + name, "file[" + name + "]."})
					}
				}
			}
			for _, rd := range reads {
				r, err := readRange(id, rd.prefix+"range", rd.loc, in.Dir)
				if err != nil {
					return err
				}
				// the same bytes: a file rewritten at its path between two runs holds other rows
				file := rd.loc + "\x00" + id[rd.prefix+"size"] + "\x00" + id[rd.prefix+"modified"] + "\x00" + id[rd.prefix+"etag"]
				for _, prev := range readBy[file] {
					if r.overlaps(prev) {
						return fmt.Errorf("%s and %s both read %s (%s and %s): merged, its rows would be there twice; merge runs that read different files, or the shards of one run (--shard i/N)", prev.dir, in.Dir, rd.loc, prev, r)
					}
				}
				readBy[file] = append(readBy[file], r)
			}
		}
	}
	return nil
}

// readJob reads the bulkload job of the output st: nil when it holds none, or a list of jobs (a
// run in time slices, which checkNoSlices refuses by its files).
func readJob(ctx context.Context, st store.Store) (*lindorm.BulkloadJob, error) {
	data, err := st.Get(ctx, output.BulkloadFile)
	if store.IsNotExist(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(data)); strings.HasPrefix(t, "[") {
		return nil, nil
	}
	var job lindorm.BulkloadJob
	if err := json.Unmarshal(data, &job); err != nil {
		return nil, fmt.Errorf("%s: %w", st.Location(output.BulkloadFile), err)
	}
	return &job, nil
}

// checkSameTarget refuses inputs whose bulkload jobs load into different places: another
// namespace, or another LTS data source of LindormTable (dst). The merged job is the first
// input's with the merged filePath, so every row would load where that one says. Their src may
// differ: it names where each input's own files are, which the merged job reads elsewhere anyway.
func checkSameTarget(inputs []*Input) error {
	var ref *Input
	for _, in := range inputs {
		switch {
		case in.Job == nil:
		case ref == nil:
			ref = in
		case in.Job.Dst != ref.Job.Dst || in.Job.WriterConfig.Namespace != ref.Job.WriterConfig.Namespace:
			return fmt.Errorf("%s loads into namespace %q of the LTS data source %q, and %s into namespace %q of %q: the merged job "+
				"would load every row where the first says; edit writerConfig.namespace and dst of the one that is wrong, then merge again",
				ref.Store.Location(output.BulkloadFile), ref.Job.WriterConfig.Namespace, ref.Job.Dst,
				in.Store.Location(output.BulkloadFile), in.Job.WriterConfig.Namespace, in.Job.Dst)
		}
	}
	return nil
}

// checkNoSlices refuses an input written in time slices (target.write_time): its bulkload jobs
// are one per slice, each stamped with its slice's time, which a merge does not rebuild.
func checkNoSlices(inputs []*Input) error {
	for _, in := range inputs {
		for _, r := range in.Manifest.Regions {
			for _, f := range r.Files {
				if _, ok := output.FileSlice(f.Path); ok {
					return fmt.Errorf("%s was written with target.write_time, in time slices (%s) each loaded by a bulkload job of its own: "+
						"merge does not combine those; load each run's bulkload.json jobs as they are, or migrate again without --shard", in.Dir, f.Path)
				}
			}
		}
	}
	return nil
}

// jobDiffs lists how the input b was made otherwise than a: mapping, region plan, format, table,
// DDL and, for shards, the source they share.
func jobDiffs(a, b *Input) []string {
	am, bm := a.Manifest, b.Manifest
	var diffs []string
	if am.MappingFingerprint != bm.MappingFingerprint {
		diffs = append(diffs, fmt.Sprintf("mapping: fingerprint %s, not %s", short(bm.MappingFingerprint), short(am.MappingFingerprint)))
	}
	if !reflect.DeepEqual(am.Plan, bm.Plan) {
		diffs = append(diffs, fmt.Sprintf("region plan: %s, %d regions, not %s, %d regions (give every shard the same --regions, or use regions.split_keys or a hash-prefix key)",
			bm.Plan.Strategy, bm.Plan.Regions, am.Plan.Strategy, am.Plan.Regions))
	}
	if am.Format != bm.Format {
		diffs = append(diffs, fmt.Sprintf("--format: %s files, not %s", bm.Format, am.Format))
	}
	if am.Table != bm.Table || !reflect.DeepEqual(am.Columns, bm.Columns) || !reflect.DeepEqual(am.KeyColumns, bm.KeyColumns) {
		diffs = append(diffs, fmt.Sprintf("table: %s, another table than %s", bm.Table, am.Table))
	} else if string(a.DDL) != string(b.DDL) {
		diffs = append(diffs, "another "+output.DDLFile)
	}
	if shardOf(a) != "" && shardOf(b) != "" {
		for _, d := range a.Checkpoint.Source.WithoutShard().DiffNamed(b.Checkpoint.Source.WithoutShard(), "in the others", "in it") {
			diffs = append(diffs, "--source "+d)
		}
	}
	return diffs
}

// shardOf is the shard an input read ("1/4"), "" when it read its whole source.
func shardOf(in *Input) string {
	if in.Checkpoint == nil {
		return ""
	}
	if sh, err := pipeline.ParseShard(in.Checkpoint.Source["shard"]); err != nil || sh.Whole() {
		return "" // a Cassandra table read whole names shard 0/1
	}
	return in.Checkpoint.Source["shard"]
}

// checkOneJob refuses inputs made otherwise than the most of them, naming each and how.
func checkOneJob(inputs []*Input) error {
	ref, agree := inputs[0], 0
	for _, a := range inputs {
		n := 0
		for _, b := range inputs {
			if len(jobDiffs(a, b)) == 0 {
				n++
			}
		}
		if n > agree {
			ref, agree = a, n
		}
	}
	if agree == len(inputs) {
		return nil
	}
	var lines, redo []string
	for _, in := range inputs {
		if d := jobDiffs(ref, in); len(d) > 0 {
			lines = append(lines, in.Dir+": "+strings.Join(d, "; "))
			redo = append(redo, in.Dir)
		}
	}
	like := ref.Dir
	if agree > 1 {
		like = fmt.Sprintf("%s and the %d other inputs like it", ref.Dir, agree-1)
	}
	return fmt.Errorf("%d of the %d inputs are not of the same migration as %s:\n  %s\n"+
		"run %s again as %s ran (the same mapping, --source but for --shard, --format and --regions) with --overwrite, then merge again",
		len(redo), len(inputs), like, strings.Join(lines, "\n  "), strings.Join(redo, ", "), ref.Dir)
}

// checkShards verifies, when the inputs are shards of files or of a generator (their sources'
// identities name a shard), that they are the shards 0..N-1 of one source, each once, and that
// no file was read by two of them (a file read in parts: no byte of it). Cassandra shards are
// checked by their token ranges.
func checkShards(inputs []*Input) error {
	var sharded []*Input
	for _, in := range inputs {
		if in.Checkpoint != nil && in.Checkpoint.Source["shard"] != "" && in.Checkpoint.Source["ring"] == "" { // Cassandra shards: checkShardRanges
			sharded = append(sharded, in)
		}
	}
	if len(sharded) == 0 {
		return nil
	}
	if len(sharded) != len(inputs) {
		return fmt.Errorf("%s read a shard of its source and %s did not: merge the shards of one migration, all of them", sharded[0].Dir, firstNotIn(inputs, sharded).Dir)
	}
	// what the shards share: the source without the shard and the files each one read
	common := func(id pipeline.Identity) string { return id.WithoutShard().String() }
	first := sharded[0]
	sh0, err := pipeline.ParseShard(first.Checkpoint.Source["shard"])
	if err != nil {
		return fmt.Errorf("%s: %w", first.Dir, err)
	}
	seen := map[int]string{}
	readBy := map[string][]byteRange{} // file -> the shards that read it, and which bytes
	for _, in := range sharded {
		id := in.Checkpoint.Source
		sh, err := pipeline.ParseShard(id["shard"])
		if err != nil {
			return fmt.Errorf("%s: %w", in.Dir, err)
		}
		switch {
		case common(id) != common(first.Checkpoint.Source):
			return fmt.Errorf("%s and %s read different sources: merge the shards of one migration", first.Dir, in.Dir)
		case sh.Count != sh0.Count:
			return fmt.Errorf("%s is shard %s and %s shard %s: every shard of a migration is i/N with the same N", first.Dir, sh0, in.Dir, sh)
		case seen[sh.Index] != "":
			return fmt.Errorf("%s and %s are both shard %s: the same shard given twice?", seen[sh.Index], in.Dir, sh)
		}
		seen[sh.Index] = in.Dir
		for k := range id {
			if strings.HasPrefix(k, "file[") && strings.HasSuffix(k, "].size") {
				name := strings.TrimSuffix(strings.TrimPrefix(k, "file["), "].size")
				r, err := readRange(id, "file["+name+"].range", name, in.Dir)
				if err != nil {
					return err
				}
				for _, prev := range readBy[name] {
					if r.overlaps(prev) {
						return fmt.Errorf("%s and %s both read %s (%s and %s): its rows would be there twice", prev.dir, in.Dir, name, prev, r)
					}
				}
				readBy[name] = append(readBy[name], r)
			}
		}
	}
	if len(seen) != sh0.Count {
		var missing []string
		for i := range sh0.Count {
			if seen[i] == "" {
				missing = append(missing, fmt.Sprintf("%d/%d", i, sh0.Count))
			}
		}
		return fmt.Errorf("shard %s missing: merge all %d shards of the migration (run the missing ones first)", strings.Join(missing, ", "), sh0.Count)
	}
	return nil
}

// byteRange is the bytes of a file a shard read: [from, to), the whole file when its identity
// names no range (file[NAME].range, a file read in parts, one per shard).
type byteRange struct {
	dir      string
	from, to int64
}

func (r byteRange) String() string {
	if r.to == math.MaxInt64 {
		return "whole"
	}
	return fmt.Sprintf("bytes %d-%d", r.from, r.to)
}

// overlaps tells whether r and o share a byte (an empty range shares none).
func (r byteRange) overlaps(o byteRange) bool {
	return r.from < o.to && o.from < r.to && r.from < r.to && o.from < o.to
}

// readRange is the bytes of the file name that the input dir read: its identity's range under
// key, the whole file without one.
func readRange(id pipeline.Identity, key, name, dir string) (byteRange, error) {
	v, ok := id[key]
	if !ok {
		return byteRange{dir: dir, to: math.MaxInt64}, nil
	}
	a, b, _ := strings.Cut(v, "-")
	from, err1 := strconv.ParseInt(a, 10, 64)
	to, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || from < 0 || to < from {
		return byteRange{}, fmt.Errorf("%s: the checkpoint's range of %s is %q, not FROM-TO: was it edited?", dir, name, v)
	}
	return byteRange{dir: dir, from: from, to: to}, nil
}

func firstNotIn(all, some []*Input) *Input {
	for _, in := range all {
		found := false
		for _, s := range some {
			found = found || s == in
		}
		if !found {
			return in
		}
	}
	return all[0]
}

// checkSameSource refuses two inputs whose checkpoints name the same source (the same file,
// folder, topic window, generator or Cassandra shard): merging them would count its rows twice.
func checkSameSource(inputs []*Input) error {
	for i, a := range inputs {
		src := a.source()
		if len(src) == 0 {
			continue
		}
		for _, b := range inputs[i+1:] {
			if reflect.DeepEqual(src, b.source()) {
				return fmt.Errorf("%s and %s read the same source (%v): merged, its rows would be there twice; give each run's output once (a source read in shards is read with --shard i/N)", a.Dir, b.Dir, src)
			}
		}
	}
	return nil
}

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

// checkShardRanges verifies, when the inputs read Cassandra token ranges, that no token was read
// by two inputs and that together they cover the whole ring. Two inputs' ranges may overlap
// without being equal (an unsharded run cuts the ring by its own cores, the shards of a run by 8),
// so overlaps are looked for token by token, not only as the same range twice.
func checkShardRanges(inputs []*Input) error {
	owner := map[cassandra.Range]string{}
	var ranges []cassandra.Range
	cassandraInputs := 0
	for _, in := range inputs {
		isRanges, streams := true, 0
		var mine []cassandra.Range
	read:
		for _, cp := range in.read() {
			for name, st := range cp.Streams {
				streams++
				r, err := cassandra.ParseRange(name)
				if err != nil {
					isRanges = false
					break read
				}
				if !st.Done {
					return fmt.Errorf("%s did not finish %s", in.Dir, name)
				}
				mine = append(mine, r)
			}
		}
		if streams == 0 || !isRanges {
			continue
		}
		cassandraInputs++
		for _, r := range mine {
			if prev, dup := owner[r]; dup {
				return fmt.Errorf("%s and %s both read %s: the same shard given twice?", prev, in.Dir, r.Name())
			}
			owner[r] = in.Dir
			ranges = append(ranges, r)
		}
	}
	if cassandraInputs == 0 {
		return nil
	}
	if cassandraInputs != len(inputs) {
		return errors.New("some inputs read Cassandra token ranges and some did not: merge only the outputs of one migration")
	}
	sorted := append([]cassandra.Range(nil), ranges...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		return a.Start < b.Start || a.Start == b.Start && a.End < b.End
	})
	for i := 1; i < len(sorted); i++ {
		// the ranges of one input tile the ring: an overlap with the range before is another's
		if prev, r := sorted[i-1], sorted[i]; r.Start < prev.End && owner[prev] != owner[r] {
			return fmt.Errorf("%s and %s both read tokens of %s and %s: the same shard given twice, or shards of runs with different splits?", owner[prev], owner[r], prev.Name(), r.Name())
		}
	}
	if err := cassandra.CheckTiling(ranges); err != nil {
		return fmt.Errorf("the inputs' token ranges do not cover the ring exactly once (%v): a shard is missing, or the shards were run with different splits; run every shard i/N of the same N with the same source URI", err)
	}
	return nil
}

// plan is output.MergePlanFile's content. Everything in it follows from the inputs' manifests and the mode,
// so a re-run computes it again and continues only when it is the same.
type plan struct {
	Version int           `json:"version"`
	Mode    Mode          `json:"mode"`
	Inputs  []string      `json:"inputs"` // each input's location
	Files   []plannedFile `json:"files"`
}

type plannedFile struct {
	Input  int    `json:"input"` // index in Inputs
	Region int    `json:"region"`
	Src    string `json:"src"` // as the input's manifest lists it
	Dst    string `json:"dst"` // in the output
	Bytes  int64  `json:"bytes"`
}

// readPlan reads the plan an interrupted merge left in out, or nil when there is none.
func readPlan(ctx context.Context, out store.Store) (*plan, error) {
	data, err := out.Get(ctx, output.MergePlanFile)
	if store.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", out.Location(output.MergePlanFile), err)
	}
	var p plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s, the plan of an interrupted merge, is damaged (%v): merge writes it whole or not at all, so it was changed since; restore it, then run the same merge again (with --files move some files may be only in %s: keep them)", out.Location(output.MergePlanFile), err, out.Location(output.DataDir+"/"))
	}
	for _, f := range p.Files {
		if err := output.CheckRelPath(f.Dst); err != nil {
			return nil, fmt.Errorf("%s: %w", out.Location(output.MergePlanFile), err)
		}
	}
	return &p, nil
}

// placedBefore tells whether the plan in out says an interrupted merge placed input's file src,
// and the file is at its destination.
func (p *plan) placedBefore(ctx context.Context, out store.Store, input int, src string) bool {
	if p == nil {
		return false
	}
	for _, f := range p.Files {
		if f.Input == input && f.Src == src {
			_, err := out.Stat(ctx, f.Dst)
			return err == nil
		}
	}
	return false
}

// afterStep, when set (by tests), runs after each step of WriteTo ("planned", "placed DST",
// "removed DST"); an error stops WriteTo there, as a crash would.
var afterStep func(step string) error

func step(name string) error {
	if afterStep == nil {
		return nil
	}
	return afterStep(name)
}

// WriteTo places the inputs' files in out and writes the merged manifest, ddl.sql, bulkload.json
// and rejects.jsonl. The manifest is written last: its presence marks a complete merge. version
// is recorded in the manifest as the rekey version that made it.
//
// Between local folders, files are hard-linked (copied across filesystems), copied or moved.
// Otherwise a store that copies without the bytes passing through rekey (store.Copier: a
// server-side copy within one bucket) does; else the bytes are streamed from input to output.
// move removes each input file once its copy is committed.
//
// Before placing anything WriteTo writes output.MergePlanFile into out; given an out holding the plan of an
// interrupted merge of the same inputs and mode, it finishes that merge.
func WriteTo(ctx context.Context, inputs []*Input, out store.Store, mode Mode, version string) (*Result, error) {
	p, m, err := planMerge(inputs, mode, version)
	if err != nil {
		return nil, err
	}
	if err := startPlan(ctx, out, p); err != nil {
		return nil, err
	}
	res := &Result{Local: true}
	for _, in := range inputs {
		res.Local = res.Local && store.CanLink(in.Store, out)
	}
	for _, f := range p.Files {
		how, err := placePlanned(ctx, inputs[f.Input], out, f, mode)
		if err != nil {
			return nil, err
		}
		switch how {
		case linked:
			res.Linked++
		case copied:
			res.Copied++
		case serverCopied:
			res.ServerCopied++
		}
	}
	if err := syncPlaced(out, m); err != nil {
		return nil, err
	}
	if err := mergeRejects(ctx, inputs, out); err != nil {
		return nil, err
	}
	if res.ReplayParts, err = mergeReplay(ctx, inputs, out); err != nil {
		return nil, err
	}
	if err := writeFinal(ctx, inputs, out, m); err != nil {
		return nil, err
	}
	if err := step("manifest"); err != nil {
		return nil, err
	}
	if err := out.Remove(ctx, output.MergePlanFile); err != nil {
		return nil, fmt.Errorf("the merge is complete, but removing %s failed: %w", out.Location(output.MergePlanFile), err)
	}
	res.Manifest = m
	return res, nil
}

// planMerge is where every input file goes (the plan, renumbered region by region) and the
// merged manifest that lists them there.
func planMerge(inputs []*Input, mode Mode, version string) (*plan, *output.Manifest, error) {
	p := &plan{Version: 1, Mode: mode}
	ext := "." + inputs[0].Manifest.Format
	m, err := sumManifests(inputs, version, func(n, region, seq int, fe output.FileEntry) string {
		e := path.Ext(fe.Path) // a file keeps its extension
		if e == "" {
			e = ext
		}
		rel := output.DataFile(region, seq, "", strings.TrimPrefix(e, "."))
		p.Files = append(p.Files, plannedFile{Input: n, Region: region, Src: fe.Path, Dst: rel, Bytes: fe.Bytes})
		return rel
	})
	if err != nil {
		return nil, nil, err
	}
	for _, in := range inputs {
		p.Inputs = append(p.Inputs, in.Store.Location(""))
	}
	return p, m, nil
}

// placePlanned puts the planned file f of in at its place in out, and with Move removes it from
// in. A file an interrupted merge placed already (the same size) is not placed again: how is 0.
func placePlanned(ctx context.Context, in *Input, out store.Store, f plannedFile, mode Mode) (how placed, err error) {
	if info, err := out.Stat(ctx, f.Dst); err == nil {
		// placed by the interrupted merge: a store shows an object only once whole
		if info.Size != f.Bytes {
			return 0, fmt.Errorf("%s holds %d bytes, but %s lists %s with %d: the output was changed since the merge was interrupted", out.Location(f.Dst), info.Size, in.Store.Location(output.ManifestFile), f.Src, f.Bytes)
		}
		if mode == Move { // it may have stopped between the copy and the removal
			return 0, removeSource(ctx, in, f)
		}
		return 0, nil
	} else if !store.IsNotExist(err) {
		return 0, fmt.Errorf("%s: %w", out.Location(f.Dst), err)
	}
	fe := output.FileEntry{Path: f.Src, Bytes: f.Bytes}
	if err := sourceFile(ctx, in, f.Region, fe); err != nil { // checked again at use: WriteTo is exported
		return 0, err
	}
	if how, err = placeFile(ctx, in.Store, f.Src, out, f.Dst, mode); err != nil {
		return 0, err
	}
	if err := step("placed " + f.Dst); err != nil {
		return 0, err
	}
	if mode == Move {
		if err := removeSource(ctx, in, f); err != nil {
			return 0, err
		}
		if err := step("removed " + f.Dst); err != nil {
			return 0, err
		}
	}
	return how, nil
}

// syncPlaced makes the links and renames into out's region folders durable (a bucket's objects
// are once placed).
func syncPlaced(out store.Store, m *output.Manifest) error {
	for i := range m.Regions {
		if len(m.Regions[i].Files) == 0 {
			continue
		}
		if err := store.SyncFolder(out, output.RegionDir(i)); err != nil {
			return err
		}
	}
	if m.Files > 0 { // data/ is new in out
		if err := store.SyncFolder(out, output.DataDir); err != nil {
			return err
		}
		return store.SyncFolder(out, "")
	}
	return nil
}

// sumManifests is the manifest of the inputs together: the first input's, with every input's
// files region by region (in input order; dst names each file in the output: input n's file fe,
// the seq-th of its region there) and the totals summed. version is the rekey that made it.
func sumManifests(inputs []*Input, version string, dst func(n, region, seq int, fe output.FileEntry) string) (*output.Manifest, error) {
	fm := inputs[0].Manifest
	m := *fm
	m.Regions = make([]output.RegionInfo, len(fm.Regions))
	m.RowsIn, m.RowsWritten, m.RowsRejected, m.RowsSkipped, m.Bytes, m.Files = 0, 0, 0, 0, 0, 0
	m.CreatedAt = time.Now().UTC()
	m.RekeyVersion = version
	for i, r := range fm.Regions {
		m.Regions[i] = output.RegionInfo{Index: r.Index, Start: r.Start, End: r.End, Files: []output.FileEntry{}}
	}
	for n, in := range inputs {
		im := in.Manifest
		if len(im.Regions) != len(m.Regions) {
			return nil, fmt.Errorf("%s lists %d regions, want %d", in.Dir, len(im.Regions), len(m.Regions))
		}
		for i, r := range im.Regions {
			d := &m.Regions[i]
			for _, fe := range r.Files {
				d.Files = append(d.Files, output.FileEntry{Path: dst(n, i, len(d.Files), fe), Rows: fe.Rows, Bytes: fe.Bytes})
				d.Rows += fe.Rows
				d.Bytes += fe.Bytes
				m.Bytes += fe.Bytes
				m.Files++
			}
		}
		m.RowsIn += im.RowsIn
		m.RowsWritten += im.RowsWritten
		m.RowsRejected += im.RowsRejected
		m.RowsSkipped += im.RowsSkipped
		if im.NextSince == nil || (m.NextSince != nil && im.NextSince.Before(*m.NextSince)) {
			// the earliest shard's start: a later one would miss rows written while it ran;
			// none when a shard has none
			m.NextSince = im.NextSince
		}
	}
	for i := range m.Regions {
		m.Regions[i].OverSize = m.RegionSize > 0 && m.Regions[i].Bytes > m.RegionSize
	}
	return &m, nil
}

// writeFinal writes the final files of the inputs together into out: ddl.sql, bulkload.json and
// the manifest m, last (its presence marks a complete output).
func writeFinal(ctx context.Context, inputs []*Input, out store.Store, m *output.Manifest) error {
	if err := out.Put(ctx, output.DDLFile, inputs[0].DDL); err != nil {
		return err
	}
	if err := mergeBulkload(ctx, inputs, out); err != nil {
		return err
	}
	return output.WriteManifest(ctx, out, m)
}

// startPlan writes p into out, or, when out holds the plan of an interrupted merge, checks that
// it is p: the same inputs, mode and files.
func startPlan(ctx context.Context, out store.Store, p *plan) error {
	prev, err := readPlan(ctx, out)
	if err != nil {
		return err
	}
	if prev != nil {
		if !reflect.DeepEqual(prev.Inputs, p.Inputs) || prev.Mode != p.Mode {
			return fmt.Errorf("%s is the plan of an interrupted merge of %s with --files %s: run merge with those inputs, in that order, and --files %s to finish it", out.Location(output.MergePlanFile), strings.Join(prev.Inputs, " "), prev.Mode, prev.Mode)
		}
		if !reflect.DeepEqual(prev.Files, p.Files) {
			return fmt.Errorf("%s, the plan of an interrupted merge, lists other files than the inputs' manifests do now: an input changed since; the files it placed are in %s", out.Location(output.MergePlanFile), out.Location(output.DataDir+"/"))
		}
		// what the interruption left unfinished (temporary files, multipart uploads): the copies
		// under data/, and the merged rejects.jsonl and final files beside it
		if err := output.SweepOwn(ctx, out); err != nil {
			return fmt.Errorf("%s: %w", out.Location(""), err)
		}
		return nil
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := out.Put(ctx, output.MergePlanFile, data); err != nil {
		return fmt.Errorf("write %s: %w", out.Location(output.MergePlanFile), err)
	}
	return step("planned")
}

// removeSource removes a moved file from its input (a file already gone is not an error).
func removeSource(ctx context.Context, in *Input, f plannedFile) error {
	if err := in.Store.Remove(ctx, f.Src); err != nil {
		return fmt.Errorf("move %s: %w", in.Store.Location(f.Src), err)
	}
	return nil
}

// placed is how placeFile put a file in the output.
type placed int

const (
	linked       placed = iota + 1 // hard-linked or renamed (store.Link): local folders
	serverCopied                   // copied by the store's server (store.ServerCopy)
	copied                         // its bytes streamed through rekey
)

// placeFile puts the object src of from at dst in out: hard-linked (--files link) or renamed
// (--files move) between local folders on one filesystem, else copied by the server when the
// stores can (no byte through rekey), else streamed through rekey.
func placeFile(ctx context.Context, from store.Store, src string, out store.Store, dst string, mode Mode) (placed, error) {
	if mode != Copy {
		done, err := store.Link(from, src, out, dst, mode == Move)
		if err != nil {
			return 0, err
		}
		if done {
			return linked, nil
		}
	}
	server, err := store.ServerCopy(ctx, from, src, out, dst)
	if err != nil {
		return 0, fmt.Errorf("copy %s: %w", from.Location(src), err)
	}
	if server {
		return serverCopied, nil
	}
	return copied, copyObject(ctx, from, src, out, dst)
}

// copyObject streams an object from one store to another.
func copyObject(ctx context.Context, from store.Store, src string, out store.Store, dst string) error {
	r, err := from.Open(ctx, src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from.Location(src), err)
	}
	defer r.Close()
	w, err := out.Create(ctx, dst)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from.Location(src), err)
	}
	if _, err := io.Copy(w, io.NewSectionReader(r, 0, r.Size())); err != nil {
		w.Abort()
		return fmt.Errorf("copy %s: %w", from.Location(src), err)
	}
	if _, err := w.Commit(ctx); err != nil {
		w.Abort()
		return fmt.Errorf("copy %s: %w", from.Location(src), err)
	}
	return nil
}

// mergeRejects concatenates the inputs' rejects (each line names its stream and position) into
// out's rejects.jsonl, streamed: what each input's checkpoint counts (output.ReadRejects).
func mergeRejects(ctx context.Context, inputs []*Input, out store.Store) error {
	var w store.Writer
	defer func() {
		if w != nil {
			w.Abort() // a no-op once committed
		}
	}()
	add := func(r io.Reader) error {
		if w == nil {
			var err error
			if w, err = out.Create(ctx, output.RejectsFile); err != nil {
				return err
			}
		}
		_, err := io.Copy(w, r)
		return err
	}
	for _, in := range inputs {
		parts, err := rejectsOf(ctx, in)
		if err != nil {
			return fmt.Errorf("%s: %w", in.Dir, err)
		}
		for _, p := range parts {
			err := output.ReadRejects(ctx, p.st, p.cp, func(name string, r io.Reader) error {
				if err := add(r); err != nil {
					return fmt.Errorf("merge %s: %w", p.st.Location(name), err)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", in.Dir, err)
			}
		}
	}
	if w == nil {
		return nil
	}
	// the local store keeps it 0600 as migrate does: rejected rows are raw input
	if _, err := w.Commit(ctx); err != nil {
		return fmt.Errorf("write %s: %w", out.Location(output.RejectsFile), err)
	}
	return nil
}

// mergeReplay copies the inputs' replay files (their rejected records as read, each file under
// its input's header: output.ReadReplay) into out as rejected-rows/part-NNNNN.EXT, in input
// order, each whole: the inputs' headers may differ (shards of files in another column order),
// and a folder of them is a source as it is (--source file:OUT/rejected-rows/). It returns how
// many it wrote.
func mergeReplay(ctx context.Context, inputs []*Input, out store.Store) (int, error) {
	n := 0
	for _, in := range inputs {
		parts, err := rejectsOf(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", in.Dir, err)
		}
		for _, p := range parts {
			err := output.ReadReplay(ctx, p.st, p.cp, func(name string, r io.Reader) error {
				dst := output.ReplayPart(n, strings.TrimPrefix(path.Ext(name), "."))
				w, err := out.Create(ctx, dst)
				if err == nil {
					if _, err = io.Copy(w, r); err == nil {
						_, err = w.Commit(ctx)
					}
					w.Abort() // a no-op once committed
				}
				if err != nil {
					return fmt.Errorf("copy %s to %s: %w", p.st.Location(name), out.Location(dst), err)
				}
				n++
				return nil
			})
			if err != nil {
				return 0, fmt.Errorf("%s: %w", in.Dir, err)
			}
		}
	}
	return n, nil
}

// shardCheckpoints are the checkpoints of the shards of the finished shared output st, in shard
// order; none when st holds no shards.
func shardCheckpoints(ctx context.Context, st store.Store) ([]*pipeline.Checkpoint, error) {
	shards, err := output.SharedShards(ctx, st)
	if err != nil {
		return nil, readFailed(err)
	}
	sort.Slice(shards, func(a, b int) bool { return shards[a].Index < shards[b].Index })
	var cps []*pipeline.Checkpoint
	for _, sh := range shards {
		sst := output.ShardStore(st, sh)
		cp, err := output.ReadCheckpoint(ctx, sst)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh, err)
		}
		if cp == nil || !cp.Complete {
			return nil, fmt.Errorf("shard %s has no complete %s: what it read is unknown", sh, sst.Location(output.CheckpointFile))
		}
		cps = append(cps, cp)
	}
	return cps, nil
}

// rejectsHolder is where some of an input's rejects are: a store and the checkpoint that counts
// them there (nil: none, the whole file).
type rejectsHolder struct {
	st store.Store
	cp *pipeline.Checkpoint
}

// rejectsOf is where in's rejects are: the input itself, or, for a finished shared output
// (migrate --shared-out, then merge --out), which keeps none at its top, each of its shards'
// folders in shard order, each with its shard's checkpoint.
func rejectsOf(ctx context.Context, in *Input) ([]rejectsHolder, error) {
	if in.Checkpoint != nil {
		return []rejectsHolder{{in.Store, in.Checkpoint}}, nil
	}
	shards, err := output.SharedShards(ctx, in.Store)
	if err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return []rejectsHolder{{in.Store, nil}}, nil
	}
	sort.Slice(shards, func(a, b int) bool { return shards[a].Index < shards[b].Index })
	var out []rejectsHolder
	for _, sh := range shards {
		st := output.ShardStore(in.Store, sh)
		cp, err := output.ReadCheckpoint(ctx, st)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh, err)
		}
		if cp == nil {
			// a finished shared output's shards all checkpointed: without it, which of the
			// shard's rejects count is unknown
			return nil, fmt.Errorf("shard %s has no %s: its rejects cannot be told from a killed run's", sh, st.Location(output.CheckpointFile))
		}
		out = append(out, rejectsHolder{st, cp})
	}
	return out, nil
}

// mergeBulkload rewrites the first input's bulkload.json to read the merged data/, with the
// earliest writerConfig.timestamp of the inputs: each shard stamps its cells with the time it
// started reading, so that live writes after it win; a later shard's time would let its cells
// override live writes made after the first shard read them.
func mergeBulkload(ctx context.Context, inputs []*Input, out store.Store) error {
	first := inputs[0]
	data, err := first.Store.Get(ctx, output.BulkloadFile)
	if store.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var job lindorm.BulkloadJob
	if err := json.Unmarshal(data, &job); err != nil {
		return fmt.Errorf("%s: %w", first.Store.Location(output.BulkloadFile), err)
	}
	for _, in := range inputs[1:] {
		data, err := in.Store.Get(ctx, output.BulkloadFile)
		if store.IsNotExist(err) {
			continue
		} else if err != nil {
			return err
		}
		var other lindorm.BulkloadJob
		if err := json.Unmarshal(data, &other); err != nil {
			return fmt.Errorf("%s: %w", in.Store.Location(output.BulkloadFile), err)
		}
		if ts := other.WriterConfig.Timestamp; ts != nil && (job.WriterConfig.Timestamp == nil || *ts < *job.WriterConfig.Timestamp) {
			job.WriterConfig.Timestamp = ts
		}
	}
	if job.ReaderConfig.FilePath, err = lindorm.DataFilePath(out.Location(""), output.DataDir, output.InBucket(out.Location(""))); err != nil {
		return err
	}
	if ft := formats.LoadAs(strings.ToLower(job.FileType)); ft != "" {
		job.FileType = ft // shards written before rekey used the API's spelling ("parquet")
	}
	data, err = json.MarshalIndent(job, "", "  ")
	if err != nil {
		return err
	}
	return out.Put(ctx, output.BulkloadFile, data)
}
