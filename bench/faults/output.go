package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
)

// rowHash identifies a row (its region and every value, as the independent Parquet reader
// decodes them) in 128 bits: the campaign compares multisets of hundreds of thousands of rows.
type rowHash [16]byte

func hashRow(region int, row []string) rowHash {
	h := fnv.New128a()
	fmt.Fprintf(h, "%d", region)
	for _, v := range row {
		h.Write([]byte{0x1f})
		h.Write([]byte(v))
	}
	var out rowHash
	h.Sum(out[:0])
	return out
}

// runOutput is what a finished run left in its --out directory.
type runOutput struct {
	dir      string
	manifest *output.Manifest
	schema   pipeline.TargetSchema // the columns the manifest lists, in file order
	rows     []rowHash             // every row of every file the manifest lists, sorted
	rejects  []string              // the lines of rejects.jsonl, sorted
	names    []string              // the directory's top-level entries, sorted
	// problems are what is wrong whatever the clean run holds: temporary files left, data files
	// the manifest does not list, files with other row counts than it says, rejects repeated.
	problems []string
}

// readOutput reads back a finished run with sinktest.ReadParquet (parquet-go, not the arrow
// writer rekey uses).
func readOutput(dir string) (*runOutput, error) { return readOutputFrom(dir, nil) }

// readOutputFrom is readOutput for a run written to an object store too: dir is then the
// prefix's folder in versitygw's posix backend (each object a file), read as a local output,
// and st the store at that prefix, which tells what the bucket itself lists (checkBucket).
func readOutputFrom(dir string, st *s3store.Store) (*runOutput, error) {
	return readOutputAt(dir, st, false)
}

// readOutputAt reads an output; merged says it is rekey merge's, which holds no checkpoint and
// keeps its rejects in one rejects.jsonl on an object store too.
func readOutputAt(dir string, st *s3store.Store, merged bool) (*runOutput, error) {
	return readOutputWith(dir, func(m *output.Manifest) ([]byte, []string, error) {
		data, err := os.ReadFile(filepath.Join(dir, output.RejectsFile))
		if err != nil && !os.IsNotExist(err) {
			return nil, nil, err
		}
		if st != nil {
			// an object store cannot append: the rejects are the parts the checkpoint counts
			return checkBucket(st, m, merged)
		}
		return data, nil, nil
	})
}

// readOutputWith reads an output whose rejects (and what is wrong about where they are kept)
// rejects reads.
func readOutputWith(dir string, rejects func(*output.Manifest) ([]byte, []string, error)) (*runOutput, error) {
	m, err := outputtest.Manifest(dir)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	schema, err := schemaOf(m)
	if err != nil {
		return nil, err
	}
	o := &runOutput{dir: dir, manifest: m, schema: schema}
	listed := map[string]bool{}
	for _, r := range m.Regions {
		for _, f := range r.Files {
			listed[filepath.FromSlash(f.Path)] = true
			path, err := output.SafeRelPath(dir, f.Path)
			if err != nil {
				o.problems = append(o.problems, "manifest: "+err.Error())
				continue
			}
			pf, err := sinktest.ReadParquet(path, schema)
			if err != nil {
				o.problems = append(o.problems, fmt.Sprintf("%s: unreadable: %v", f.Path, err))
				continue
			}
			if int64(len(pf.Rows)) != f.Rows {
				o.problems = append(o.problems, fmt.Sprintf("%s: %d rows, the manifest says %d", f.Path, len(pf.Rows), f.Rows))
			}
			for _, row := range pf.Rows {
				o.rows = append(o.rows, hashRow(r.Index, row))
			}
		}
	}
	slices.SortFunc(o.rows, func(a, b rowHash) int { return bytes.Compare(a[:], b[:]) })

	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if path == dir {
			return nil
		}
		if !strings.Contains(rel, string(filepath.Separator)) {
			o.names = append(o.names, rel)
		}
		switch {
		case atomicfile.IsTemp(path):
			o.problems = append(o.problems, "temporary file left: "+rel)
		case !d.IsDir() && strings.HasPrefix(rel, output.DataDir+string(filepath.Separator)) && !listed[rel]:
			o.problems = append(o.problems, "data file the manifest does not list: "+rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(o.names)

	data, problems, err := rejects(m)
	if err != nil {
		return nil, err
	}
	o.problems = append(o.problems, problems...)
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		var rj output.Reject
		if err := json.Unmarshal([]byte(line), &rj); err != nil {
			o.problems = append(o.problems, fmt.Sprintf("rejects.jsonl: a damaged line %q: %v", short(line), err))
			continue
		}
		if seen[rj.Position]++; seen[rj.Position] == 2 {
			o.problems = append(o.problems, "rejects.jsonl: position "+rj.Position+" rejected more than once")
		}
		o.rejects = append(o.rejects, line)
	}
	sort.Strings(o.rejects)
	if int64(len(o.rejects)) != m.RowsRejected {
		o.problems = append(o.problems, fmt.Sprintf("rejects.jsonl has %d lines, the manifest says %d rows were rejected", len(o.rejects), m.RowsRejected))
	}
	if m.RowsIn != m.RowsWritten+m.RowsRejected {
		o.problems = append(o.problems, fmt.Sprintf("manifest: rows_in %d != rows_written %d + rows_rejected %d", m.RowsIn, m.RowsWritten, m.RowsRejected))
	}
	return o, nil
}

// compare lists how got differs from the clean run ref: rows lost or duplicated (with examples),
// counts, rejects, files.
func compare(ref, got *runOutput) []string {
	diffs := append([]string(nil), got.problems...)
	rm, gm := ref.manifest, got.manifest
	if !slices.Equal(rm.Columns, gm.Columns) {
		return append(diffs, fmt.Sprintf("columns %v, clean run %v", gm.Columns, rm.Columns))
	}
	if rm.RowsIn != gm.RowsIn || rm.RowsWritten != gm.RowsWritten || rm.RowsRejected != gm.RowsRejected {
		diffs = append(diffs, fmt.Sprintf("manifest rows_in/rows_written/rows_rejected %d/%d/%d, clean run %d/%d/%d",
			gm.RowsIn, gm.RowsWritten, gm.RowsRejected, rm.RowsIn, rm.RowsWritten, rm.RowsRejected))
	}
	if lost, extra, dup := diffRows(ref.rows, got.rows); len(lost)+len(extra) > 0 {
		d := fmt.Sprintf("rows: %d read back, clean run %d: %d lost, %d extra (%d of them duplicates of clean rows)",
			len(got.rows), len(ref.rows), len(lost), len(extra), dup)
		if ex := findRows(ref, lost, 3); len(ex) > 0 {
			d += "; lost e.g. " + strings.Join(ex, ", ")
		}
		if ex := findRows(got, extra, 3); len(ex) > 0 {
			d += "; extra e.g. " + strings.Join(ex, ", ")
		}
		diffs = append(diffs, d)
	}
	if lost, extra := diffLines(ref.rejects, got.rejects); len(lost)+len(extra) > 0 {
		d := fmt.Sprintf("rejects.jsonl: %d lines, clean run %d: %d missing, %d extra", len(got.rejects), len(ref.rejects), len(lost), len(extra))
		if len(lost) > 0 {
			d += "; missing e.g. " + short(lost[0])
		}
		if len(extra) > 0 {
			d += "; extra e.g. " + short(extra[0])
		}
		diffs = append(diffs, d)
	}
	if !slices.Equal(ref.names, got.names) {
		diffs = append(diffs, fmt.Sprintf("top-level files %v, clean run %v", got.names, ref.names))
	}
	return diffs
}

// diffRows walks two sorted multisets: the hashes only ref holds, only got holds, and how many
// of got's extra rows are copies of a row ref holds (duplicates, rather than wrong values).
func diffRows(ref, got []rowHash) (lost, extra []rowHash, dup int) {
	i, j := 0, 0
	for i < len(ref) || j < len(got) {
		var c int
		switch {
		case i == len(ref):
			c = 1
		case j == len(got):
			c = -1
		default:
			c = bytes.Compare(ref[i][:], got[j][:])
		}
		switch {
		case c == 0:
			i++
			j++
		case c < 0:
			lost = append(lost, ref[i])
			i++
		default:
			if _, found := slices.BinarySearchFunc(ref, got[j], func(a, b rowHash) int { return bytes.Compare(a[:], b[:]) }); found {
				dup++
			}
			extra = append(extra, got[j])
			j++
		}
	}
	return lost, extra, dup
}

// diffLines is diffRows for sorted lines.
func diffLines(ref, got []string) (lost, extra []string) {
	i, j := 0, 0
	for i < len(ref) || j < len(got) {
		switch {
		case j == len(got) || (i < len(ref) && ref[i] < got[j]):
			lost = append(lost, ref[i])
			i++
		case i == len(ref) || got[j] < ref[i]:
			extra = append(extra, got[j])
			j++
		default:
			i++
			j++
		}
	}
	return lost, extra
}

// findRows reads o's files again for up to n of the rows hashes names, each shown with its file.
func findRows(o *runOutput, hashes []rowHash, n int) []string {
	want := map[rowHash]bool{}
	for _, h := range hashes[:min(n, len(hashes))] {
		want[h] = true
	}
	var found []string
	for _, r := range o.manifest.Regions {
		for _, f := range r.Files {
			path, err := output.SafeRelPath(o.dir, f.Path)
			if err != nil {
				continue
			}
			pf, err := sinktest.ReadParquet(path, o.schema)
			if err != nil {
				continue
			}
			for _, row := range pf.Rows {
				if want[hashRow(r.Index, row)] {
					found = append(found, fmt.Sprintf("%s [%s]", f.Path, strings.Join(row, " ")))
					if len(found) == n {
						return found
					}
				}
			}
		}
	}
	return found
}

// schemaOf is the target schema a manifest describes: its columns in file order, typed.
func schemaOf(m *output.Manifest) (pipeline.TargetSchema, error) {
	s := pipeline.TargetSchema{Table: m.Table, KeyLen: len(m.KeyColumns)}
	for _, c := range m.Columns {
		t, p, sc, err := pipeline.ParseType(c.Type)
		if err != nil {
			return s, fmt.Errorf("manifest column %s: %w", c.Name, err)
		}
		col := pipeline.Column{Name: c.Name, Type: t, Precision: p, Scale: sc, KeyPos: -1}
		for _, k := range m.KeyColumns {
			if k.Name == c.Name {
				col.KeyPos, col.Desc = k.Position, k.Desc
			}
		}
		s.Columns = append(s.Columns, col)
	}
	return s, nil
}

func short(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// checkBucket lists what an output on an object store holds through the S3 API and returns its
// rejects (the parts the checkpoint counts, in order) and what is wrong: a data object the
// manifest does not list, a listed one missing, a rejects part past the checkpoint's count, an
// object at the top that is none of the run's, an unfinished multipart upload. A merged output
// has no checkpoint and one rejects.jsonl.
func checkBucket(st store.Store, m *output.Manifest, merged bool) (rejects []byte, problems []string, err error) {
	ctx := context.Background()
	top := map[string]bool{output.ManifestFile: true, output.DDLFile: true, output.BulkloadFile: true, output.CheckpointFile: true}
	cp := &pipeline.Checkpoint{}
	if merged {
		top = map[string]bool{output.ManifestFile: true, output.DDLFile: true, output.BulkloadFile: true, output.RejectsFile: true}
		if rejects, err = st.Get(ctx, output.RejectsFile); err != nil && !errors.Is(err, store.ErrNotExist) {
			return nil, nil, err
		}
	} else {
		if cp, err = output.ReadCheckpoint(ctx, st); err != nil {
			return nil, nil, err
		}
		if cp == nil || !cp.Complete {
			problems = append(problems, "bucket: no complete checkpoint")
			cp = &pipeline.Checkpoint{}
		}
	}
	listed := map[string]bool{}
	for _, r := range m.Regions {
		for _, f := range r.Files {
			listed[f.Path] = true
		}
	}
	objs, err := st.List(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	parts := map[string]bool{}
	for n := 0; n < cp.RejectParts; n++ {
		parts[output.RejectsPart(n)] = true
	}
	for _, o := range objs {
		switch {
		case strings.HasPrefix(o.Name, output.DataDir+"/"):
			if !listed[o.Name] {
				problems = append(problems, "bucket: a data object the manifest does not list: "+o.Name)
			}
			delete(listed, o.Name)
		case strings.HasPrefix(o.Name, output.RejectsPartsDir+"/"):
			if !parts[o.Name] {
				problems = append(problems, fmt.Sprintf("bucket: a rejects part the checkpoint does not count (%d parts): %s", cp.RejectParts, o.Name))
			}
		case strings.HasPrefix(o.Name, output.ReplayPartsDir+"/"):
			base := o.Name[strings.LastIndexByte(o.Name, '/')+1:]
			digits, _, _ := strings.Cut(strings.TrimPrefix(base, "part-"), ".")
			if n, err := strconv.Atoi(digits); err != nil || n >= cp.RejectParts {
				problems = append(problems, fmt.Sprintf("bucket: a rejected-rows part the checkpoint does not count (%d parts): %s", cp.RejectParts, o.Name))
			}
		case !top[o.Name]:
			problems = append(problems, "bucket: an object that is none of the run's: "+o.Name)
		}
	}
	for name := range listed {
		problems = append(problems, "bucket: the manifest lists "+name+", which the bucket does not hold")
	}
	if problems, err = checkUnfinished(st, problems); err != nil {
		return nil, nil, err
	}
	if merged {
		sort.Strings(problems)
		return rejects, problems, nil
	}
	var buf bytes.Buffer
	for n := 0; n < cp.RejectParts; n++ {
		part, err := st.Get(ctx, output.RejectsPart(n))
		if err != nil {
			problems = append(problems, fmt.Sprintf("bucket: rejects part %d: %v", n, err))
			continue
		}
		buf.Write(part)
	}
	sort.Strings(problems)
	return buf.Bytes(), problems, nil
}

// checkUnfinished adds to problems the multipart uploads left unfinished in st (a bucket; a
// shard's part of one is checked with the whole bucket).
func checkUnfinished(st store.Store, problems []string) ([]string, error) {
	s3, ok := st.(*s3store.Store)
	if !ok {
		return problems, nil
	}
	up, err := s3.Unfinished(context.Background(), "")
	if err != nil {
		return nil, err
	}
	for _, name := range up {
		problems = append(problems, "bucket: an unfinished multipart upload of "+name)
	}
	return problems, nil
}
