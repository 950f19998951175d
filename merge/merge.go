// Package merge combines the output directories of runs that migrated one table together,
// typically the N shards of a Cassandra table (migrate --shard i/N), into one bulkload-ready
// directory: data files placed region by region and renumbered, the manifest's totals summed,
// ddl.sql and bulkload.json carried over and rejects.jsonl concatenated.
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/source/cassandra"
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

// Input is one run's output directory.
type Input struct {
	Dir        string
	Manifest   *lindorm.Manifest
	Checkpoint *pipeline.Checkpoint // nil when the run kept none
	DDL        []byte
}

// Result is what Write made.
type Result struct {
	Manifest *lindorm.Manifest // the merged manifest, as written to the output
	Copied   int               // files copied instead of hard-linked (link mode, across filesystems)
}

// ReadInputs reads the manifest, checkpoint and ddl.sql of every input directory. out is the
// output directory, which must not be one of them.
func ReadInputs(dirs []string, out string) ([]*Input, error) {
	outAbs, _ := filepath.Abs(out)
	seen := map[string]bool{}
	var inputs []*Input
	for _, d := range dirs {
		abs, _ := filepath.Abs(d)
		if abs == outAbs {
			return nil, fmt.Errorf("%s is both an input and --out", d)
		}
		if seen[abs] {
			return nil, fmt.Errorf("%s is given twice", d)
		}
		seen[abs] = true
		in := &Input{Dir: d}
		if _, err := os.Stat(filepath.Join(d, lindorm.ManifestFile)); err != nil {
			return nil, fmt.Errorf("%s holds no complete run (no %s): finish it first (rekey migrate ... --resume)", d, lindorm.ManifestFile)
		}
		var err error
		if in.Manifest, err = lindorm.ReadManifest(d); err != nil {
			return nil, err
		}
		if in.Checkpoint, err = pipeline.LoadCheckpoint(d); err != nil {
			return nil, err
		}
		if in.Checkpoint != nil && !in.Checkpoint.Complete {
			return nil, fmt.Errorf("%s: its checkpoint says the run did not finish", d)
		}
		if in.Checkpoint != nil && in.Checkpoint.RejectsBytes < 0 {
			return nil, fmt.Errorf("%s is damaged: rejects_bytes %d is negative", filepath.Join(d, pipeline.CheckpointFile), in.Checkpoint.RejectsBytes)
		}
		if err := checkFiles(in); err != nil {
			return nil, err
		}
		if in.DDL, err = os.ReadFile(filepath.Join(d, lindorm.DDLFile)); err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		inputs = append(inputs, in)
	}
	return inputs, nil
}

// checkFiles verifies, before any file is placed, that every data file in's manifest lists is a
// regular file inside in.Dir, listed once. A crafted manifest must not make merge link, copy or
// move a file from elsewhere (issue 9: {"path":"../canary.parquet"}), and a refusal half way
// through --files move would leave the input half moved.
func checkFiles(in *Input) error {
	if !plainName(in.Manifest.Format) { // it names the merged files
		return fmt.Errorf("%s: format %q is not a file format name", filepath.Join(in.Dir, lindorm.ManifestFile), in.Manifest.Format)
	}
	listed := map[string]bool{}
	for i, r := range in.Manifest.Regions {
		for _, fe := range r.Files {
			if _, err := sourceFile(in, i, fe); err != nil {
				return err
			}
			if listed[fe.Path] {
				return fmt.Errorf("%s lists %s twice: was it edited by hand?", filepath.Join(in.Dir, lindorm.ManifestFile), fe.Path)
			}
			listed[fe.Path] = true
		}
	}
	return nil
}

// sourceFile returns the full path of a data file in's manifest lists in region i, refusing
// paths outside in.Dir, paths through symbolic links and anything but a regular file.
func sourceFile(in *Input, region int, fe lindorm.FileEntry) (string, error) {
	manifest := filepath.Join(in.Dir, lindorm.ManifestFile)
	full, fi, err := pipeline.StatRelPath(in.Dir, fe.Path)
	switch {
	case errors.Is(err, pipeline.ErrUnsafePath):
		return "", fmt.Errorf("%s: region %d: %w; merge reads files inside each input only", manifest, region, err)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s lists %s, which is missing: %w", manifest, fe.Path, err)
	case err != nil:
		return "", fmt.Errorf("%s lists %s: %w", manifest, fe.Path, err)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s lists %s, which is not a regular file (%s)", manifest, fe.Path, fi.Mode().Type())
	}
	return full, nil
}

func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// Check refuses inputs that do not belong to one migration.
func Check(inputs []*Input) error {
	first := inputs[0]
	fm := first.Manifest
	for _, in := range inputs[1:] {
		m := in.Manifest
		switch {
		case m.MappingFingerprint != fm.MappingFingerprint:
			return fmt.Errorf("%s and %s were made with different mappings (fingerprints %s and %s): merge only the outputs of one migration", first.Dir, in.Dir, short(fm.MappingFingerprint), short(m.MappingFingerprint))
		case !reflect.DeepEqual(m.Plan, fm.Plan):
			return fmt.Errorf("%s and %s have different region plans (%s, %d regions and %s, %d regions): every shard must use the same plan (give every shard the same --regions, or use regions.split_keys or a hash-prefix key)", first.Dir, in.Dir, fm.Plan.Strategy, fm.Plan.Regions, m.Plan.Strategy, m.Plan.Regions)
		case m.Format != fm.Format:
			return fmt.Errorf("%s holds %s files and %s %s files", first.Dir, fm.Format, in.Dir, m.Format)
		case m.Table != fm.Table || !reflect.DeepEqual(m.Columns, fm.Columns) || !reflect.DeepEqual(m.KeyColumns, fm.KeyColumns):
			return fmt.Errorf("%s and %s describe different tables", first.Dir, in.Dir)
		case string(in.DDL) != string(first.DDL):
			return fmt.Errorf("%s and %s have different %s", first.Dir, in.Dir, lindorm.DDLFile)
		}
	}
	return checkShardRanges(inputs)
}

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

// checkShardRanges verifies, when the inputs read Cassandra token ranges, that every range was
// read by exactly one input and that together they cover the whole ring.
func checkShardRanges(inputs []*Input) error {
	owner := map[cassandra.Range]string{}
	var ranges []cassandra.Range
	cassandraInputs := 0
	for _, in := range inputs {
		if in.Checkpoint == nil || len(in.Checkpoint.Streams) == 0 {
			continue
		}
		isRanges := true
		var mine []cassandra.Range
		for name, st := range in.Checkpoint.Streams {
			r, err := cassandra.ParseRange(name)
			if err != nil {
				isRanges = false
				break
			}
			if !st.Done {
				return fmt.Errorf("%s did not finish %s", in.Dir, name)
			}
			mine = append(mine, r)
		}
		if !isRanges {
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
	if err := cassandra.CheckTiling(ranges); err != nil {
		return fmt.Errorf("the inputs' token ranges do not cover the ring exactly once (%v): a shard is missing, or the shards were run with different splits; run every shard i/N of the same N with the same source URI", err)
	}
	return nil
}

// Write places the inputs' files in out and writes the merged manifest, ddl.sql, bulkload.json
// and rejects.jsonl. The manifest is written last: its presence marks a complete merge. version
// is recorded in the manifest as the rekey version that made it.
func Write(inputs []*Input, out string, mode Mode, version string) (*Result, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	fm := inputs[0].Manifest
	m := *fm
	m.Regions = make([]lindorm.RegionInfo, len(fm.Regions))
	m.RowsIn, m.RowsWritten, m.RowsRejected, m.Bytes, m.Files = 0, 0, 0, 0, 0
	m.CreatedAt = time.Now().UTC()
	m.RekeyVersion = version
	for i, r := range fm.Regions {
		m.Regions[i] = lindorm.RegionInfo{Index: r.Index, Start: r.Start, End: r.End, Files: []lindorm.FileEntry{}}
	}
	copied := 0
	ext := "." + fm.Format
	for _, in := range inputs {
		im := in.Manifest
		if len(im.Regions) != len(m.Regions) {
			return nil, fmt.Errorf("%s lists %d regions, want %d", in.Dir, len(im.Regions), len(m.Regions))
		}
		for i, r := range im.Regions {
			dst := &m.Regions[i]
			for _, fe := range r.Files {
				rel := pipeline.RegionDir(i) + "/" + fmt.Sprintf("part-%05d%s", len(dst.Files), ext)
				if filepath.Ext(fe.Path) != ext {
					rel = strings.TrimSuffix(rel, ext) + filepath.Ext(fe.Path)
				}
				src, err := sourceFile(in, i, fe) // checked again at use: Write is exported
				if err != nil {
					return nil, err
				}
				c, err := placeFile(src, filepath.Join(out, filepath.FromSlash(rel)), mode)
				if err != nil {
					return nil, err
				}
				if c {
					copied++
				}
				dst.Files = append(dst.Files, lindorm.FileEntry{Path: rel, Rows: fe.Rows, Bytes: fe.Bytes})
				dst.Rows += fe.Rows
				dst.Bytes += fe.Bytes
				m.Bytes += fe.Bytes
				m.Files++
			}
		}
		m.RowsIn += im.RowsIn
		m.RowsWritten += im.RowsWritten
		m.RowsRejected += im.RowsRejected
	}
	for i := range m.Regions {
		m.Regions[i].OverSize = m.RegionSize > 0 && m.Regions[i].Bytes > m.RegionSize
	}
	for i := range m.Regions { // make the links and renames durable
		if len(m.Regions[i].Files) == 0 {
			continue
		}
		if err := pipeline.SyncDir(filepath.Join(out, filepath.FromSlash(pipeline.RegionDir(i)))); err != nil {
			return nil, err
		}
	}
	if m.Files > 0 { // data/ is new in out
		if err := pipeline.SyncDir(filepath.Join(out, pipeline.DataDir)); err != nil {
			return nil, err
		}
	}
	if err := mergeRejects(inputs, out); err != nil {
		return nil, err
	}
	if err := pipeline.WriteFileAtomic(filepath.Join(out, lindorm.DDLFile), inputs[0].DDL); err != nil {
		return nil, err
	}
	if err := mergeBulkload(inputs[0].Dir, out); err != nil {
		return nil, err
	}
	if err := lindorm.WriteManifest(out, &m); err != nil {
		return nil, err
	}
	return &Result{Manifest: &m, Copied: copied}, nil
}

// placeFile puts src at dst: a hard link (a copy across filesystems), a copy, or a rename. It
// reports whether the file was copied instead of linked.
func placeFile(src, dst string, mode Mode) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, err
	}
	switch mode {
	case Move:
		return false, os.Rename(src, dst)
	case Link:
		err := os.Link(src, dst)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, os.ErrExist) && !isCrossDevice(err) {
			return false, fmt.Errorf("hard-link %s: %w (use --files copy)", src, err)
		}
	}
	return true, copyFile(src, dst)
}

func isCrossDevice(err error) bool {
	var le *os.LinkError
	return errors.As(err, &le) && (strings.Contains(le.Err.Error(), "cross-device") || strings.Contains(le.Err.Error(), "not permitted") || strings.Contains(le.Err.Error(), "not supported"))
}

// copyFile copies src to dst through a temporary name, fsyncs it and renames it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := pipeline.TempPath(dst)
	outF, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(outF, in); err != nil {
		outF.Close()
		os.Remove(tmp)
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := outF.Sync(); err != nil {
		outF.Close()
		os.Remove(tmp)
		return err
	}
	if err := outF.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

// mergeRejects concatenates the inputs' rejects.jsonl (each line names its stream and position).
func mergeRejects(inputs []*Input, out string) error {
	var all []byte
	for _, in := range inputs {
		data, err := os.ReadFile(filepath.Join(in.Dir, pipeline.RejectsFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if in.Checkpoint != nil && int64(len(data)) > in.Checkpoint.RejectsBytes {
			data = data[:in.Checkpoint.RejectsBytes]
		}
		all = append(all, data...)
	}
	if len(all) == 0 {
		return nil
	}
	// 0600 as migrate writes it: rejected rows are raw input, which may be personal data
	return pipeline.WriteFileAtomicMode(filepath.Join(out, pipeline.RejectsFile), all, 0o600)
}

// mergeBulkload rewrites the first input's bulkload.json to read the merged directory.
func mergeBulkload(firstDir, out string) error {
	data, err := os.ReadFile(filepath.Join(firstDir, lindorm.BulkloadFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var job lindorm.BulkloadJob
	if err := json.Unmarshal(data, &job); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(firstDir, lindorm.BulkloadFile), err)
	}
	job.ReaderConfig.FilePath = filepath.Join(out, pipeline.DataDir)
	data, err = json.MarshalIndent(job, "", "  ")
	if err != nil {
		return err
	}
	return pipeline.WriteFileAtomic(filepath.Join(out, lindorm.BulkloadFile), data)
}
