package main

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/source/cqlvalue"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/verify"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// repairFile is verify --repair's output: the source rows of the keys the target misses or
// holds otherwise, as JSON Lines that the file source reads back as the same values, written
// under a temporary name and renamed only when verify finds such rows (or extra keys). With
// times (a mapping's target.write_time) each row carries its cells' write times too, in the
// member the file source reads them from (file.WriteTimesMember), so that the migrate applying
// it writes each cell at its Cassandra write time, as the copy did.
type repairFile struct {
	path  string
	times bool
	f     *os.File
	w     *bufio.Writer
	names []string
	types []cqlvalue.Type
	line  []byte
}

// checkRepairPath refuses a --repair name the file source would not read as JSON Lines.
func checkRepairPath(path string) error {
	if !strings.HasSuffix(path, ".jsonl") && !strings.HasSuffix(path, ".ndjson") {
		return fmt.Errorf("--repair %s: name the file .jsonl: it holds JSON Lines, and migrate --source file: picks the format by the name", path)
	}
	return nil
}

// refuseRepairOfSource refuses a --repair file (or its .extra-keys) that src reads: verify
// replaces it, or removes it when there is nothing to repair.
func refuseRepairOfSource(src pipeline.Source, path string) error {
	lp, ok := src.(interface{ LocalPaths() []string })
	if path == "" || !ok {
		return nil
	}
	for _, p := range lp.LocalPaths() {
		for _, out := range []string{path, extraKeysPath(path)} {
			if resolvedPath(p) == resolvedPath(out) {
				return fmt.Errorf("--repair %s: --source reads %s, which the repair would replace (or remove, when there is nothing to repair): name another file (--repair %s)",
					path, p, strings.TrimSuffix(path, filepath.Ext(path))+"-2"+filepath.Ext(path))
			}
		}
	}
	return nil
}

func createRepairFile(path string, schema pipeline.SourceSchema, times bool) (*repairFile, error) {
	r := &repairFile{path: path, times: times}
	for _, col := range schema {
		t, err := cqlvalue.ParseType(col.Type)
		if err != nil {
			return nil, fmt.Errorf("--repair: source column %s: %w", col.Name, err)
		}
		r.names = append(r.names, col.Name)
		r.types = append(r.types, t)
	}
	f, err := atomicfile.CreateTemp(path, 0o600) // source rows: the owner's only
	if err != nil {
		return nil, fmt.Errorf("--repair %s: %w", path, err)
	}
	r.f, r.w = f, bufio.NewWriterSize(f, 1<<20)
	return r, nil
}

// write appends one source row as a JSON object of every source column (null ones too), and
// with times the cells' write times (those the source gave: none for a key column).
func (r *repairFile) write(_ *pipeline.Batch, rec *pipeline.Record) error {
	if len(rec.Values) != len(r.names) {
		return fmt.Errorf("a row of %d values, the mapping's source has %d columns", len(rec.Values), len(r.names))
	}
	if r.times && len(rec.Times) != len(r.names) {
		return fmt.Errorf("a row without its cells' write times, which the mapping's target.write_time needs (the source gave %d of %d columns)", len(rec.Times), len(r.names))
	}
	b := append(r.line[:0], '{')
	for i, v := range rec.Values {
		if i > 0 {
			b = append(b, ',')
		}
		b = cqlvalue.AppendJSONString(b, r.names[i])
		b = append(b, ':')
		b = r.types[i].AppendJSON(b, v)
	}
	if r.times {
		b = append(b, ',')
		b = cqlvalue.AppendJSONString(b, file.WriteTimesMember)
		b = append(b, ":{"...)
		first := true
		for i, ms := range rec.Times {
			if ms == 0 {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = cqlvalue.AppendJSONString(b, r.names[i])
			b = append(b, ':')
			b = strconv.AppendInt(b, ms, 10)
		}
		b = append(b, '}')
	}
	b = append(b, '}', '\n')
	r.line = b
	_, err := r.w.Write(b)
	return err
}

// commit makes the file durable under its name.
func (r *repairFile) commit() error {
	if err := r.w.Flush(); err != nil {
		r.discard()
		return fmt.Errorf("write %s: %w", r.path, err)
	}
	f := r.f
	r.f = nil
	if err := atomicfile.Commit(f, r.path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// discard removes the temporary file unless it was committed (nothing without --repair: nil).
func (r *repairFile) discard() {
	if r != nil && r.f != nil {
		r.f.Close()
		os.Remove(r.f.Name())
		r.f = nil
	}
}

// repairStatePath is the state folder of the migrate that applies a repair file to a table: not
// the table's default one (.rekey-state/<hash of the table>), which holds the migration being
// repaired and refuses a new run, and not named .jsonl (a rejects file lives in it).
func repairStatePath(repair string) string {
	return strings.TrimSuffix(strings.TrimSuffix(repair, ".jsonl"), ".ndjson") + ".state"
}

// extraKeysPath is where the keys of extra target rows go: not named .jsonl, so that a
// --source file: folder holding the repair file never reads them as source rows.
func extraKeysPath(repair string) string { return repair + ".extra-keys" }

// writeExtraKeys writes one JSON object of key columns per line (0600, atomically).
func writeExtraKeys(path string, keys [][]verify.Cell) error {
	var b []byte
	for _, key := range keys {
		b = append(b, '{')
		for i, c := range key {
			if i > 0 {
				b = append(b, ',')
			}
			b = cqlvalue.AppendJSONString(b, c.Column)
			b = append(b, ':')
			b = cqlvalue.AppendJSONString(b, c.Value)
		}
		b = append(b, '}', '\n')
	}
	return atomicfile.WriteFile(path, b, 0o600)
}

// finishRepair writes (or, with nothing to repair, drops) the repair files and says how to use
// them.
func finishRepair(out io.Writer, r *repairFile, res *verify.Result, f *verifyFlags, quiet bool) error {
	// extra rows of keys the source has: a data file copied, or a row written twice
	var repeats string
	if res.Extra != nil && *res.Extra > int64(len(res.ExtraKeys)) {
		repeats = fmt.Sprintf("  %d extra target rows repeat keys the source has (a data file copied or written twice): no migrate removes them; remove the data files named above that do not belong to the output\n",
			*res.Extra-int64(len(res.ExtraKeys)))
	}
	if res.RepairRows == 0 && len(res.ExtraKeys) == 0 {
		r.discard()
		// an earlier run's files at these paths would name repairs this run does not find
		removed, err := removeEarlierFiles(res, f.repair, extraKeysPath(f.repair))
		if err != nil {
			return err
		}
		if quiet {
			return nil
		}
		if !res.Equal {
			fmt.Fprintf(out, "\nRepair\n  no file written: no key is missing or differs\n%s", repeats)
		}
		if len(removed) > 0 {
			fmt.Fprintf(out, "\nRepair\n  removed %s, an earlier run's: nothing to repair now\n", strings.Join(removed, " and "))
		}
		return nil
	}
	if err := r.commit(); err != nil {
		return err
	}
	var extra string
	var removed []string
	if len(res.ExtraKeys) > 0 {
		extra = extraKeysPath(f.repair)
		if err := writeExtraKeys(extra, res.ExtraKeys); err != nil {
			return err
		}
	} else {
		var err error
		if removed, err = removeEarlierFiles(res, extraKeysPath(f.repair)); err != nil {
			return err
		}
	}
	if quiet {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nRepair\n  %d source rows of the %d keys missing or differing written to %s", res.RepairRows, res.Missing+res.Differ, f.repair)
	if res.Sample != "all" {
		fmt.Fprintf(&b, " (the sampled keys only: --sample %s)", res.Sample)
	}
	b.WriteString("\n")
	if res.RepairRows > 0 {
		writeRepairHowTo(&b, r, res, f)
	}
	if extra != "" {
		fmt.Fprintf(&b, "  %d keys of target rows the source does not produce listed in %s: a migrate cannot remove them; delete them from the table if they should not be there\n", len(res.ExtraKeys), extra)
	}
	if len(removed) > 0 {
		fmt.Fprintf(&b, "  removed %s, an earlier run's: no extra key now\n", strings.Join(removed, " and "))
	}
	b.WriteString(repeats)
	_, err := io.WriteString(out, b.String())
	return err
}

// removeEarlierFiles removes the files at paths an earlier run wrote, and returns those it
// removed. A sampled run removes none: it did not check the keys outside its sample, which an
// earlier run's files may list.
func removeEarlierFiles(res *verify.Result, paths ...string) ([]string, error) {
	if res.Sample != "all" {
		return nil, nil
	}
	var removed []string
	for _, p := range paths {
		switch err := os.Remove(p); {
		case err == nil:
			removed = append(removed, p)
		case !os.IsNotExist(err):
			return removed, fmt.Errorf("remove an earlier run's %s: %w", p, err)
		}
	}
	return removed, nil
}

// writeRepairHowTo says how to write the repair file's rows into the target: a table takes them
// as upserts (unless its dialect has no cell timestamps for the mapping's write times), files
// are a new output bulk-loaded after the target's.
func writeRepairHowTo(b *strings.Builder, r *repairFile, res *verify.Result, f *verifyFlags) {
	switch res.TargetKind {
	case "lookup":
		if scheme, _, _ := strings.Cut(res.Target, "://"); r.times && scheme != "lindorm" {
			fmt.Fprintf(b, "  the mapping's target.write_time writes cell timestamps, which a %s table does not have: apply the file with a copy of the mapping without it\n"+
				"  (its cells then carry the time of the repair):\n    %s\n", scheme,
				lindorm.CatchupCommand("MAPPING_WITHOUT_WRITE_TIME", "file:"+f.repair, "--out", res.Target, "--state", repairStatePath(f.repair), "--overwrite"))
			break
		}
		fmt.Fprintf(b, "  repair the table (its writes are upserts; the repair run keeps its checkpoint and rejects in a state folder of its own, beside the file):\n    %s\n",
			lindorm.CatchupCommand(f.mapping, "file:"+f.repair, "--out", res.Target, "--state", repairStatePath(f.repair), "--overwrite"))
	default:
		if r.times {
			// bulk-load files cannot carry the cells' write times (migrate refuses them)
			fmt.Fprintf(b, "  write them into the table with their cells' write times (target.write_time: bulk-load files cannot carry them):\n    rekey migrate -m %s --source file:%s --out lindorm://... --state %s\n",
				f.mapping, f.repair, repairStatePath(f.repair))
			break
		}
		fmt.Fprintf(b, "  write them to a new output folder and bulk load it after %s: its cells are newer (writerConfig.timestamp), so they overwrite the rows that differ:\n"+
			"    rekey migrate -m %s --source file:%s --out NEW_FOLDER\n", f.target, f.mapping, f.repair)
	}
}

var errRepairStdin = errors.New("--repair reads the source a second time, for the rows to write: a source on stdin (file:-) can be read only once; give the source as a file")
