package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/transform"
)

type mergeFlags struct {
	out   string
	files string
}

func newMergeCmd(g *globalFlags) *cobra.Command {
	f := &mergeFlags{}
	cmd := &cobra.Command{
		Use:   "merge DIR... --out DIR",
		Short: "Combine the outputs of a sharded migration (--shard i/N on N machines) into one bulk-load set",
		Long: `merge combines the --out directories of runs that migrated one table together, typically the N
shards of a Cassandra table (migrate --shard i/N), into one bulkload-ready directory:

  DIR/region-0000/part-00000.parquet ...   every input's files of the region, renumbered
  DIR/manifest.json                        regions, files and row counts summed over the inputs
  DIR/ddl.sql, DIR/bulkload.json           as the inputs wrote them (bulkload.json reads DIR)
  DIR/rejects.jsonl                        the inputs' rejected rows, one after the other

Data files are hard-linked into DIR by default: no data is copied and the inputs stay intact, so
DIR must be on the same filesystem as the inputs (shared storage mounted on every machine is the
usual case); across filesystems they are copied instead. --files copy always copies; --files move
renames them out of the inputs.

merge refuses inputs that are not complete runs (no manifest.json), that were made with
different mappings (fingerprint) or region plans, or, for Cassandra shards, whose token ranges
overlap (a shard given twice) or leave part of the ring unread (a shard missing).`,
		Example: `  rekey merge /shared/out/shard-0 /shared/out/shard-1 /shared/out/shard-2 --out /shared/out/orders
  rekey merge /shared/out/shard-* --out /shared/out/orders --files copy`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runMerge(cmd, args, f) },
	}
	cmd.Flags().StringVar(&f.out, "out", "", "output directory (must be new or empty)")
	cmd.Flags().StringVar(&f.files, "files", "link", "how data files reach --out: link (hard links, copy across filesystems), copy, or move")
	return cmd
}

// mergeInput is one run's output directory.
type mergeInput struct {
	dir      string
	manifest *lindorm.Manifest
	cp       *pipeline.Checkpoint
	ddl      []byte
}

func runMerge(cmd *cobra.Command, dirs []string, f *mergeFlags) error {
	if f.out == "" {
		return exitWith(2, errors.New("--out is required: the directory for the merged bulk-load files"))
	}
	switch f.files {
	case "link", "copy", "move":
	default:
		return exitWith(2, fmt.Errorf("--files %q: want link, copy or move", f.files))
	}
	if err := checkOutDir(f.out, false); err != nil {
		return exitWith(2, err)
	}
	inputs, err := readMergeInputs(dirs, f.out)
	if err != nil {
		return exitWith(2, err)
	}
	if err := checkMergeInputs(inputs); err != nil {
		return exitWith(2, err)
	}
	m, copied, err := mergeOutputs(inputs, f.out, f.files)
	if err != nil {
		return fmt.Errorf("merge: %w (the partial output in %s has no manifest.json: remove it and run merge again)", err, f.out)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Merged %d runs into %s\n", len(inputs), f.out)
	table(w, [][2]string{
		{"rows in", fmt.Sprintf("%d", m.RowsIn)},
		{"rows written", fmt.Sprintf("%d", m.RowsWritten)},
		{"rows rejected", fmt.Sprintf("%d", m.RowsRejected)},
		{"regions", fmt.Sprintf("%d (%s)", m.Plan.Regions, m.Plan.Strategy)},
		{"files", fmt.Sprintf("%d (%s)", m.Files, filesVerb(f.files, copied))},
		{"bytes", transform.FormatSize(m.Bytes)},
	})
	printOversize(w, m)
	return nil
}

func filesVerb(mode string, copied int) string {
	switch {
	case mode == "move":
		return "moved"
	case mode == "copy":
		return "copied"
	case copied > 0:
		return fmt.Sprintf("hard-linked, %d copied across filesystems", copied)
	}
	return "hard-linked"
}

func readMergeInputs(dirs []string, out string) ([]*mergeInput, error) {
	outAbs, _ := filepath.Abs(out)
	seen := map[string]bool{}
	var inputs []*mergeInput
	for _, d := range dirs {
		abs, _ := filepath.Abs(d)
		if abs == outAbs {
			return nil, fmt.Errorf("%s is both an input and --out", d)
		}
		if seen[abs] {
			return nil, fmt.Errorf("%s is given twice", d)
		}
		seen[abs] = true
		in := &mergeInput{dir: d}
		if _, err := os.Stat(filepath.Join(d, lindorm.ManifestFile)); err != nil {
			return nil, fmt.Errorf("%s holds no complete run (no %s): finish it first (rekey migrate ... --resume)", d, lindorm.ManifestFile)
		}
		var err error
		if in.manifest, err = lindorm.ReadManifest(d); err != nil {
			return nil, err
		}
		if in.cp, err = pipeline.LoadCheckpoint(d); err != nil {
			return nil, err
		}
		if in.cp != nil && !in.cp.Complete {
			return nil, fmt.Errorf("%s: its checkpoint says the run did not finish", d)
		}
		if in.ddl, err = os.ReadFile(filepath.Join(d, lindorm.DDLFile)); err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		inputs = append(inputs, in)
	}
	return inputs, nil
}

// checkMergeInputs refuses inputs that do not belong to one migration.
func checkMergeInputs(inputs []*mergeInput) error {
	first := inputs[0]
	fm := first.manifest
	for _, in := range inputs[1:] {
		m := in.manifest
		switch {
		case m.MappingFingerprint != fm.MappingFingerprint:
			return fmt.Errorf("%s and %s were made with different mappings (fingerprints %s and %s): merge only the outputs of one migration", first.dir, in.dir, short(fm.MappingFingerprint), short(m.MappingFingerprint))
		case !reflect.DeepEqual(m.Plan, fm.Plan):
			return fmt.Errorf("%s and %s have different region plans (%s, %d regions and %s, %d regions): every shard must use the same plan (give every shard the same --regions, or use regions.split_keys or a hash-prefix key)", first.dir, in.dir, fm.Plan.Strategy, fm.Plan.Regions, m.Plan.Strategy, m.Plan.Regions)
		case m.Format != fm.Format:
			return fmt.Errorf("%s holds %s files and %s %s files", first.dir, fm.Format, in.dir, m.Format)
		case m.Table != fm.Table || !reflect.DeepEqual(m.Columns, fm.Columns) || !reflect.DeepEqual(m.KeyColumns, fm.KeyColumns):
			return fmt.Errorf("%s and %s describe different tables", first.dir, in.dir)
		case string(in.ddl) != string(first.ddl):
			return fmt.Errorf("%s and %s have different %s", first.dir, in.dir, lindorm.DDLFile)
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
func checkShardRanges(inputs []*mergeInput) error {
	owner := map[cassandra.Range]string{}
	var ranges []cassandra.Range
	cassandraInputs := 0
	for _, in := range inputs {
		if in.cp == nil || len(in.cp.Streams) == 0 {
			continue
		}
		isRanges := true
		var mine []cassandra.Range
		for name, st := range in.cp.Streams {
			r, err := cassandra.ParseRange(name)
			if err != nil {
				isRanges = false
				break
			}
			if !st.Done {
				return fmt.Errorf("%s did not finish %s", in.dir, name)
			}
			mine = append(mine, r)
		}
		if !isRanges {
			continue
		}
		cassandraInputs++
		for _, r := range mine {
			if prev, dup := owner[r]; dup {
				return fmt.Errorf("%s and %s both read %s: the same shard given twice?", prev, in.dir, r.Name())
			}
			owner[r] = in.dir
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

// mergeOutputs places the inputs' files in out and writes the merged manifest, ddl.sql,
// bulkload.json and rejects.jsonl. The manifest is written last: its presence marks a complete
// merge.
func mergeOutputs(inputs []*mergeInput, out, mode string) (*lindorm.Manifest, int, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, 0, err
	}
	fm := inputs[0].manifest
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
		im := in.manifest
		if len(im.Regions) != len(m.Regions) {
			return nil, 0, fmt.Errorf("%s lists %d regions, want %d", in.dir, len(im.Regions), len(m.Regions))
		}
		for i, r := range im.Regions {
			dst := &m.Regions[i]
			for _, fe := range r.Files {
				rel := pipeline.RegionDir(i) + "/" + fmt.Sprintf("part-%05d%s", len(dst.Files), ext)
				if filepath.Ext(fe.Path) != ext {
					rel = strings.TrimSuffix(rel, ext) + filepath.Ext(fe.Path)
				}
				c, err := placeFile(filepath.Join(in.dir, filepath.FromSlash(fe.Path)), filepath.Join(out, filepath.FromSlash(rel)), mode)
				if err != nil {
					return nil, 0, err
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
		if err := pipeline.SyncDir(filepath.Join(out, pipeline.RegionDir(i))); err != nil {
			return nil, 0, err
		}
	}
	if err := mergeRejects(inputs, out); err != nil {
		return nil, 0, err
	}
	if err := pipeline.WriteFileAtomic(filepath.Join(out, lindorm.DDLFile), inputs[0].ddl); err != nil {
		return nil, 0, err
	}
	if err := mergeBulkload(inputs[0].dir, out); err != nil {
		return nil, 0, err
	}
	if err := lindorm.WriteManifest(out, &m); err != nil {
		return nil, 0, err
	}
	return &m, copied, nil
}

// placeFile puts src at dst: a hard link (a copy across filesystems), a copy, or a rename. It
// reports whether the file was copied instead of linked.
func placeFile(src, dst, mode string) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, err
	}
	switch mode {
	case "move":
		return false, os.Rename(src, dst)
	case "link":
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
func mergeRejects(inputs []*mergeInput, out string) error {
	var all []byte
	for _, in := range inputs {
		data, err := os.ReadFile(filepath.Join(in.dir, pipeline.RejectsFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if in.cp != nil && int64(len(data)) > in.cp.RejectsBytes {
			data = data[:in.cp.RejectsBytes]
		}
		all = append(all, data...)
	}
	if len(all) == 0 {
		return nil
	}
	return pipeline.WriteFileAtomic(filepath.Join(out, pipeline.RejectsFile), all)
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
	job.ReaderConfig.FilePath = out
	data, err = json.MarshalIndent(job, "", "  ")
	if err != nil {
		return err
	}
	return pipeline.WriteFileAtomic(filepath.Join(out, lindorm.BulkloadFile), data)
}
