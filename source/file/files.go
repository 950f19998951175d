package file

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// Files reads several files as one source, one after the other in order, each its own stream
// (named by its path relative to the files' common directory, so that two part.csv in different
// directories stay apart): positions, resume and identity are per file. It implements
// pipeline.Source, Sizer, Sampler and Identifier.
type Files struct {
	files       []*Source
	log         *zap.Logger
	skip, limit int64
	dir         string // the files' common directory, absolute
	single      bool   // one file named as such: the identity is that file's
	shard       pipeline.Shard
	format      string
	csv         CSVOptions
	// sampled opens every file of the input when this shard reads only some of them whole: the
	// region plan samples them all, as the whole run does, so that every shard plans the same
	// regions (nil: f.files are the input's)
	sampled func() ([]*Source, error)
	// input is a shard's summary of every file of the input (inputSummary), in its identity
	input string
}

// LocalPaths lists the paths of the local files the source reads, as named (a bucket's objects
// are none).
func (f *Files) LocalPaths() []string {
	var paths []string
	for _, s := range f.files {
		if s.cfg.Object == nil {
			paths = append(paths, s.cfg.Path)
		}
	}
	return paths
}

// Stdin reads stdin (file:-). It cannot sample or resume, and has no size: it implements
// pipeline.Source, Sizer (-1, or the limit), Identifier and IdentityAdopter (which refuses).
type Stdin struct {
	f *Files
}

var (
	_ pipeline.Source      = (*Files)(nil)
	_ pipeline.Sizer       = (*Files)(nil)
	_ pipeline.Sampler     = (*Files)(nil)
	_ pipeline.HeadSampler = (*Files)(nil)
	_ pipeline.Rereader    = (*Files)(nil)
	_ pipeline.Source      = (*Stdin)(nil)
	_ pipeline.Sizer       = (*Stdin)(nil)
)

// headBudget is what Open reads of all the files' heads together (each at least minHeadSize):
// every header is checked before the run starts, without reading much of a thousand files.
const (
	headBudget  = 64 << 20
	minHeadSize = 64 << 10
	// maxListedErrors is how many files' errors Open reports at once.
	maxListedErrors = 10
)

// Open returns the source that spec names: a *Files for files, directories and globs, a *Stdin
// for "-" (reading base.Stdin, the process's stdin when nil). base holds what applies to every
// file (Schema, MaxRecordSize, ...); its Path, Format, CSV and Stream are set per file. Every file's head is read (and a CSV header matched
// to the schema) before it returns, so that a bad file stops the run before it starts.
func Open(ctx context.Context, spec Spec, base Config, logger *zap.Logger) (pipeline.Source, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	base.Context = ctx
	f := &Files{log: logger, skip: spec.Skip, limit: spec.Limit, format: spec.Format, csv: spec.CSV}
	if !spec.Shard.Whole() && (spec.Path == "-" || spec.Skip > 0 || spec.Limit > 0) {
		return nil, fmt.Errorf("--shard %s: stdin and a skip=/limit= window are read by one run: drop --shard", spec.Shard)
	}
	if spec.Path == "-" {
		return f.openStdin(spec, base)
	}
	in, err := f.list(ctx, spec)
	if err != nil {
		return nil, err
	}
	all := in
	part, err := f.shardPart(spec, &in)
	if err != nil {
		return nil, err
	}
	if err := f.openEach(spec, base, in, part); err != nil {
		return nil, err
	}
	if len(in.paths) < len(all.paths) {
		var every *Files
		f.sampled = func() ([]*Source, error) {
			if every == nil {
				every = &Files{log: f.log}
				if err := every.openEach(spec, base, all, part); err != nil {
					every = nil
					return nil, fmt.Errorf("sample every file of the input (the shards plan one region plan): %w", err)
				}
			}
			return every.files, nil
		}
	}
	if len(f.files) > 1 {
		logger.Info("reading files in this order", zap.String("dir", f.dir), zap.Int("files", len(f.files)),
			zap.String("first", f.files[0].stream), zap.String("last", f.files[len(f.files)-1].stream))
	}
	return f, nil
}

// openStdin is the source of file:-, stdin in the format the URI names.
func (f *Files) openStdin(spec Spec, base Config) (pipeline.Source, error) {
	if spec.Format == "" {
		return nil, errors.New("--source file:- reads stdin, which has no name to tell its format: add ?format=csv, tsv or jsonl (with .gz for gzip data)")
	}
	cfg := base
	if cfg.Stdin == nil {
		cfg.Stdin = stdinReader()
	}
	cfg.Path, cfg.Stream, cfg.Format, cfg.CSV = "stdin", "stdin", spec.Format, spec.CSV
	s, err := New(cfg, f.log)
	if err != nil {
		return nil, err
	}
	if s.format == formatJSONL && spec.csvOptions() != "" {
		return nil, fmt.Errorf("--source file:-: the CSV options (%s) were given, but format=%s is JSON Lines", spec.csvOptions(), spec.Format)
	}
	f.files = []*Source{s}
	return &Stdin{f: f}, nil
}

// inputFiles are the files a source reads, in order: their paths (or locations in a bucket),
// stream names and, in a bucket, the objects.
type inputFiles struct {
	paths, streams []string
	objects        []Object // nil for local files
}

// list finds the files spec names, in a bucket or on the local disk, and the folder they are
// named relative to (f.dir).
func (f *Files) list(ctx context.Context, spec Spec) (in inputFiles, err error) {
	if spec.Store == nil {
		var single bool
		if in.paths, single, err = resolvePaths(spec.Path, spec.Format, f.log); err != nil {
			return in, err
		}
		f.single = single
		f.dir, in.streams, err = streamNames(in.paths)
		return in, err
	}
	if in.objects, err = listObjects(ctx, spec.Store, spec.Pattern, spec.Format, f.log); err != nil {
		return in, err
	}
	f.single = len(in.objects) == 1 && spec.Pattern != "" && !hasGlobMeta(spec.Pattern)
	f.dir = spec.Store.Location("")
	for _, o := range in.objects {
		in.paths, in.streams = append(in.paths, spec.Store.Location(o.Info.Name)), append(in.streams, o.Info.Name)
	}
	return in, nil
}

// shardPart narrows in to what spec's shard reads: its share of the files, or, with fewer files
// than shards, its byte range of each (part, which is then set).
func (f *Files) shardPart(spec Spec, in *inputFiles) (part pipeline.Shard, err error) {
	if spec.Shard.Whole() {
		return part, nil
	}
	var sizes []int64
	for i, p := range in.paths {
		if in.objects != nil {
			sizes = append(sizes, in.objects[i].Info.Size)
		} else if st, err := os.Stat(p); err == nil {
			sizes = append(sizes, st.Size())
		} else {
			return part, fmt.Errorf("file %s: %w", p, err)
		}
	}
	f.input = inputSummary(in.streams, sizes)
	if len(in.paths) < spec.Shard.Count {
		part, f.single, f.shard = spec.Shard, false, spec.Shard
		f.log.Info("fewer files than shards: reading this shard's byte range of each file", zap.String("shard", spec.Shard.String()),
			zap.Int("files", len(in.paths)))
		return part, nil
	}
	mine := shardFiles(sizes, spec.Shard)
	in.paths, in.streams, in.objects = pick(in.paths, mine), pick(in.streams, mine), pick(in.objects, mine)
	f.single, f.shard = false, spec.Shard
	f.log.Info("reading this shard's files", zap.String("shard", spec.Shard.String()), zap.Int("files", len(in.paths)), zap.Strings("streams", in.streams))
	return part, nil
}

// inputSummary sums up the files a shard's split is made from: their count, bytes and a digest of
// their names and sizes. Every shard of one input has the same (pipeline.Identity.WithoutShard
// keeps it): a file added, removed or grown between two shards' starts would deal the files, or
// cut the byte ranges, otherwise, and some rows would be read by no shard, or by two.
func inputSummary(streams []string, sizes []int64) string {
	h := sha256.New()
	var total int64
	for i, name := range streams {
		fmt.Fprintf(h, "%q %d\n", name, sizes[i])
		total += sizes[i]
	}
	return fmt.Sprintf("%d files, %d bytes, digest %x", len(streams), total, h.Sum(nil)[:6])
}

// openEach opens every file of in (its head read, a CSV header matched), listing the first
// maxListedErrors files that cannot be read.
func (f *Files) openEach(spec Spec, base Config, in inputFiles, part pipeline.Shard) error {
	headSize := max(minHeadSize, min(maxHead, headBudget/len(in.paths)))
	var errs []error
	csvFiles := 0
	for i, p := range in.paths {
		cfg := base
		cfg.Path, cfg.Stream, cfg.Format, cfg.headSize, cfg.Part = p, in.streams[i], spec.Format, headSize, part
		if in.objects != nil {
			cfg.Object = &in.objects[i]
		}
		if fm, _, _, err := parseFormat(p, spec.Format); err == nil && fm == formatCSV {
			cfg.CSV = spec.CSV // JSON Lines files among CSV ones take no CSV options
			csvFiles++
		}
		s, err := New(cfg, f.log)
		if err != nil {
			errs = append(errs, err)
			if len(errs) == maxListedErrors {
				errs = append(errs, fmt.Errorf("(only the first %d files with a problem are listed)", maxListedErrors))
				break
			}
			continue
		}
		f.files = append(f.files, s)
	}
	if len(errs) > 0 && !part.Whole() {
		return fmt.Errorf("--shard %s of %s: %d file(s) for %d shards, so each shard reads a byte range of every file (or run at most %d shards, each reading whole files):\n%w",
			part, spec.Path, len(in.paths), part.Count, len(in.paths), errors.Join(errs...))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if csvFiles == 0 && spec.csvOptions() != "" {
		return fmt.Errorf("--source file:%s: the CSV options (%s) were given, but the input is JSON Lines", spec.Path, spec.csvOptions())
	}
	return nil
}

// stdinReader returns the process's stdin, looked up when a source opens it (tests replace it).
var stdinReader = func() io.Reader { return os.Stdin }

// resolvePaths turns the path of a file: URI into the files to read, in order: a file, a directory
// (its files with a known extension, or every file with format=, in name order, not recursive:
// what `dsbulk unload` writes), a glob (its matches in name order), or several of these separated
// by commas (in the order given). A name that holds a comma is one path when it exists. single
// says the path named one file as such.
func resolvePaths(raw, format string, log *zap.Logger) (paths []string, single bool, err error) {
	parts := []string{raw}
	if _, err := os.Stat(expandHome(raw)); err != nil && strings.Contains(raw, ",") {
		parts = strings.Split(raw, ",")
	}
	var errs []error
	seen := map[string]string{}
	type named struct {
		path, from string
		st         os.FileInfo
	}
	bySize := map[int64][]named{} // the files added, by size: a hard link has its file's
	listed := gzipCopies{}        // the files directories and patterns gave
	add := func(p, from string) {
		if from != p {
			if err := listed.add(p, from); err != nil {
				errs = append(errs, err)
				return
			}
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = filepath.Clean(p)
		}
		// a link is the file it names: latest.csv -> orders-1.csv beside it read both twice
		link := ""
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			abs, link = real, ", a link to "+real+","
		}
		if prev, ok := seen[abs]; ok {
			errs = append(errs, fmt.Errorf("%s%s is read twice (from %s and from %s): name each file once", p, link, prev, from))
			return
		}
		// a hard link is the file under another path: only the file system tells
		if st, err := os.Stat(abs); err == nil {
			for _, o := range bySize[st.Size()] {
				if os.SameFile(o.st, st) {
					errs = append(errs, fmt.Errorf("%s is %s under another name (a hard link), so the file is read twice (from %s and from %s): name each file once", p, o.path, o.from, from))
					return
				}
			}
			bySize[st.Size()] = append(bySize[st.Size()], named{p, from, st})
		}
		seen[abs] = from
		paths = append(paths, p)
	}
	for _, part := range parts {
		part = expandHome(strings.TrimSpace(part))
		if part == "" {
			errs = append(errs, fmt.Errorf("--source file:%s: an empty path between commas", raw))
			continue
		}
		if part == "-" {
			errs = append(errs, errors.New("--source file:- (stdin) must be the only input"))
			continue
		}
		st, serr := os.Stat(part)
		switch {
		case serr == nil && st.IsDir():
			files, err := listDir(part, format, log)
			if err != nil {
				errs = append(errs, err)
			}
			for _, p := range files {
				add(p, part)
			}
		case serr == nil:
			add(part, part)
			single = len(parts) == 1
		case hasGlobMeta(part):
			matches, err := filepath.Glob(part)
			if err != nil {
				errs = append(errs, fmt.Errorf("--source file:%s: bad pattern: %w", part, err))
				continue
			}
			sort.Strings(matches)
			var hidden []string
			matches = slices.DeleteFunc(matches, func(m string) bool {
				h := hiddenMatch(filepath.ToSlash(filepath.Clean(part)), filepath.ToSlash(m))
				if h {
					hidden = append(hidden, m)
				}
				return h
			})
			if len(hidden) > 0 {
				log.Info("leaving out the pattern's hidden matches and those starting with _ (name them in the pattern to read them: .*.csv)",
					zap.String("pattern", part), zap.Strings("skipped", hidden))
			}
			if len(matches) == 0 {
				msg := "the pattern matches no file"
				if len(hidden) > 0 {
					msg += " but hidden ones or ones starting with _ (" + listNames(hidden) + "), which are left out: name them in the pattern (.*.csv) to read them"
				}
				errs = append(errs, fmt.Errorf("--source file:%s: %s", part, msg))
			}
			for _, m := range matches {
				if st, err := os.Stat(m); err == nil && st.IsDir() {
					errs = append(errs, fmt.Errorf("--source file:%s matches the directory %s: a pattern reads files (file:%s reads the files in it)", part, m, m))
					continue
				}
				add(m, part)
			}
		case errors.Is(serr, os.ErrNotExist):
			errs = append(errs, fmt.Errorf("file %s not found: check the --source path", part))
		default:
			errs = append(errs, fmt.Errorf("file %s: %w", part, serr))
		}
	}
	if len(errs) > 0 {
		return nil, false, errors.Join(errs...)
	}
	return paths, single, nil
}

// gzipCopies finds a file and its gzip copy side by side (an export compressed and kept) among
// the files a directory, a bucket prefix or a pattern lists: reading both reads every row twice.
// It holds the names added, by their name without ".gz".
type gzipCopies map[string]string

// add records name, listed from where, or refuses it when its plain or gzip twin was listed.
func (g gzipCopies) add(name, where string) error {
	plain := strings.TrimSuffix(name, ".gz")
	if other, ok := g[plain]; ok {
		return fmt.Errorf("%s and %s are both in %s: a file and its gzip copy would be read twice; remove one, or name the files one by one to read both", other, name, where)
	}
	g[plain] = name
	return nil
}

// listDir returns the files of a directory to read, in name order. Hidden files and those
// starting with '_' (_SUCCESS, .crc files of Spark and Hadoop) are never read; without format=
// only files with a known extension are.
func listDir(dir, format string, log *zap.Logger) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", dir, err)
	}
	var files, skipped []string
	var errs []error
	for _, e := range entries { // in name order
		name := e.Name()
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err == nil && st.IsDir() {
			skipped = append(skipped, name+"/")
			continue
		}
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			skipped = append(skipped, name)
			continue
		}
		if format == "" && !knownExtension(name) {
			skipped = append(skipped, name)
			continue
		}
		if err != nil {
			// a data file that cannot be looked at (a link to a file that is gone) is not left
			// out as if it were a folder: its rows would be missing without an error
			errs = append(errs, fmt.Errorf("directory %s: %s cannot be read (a link to a file that is gone?): %w", dir, name, err))
			continue
		}
		files = append(files, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(files) == 0 {
		what := "files named .csv, .tsv, .jsonl or .ndjson (optionally .gz)"
		if format != "" {
			what = "files (hidden ones and those starting with _ are left out)"
		}
		msg := fmt.Sprintf("directory %s holds no %s", dir, what)
		if len(skipped) > 0 {
			msg += ": it holds " + listNames(skipped)
			if format == "" {
				msg += "; to read files of another name as one format, add ?format=csv, tsv or jsonl"
			}
		}
		return nil, errors.New(msg)
	}
	if len(skipped) > 0 {
		log.Info("leaving out what is not a data file in the directory (subdirectories are not read)",
			zap.String("dir", dir), zap.Strings("skipped", skipped))
	}
	return files, nil
}

// listNames writes at most 5 names.
func listNames(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + " and " + strconv.Itoa(len(names)-5) + " more"
	}
	return strings.Join(names, ", ")
}

func hasGlobMeta(p string) bool { return strings.ContainsAny(p, "*?[") }

// hiddenMatch tells whether match, a match of pattern (both with '/'), is hidden or starts with
// '_' (_SUCCESS, Spark's _temporary/) where a wildcard matched it: in a path element that the
// pattern's element matched without naming that first character, as a shell's * leaves out
// .files. A directory's listing leaves them out the same way (listDir, listObjects).
func hiddenMatch(pattern, match string) bool {
	pe, me := strings.Split(pattern, "/"), strings.Split(match, "/")
	if len(pe) != len(me) { // a match has its pattern's elements; never so, but read it then
		return false
	}
	for i, m := range me {
		if m == "" || m[0] != '.' && m[0] != '_' || !hasGlobMeta(pe[i]) {
			continue
		}
		if pe[i][0] != m[0] {
			return true
		}
	}
	return false
}

// expandHome expands a leading ~/ as a shell would (file:~/x is not expanded by the shell).
func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// streamNames names each file by its path relative to the files' common directory, with '/'.
func streamNames(paths []string) (dir string, names []string, err error) {
	abs := make([]string, len(paths))
	for i, p := range paths {
		if abs[i], err = filepath.Abs(p); err != nil {
			return "", nil, fmt.Errorf("file %s: %w", p, err)
		}
	}
	dir = filepath.Dir(abs[0])
	for _, a := range abs[1:] {
		for dir != filepath.Dir(dir) && !strings.HasPrefix(a, dir+string(filepath.Separator)) {
			dir = filepath.Dir(dir)
		}
	}
	names = make([]string, len(abs))
	for i, a := range abs {
		rel, err := filepath.Rel(dir, a)
		if err != nil {
			return "", nil, fmt.Errorf("file %s: %w", paths[i], err)
		}
		names[i] = filepath.ToSlash(rel)
	}
	return dir, names, nil
}

// Run reads the files one after the other, each with its resume state; a file marked done is
// skipped.
func (f *Files) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	if f.skip > 0 || f.limit > 0 {
		read, err := f.runWindow(ctx, resume, out)
		if err == nil && f.skip > 0 && read <= f.skip {
			// the run ends with no row in: say why, rather than leave 0 rows to puzzle over
			f.log.Warn("skip= passes over every row of the input: nothing is read; lower skip= below the rows the input holds",
				zap.Int64("skip", f.skip), zap.Int64("rows", read))
		}
		return err
	}
	for _, s := range f.files {
		if err := s.Run(ctx, resume, out); err != nil {
			return err
		}
	}
	return nil
}

// Rereadable: Run reads the files again from their start (stdin is a Stdin, which cannot).
func (f *Files) Rereadable() bool { return true }

// runWindow reads the records after the first skip, at most limit of them, over the files in
// order. Each batch's cursor also counts the records read so far (rows=N, skipped ones included),
// from which a resume knows where the window stands. The batch that reaches the limit is its
// stream's last: the run is complete. read is that count at the end.
func (f *Files) runWindow(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) (read int64, err error) {
	end := int64(-1)
	if f.limit > 0 {
		end = f.skip + f.limit
	}
	var count int64
	for _, s := range f.files {
		if st, ok := resume[s.stream]; ok {
			if n, ok := cursorRows(st.Cursor); ok {
				count = n // files are read in order: the last one with a state counts them all
			}
		}
	}
	for _, s := range f.files {
		if end >= 0 && count >= end {
			return count, nil
		}
		done, err := f.windowFile(ctx, s, resume, out, &count, end)
		if err != nil || done {
			return count, err
		}
	}
	return count, nil
}

// windowFile reads one file of the window; done says the limit was reached.
func (f *Files) windowFile(ctx context.Context, s *Source, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch, count *int64, end int64) (done bool, err error) {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() {
		errc <- s.Run(fctx, resume, in)
		close(in)
	}()
	var cur []byte
	for b := range in {
		if done {
			continue // let the file's reader stop
		}
		first := *count
		*count += int64(len(b.Records))
		if first < f.skip {
			b.Records = b.Records[min(f.skip-first, int64(len(b.Records))):]
		}
		if end >= 0 && *count >= end {
			b.Records = b.Records[:len(b.Records)-int(*count-end)]
			*count = end
			b.Done, done = true, true
		}
		if len(b.Records) == 0 && !b.Done {
			continue // all skipped
		}
		cur = append(append(cur[:0], b.Cursor...), ",rows="...)
		b.Cursor = string(strconv.AppendInt(cur, *count, 10))
		select {
		case out <- b:
		case <-ctx.Done():
			cancel()
			for range in {
			}
			<-errc
			return false, ctx.Err()
		}
		if done {
			cancel()
			f.log.Info("limit= reached: the rest of the input is not read", zap.String("file", s.cfg.Path), zap.Int64("limit", f.limit))
		}
	}
	err = <-errc
	if done {
		return true, nil // the file's reader stopped because it was told to
	}
	return false, err
}

// WholeEstimatedRows is, for a shard, the rows of the whole input it samples (every file, whole),
// which its region plan is made for; -1 when a file has no estimate (gzip) or cannot be opened.
func (f *Files) WholeEstimatedRows() int64 {
	if f.shard.Whole() {
		return f.EstimatedRows() // within the window
	}
	files := f.files
	if f.sampled != nil {
		var err error
		if files, err = f.sampled(); err != nil {
			return -1
		}
	}
	var n int64
	for _, s := range files {
		e := s.wholeRows()
		if e < 0 {
			return -1
		}
		n += e
	}
	return n
}

// EstimatedRows adds up the files' estimates (-1 when one of them has none, a gzip file), within
// the window.
func (f *Files) EstimatedRows() int64 {
	var n int64
	for _, s := range f.files {
		e := s.EstimatedRows()
		if e < 0 {
			n = -1
			break
		}
		n += e
	}
	return f.window(n)
}

// Part says whether ?skip= or ?limit= cut the window short of the rows the files hold: their
// estimated rows (0 when the window holds them all; -1 when the files' rows are not known, a gzip
// file's: the window may be any part of them), and the window's skip and limit (0: none).
func (f *Files) Part() (rows, skip, limit int64) {
	if f.skip == 0 && f.limit == 0 {
		return 0, 0, 0
	}
	for _, s := range f.files {
		e := s.EstimatedRows()
		if e < 0 {
			return -1, f.skip, f.limit
		}
		rows += e
	}
	if f.window(rows) >= rows {
		return 0, 0, 0
	}
	return rows, f.skip, f.limit
}

// window bounds an estimate by ?skip= and ?limit=; an unknown count is the limit, when there is
// one (an upper bound, and the point of a limit is a short trial).
func (f *Files) window(n int64) int64 {
	if n < 0 {
		if f.limit > 0 {
			return f.limit
		}
		return -1
	}
	n = max(n-f.skip, 0)
	if f.limit > 0 {
		n = min(n, f.limit)
	}
	return n
}

// Part of stdin is Files.Part of an input whose rows are not known: -1 with the window's skip
// and limit, when it has one.
func (s *Stdin) Part() (rows, skip, limit int64) {
	if s.f.skip == 0 && s.f.limit == 0 {
		return 0, 0, 0
	}
	return -1, s.f.skip, s.f.limit
}

// EstimatedRows of stdin is unknown, or the limit.
func (s *Stdin) EstimatedRows() int64 { return s.f.window(-1) }

// Run reads stdin.
func (s *Stdin) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	return s.f.Run(ctx, resume, out)
}

// windowSampleRows: a window of at most this many rows is sampled by reading it (the rows the run
// reads); a larger one, or one with no limit, by spreading the sample over the whole input.
const windowSampleRows = 1_000_000

// Sample returns up to n records spread over the files, each file's share in proportion to its
// data size (a gzip file's compressed size), in file order. With a window of at most a million
// rows (?limit=), the sample is spread over the window's rows instead. A shard that reads some of
// the files whole samples all of them.
func (f *Files) Sample(ctx context.Context, n int) ([]pipeline.Record, error) {
	if n <= 0 {
		return nil, nil
	}
	if f.limit > 0 && f.skip+f.limit <= windowSampleRows {
		return f.sampleWindow(ctx, n)
	}
	files := f.files
	if f.sampled != nil {
		var err error
		if files, err = f.sampled(); err != nil {
			return nil, err
		}
	}
	if len(files) == 1 {
		return files[0].Sample(ctx, n)
	}
	weights := make([]int64, len(files))
	var total int64
	for i, s := range files {
		w := s.size // a gzip file's compressed size
		if !s.gz {
			w -= s.dataStart
		}
		weights[i] = max(w, 0)
		total += weights[i]
	}
	if total == 0 {
		return nil, nil
	}
	var recs []pipeline.Record
	for i, k := range shares(weights, total, n) {
		if k == 0 {
			continue
		}
		// the files share one budget as they share n
		part, err := files[i].sample(ctx, k, max(1, files[i].sampleBytes()*int64(k)/int64(n)))
		if err != nil {
			return nil, err
		}
		recs = append(recs, part...)
	}
	return recs, nil
}

// SamplesHead tells whether Sample gives the first rows of a file rather than rows spread over
// it: a gzip file's share of the sample is its head (but a window Sample reads whole).
func (f *Files) SamplesHead() bool {
	if f.limit > 0 && f.skip+f.limit <= windowSampleRows {
		return false
	}
	for _, s := range f.files {
		if s.gz {
			return true
		}
	}
	return false
}

// shares splits n in proportion to the weights (largest remainders).
func shares(weights []int64, total int64, n int) []int {
	out := make([]int, len(weights))
	type rem struct {
		i int
		r int64
	}
	rems := make([]rem, len(weights))
	given := 0
	for i, w := range weights {
		q := w * int64(n)
		out[i] = int(q / total)
		given += out[i]
		rems[i] = rem{i, q % total}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for k := 0; given < n && k < len(rems); k++ {
		if weights[rems[k].i] > 0 {
			out[rems[k].i]++
			given++
		}
	}
	return out
}

// sampleWindow reads the window and keeps n of its records, spread over it. A record is kept
// when the level of its ordinal (pipeline.SampleLevel) reaches the current level, and at 2n kept
// the level rises and drops those below it: at most 2n copies at a time, and, unlike every k-th
// record, the kept ones do not line up with a key cycling with the row number.
func (f *Files) sampleWindow(ctx context.Context, n int) ([]pipeline.Record, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan pipeline.Batch, 2)
	errc := make(chan error, 1)
	go func() {
		_, err := f.runWindow(ctx, nil, in)
		errc <- err
		close(in)
	}()
	var kept []pipeline.Record
	var levels []uint8
	var level uint8
	var i uint64
	var held int64 // the kept records' bytes, at most the sample's budget (SampleBytes)
	budget := int64(defaultSampleBytes)
	if len(f.files) > 0 {
		budget = f.files[0].sampleBytes()
	}
	for b := range in {
		for _, r := range b.Records {
			if lv := pipeline.SampleLevel(i); lv >= level {
				kept, levels = append(kept, cloneRecord(r)), append(levels, lv)
				held += kept[len(kept)-1].Size()
				for len(kept) >= 2*n || held > budget && len(kept) > 1 {
					level++
					m := 0
					held = 0
					for k := range kept {
						if levels[k] >= level {
							kept[m], levels[m] = kept[k], levels[k]
							held += kept[m].Size()
							m++
						}
					}
					clear(kept[m:])
					kept, levels = kept[:m], levels[:m]
				}
			}
			i++
		}
	}
	if err := <-errc; err != nil {
		return nil, err
	}
	if len(kept) <= n {
		return kept, nil
	}
	out := make([]pipeline.Record, n)
	for k, j := range pipeline.SpreadIndexes(int64(len(kept)), n) {
		out[k] = kept[j]
	}
	return out, nil
}

// cloneRecord copies a record out of its chunk's memory.
func cloneRecord(r pipeline.Record) pipeline.Record {
	vals := make([]pipeline.Value, len(r.Values))
	for i, v := range r.Values {
		v.Str = strings.Clone(v.Str)
		vals[i] = v
	}
	c := pipeline.Record{Values: vals, Seq: r.Seq, Err: r.Err}
	if r.Err != nil {
		c.Raw = strings.Clone(r.Raw)
	}
	return c
}

// shardFiles gives shard sh its files, by index: the files are dealt largest first, each to the
// shard holding the fewest bytes so far (the lowest index on a tie), so shards get similar
// amounts of data and every file goes to exactly one shard, the same one on every machine.
// With fewer files than shards, Open reads every file in parts instead.
func shardFiles(sizes []int64, sh pipeline.Shard) []int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return sizes[order[a]] > sizes[order[b]] })
	load := make([]int64, sh.Count)
	var mine []int
	for _, i := range order {
		to := 0
		for k := range load {
			if load[k] < load[to] {
				to = k
			}
		}
		load[to] += sizes[i]
		if to == sh.Index {
			mine = append(mine, i)
		}
	}
	sort.Ints(mine) // read in the input's order
	return mine
}

func pick[T any](all []T, idx []int) []T {
	if all == nil {
		return nil
	}
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		out = append(out, all[i])
	}
	return out
}
