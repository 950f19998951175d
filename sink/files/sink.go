// Package files is rekey's format-agnostic region sink: one folder per pre-split region, files
// rolled at a size, written under temporary names and renamed only by Commit.
//
// Layout under the output (Config.Store, a local folder or a bucket prefix): the data files alone
// under data/, which the bulk load reads whole (manifest, checkpoint and rejects are written
// beside data/ by others). Each file is a store.Writer, committed (renamed on a disk, multipart
// upload completed in a bucket) as soon as its footer is written:
//
//	data/region-0000/part-00000.parquet
//	data/region-0000/part-00001.parquet
//	data/region-0001/part-00000.parquet
//	data/region-0001/.rekey-tmp-part-00001.parquet   (being written; never read by bulkload)
//
// A file holds rows of exactly one region. Sequence numbers continue after the highest file
// already in the folder, so a resumed run never overwrites committed files. A file committed to
// the store before the run's checkpoint lists it is removed by a resume (output.Open)
// or by Abort.
//
// Concurrency: Write is called by several workers at once. Rows are copied into the region's
// Buffer under a short per-region lock; when a region's buffer is full it is cut into a Chunk that
// the caller then encodes, compresses and writes outside that lock (only the file's own lock is
// held), so different regions, and different chunks of one region, are encoded in parallel on the
// callers' goroutines. Encoding on the caller is also the back-pressure.
//
// Memory: every buffer and every chunk in flight is counted (allocated capacity). A region cuts
// its buffer when it holds Memory/regions (capped by RowGroupSize), and a Write that finds the
// total over Memory waits for chunks in flight to be written.
package files

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// Defaults.
const (
	DefaultMaxFileSize  = 256 << 20
	DefaultMemory       = 128 << 20
	DefaultRowGroupSize = 64 << 20
	minRegionBuffer     = 64 << 10
)

// Config configures the region sink.
type Config struct {
	// Store is the output; one folder per region: data/region-0000, data/region-0001, ...
	Store store.Store
	// SpillDir holds Sort's run files on an output that is not a local folder (default: the
	// system's temporary folder). On a local folder they go to the region folders.
	SpillDir string
	Schema   pipeline.TargetSchema
	Plan     pipeline.RegionPlan
	Format   Format
	// MaxFileSize rolls a region's file when it reaches this many bytes (estimated from the
	// compression ratio seen so far; a file ends at most one chunk past it). Default 256 MiB.
	MaxFileSize int64
	// Memory bounds the memory of the buffers of all regions together, including chunks being
	// encoded (allocated bytes). Default 128 MiB: the Go heap may grow to about twice the live
	// data before a collection, and the whole tool is meant to stay under 512 MiB RSS. Values
	// below 64 KiB per region are raised to that.
	Memory int64
	// RowGroupSize caps one chunk (Parquet row group) in buffered bytes. Default 64 MiB.
	RowGroupSize int64
	// ExpectedRows is how many rows the run expects (pipeline.Sizer; 0: unknown). A region then
	// also cuts its buffer once it holds a quarter of its share of them, so a run smaller than
	// the budget (one shard of many) reuses a few small buffers instead of holding its whole
	// output until Commit: a process's first touch of each page of heap is what a short run
	// pays for most on a virtual machine.
	ExpectedRows int64
	// Sort orders the rows of each file by the full primary key (pipeline.Compare per key
	// column, DESC reversed). Buffers that fill up are sorted and spilled to temporary run files
	// in the region folder; Commit merges them into files rolled at MaxFileSize, so the files one
	// Commit writes for a region are each sorted and do not overlap.
	Sort bool
	// NamePrefix begins the name of every data file ("s0002-part-00000.parquet"): the shards of
	// one migration that write into one output (output.ShardFilePrefix), or the time slices of a
	// SliceSink (output.SliceFilePrefix), keep their files apart. Such a sink sweeps nothing when
	// it starts: the others' files in flight are under data/ too.
	NamePrefix string
	// CheckRegions verifies that every row's Region is Plan.Route of its first key column
	// (a misrouted row is a run error, never silently written). Off by default: the transform
	// routes rows with the same plan.
	CheckRegions bool
}

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("files: Store is not set"))
	}
	if c.Format == nil {
		errs = append(errs, errors.New("files: Format is nil"))
	}
	if len(c.Schema.Columns) == 0 {
		errs = append(errs, errors.New("files: schema has no columns"))
	}
	if c.Schema.KeyLen < 1 || c.Schema.KeyLen > len(c.Schema.Columns) {
		errs = append(errs, fmt.Errorf("files: schema key length %d out of 1..%d", c.Schema.KeyLen, len(c.Schema.Columns)))
	} else if c.Schema.Columns[0].Type != c.Plan.Type && c.Plan.Count() > 1 {
		errs = append(errs, fmt.Errorf("files: region plan is typed %s but the first key column %q is %s", c.Plan.Type, c.Schema.Columns[0].Name, c.Schema.Columns[0].Type))
	}
	seen := map[string]bool{}
	for i, col := range c.Schema.Columns {
		if col.Name == "" {
			errs = append(errs, fmt.Errorf("files: column %d has no name", i))
		}
		if seen[col.Name] {
			errs = append(errs, fmt.Errorf("files: duplicate column %q", col.Name))
		}
		seen[col.Name] = true
		if col.Type == pipeline.TypeInvalid || col.Type > pipeline.TypeJSON {
			errs = append(errs, fmt.Errorf("files: column %q has invalid type %s", col.Name, col.Type))
		}
		if col.Type == pipeline.TypeDecimal && (col.Precision < 1 || col.Precision > 38 || col.Scale < 0 || col.Scale > col.Precision) {
			errs = append(errs, fmt.Errorf("files: column %q: DECIMAL(%d,%d) out of range", col.Name, col.Precision, col.Scale))
		}
	}
	if c.MaxFileSize < 0 || c.Memory < 0 || c.RowGroupSize < 0 {
		errs = append(errs, errors.New("files: MaxFileSize, Memory and RowGroupSize must not be negative"))
	}
	if c.MaxFileSize == 0 {
		c.MaxFileSize = DefaultMaxFileSize
	}
	if c.Memory == 0 {
		c.Memory = DefaultMemory
	}
	if c.RowGroupSize == 0 {
		c.RowGroupSize = DefaultRowGroupSize
	}
	return errors.Join(errs...)
}

// ErrAborted is returned by Write and Commit after Abort.
var ErrAborted = errors.New("files: sink aborted")

// RowReject is one row Write did not write because a value does not fit its column.
type RowReject = pipeline.RowReject

// RejectError is returned by Write when some rows were rejected; every other row was written.
// It is not a failure of the run: the pipeline turns each entry into a reject.
type RejectError = pipeline.RowRejects

// Stats are the sink's counters so far.
type Stats struct {
	Rows         int64 // rows accepted by Write
	Bytes        int64 // bytes written to data files (committed or not)
	Files        int   // files committed
	Buffered     int64 // memory held by buffers and chunks in flight now
	PeakBuffered int64 // the most it ever held
	Regions      []RegionStats
}

// RegionStats are one region's counters.
type RegionStats struct {
	Rows  int64
	Bytes int64
	Files int
}

// Sink writes rows to region files. It implements pipeline.Sink.
type Sink struct {
	cfg     Config
	log     *zap.Logger
	regions []*region
	limit   int64 // a region's share of Memory
	cutAt   int64 // a region cuts its buffer when it uses this many bytes (headroom for growth)
	cutRows int64 // ... or holds this many rows (0: no such bound); see Config.ExpectedRows

	mem      atomic.Int64 // buffers + chunks in flight
	peak     atomic.Int64
	inflight atomic.Int64
	freedMu  sync.Mutex
	freed    chan struct{} // closed (and replaced) whenever a chunk in flight is written

	rawWritten   atomic.Int64 // Mem of chunks written, for the size estimate
	bytesWritten atomic.Int64 // file bytes they became

	st          store.Store
	spillDir    string       // where Sort's run files go (output.SortSpill)
	removeSpill func() error // removes spillDir; nil: the output's own folder

	failed  atomic.Pointer[error]
	aborted atomic.Bool

	commitMu sync.Mutex
	liveMu   sync.Mutex
	live     map[*file]struct{} // files not reported by Commit yet (open, rolled, finished)
	finished []*file            // committed to the store, waiting for Commit to report them

	scratch sync.Pool // *groupScratch
}

var _ pipeline.Sink = (*Sink)(nil)

// New validates cfg, prepares the output (removing what unfinished writers of a crashed run left
// under data/ through ctx, unless cfg.NamePrefix is set) and returns the sink.
func New(ctx context.Context, cfg Config, logger *zap.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st := cfg.Store
	if logger == nil {
		logger = zap.NewNop()
	}
	n := cfg.Plan.Count()
	// every region's buffer plus one chunk in flight per concurrent writer fit in Memory
	limit := cfg.Memory / int64(n+runtime.GOMAXPROCS(0))
	if limit > cfg.RowGroupSize {
		limit = cfg.RowGroupSize
	}
	if limit < minRegionBuffer {
		limit = minRegionBuffer
	}
	// A sink whose files carry a NamePrefix writes beside other sinks of the same output (the
	// time slices of a SliceSink, opened as their first rows arrive): sweeping data/ would take
	// their files in flight. Its own leftovers went when the output was opened (output.Open).
	if cfg.NamePrefix == "" {
		if err := st.Sweep(ctx, output.DataDir+"/"); err != nil {
			return nil, fmt.Errorf("files: %w", err)
		}
	}
	existing, err := st.List(ctx, output.DataDir+"/")
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	s := &Sink{
		st:      st,
		cfg:     cfg,
		log:     logger,
		limit:   limit,
		cutAt:   limit * 3 / 5,
		cutRows: cfg.ExpectedRows / int64(4*n),
		freed:   make(chan struct{}),
		live:    map[*file]struct{}{},
		regions: make([]*region, n),
	}
	if cfg.Sort {
		var err error
		if s.spillDir, s.removeSpill, err = output.SortSpill(st, cfg.SpillDir, spillPrefix, logger); err != nil {
			return nil, fmt.Errorf("files: --sort spill folder: %w (set TMPDIR to a folder with room for the rows being sorted)", err)
		}
	}
	bufs, err := NewBuffers(cfg.Format, cfg.Schema, n)
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	for i := range s.regions {
		if e, ok := bufs[i].(ChunkExpecter); ok {
			e.ExpectChunk(int(s.cutRows), s.cutAt) // the cut shouldCut makes
		}
		r := &region{idx: i, dir: filepath.Join(s.spillDir, filepath.FromSlash(output.RegionDir(i))), buf: bufs[i]}
		if cfg.Sort {
			r.sorter = newSorter(cfg.Schema, cfg.NamePrefix)
		}
		s.regions[i] = r
	}
	// sequence numbers go on after the highest file already in each region folder
	for _, obj := range existing {
		if i, seq, ok := output.ParseDataFile(obj.Name, cfg.NamePrefix); ok && i < n && seq >= s.regions[i].nextSeq {
			s.regions[i].nextSeq = seq + 1
		}
	}
	logger.Debug("region sink ready", zap.String("format", cfg.Format.Name()), zap.Int("regions", n),
		zap.Int64("region_buffer", limit), zap.Bool("sort", cfg.Sort))
	return s, nil
}

type region struct {
	idx    int
	dir    string  // Sort's run files
	sorter *sorter // Sort mode only

	mu      sync.Mutex // guards the fields below and the pending/rolled fields of its files
	buf     Buffer
	bufMem  int64
	cur     *file
	nextSeq int

	rows  atomic.Int64
	bytes atomic.Int64
	files atomic.Int64
}

// file is one output file from creation to commit.
type file struct {
	r   *region
	seq int
	rel string // the object's name: data/region-0000/part-00000.parquet

	// under r.mu
	pending     int   // chunks assigned, not yet written
	rolled      bool  // no more chunks will be assigned
	rows        int64 // rows in assigned chunks
	assignedMem int64

	mu         sync.Mutex // serializes the writes below
	w          store.Writer
	out        countingWriter
	fw         FileWriter
	writtenMem atomic.Int64
	size       int64
	closed     bool
	committed  bool          // to the store, by finish
	done       chan struct{} // closed by finish
	doneClosed bool
}

// closeDone wakes Commit waiting for f. f.mu held.
func (f *file) closeDone() {
	if !f.doneClosed {
		f.doneClosed = true
		close(f.done)
	}
}

// countingWriter counts bytes and buffers writes while a chunk is being written.
type countingWriter struct {
	w  store.Writer
	bw *bufio.Writer
	n  atomic.Int64
}

func (o *countingWriter) Write(p []byte) (int, error) {
	var n int
	var err error
	if o.bw != nil {
		n, err = o.bw.Write(p)
	} else {
		n, err = o.w.Write(p)
	}
	o.n.Add(int64(n))
	return n, err
}

var bufioPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}

func (o *countingWriter) attach() {
	bw := bufioPool.Get().(*bufio.Writer)
	bw.Reset(o.w)
	o.bw = bw
}

func (o *countingWriter) detach() error {
	err := o.bw.Flush()
	o.bw.Reset(nil)
	bufioPool.Put(o.bw)
	o.bw = nil
	return err
}

// Write copies rows into their regions' buffers (rows[i].Region must be set) and writes the
// buffers that are full. It is safe for concurrent callers and retains nothing of rows. It blocks
// while the memory budget is exhausted. Rows whose values do not fit their columns are skipped
// and reported in a *RejectError; any other error is a failure of the run.
func (s *Sink) Write(ctx context.Context, rows []pipeline.Row) error {
	if err := s.err(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	g := s.group(rows)
	defer s.scratch.Put(g)
	if g.bad >= 0 {
		return fmt.Errorf("files: row %d has region %d, the plan has %d regions", g.bad, rows[g.bad].Region, len(s.regions))
	}
	if s.cfg.CheckRegions {
		for i := range rows {
			if want := s.cfg.Plan.Route(rows[i].Values[0]); want != rows[i].Region {
				return fmt.Errorf("files: row %d routed to region %d, its first key column belongs to region %d", i, rows[i].Region, want)
			}
		}
	}
	if err := s.waitMemory(ctx); err != nil {
		return err
	}
	var rejects []RowReject
	// First pass: regions whose lock is free; then wait for the busy ones. Concurrent writers
	// would otherwise walk the regions in the same order, one always waiting behind the other.
	g.busy = g.busy[:0]
	for ri, r := range s.regions {
		idx := g.order[g.start[ri]:g.start[ri+1]]
		if len(idx) == 0 {
			continue
		}
		if !r.mu.TryLock() {
			g.busy = append(g.busy, int32(ri))
			continue
		}
		if err := s.writeRegion(ctx, r, rows, idx, &rejects); err != nil {
			return err
		}
	}
	for _, ri := range g.busy {
		r := s.regions[ri]
		r.mu.Lock()
		if err := s.writeRegion(ctx, r, rows, g.order[g.start[ri]:g.start[ri+1]], &rejects); err != nil {
			return err
		}
	}
	if len(rejects) > 0 {
		return &RejectError{Rows: rejects}
	}
	return nil
}

type groupScratch struct {
	start []int32 // len regions+1: region i's rows are order[start[i]:start[i+1]]
	order []int32
	busy  []int32
	bad   int
}

// group sorts row indexes by region (a counting sort, no allocation once warm).
func (s *Sink) group(rows []pipeline.Row) *groupScratch {
	g, _ := s.scratch.Get().(*groupScratch)
	if g == nil {
		g = &groupScratch{}
	}
	n := len(s.regions)
	if cap(g.start) < n+1 {
		g.start = make([]int32, n+1)
	}
	g.start = g.start[:n+1]
	clear(g.start)
	if cap(g.order) < len(rows) {
		g.order = make([]int32, len(rows))
	}
	g.order = g.order[:len(rows)]
	g.bad = -1
	for i := range rows {
		reg := rows[i].Region
		if reg < 0 || reg >= n {
			g.bad = i
			return g
		}
		g.start[reg+1]++
	}
	for i := 1; i <= n; i++ {
		g.start[i] += g.start[i-1]
	}
	// fill using start[i] as the cursor, then shift back
	for i := range rows {
		reg := rows[i].Region
		g.order[g.start[reg]] = int32(i)
		g.start[reg]++
	}
	for i := n; i > 0; i-- {
		g.start[i] = g.start[i-1]
	}
	g.start[0] = 0
	return g
}

// waitMemory blocks while the buffers are over budget and chunks in flight will free memory.
func (s *Sink) waitMemory(ctx context.Context) error {
	for s.mem.Load() > s.cfg.Memory && s.inflight.Load() > 0 {
		s.freedMu.Lock()
		ch := s.freed
		s.freedMu.Unlock()
		if s.mem.Load() <= s.cfg.Memory || s.inflight.Load() == 0 {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := s.err(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sink) addMem(d int64) {
	m := s.mem.Add(d)
	if d > 0 {
		for {
			p := s.peak.Load()
			if m <= p || s.peak.CompareAndSwap(p, m) {
				break
			}
		}
	}
}

// writeRegion appends rows[idx] to region r. r.mu is held on entry and released.
func (s *Sink) writeRegion(ctx context.Context, r *region, rows []pipeline.Row, idx []int32, rejects *[]RowReject) error {
	if s.cfg.Sort {
		return s.writeSorted(r, rows, idx, rejects) // unlocks
	}
	n := int64(0)
	for _, i := range idx {
		if err := r.buf.Append(rows[i].Values); err != nil {
			*rejects = append(*rejects, RowReject{Index: int(i), Err: asRowError(err)})
			continue
		}
		n++
	}
	r.rows.Add(n)
	s.updateBufMem(r)
	var j *job
	if s.shouldCut(r) {
		j = s.cut(r)
	}
	r.mu.Unlock()
	if j != nil {
		return s.run(ctx, j)
	}
	return nil
}

func asRowError(err error) *pipeline.RowError {
	var re *pipeline.RowError
	if errors.As(err, &re) {
		return re
	}
	return &pipeline.RowError{Code: pipeline.CodeType, Message: err.Error()}
}

// updateBufMem refreshes the region's share of the memory counter. r.mu held.
func (s *Sink) updateBufMem(r *region) {
	m := r.buf.Mem()
	if d := m - r.bufMem; d != 0 {
		s.addMem(d)
		r.bufMem = m
	}
}

// ratio estimates file bytes per buffered byte from what was written so far.
func (s *Sink) ratio() float64 {
	raw := s.rawWritten.Load()
	if raw < 1<<20 {
		return 1
	}
	return float64(s.bytesWritten.Load()) / float64(raw)
}

// estSize estimates the final size of f with extra buffered bytes added. r.mu held.
func (s *Sink) estSize(f *file, extra int64) int64 {
	ratio := s.ratio()
	unwritten := f.assignedMem - f.writtenMem.Load() + extra
	return f.out.n.Load() + int64(float64(unwritten)*ratio)
}

func (s *Sink) shouldCut(r *region) bool {
	if r.buf.Rows() == 0 {
		return false
	}
	used := r.buf.Used()
	// the expected rows' cut is no smaller than an eighth of the budget's: a small run's
	// memory does not matter, its row groups would
	if used >= s.cutAt || (s.cutRows > 0 && int64(r.buf.Rows()) >= s.cutRows && used >= s.cutAt/8) {
		return true
	}
	if r.cur == nil {
		return int64(float64(used)*s.ratio()) >= s.cfg.MaxFileSize
	}
	return s.estSize(r.cur, used) >= s.cfg.MaxFileSize
}

// job is one chunk to write to one file.
type job struct {
	r *region
	f *file
	c Chunk
}

// cut detaches the region's buffer and assigns it to the region's current file, rolling the file
// when it will be full. r.mu held.
func (s *Sink) cut(r *region) *job {
	c := r.buf.Cut()
	// the memory moves from the buffer to the chunk in flight
	s.addMem(c.Mem() - r.bufMem)
	r.bufMem = 0
	s.updateBufMem(r)
	f := r.cur
	if f == nil {
		f = s.newFile(r)
		r.cur = f
	}
	f.pending++
	f.rows += int64(c.Rows())
	f.assignedMem += c.Mem()
	if s.estSize(f, 0) >= s.cfg.MaxFileSize {
		f.rolled = true
		r.cur = nil
	}
	s.inflight.Add(1)
	return &job{r: r, f: f, c: c}
}

// newFile names the next file of r. r.mu held; the file is created by its first write.
func (s *Sink) newFile(r *region) *file {
	seq := r.nextSeq
	r.nextSeq++
	f := &file{r: r, seq: seq, rel: output.DataFile(r.idx, seq, s.cfg.NamePrefix, s.cfg.Format.Ext()), done: make(chan struct{})}
	s.liveMu.Lock()
	s.live[f] = struct{}{}
	s.liveMu.Unlock()
	return f
}

// run writes a job's chunk and, when it was the last chunk of a rolled file, finishes the file.
func (s *Sink) run(ctx context.Context, j *job) error {
	f, r := j.f, j.r
	mem := j.c.Mem()
	f.mu.Lock()
	before := f.out.n.Load()
	err := s.writeChunk(ctx, f, j.c)
	written := f.out.n.Load() - before
	f.mu.Unlock()
	j.c.Release()
	f.writtenMem.Add(mem)
	r.bytes.Add(written)
	if err == nil {
		s.rawWritten.Add(mem)
		s.bytesWritten.Add(written)
	}
	s.addMem(-mem)
	s.inflight.Add(-1)
	s.freedMu.Lock()
	close(s.freed)
	s.freed = make(chan struct{})
	s.freedMu.Unlock()
	r.mu.Lock()
	f.pending--
	last := f.rolled && f.pending == 0
	r.mu.Unlock()
	if err != nil {
		if last {
			f.mu.Lock()
			f.closeDone()
			f.mu.Unlock()
		}
		return s.fail(err)
	}
	if last {
		return s.finish(ctx, f)
	}
	return nil
}

// writeChunk creates the file on first use and writes c. f.mu held.
func (s *Sink) writeChunk(ctx context.Context, f *file, c Chunk) error {
	if f.closed {
		return fmt.Errorf("files: %s: write after close", f.rel)
	}
	if f.w == nil {
		if err := s.create(ctx, f); err != nil {
			return err
		}
	}
	f.out.attach()
	err := f.fw.Write(c)
	if derr := f.out.detach(); err == nil && derr != nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("files: write %s: %w", f.rel, err)
	}
	return nil
}

func (s *Sink) create(ctx context.Context, f *file) error {
	if s.aborted.Load() {
		return ErrAborted
	}
	// The file outlives the Write that starts it: a store's writer may bind its uploads to the
	// context it is created with, and this one ends with the batch (the engine cancels its run's
	// context when the read ends, before the last commit finishes the file). Commit and Abort
	// end the uploads.
	w, err := s.st.Create(context.WithoutCancel(ctx), f.rel)
	if err != nil {
		return fmt.Errorf("files: create %s: %w", f.rel, err)
	}
	f.w = w
	f.out.w = w
	f.out.attach()
	fw, err := s.cfg.Format.NewWriter(&f.out, s.cfg.Schema)
	if derr := f.out.detach(); err == nil && derr != nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("files: start %s: %w", f.rel, err)
	}
	f.fw = fw
	return nil
}

// finish writes the footer and commits the file to the store (fsync and rename on a disk, the
// multipart upload completed in a bucket), so that it holds no buffer until the next Commit,
// which reports it.
func (s *Sink) finish(ctx context.Context, f *file) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.closeDone()
	if f.closed || f.w == nil {
		return s.err()
	}
	f.closed = true
	before := f.out.n.Load()
	f.out.attach()
	err := f.fw.Close()
	if derr := f.out.detach(); err == nil && derr != nil {
		err = derr
	}
	f.size = f.out.n.Load()
	f.r.bytes.Add(f.size - before)
	if err == nil && s.aborted.Load() {
		err = ErrAborted
	}
	if err == nil {
		var size int64
		if size, err = f.w.Commit(ctx); err == nil && size != f.size {
			err = fmt.Errorf("the store committed %d bytes, %d were written", size, f.size)
		}
	}
	if err != nil {
		f.w.Abort()
		return s.fail(fmt.Errorf("files: close %s: %w", f.rel, err))
	}
	f.committed = true
	s.liveMu.Lock()
	s.finished = append(s.finished, f)
	s.liveMu.Unlock()
	return nil
}

func (s *Sink) fail(err error) error {
	s.failed.CompareAndSwap(nil, &err)
	return err
}

func (s *Sink) err() error {
	if s.aborted.Load() {
		return ErrAborted
	}
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Commit writes every buffered row, closes and commits every open file (footer, then the store's
// commit) and returns the files committed since the last Commit. Writes
// should not run concurrently with Commit; rows written meanwhile may land in the next Commit.
func (s *Sink) Commit(ctx context.Context) ([]pipeline.FileInfo, error) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if err := s.err(); err != nil {
		return nil, err
	}
	var wait []*file
	var waitMu sync.Mutex
	err := s.parallel(ctx, func(r *region) error {
		var rolled []*file
		var err error
		if s.cfg.Sort {
			rolled, err = s.mergeRegion(ctx, r)
		} else {
			rolled, err = s.flushRegion(ctx, r)
		}
		waitMu.Lock()
		wait = append(wait, rolled...)
		waitMu.Unlock()
		return err
	})
	if err != nil {
		return nil, s.fail(err)
	}
	for _, f := range wait {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := s.err(); err != nil {
		return nil, err
	}
	s.liveMu.Lock()
	fin := s.finished
	s.finished = nil
	s.liveMu.Unlock()
	infos := make([]pipeline.FileInfo, 0, len(fin))
	for _, f := range fin {
		s.liveMu.Lock()
		delete(s.live, f)
		s.liveMu.Unlock()
		f.r.files.Add(1)
		infos = append(infos, pipeline.FileInfo{Region: f.r.idx, Path: f.rel, Rows: f.rows, Bytes: f.size})
		s.log.Debug("file committed", zap.Int("region", f.r.idx), zap.String("file", f.rel), zap.Int64("rows", f.rows), zap.Int64("bytes", f.size))
	}
	sortInfos(infos)
	s.log.Debug("committed", zap.Int("files", len(infos)))
	return infos, nil
}

func sortInfos(infos []pipeline.FileInfo) {
	// by region, then path: insertion sort is fine, Commit returns few files
	for i := 1; i < len(infos); i++ {
		for j := i; j > 0 && (infos[j].Region < infos[j-1].Region || infos[j].Region == infos[j-1].Region && infos[j].Path < infos[j-1].Path); j-- {
			infos[j], infos[j-1] = infos[j-1], infos[j]
		}
	}
}

// flushRegion writes the region's buffer and rolls its current file; returns the rolled files
// (Commit waits for them to be finished).
func (s *Sink) flushRegion(ctx context.Context, r *region) ([]*file, error) {
	r.mu.Lock()
	var j *job
	if r.buf.Rows() > 0 {
		j = s.cut(r)
	}
	var rolled []*file
	if j != nil && j.f.rolled {
		rolled = append(rolled, j.f) // cut rolled it already
	}
	var finishNow *file
	if f := r.cur; f != nil {
		f.rolled = true
		r.cur = nil
		rolled = append(rolled, f)
		if f.pending == 0 {
			finishNow = f
		}
	}
	r.mu.Unlock()
	if j != nil {
		if err := s.run(ctx, j); err != nil {
			return rolled, err
		}
	}
	if finishNow != nil {
		if err := s.finish(ctx, finishNow); err != nil {
			return rolled, err
		}
	}
	return rolled, nil
}

// parallel runs fn for every region on up to GOMAXPROCS goroutines.
func (s *Sink) parallel(ctx context.Context, fn func(r *region) error) error {
	workers := runtime.GOMAXPROCS(0)
	if workers > len(s.regions) {
		workers = len(s.regions)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(s.regions) || ctx.Err() != nil {
					return
				}
				if err := fn(s.regions[i]); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// Abort stops the sink and removes every file Commit has not returned (open writers, files
// finished since the last Commit, sort runs) through ctx. Files Commit returned stay. Write and
// Commit fail afterwards.
func (s *Sink) Abort(ctx context.Context) error {
	s.aborted.Store(true)
	var errs []error
	s.liveMu.Lock()
	live := make([]*file, 0, len(s.live))
	for f := range s.live {
		live = append(live, f)
	}
	s.live = map[*file]struct{}{}
	s.finished = nil
	s.liveMu.Unlock()
	var remove []string
	for _, f := range live {
		f.mu.Lock()
		switch {
		case f.committed:
			remove = append(remove, f.rel) // in the store, but no checkpoint will list it
		case f.w != nil:
			f.closed = true
			if err := f.w.Abort(); err != nil {
				errs = append(errs, err)
			}
		}
		f.mu.Unlock()
	}
	if err := s.st.Remove(ctx, remove...); err != nil {
		errs = append(errs, err)
	}
	for _, r := range s.regions {
		r.mu.Lock()
		r.cur = nil
		if r.sorter != nil {
			errs = append(errs, r.sorter.removeRuns())
		}
		r.mu.Unlock()
	}
	if s.removeSpill != nil {
		errs = append(errs, s.removeSpill())
	}
	return errors.Join(errs...)
}

// spillPrefix begins the names of the spill folders of Sort on an output that is not a local
// folder (spill.New): rekey-sort-PID-RANDOM.
const spillPrefix = "rekey-sort-"

// Stats returns the counters so far.
func (s *Sink) Stats() Stats {
	st := Stats{Buffered: s.mem.Load(), PeakBuffered: s.peak.Load(), Regions: make([]RegionStats, len(s.regions))}
	for i, r := range s.regions {
		rs := RegionStats{Rows: r.rows.Load(), Bytes: r.bytes.Load(), Files: int(r.files.Load())}
		st.Regions[i] = rs
		st.Rows += rs.Rows
		st.Bytes += rs.Bytes
		st.Files += rs.Files
	}
	return st
}

// Limit is the per-region buffer size the sink cuts chunks at (for tests and logs).
func (s *Sink) Limit() int64 { return s.limit }
