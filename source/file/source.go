// Package file reads CSV (.csv, .tsv) and JSON Lines (.jsonl, .ndjson) files, optionally gzipped,
// as a pipeline.Source: one file (Source), or several, a directory, a glob or stdin (Files, made
// by Open from a file: URI). A file is read in large chunks split at record boundaries; chunks are
// parsed by parallel workers into batches that are delivered in file order, each with a cursor
// (uncompressed byte offset and line number) from which a resumed run continues. A file whose
// line ends are all record ends can also be read in parts, byte ranges of it (part.go).
package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// Config configures a file source.
type Config struct {
	// Path of the file. The extension picks the format: .csv, .tsv, .jsonl, .ndjson, each
	// optionally followed by .gz.
	Path string
	// Stdin, when set, is read instead of a file, once; Path then only names it in messages.
	Stdin io.Reader
	// Object, when set, is read instead of a local file: an object in a bucket, through ranged
	// reads; Path then names it (s3://bucket/key) in messages.
	Object *Object
	// Context bounds the reads New makes (the head, the object's size); Run and Sample take
	// their own. Default: context.Background().
	Context context.Context
	// Format, when set, overrides the extension: csv, tsv, jsonl or ndjson, optionally followed
	// by .gz (a file whose name ends in .gz is read as gzip either way).
	Format string
	// CSV is the CSV dialect (delimiter, quote, header...); only for CSV files.
	CSV CSVOptions
	// Stream names the batches' stream: a resume finds the file's cursor under it. Default: the
	// file's base name.
	Stream string
	// Schema declares the columns to read, with their CQL types; Record.Values follow its order.
	// CSV columns are found by header name (exact, then case-insensitive; two candidates are an
	// error); JSON members by name (exact, then ignoring case: a member of the exact name wins).
	Schema pipeline.SourceSchema
	// BatchSize is the number of rows per batch (default 4096).
	BatchSize int
	// Workers is the number of parallel parsers (default GOMAXPROCS).
	Workers int
	// ChunkSize is how many bytes are read and parsed as one unit (default 4 MiB, less for
	// files under 16 MiB per worker). A record longer than a chunk grows it. Tests use tiny
	// values to put boundaries inside records.
	ChunkSize int
	// SampleBytes bounds the records a Sample holds, in bytes (default 64 MiB): large rows are
	// sampled fewer, still spread over the input.
	SampleBytes int64
	// MaxRecordSize bounds a record, in bytes (default 16 MiB): a CSV quoted field not closed
	// within it ends its record with the line the quote opens on, and a longer record is
	// rejected. It also bounds the memory one record can take.
	MaxRecordSize int
	// Part, when not whole, reads part Part.Index of Part.Count of the file: the records that
	// start in its byte range (part.go). Only where every line end is a record's end: JSON Lines,
	// CSV with multiline=false; not gzip.
	Part pipeline.Shard
	// CellWriteTimes reads each row's cell write times (Record.Times) from its WriteTimesMember,
	// for a mapping with target.write_time; only JSON Lines carry them.
	CellWriteTimes bool

	// headSize is how much of the file New reads to find the header and the average row size
	// (default and at most maxHead). Open lowers it when it opens many files.
	headSize int
}

const (
	defaultBatchSize = 4096
	defaultChunkSize = 1 << 20
	minAutoChunk     = 512 << 10

	// DefaultMaxRecordSize is Config.MaxRecordSize's default.
	DefaultMaxRecordSize = 16 << 20
	// rawKeep is how much of a record longer than MaxRecordSize its reject keeps, at most.
	rawKeep = 4 << 10
	// maxHead bounds the head New reads: a CSV header line must end within it.
	maxHead = 1 << 20
)

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	if c.Path == "" {
		return errors.New("file source: no path")
	}
	if len(c.Schema) == 0 {
		return errors.New("file source: no columns declared")
	}
	seen := make(map[string]bool, len(c.Schema))
	for _, col := range c.Schema {
		if col.Name == "" {
			return errors.New("file source: a declared column has no name")
		}
		if seen[col.Name] {
			return fmt.Errorf("file source: column %q declared twice", col.Name)
		}
		seen[col.Name] = true
	}
	if c.BatchSize <= 0 {
		c.BatchSize = defaultBatchSize
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.ChunkSize < 0 {
		c.ChunkSize = 0
	}
	if c.MaxRecordSize <= 0 {
		c.MaxRecordSize = DefaultMaxRecordSize
	}
	if c.headSize <= 0 || c.headSize > maxHead {
		c.headSize = maxHead
	}
	return nil
}

type format uint8

const (
	formatCSV format = iota
	formatJSONL
)

// parseFormat tells the format of a file from its name, or from override when set.
func parseFormat(path, override string) (f format, gz, tsv bool, err error) {
	name := strings.ToLower(path)
	if strings.HasSuffix(name, ".gz") {
		gz = true
		name = strings.TrimSuffix(name, ".gz")
	}
	if override != "" {
		o := strings.ToLower(override)
		if strings.HasSuffix(o, ".gz") {
			gz = true
			o = strings.TrimSuffix(o, ".gz")
		}
		name = "." + o
	}
	switch {
	case strings.HasSuffix(name, ".csv"):
		return formatCSV, gz, false, nil
	case strings.HasSuffix(name, ".tsv"):
		return formatCSV, gz, true, nil
	case strings.HasSuffix(name, ".jsonl"), strings.HasSuffix(name, ".ndjson"):
		return formatJSONL, gz, false, nil
	}
	if override != "" {
		return 0, false, false, fmt.Errorf("format=%s: want csv, tsv, jsonl or ndjson, optionally followed by .gz", override)
	}
	return 0, false, false, fmt.Errorf("file %s: unknown format: want .csv, .tsv, .jsonl or .ndjson, optionally .gz, or say which with ?format=csv|tsv|jsonl", path)
}

// Source reads one file. It implements pipeline.Source, pipeline.Sizer and pipeline.Sampler.
type Source struct {
	cfg    Config
	log    *zap.Logger
	stream string
	format format
	gz     bool
	tsv    bool
	size   int64     // file size on disk; -1 for stdin
	mtime  time.Time // a local file's modification time when New found its size
	stdin  *onceInput
	csv    dialect
	rfc    bool // csv is RFC 4180: parseRFCRow reads it
	empty  bool // a CSV file without even a header line

	names []string
	types []cqlvalue.Type
	kinds []cqlvalue.Kind

	dataStart int64   // uncompressed offset of the first data row (after BOM and header)
	dataLine  int64   // line number of the first data row
	avgRow    float64 // average bytes per record (line) in the head; 0 if unknown

	// CSV: header field i holds schema column colMap[i], or -1 when not declared.
	colMap  []int
	nfields int
	header  []string
	// JSON Lines: member name -> schema column; the same ignoring case (for members no column
	// names exactly), and the member names read that way that were logged
	jsonIndex  map[string]int
	folds      cqlvalue.FoldIndex
	foldWarned sync.Map
	trackExact atomic.Bool // a member was read ignoring case: rows record their exact members

	// name is the file's stream name; stream adds a part's @base to it
	name string
	// A part (Config.Part): the records that start in [from, to); base is the offset its line
	// numbers count from.
	parted         bool
	from, to, base int64
}

var (
	_ pipeline.Source  = (*Source)(nil)
	_ pipeline.Sizer   = (*Source)(nil)
	_ pipeline.Sampler = (*Source)(nil)
)

// New opens and validates the file: it must exist, and a CSV header must name every declared
// column.
func New(cfg Config, logger *zap.Logger) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	s := &Source{cfg: cfg, log: logger, stream: cfg.Stream}
	if s.stream == "" {
		s.stream = filepath.Base(cfg.Path)
	}
	s.name = s.stream
	var err error
	if s.format, s.gz, s.tsv, err = parseFormat(cfg.Path, cfg.Format); err != nil {
		return nil, err
	}
	if s.format == formatCSV {
		if s.csv, err = cfg.CSV.resolve(s.tsv); err != nil {
			return nil, fmt.Errorf("file %s: %w", cfg.Path, err)
		}
		// multiline=false cuts each record's data at its line end, in parseDialectRow's path:
		// the default dialect's own parser stays as it is
		s.rfc = s.csv.isRFC() && !s.csv.singleLine
	} else if cfg.CSV != (CSVOptions{}) {
		return nil, fmt.Errorf("file %s is JSON Lines: the CSV options (delimiter=, header=, null=, quote=, escape=, comment=) do not apply to it", cfg.Path)
	}
	if cfg.CellWriteTimes && s.format != formatJSONL {
		return nil, fmt.Errorf("file %s: target.write_time needs each row's cell write times, which only a JSON Lines file carries (its %q member, as verify --repair writes it): read the table itself (cassandra://), or drop target.write_time", cfg.Path, WriteTimesMember)
	}
	if err := s.parseSchema(); err != nil {
		return nil, err
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
		s.cfg.Context = cfg.Context
	}
	if err := s.statInput(); err != nil {
		return nil, err
	}
	if s.cfg.ChunkSize == 0 && s.size < 0 {
		s.cfg.ChunkSize = defaultChunkSize
	} else if s.cfg.ChunkSize == 0 {
		// Large files read 4 MiB at a time; small ones in smaller chunks so that every worker
		// has some.
		s.cfg.ChunkSize = int(min(max(s.size/int64(4*s.cfg.Workers), minAutoChunk), defaultChunkSize))
	}
	if err := s.readHead(); err != nil {
		return nil, err
	}
	if !cfg.Part.Whole() {
		if err := s.findPart(s.cfg.Context); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// parseSchema takes the declared columns' names and CQL types (the types the values are parsed
// as), refusing a column named as the member that carries cell write times.
func (s *Source) parseSchema() error {
	for _, col := range s.cfg.Schema {
		if s.cfg.CellWriteTimes && col.Name == WriteTimesMember {
			return fmt.Errorf("file %s: column %q has the name of the member that carries the cells' write times: rename it in the mapping's source, or drop target.write_time", s.cfg.Path, col.Name)
		}
		t, err := cqlvalue.ParseType(col.Type)
		if err != nil {
			return fmt.Errorf("file %s: column %q: %w", s.cfg.Path, col.Name, err)
		}
		s.names = append(s.names, col.Name)
		s.types = append(s.types, t)
		s.kinds = append(s.kinds, t.Kind)
	}
	s.folds = cqlvalue.NewFoldIndex(s.names)
	if len(s.names) > 16 {
		s.jsonIndex = make(map[string]int, len(s.names))
		for i, n := range s.names {
			s.jsonIndex[n] = i
		}
	}
	return nil
}

// statInput finds the input's size: a file's or an object's, -1 for stdin (read once).
func (s *Source) statInput() error {
	if s.cfg.Stdin != nil {
		s.stdin, s.size = &onceInput{r: s.cfg.Stdin}, -1
	} else if s.cfg.Object != nil {
		s.size = s.cfg.Object.Info.Size
	} else {
		st, err := os.Stat(s.cfg.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("file %s not found: check the --source path", s.cfg.Path)
			}
			return fmt.Errorf("file %s: %w", s.cfg.Path, err)
		}
		if st.IsDir() {
			return fmt.Errorf("file %s is a directory: give file:%s to read the files in it", s.cfg.Path, s.cfg.Path)
		}
		if !st.Mode().IsRegular() {
			// New reads the head and Run opens the file again: a pipe's second open goes on
			// after the head, whose rows were lost, or waits for a writer that is gone.
			return fmt.Errorf("file %s is not a regular file (a pipe, such as bash's <(...), or a device), which can be read only once: "+
				"pipe it to stdin instead (... | rekey ... --source 'file:-?format=csv|tsv|jsonl')", s.cfg.Path)
		}
		s.size, s.mtime = st.Size(), st.ModTime()
	}
	return nil
}

// checkUnchanged fails a run over a local file that changed since New took its size: read to
// wherever it ended then, its last line may be cut short (an export still writing it) and rows
// may be missing. An object is pinned to its ETag by the store instead.
func (s *Source) checkUnchanged() error {
	if s.stdin != nil || s.cfg.Object != nil {
		return nil
	}
	st, err := os.Stat(s.cfg.Path)
	if err != nil {
		return fmt.Errorf("file %s: after reading it: %w", s.cfg.Path, err)
	}
	if st.Size() == s.size && st.ModTime().Equal(s.mtime) {
		return nil
	}
	return fmt.Errorf("file %s changed while it was read (%d bytes, modified %s when the run started; now %d bytes, modified %s): "+
		"rows read from it may be cut or missing; run again once it is written whole: %w", s.cfg.Path, s.size,
		s.mtime.UTC().Format(time.RFC3339Nano), st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano), pipeline.ErrDamagedInput)
}

// onceInput is stdin: it can be read only once, so what New reads of its head is kept and read
// again, followed by the rest, by the one run.
type onceInput struct {
	r      io.Reader
	head   bytes.Buffer
	opened int
}

func (o *onceInput) open(name string) (io.Reader, error) {
	o.opened++
	switch o.opened {
	case 1:
		return io.TeeReader(o.r, &o.head), nil
	case 2:
		return io.MultiReader(bytes.NewReader(o.head.Bytes()), o.r), nil
	}
	return nil, fmt.Errorf("%s can be read only once", name)
}

// open returns a reader of the uncompressed content from its start, and the file when it is a
// plain file that can seek.
func (s *Source) open(ctx context.Context) (io.ReadCloser, *os.File, error) {
	var raw io.Reader
	var closer io.Closer = io.NopCloser(nil)
	var f *os.File
	if s.stdin != nil {
		r, err := s.stdin.open(s.cfg.Path)
		if err != nil {
			return nil, nil, err
		}
		raw = r
	} else if s.cfg.Object != nil {
		r, err := openObject(ctx, s.cfg.Object, 0, s.size)
		if err != nil {
			return nil, nil, err
		}
		raw, closer = r, r
	} else {
		var err error
		if f, err = os.Open(s.cfg.Path); err != nil {
			return nil, nil, fmt.Errorf("open %s: %w", s.cfg.Path, err)
		}
		raw, closer = f, f
	}
	if !s.gz {
		return readCloser{raw, closer}, f, nil
	}
	zr, err := newGzipReader(raw, s.cfg.Path, s.size)
	if err != nil {
		closer.Close()
		return nil, nil, err
	}
	return readCloser{zr, closer}, nil, nil
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// openAt returns a reader of the uncompressed content from offset off to end (of an
// uncompressed file; a gzip file's is read to its end).
func (s *Source) openAt(ctx context.Context, off, end int64) (io.ReadCloser, error) {
	if s.cfg.Object != nil && !s.gz {
		return openObject(ctx, s.cfg.Object, off, end) // a ranged read from off
	}
	r, f, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	if s.stdin != nil {
		r = untilDone(ctx, r)
	}
	if off > 0 {
		if f == nil {
			if n, err := io.CopyN(io.Discard, r, off); err != nil {
				r.Close()
				if err == io.EOF {
					return nil, fmt.Errorf("file %s: resume offset %d is past the end of its data (%d bytes uncompressed): was it replaced?", s.cfg.Path, off, n)
				}
				return nil, err // a *DamagedError: it names the file and the position
			}
		} else if _, err := f.Seek(off, io.SeekStart); err != nil {
			r.Close()
			return nil, fmt.Errorf("file %s: seek to %d: %w", s.cfg.Path, off, err)
		}
	}
	if f != nil && end < s.size {
		return readCloser{io.LimitReader(r, end-off), r}, nil
	}
	return r, nil
}

// untilDone returns a reader of r (stdin) whose reads end with ctx. A read of stdin cannot be
// interrupted: a writer that keeps the pipe open without writing (tail -f, a topic's console
// consumer) held the run forever once it was to stop (limit= reached, Ctrl-C, a failed sink)
// while the reader waited for its next bytes. r is read by a goroutine of its own, left waiting
// in that read when ctx ends: stdin is read only once, so nothing else reads it after.
func untilDone(ctx context.Context, r io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r) // into the pipe's reader, not into its caller's buffer
		r.Close()
		pw.CloseWithError(err) // nil: io.EOF for the reader
	}()
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	return &doneReader{ctx: ctx, pr: pr, stop: stop}
}

// doneReader is untilDone's reader.
type doneReader struct {
	ctx  context.Context
	pr   *io.PipeReader
	stop func() bool
}

func (d *doneReader) Read(p []byte) (int, error) {
	n, err := d.pr.Read(p)
	if err != nil && d.ctx.Err() != nil {
		return n, d.ctx.Err() // the pipe's reader closed by ctx says io.ErrClosedPipe
	}
	return n, err
}

func (d *doneReader) Close() error {
	d.stop()
	return d.pr.Close() // the goroutine's next write fails, and it ends
}

// readError names the file and offset of a read error; a gzip reader's errors name them already.
// Only io.EOF and io.ErrUnexpectedEOF from io.ReadFull are the end of the data: the gzip reader
// never returns io.ErrUnexpectedEOF itself.
func readError(path string, off int64, err error) error {
	var de *DamagedError
	if errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("read %s at offset %d: %w", path, off, err)
}

// readHead reads the head of the file: BOM, CSV header, average row size. It reads headSize
// bytes, more (up to maxHead) while the CSV header has not ended.
func (s *Source) readHead() error {
	r, _, err := s.open(s.cfg.Context)
	if err != nil {
		return err
	}
	defer r.Close()
	head := s.cfg.headSize
	if !s.gz && s.size >= 0 && s.size < int64(head) {
		// a small file's head is the file (one byte more shows its end): 10,000 files of a row
		// each took a 64 KiB buffer each, 625 MiB for 10,000 rows
		head = int(s.size) + 1
	}
	buf := make([]byte, head)
	n, err := io.ReadFull(r, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return readError(s.cfg.Path, 0, err)
	}
	whole := n < len(buf)
	if bytes.HasPrefix(buf[:n], []byte{0xff, 0xfe}) || bytes.HasPrefix(buf[:n], []byte{0xfe, 0xff}) {
		// read as UTF-8, its header would not match and its text would hold a zero byte
		// between characters
		return fmt.Errorf("file %s is UTF-16 (it begins with a UTF-16 byte order mark, as Excel's \"Unicode Text\" and PowerShell's Out-File write), "+
			"where rekey reads UTF-8: convert it (iconv -f UTF-16 -t UTF-8 IN > OUT) and read the converted file", s.cfg.Path)
	}
	if !s.gz && bytes.HasPrefix(buf[:n], []byte{0x1f, 0x8b}) {
		// gzip's magic number, which no UTF-8 text begins with: read as text, the compressed
		// bytes would be a header that matches nothing, or rows that are all rejects
		name := "csv"
		if s.format == formatJSONL {
			name = "jsonl"
		} else if s.tsv {
			name = "tsv"
		}
		how := "name it .gz or add format=" + name + ".gz to the --source URI"
		if s.stdin != nil {
			how = "add .gz to the format: format=" + name + ".gz"
		}
		return fmt.Errorf("file %s is gzip-compressed (it begins with gzip's header) but is read as plain text: %s", s.cfg.Path, how)
	}
	pos := 0
	if bytes.HasPrefix(buf[:n], []byte("\xef\xbb\xbf")) {
		pos = 3
	}
	if err := s.checkLineEnds(buf[pos:n]); err != nil {
		return err
	}
	s.dataLine = 1
	if s.format == formatCSV && !s.csv.header {
		// the fields follow the declared columns
		s.nfields, s.header = len(s.names), s.names
		s.colMap = make([]int, len(s.names))
		for i := range s.colMap {
			s.colMap[i] = i
		}
	} else if s.format == formatCSV {
		for {
			fields, next, lines, st := s.csv.splitHeader(string(buf[:n]), pos, whole)
			if st == headerMore && len(buf) < maxHead {
				nb := make([]byte, min(2*len(buf), maxHead))
				copy(nb, buf[:n])
				m, err := io.ReadFull(r, nb[n:])
				if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
					return readError(s.cfg.Path, int64(n), err)
				}
				buf, n, whole = nb, n+m, m < len(nb)-n
				continue
			}
			switch st {
			case headerMore:
				return fmt.Errorf("file %s: the CSV header (line %d) does not end within the first %s: is this a CSV file with a header line? (header=false reads one without)", s.cfg.Path, s.dataLine+int64(lines), formatBytes(maxHead))
			case headerInvalid:
				return fmt.Errorf("file %s: cannot read the CSV header (line %d): a quote in it is not closed, or is followed by other characters", s.cfg.Path, s.dataLine+int64(lines))
			case headerNone:
				// An empty file (or only blank and comment lines): no header, no rows. It reads
				// as 0 rows, as an empty JSON Lines file does; Run warns.
				s.empty = true
			case headerOK:
				if err := s.mapHeader(fields); err != nil {
					return err
				}
			}
			pos = next
			s.dataLine += int64(lines)
			break
		}
	}
	s.dataStart = int64(pos)
	rest := buf[pos:n]
	if s.format == formatCSV && !s.csv.singleLine && bytes.IndexByte(rest, s.csv.quote) >= 0 {
		// a quoted field may hold line breaks: the rows are the records, not the lines
		if size, records := s.headRecords(rest, whole); records > 0 {
			s.avgRow = float64(size) / float64(records)
			return nil
		}
	}
	if !whole {
		if i := bytes.LastIndexByte(rest, '\n'); i >= 0 {
			rest = rest[:i+1]
		}
	}
	if lines := bytes.Count(rest, []byte{'\n'}); lines > 0 {
		s.avgRow = float64(len(rest)) / float64(lines)
	} else if len(rest) > 0 {
		s.avgRow = float64(len(rest))
	}
	return nil
}

// headRecords counts the CSV records (blank and comment lines aside) of the whole records at the
// start of head, the data after the header, and their bytes; 0 records when head holds no whole
// one (the caller then counts lines).
func (s *Source) headRecords(head []byte, whole bool) (size, records int) {
	if !whole {
		if size, _ = s.splitPoint(head); size == 0 {
			return 0, 0
		}
		head = head[:size]
	}
	data := unsafe.String(unsafe.SliceData(head), len(head))
	vals := make([]pipeline.Value, len(s.names))
	for pos := 0; pos < len(data); {
		next, _, blank, _ := s.parseCSVRow(data, pos, vals)
		clear(vals) // no value may point into the head, which is dropped
		if !blank {
			records++
		}
		pos = next
	}
	return len(head), records
}

// checkLineEnds refuses a file whose lines end with a carriage return alone (classic Mac OS,
// Excel for Mac's "CSV (Macintosh)"): only '\n' ends a line here, so the whole file would be one
// line, its header run into its rows or all its rows one record. Its head, after the BOM, has no
// '\n' but a '\r' with more data after it, outside any quoted field (no quote before it; JSON
// text holds no raw CR in its strings), after UTF-8 text.
func (s *Source) checkLineEnds(head []byte) error {
	if bytes.IndexByte(head, '\n') >= 0 {
		return nil
	}
	cr := bytes.IndexByte(head, '\r')
	if cr < 0 || cr == len(head)-1 || s.format == formatCSV && bytes.IndexByte(head[:cr], s.csv.quote) >= 0 || !utf8.Valid(head[:cr]) {
		return nil // binary bytes (not UTF-8 text) are no lines at all: the header or the rows say so
	}
	return fmt.Errorf("file %s: its lines end with a carriage return alone (CR, as classic Mac OS and Excel for Mac's \"CSV (Macintosh)\" write), "+
		"where rekey reads a line feed (LF, or CRLF) as a line's end, so the whole file would be one line: "+
		"convert the line ends (tr '\\r' '\\n' < IN > OUT) and read the converted file", s.cfg.Path)
}

func (s *Source) mapHeader(header []string) error {
	s.nfields = len(header)
	s.header = header
	s.colMap = make([]int, len(header))
	for i := range s.colMap {
		s.colMap[i] = -1
	}
	// A declared column is the header field of exactly its name; failing that, the one field
	// equal to it ignoring case and surrounding spaces. Two candidates at either step are an
	// error: reading the first would silently pick one of two columns.
	found := make([]int, len(s.names))
	for ci, name := range s.names {
		found[ci] = -1
		if fields := matching(header, func(h string) bool { return h == name }); len(fields) > 1 {
			return fmt.Errorf("file %s: header names column %q %s (%s): rename or drop one of them in the header line: "+
				"rekey cannot tell which one the mapping's column %q means", s.cfg.Path, name, times(len(fields)), fieldList(header, fields, false), name)
		} else if len(fields) == 1 {
			found[ci] = fields[0]
			s.colMap[fields[0]] = ci
		}
	}
	var missing []string
	for ci, name := range s.names {
		if found[ci] >= 0 {
			continue
		}
		fields := matching(header, func(h string) bool { return strings.EqualFold(strings.TrimSpace(h), name) })
		free := fields[:0:0]
		for _, i := range fields {
			if s.colMap[i] < 0 {
				free = append(free, i)
			}
		}
		switch len(free) {
		case 0:
			missing = append(missing, strconv.Quote(name))
		case 1:
			s.colMap[free[0]] = ci
		default:
			return fmt.Errorf("file %s: header has no column %q but %d that match it ignoring case (%s): rename them, "+
				"or name one exactly %q in the header line or the mapping", s.cfg.Path, name, len(free), fieldList(header, free, true), name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("file %s: header has no column %s (header: %s)%s", s.cfg.Path,
			strings.Join(missing, ", "), strings.Join(header, ","), invisibleHint(header, s.names, found))
	}
	var extra []string
	for i, h := range header {
		if s.colMap[i] < 0 {
			extra = append(extra, h)
		}
	}
	if len(extra) > 0 {
		s.log.Warn("ignoring CSV columns that the mapping does not declare",
			zap.String("file", s.cfg.Path), zap.Strings("columns", extra))
	}
	for i, h := range header {
		if s.colMap[i] >= 0 {
			continue
		}
		for _, name := range s.names {
			if strings.EqualFold(strings.TrimSpace(h), name) {
				s.log.Warn("a CSV column that differs from a declared one only in case is ignored: the exact match is read",
					zap.String("file", s.cfg.Path), zap.String("column", name), zap.String("ignored", h), zap.Int("field", i+1))
			}
		}
	}
	return nil
}

// invisibleHint names the header fields that would name a missing declared column (found[ci] < 0)
// but for characters that do not show, escaped: a second byte order mark (two exports
// concatenated), a zero-width space. Printed as they are, the header seems to hold the column.
func invisibleHint(header, names []string, found []int) string {
	var hints []string
	for i, h := range header {
		shown := strings.Map(func(r rune) rune {
			if unicode.IsPrint(r) {
				return r
			}
			return -1
		}, h)
		if shown == h {
			continue
		}
		for ci, name := range names {
			if found[ci] < 0 && strings.EqualFold(strings.TrimSpace(shown), name) {
				hints = append(hints, fmt.Sprintf("field %d is %+q, %q with characters that do not show", i+1, h, name))
			}
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return ": " + strings.Join(hints, "; ") + ": remove them from the header line"
}

// matching returns the indexes of the header fields that match.
func matching(header []string, match func(string) bool) []int {
	var fields []int
	for i, h := range header {
		if match(h) {
			fields = append(fields, i)
		}
	}
	return fields
}

// fieldList names header fields by 1-based position: "fields 3 and 5", or with their text.
func fieldList(header []string, fields []int, names bool) string {
	parts := make([]string, len(fields))
	for k, i := range fields {
		parts[k] = strconv.Itoa(i + 1)
		if names {
			parts[k] = strconv.Quote(header[i]) + " field " + parts[k]
		}
	}
	if names {
		return strings.Join(parts, ", ")
	}
	return "fields " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func times(n int) string {
	if n == 2 {
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

// EstimatedRows estimates the row count from the file size and the head's average row size; for
// a gzip file and stdin it is -1 (unknown).
func (s *Source) EstimatedRows() int64 {
	if n := s.wholeRows(); n <= 0 || !s.parted {
		return n
	}
	return int64(float64(s.to-s.from)/s.avgRow + 0.5)
}

// wholeRows is EstimatedRows of the whole file, also for a part of it.
func (s *Source) wholeRows() int64 {
	switch {
	case s.gz || s.size < 0:
		return -1
	case s.size <= s.dataStart:
		return 0
	case s.avgRow <= 0:
		return -1
	}
	return int64(float64(s.size-s.dataStart)/s.avgRow + 0.5)
}

// Stream is the stream name batches carry: the file's base name (a part's with @ and the offset
// its line numbers count from).
func (s *Source) Stream() string { return s.stream }

// cursor encodes a resume point: off=N,line=N, followed by ,rows=N when Files counts the rows
// of a window (?skip=, ?limit=).
func appendCursor(dst []byte, off, line int64) []byte {
	dst = append(dst, "off="...)
	dst = strconv.AppendInt(dst, off, 10)
	dst = append(dst, ",line="...)
	return strconv.AppendInt(dst, line, 10)
}

func parseCursor(c string) (off, line int64, err error) {
	a, b, ok := strings.Cut(c, ",")
	if i := strings.Index(b, ",rows="); i >= 0 {
		b = b[:i]
	}
	if ok && strings.HasPrefix(a, "off=") && strings.HasPrefix(b, "line=") {
		off, err1 := strconv.ParseInt(a[4:], 10, 64)
		line, err2 := strconv.ParseInt(b[5:], 10, 64)
		if err1 == nil && err2 == nil && off >= 0 && line >= 1 {
			return off, line, nil
		}
	}
	return 0, 0, fmt.Errorf("bad cursor %q: want off=N,line=N", c)
}

// cursorRows returns the rows= count of a cursor, when it has one.
func cursorRows(c string) (int64, bool) {
	_, r, ok := strings.Cut(c, ",rows=")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(r, 10, 64)
	return n, err == nil && n >= 0
}

// Run reads the file and sends its batches to out in file order. A resume cursor for the stream
// continues after the batch it was saved with; a stream marked done sends nothing.
func (s *Source) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	off, line, end := s.dataStart, s.dataLine, s.size
	if s.parted {
		off, end = s.from, s.to
		if s.base > 0 {
			line = 1
		}
	}
	start := off
	if st, ok := resume[s.stream]; ok {
		if st.Done {
			s.log.Info("file already done, skipping", zap.String("file", s.cfg.Path))
			return nil
		}
		if st.Cursor != "" {
			if s.stdin != nil {
				return fmt.Errorf("%s cannot be resumed: what was read of it is gone", s.cfg.Path)
			}
			var err error
			if off, line, err = parseCursor(st.Cursor); err != nil {
				return fmt.Errorf("file %s: %w", s.cfg.Path, err)
			}
			if off < start || (!s.gz && off > end) {
				return fmt.Errorf("file %s: resume offset %d is outside the %s (%d-%d): was it replaced?", s.cfg.Path, off, s.what(), start, end)
			}
		}
	}
	r, err := s.openAt(ctx, off, end)
	if err != nil {
		return err
	}
	defer r.Close()
	fields := []zap.Field{zap.String("file", s.cfg.Path), zap.Int64("bytes", s.size), zap.Int64("offset", off), zap.Int64("line", line)}
	if s.parted {
		fields = append(fields, zap.String("range", s.claimed()), zap.String("stream", s.stream))
	}
	s.log.Info("reading file", fields...)
	if err := s.run(ctx, r, off, line, start, out); err != nil {
		return err
	}
	return s.checkUnchanged()
}

// what names what Run reads, for messages: the file, or its part.
func (s *Source) what() string {
	if s.parted {
		return "part " + s.cfg.Part.String() + " of the file"
	}
	return "file"
}

// chunk is a run of whole records handed to a parser.
type chunk struct {
	data   string
	off    int64 // uncompressed offset of data[0]
	line   int64 // line number of data[0]
	lines  int   // newlines in data
	last   bool
	result chan []pipeline.Batch
	// overlong: the chunk is one record longer than MaxRecordSize, of size bytes with lines
	// newlines; data holds only its start, for the reject.
	overlong bool
	size     int64
	// buf, when not nil, holds data: the read buffer the chunk was read into, given back for
	// another read once every batch parsed from it is released.
	buf *readBuf
}

// A readBuf is a read buffer that a chunk's strings point into, without a copy: taking each
// chunk's bytes as a string of its own was a copy of the whole input, 5% of a migrate's CPU on
// the orders CSV (memory traffic, not instructions). The chunk's batches share the buffer: each
// batch's Release drops a reference, and the last one gives the buffer back for a later chunk.
// A batch never released keeps its buffer to the garbage collector, as a string would.
type readBuf struct {
	b     []byte
	refs  atomic.Int32
	stray bool // grown for a record longer than a chunk: left to the collector, not pooled
}

var readBufs sync.Pool // *readBuf

// takeReadBuf returns a buffer of size bytes (its contents those of an earlier chunk).
func takeReadBuf(size int) *readBuf {
	if rb, ok := readBufs.Get().(*readBuf); ok && cap(rb.b) >= size {
		rb.b = rb.b[:size]
		return rb
	}
	return &readBuf{b: make([]byte, size)}
}

// unref drops one batch's reference; the last gives the buffer back.
func (rb *readBuf) unref() {
	if rb.refs.Add(-1) != 0 {
		return
	}
	if poisonReleased {
		b := rb.b[:cap(rb.b)]
		for i := range b {
			b[i] = 0xFF
		}
	}
	if !rb.stray {
		readBufs.Put(rb)
	}
}

func (s *Source) run(parent context.Context, r io.Reader, off, line, start int64, out chan<- pipeline.Batch) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	jobs := make(chan *chunk)
	order := make(chan *chunk, s.cfg.Workers+1)
	done := make(chan struct{})
	var readErr error
	go func() {
		defer close(done)
		defer close(order)
		defer close(jobs)
		readErr = s.readChunks(ctx, r, off, line, func(c *chunk) bool {
			if c.last {
				s.warnUnended(c)
			}
			select {
			case order <- c:
			case <-ctx.Done():
				return false
			}
			select {
			case jobs <- c:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	workersDone := make(chan struct{})
	go func() {
		defer close(workersDone)
		wdone := make(chan struct{}, s.cfg.Workers)
		for w := 0; w < s.cfg.Workers; w++ {
			go func() {
				defer func() { wdone <- struct{}{} }()
				for c := range jobs {
					c.result <- s.parseChunk(c)
				}
			}()
		}
		for w := 0; w < s.cfg.Workers; w++ {
			<-wdone
		}
	}()
	rows, err := s.deliver(ctx, order, out)
	cancel()
	for range order { // let the reader finish
	}
	<-done
	<-workersDone
	if err != nil {
		return err
	}
	if readErr != nil && !errors.Is(readErr, context.Canceled) {
		return readErr
	}
	if err := parent.Err(); err != nil {
		return err
	}
	s.log.Info("file read", zap.String("file", s.cfg.Path), zap.Int64("rows", rows))
	if rows == 0 && off == start {
		// One rule for CSV and JSON Lines: a file without rows reads as 0 rows, with a warning
		// (a wrong file? a failed export?), whether or not it has a header line.
		msg := "file holds no rows: 0 rows read from it"
		if s.parted {
			msg = "this part of the file holds no rows: 0 rows read from it (a file of a few long lines, split in more parts than it has lines?)"
		} else if s.empty {
			msg = "file is empty (no header line, no rows): 0 rows read from it"
		}
		s.log.Warn(msg, zap.String("file", s.cfg.Path))
	}
	return nil
}

// deliver sends each chunk's batches to out in chunk order and counts the records.
func (s *Source) deliver(ctx context.Context, order <-chan *chunk, out chan<- pipeline.Batch) (rows int64, err error) {
	for c := range order {
		var batches []pipeline.Batch
		select {
		case batches = <-c.result:
		case <-ctx.Done():
			return rows, ctx.Err()
		}
		for _, b := range batches {
			select {
			case out <- b:
				rows += int64(len(b.Records))
			case <-ctx.Done():
				return rows, ctx.Err()
			}
		}
	}
	return rows, nil
}

// readChunks reads r into chunks that end at record boundaries and hands them to emit in order,
// the last one marked. emit returns false to stop.
func (s *Source) readChunks(ctx context.Context, r io.Reader, off, line int64, emit func(*chunk) bool) error {
	rb := takeReadBuf(s.cfg.ChunkSize)
	buf := rb.b
	carry := 0
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n, err := io.ReadFull(r, buf[carry:])
		total := carry + n
		eof := false
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			eof = true
		case err != nil:
			return readError(s.cfg.Path, off+int64(total), err)
		}
		cut, head := total, 0
		if !eof {
			cut, head = s.splitPoint(buf[:total])
			if cut == 0 && head == 0 {
				// One record larger than the buffer: grow it, up to the largest record allowed
				// and the byte after it (which tells whether a quote there closes a field).
				size := min(2*len(buf), s.cfg.MaxRecordSize+1)
				if size <= len(buf) {
					return fmt.Errorf("file %s: no record boundary in %d bytes at offset %d (a bug: the limit is %d)", s.cfg.Path, total, off, s.cfg.MaxRecordSize)
				}
				nb := make([]byte, size)
				copy(nb, buf[:total])
				rb = &readBuf{b: nb, stray: true}
				buf, carry = nb, total
				continue
			}
		}
		var c *chunk
		if head > 0 {
			if c, carry, err = s.skipRecord(ctx, r, buf, total, head, off); err != nil {
				return err
			}
			c.line = line
			if len(buf) > s.cfg.ChunkSize && carry < s.cfg.ChunkSize {
				rb, buf, carry = s.nextReadBuf(buf[:carry], len(buf))
			}
		} else {
			if eof {
				if err := s.checkLastLine(buf[:total], line); err != nil {
					return err
				}
			}
			// the chunk keeps the buffer; the record begun after cut moves to the next one
			c = &chunk{data: unsafe.String(unsafe.SliceData(buf), cut), off: off, line: line, last: eof, size: int64(cut), buf: rb}
			c.lines = strings.Count(c.data, "\n")
			if !eof {
				rb, buf, carry = s.nextReadBuf(buf[cut:total], len(buf))
			}
		}
		c.result = make(chan []pipeline.Batch, 1)
		if !emit(c) {
			return ctx.Err()
		}
		off += c.size
		line += int64(c.lines)
		if c.last {
			return nil
		}
	}
}

// checkLastLine fails a JSON Lines input whose last line, the end of data (the last chunk, from
// line on), has no line end and stops inside its JSON: the file was cut short (a copy or download
// that did not finish, a writer killed mid-line), and the rows it held after the cut are missing,
// which a reject of the cut line alone would not tell. A last line that is whole JSON, valid or
// not, is a record as any other.
func (s *Source) checkLastLine(data []byte, line int64) error {
	if s.format != formatJSONL || len(data) == 0 || data[len(data)-1] == '\n' {
		return nil
	}
	nl := bytes.LastIndexByte(data, '\n')
	last := data[nl+1:]
	// encoding/json's decoder asks for more input (io.ErrUnexpectedEOF) where the text ends
	// inside a value; a whole value that is not valid JSON is a syntax error
	var v json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(last)).Decode(&v); !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	where := "line " + strconv.FormatInt(line+int64(bytes.Count(data[:nl+1], []byte{'\n'})), 10)
	if s.base > 0 {
		where += " counted from byte " + strconv.FormatInt(s.base, 10)
	}
	return fmt.Errorf("file %s is damaged: its last line (%s) has no line end and stops inside its JSON: "+
		"the file ends early (an incomplete copy or download, a writer stopped mid-line?): replace it with a complete copy and run again: %w",
		s.cfg.Path, where, pipeline.ErrDamagedInput)
}

// warnUnended warns when a CSV input's last line, which ends the chunk c, has no line end: a file
// cut short (a copy or download that did not finish) ends so, and its last row may hold a cut
// value that reads as well as a whole one (12 of 1234.56). The tools that export tables end every
// line, so the warning is rare where nothing is wrong. (JSON Lines fails such a file where its
// last line stops inside its JSON: checkLastLine.)
func (s *Source) warnUnended(c *chunk) {
	if s.format != formatCSV || !c.overlong && (len(c.data) == 0 || c.data[len(c.data)-1] == '\n') {
		return
	}
	line := c.line + int64(c.lines)
	fields := []zap.Field{zap.String("file", s.cfg.Path), zap.Int64("line", line)}
	if s.base > 0 {
		fields = append(fields, zap.Int64("lines_from_byte", s.base))
	}
	s.log.Warn("the file's last line has no line end: if the file was cut short (an incomplete copy or download), "+
		"its last row may hold a cut value; compare the file's size with its source's, and copy it again if they differ", fields...)
}

// nextReadBuf returns the buffer to read into next, which starts with carry (the start of a
// record), and carry's length. The long record that grew the buffer is out: later chunks, and the
// records parsed from each, go back to the chunk size (they are what the memory budget counts on).
func (s *Source) nextReadBuf(carry []byte, size int) (*readBuf, []byte, int) {
	var rb *readBuf
	if len(carry) < s.cfg.ChunkSize {
		rb = takeReadBuf(s.cfg.ChunkSize)
	} else {
		rb = &readBuf{b: make([]byte, size), stray: true} // still the long record: as large
	}
	return rb, rb.b, copy(rb.b, carry)
}

// skipRecord makes the chunk of a record longer than MaxRecordSize that starts at buf[0]: buf[:head]
// is its start and buf[head:total] holds no end of it, which is the next '\n' in r. Its bytes are
// read and dropped up to that newline; what follows it is moved to the start of buf, and its
// length returned.
func (s *Source) skipRecord(ctx context.Context, r io.Reader, buf []byte, total, head int, off int64) (*chunk, int, error) {
	c := &chunk{data: s.rawStart(string(buf[:min(total, s.rawKeep())])), off: off, overlong: true,
		lines: bytes.Count(buf[:head], []byte{'\n'}), size: int64(total)}
	for {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		n, err := io.ReadFull(r, buf)
		eof := false
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			eof = true
		case err != nil:
			return nil, 0, readError(s.cfg.Path, off+c.size+int64(n), err)
		}
		if k := bytes.IndexByte(buf[:n], '\n'); k >= 0 {
			c.size += int64(k + 1)
			c.lines++
			return c, copy(buf, buf[k+1:n]), nil
		}
		c.size += int64(n)
		if eof {
			c.last = true
			return c, 0, nil
		}
	}
}

// lineRecords tells whether every '\n' ends a record: JSON Lines (JSON text holds no raw line
// break), and CSV with multiline=false.
func (s *Source) lineRecords() bool { return s.format == formatJSONL || s.csv.singleLine }

// splitPoint returns the length of the longest prefix of b that holds whole records, or 0; see
// dialect.splitPoint for head.
func (s *Source) splitPoint(b []byte) (cut, head int) {
	if s.lineRecords() {
		cut = bytes.LastIndexByte(b, '\n') + 1
		if cut == 0 && len(b) > s.cfg.MaxRecordSize {
			return 0, s.cfg.MaxRecordSize + 1
		}
		return cut, 0
	}
	return s.csv.splitPoint(b, s.cfg.MaxRecordSize)
}

// parseChunk turns a chunk into batches of at most BatchSize records.
func (s *Source) parseChunk(c *chunk) []pipeline.Batch {
	bs := s.cfg.BatchSize
	ncols := len(s.names)
	if c.overlong {
		rec := pipeline.Record{Values: make([]pipeline.Value, ncols), Seq: c.line, Raw: c.data, Err: s.tooLong(c.size)}
		cur := appendCursor(nil, c.off+c.size, c.line+int64(c.lines))
		return []pipeline.Batch{{Stream: s.stream, Records: []pipeline.Record{rec}, Cursor: string(cur), Done: c.last}}
	}
	remaining := c.lines + 1 // an upper bound on the rows left
	data := c.data
	pos, line := 0, c.line
	var batches []pipeline.Batch
	var cur []byte
	for {
		n := min(bs, remaining)
		sl := takeSlab(n*ncols, n)
		slab, recs := sl.vals[:n*ncols], sl.recs[:0]
		for len(recs) < n && pos < len(data) {
			vals := slab[len(recs)*ncols : (len(recs)+1)*ncols : (len(recs)+1)*ncols]
			// the parsers leave a null cell (an empty field, a missing JSON member, a column the
			// file lacks) as it is: it must read as the zero Value. Cleared here, row by row, in
			// the cache lines the parse writes next, rather than the whole slab on its release: a
			// second pass over memory the size of the batch's values (a wide row's 30 values are
			// ~1 KB), which cost as much as parsing them.
			clear(vals)
			var next, nl int
			var rerr *pipeline.RowError
			var blank bool
			var times []int64
			if s.rfc {
				next, nl, blank, rerr = s.parseRFCRow(data, pos, vals)
			} else if s.format == formatCSV {
				next, nl, blank, rerr = s.parseDialectRow(s.recordData(data, pos), pos, vals)
			} else {
				if s.cfg.CellWriteTimes {
					times = make([]int64, ncols)
				}
				next, nl, blank, rerr = s.parseJSONRow(data, pos, vals, times)
			}
			// A blank or comment line is no record, unless it is longer than the limit: the
			// splitter rejects such a line as too long, so the parser does too.
			if !blank || next-pos > s.cfg.MaxRecordSize {
				// Raw is a substring of the chunk: no copy, and a row the transform rejects
				// later still reaches rejects.jsonl as it was read.
				rec := pipeline.Record{Values: vals, Seq: line, Raw: rawLine(data[pos:next]), Err: rerr, Times: times}
				if next-pos > s.cfg.MaxRecordSize {
					rec.Err, rec.Raw = s.tooLong(int64(next-pos)), s.rawStart(rec.Raw)
				}
				recs = append(recs, rec)
			}
			remaining -= nl
			if nl == 0 {
				remaining-- // the last line without a newline
			}
			pos, line = next, line+int64(nl)
		}
		cur = appendCursor(cur[:0], c.off+int64(pos), line)
		sl.buf = c.buf
		b := pipeline.Batch{Stream: s.stream, Records: recs, Cursor: string(cur), Release: sl.release}
		atEnd := pos >= len(data)
		if atEnd {
			b.Done = c.last
		}
		if len(recs) > 0 || b.Done {
			batches = append(batches, b)
		} else {
			sl.buf = nil
			slabs.Put(sl)
		}
		if atEnd {
			if c.buf != nil {
				// the batches are not out yet: none can be released before this
				c.buf.refs.Store(int32(len(batches)))
				if len(batches) == 0 && !c.buf.stray {
					readBufs.Put(c.buf)
				}
			}
			return batches
		}
		if remaining < 1 {
			remaining = 1
		}
	}
}

// A slab is one batch's records and their values. The consumer's Batch.Release gives it back
// for a later batch: most of what a read allocates is these, so reusing them keeps the heap
// (and the garbage collector's work) small. A batch never released is garbage-collected.
type slab struct {
	vals []pipeline.Value
	recs []pipeline.Record
	buf  *readBuf // the chunk's buffer the records point into (nil: none to give back)
}

var slabs sync.Pool

// takeSlab returns a slab with room for nvals values and nrecs records. Its values are those of
// an earlier batch: parseChunk clears each row's before parsing into them.
func takeSlab(nvals, nrecs int) *slab {
	if sl, ok := slabs.Get().(*slab); ok && cap(sl.vals) >= nvals && cap(sl.recs) >= nrecs {
		return sl
	}
	return &slab{vals: make([]pipeline.Value, nvals), recs: make([]pipeline.Record, 0, nrecs)}
}

// release pools the slab and drops its reference to the chunk's buffer. Its values and records
// still point into that buffer, unread until parseChunk clears them for the next batch: a
// pooled slab holds on to one buffer at most, and a buffer is reused only once every slab
// that referred to it was released.
func (sl *slab) release() {
	if poisonReleased {
		clear(sl.vals[:cap(sl.vals)])
		clear(sl.recs[:cap(sl.recs)])
	}
	if rb := sl.buf; rb != nil {
		sl.buf = nil
		rb.unref()
	}
	slabs.Put(sl)
}

// tooLong is the error of a record of size bytes, more than MaxRecordSize.
func (s *Source) tooLong(size int64) *pipeline.RowError {
	return &pipeline.RowError{Code: pipeline.CodeParse, Message: "record of " + strconv.FormatInt(size, 10) +
		" bytes is longer than --max-record-size (" + formatBytes(s.cfg.MaxRecordSize) + "): raise it if such records are expected; " +
		"reading goes on with the next line (the reject keeps the record's first " + formatBytes(s.rawKeep()) + "; the rejected rows file, which holds whole records, leaves it out)", RawCut: true}
}

// rawKeep is how much of a record longer than MaxRecordSize its reject keeps. A record that long
// has at least that many bytes before its terminator, so every chunking keeps the same bytes.
func (s *Source) rawKeep() int { return min(rawKeep, s.cfg.MaxRecordSize) }

// rawStart returns the start of a long record's raw text that its reject keeps, without a partial
// UTF-8 sequence at the end.
func (s *Source) rawStart(raw string) string {
	raw = raw[:min(len(raw), s.rawKeep())]
	for i := len(raw) - 1; i >= 0 && i >= len(raw)-utf8.UTFMax; i-- {
		if utf8.RuneStart(raw[i]) {
			if !utf8.FullRuneInString(raw[i:]) {
				return raw[:i]
			}
			break
		}
	}
	return raw
}

// formatBytes writes a size the way the flags take it.
func formatBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// rawLine strips the record terminator.
func rawLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}
