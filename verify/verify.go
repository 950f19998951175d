package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/spill"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/transform"
)

// Sample selects the keys verified. The zero value verifies every row.
type Sample struct {
	Rows     int64   // the rows with the Rows smallest key hashes (every row of a key, or none)
	Fraction float64 // or the keys whose hash falls in this share of the hash space, 0 < f < 1
}

// MaxSampleRows bounds --sample N: each transform worker keeps 8 bytes per sampled row to find
// the N smallest key hashes.
const MaxSampleRows = 10_000_000

// Config is one verify run.
type Config struct {
	Program *transform.Program
	Source  pipeline.Source
	// Changes, instead of Source, is a replication's changes (a Kafka topic up to the offsets
	// replicate committed): each key is compared with what it holds once they are applied in
	// order, deletes and partial upserts included. It calls fn with each batch, possibly from
	// several goroutines (one per stream), each stream's batches in order.
	Changes func(ctx context.Context, fn func(*ChangeBatch) error) error
	// SourceOnce says the source can be read only once (stdin): a folder target is then compared
	// value by value in one pass, as the digest pass's differences would need a second read.
	SourceOnce bool
	// Exactly one target: a rekey output folder (Folder), or a table read by key (Lookup).
	Folder *Folder
	Lookup LookupTarget

	Sample  Sample
	Workers int // transform and target-reading goroutines; default GOMAXPROCS
	// Lookups is how many Lookup calls (or key ranges of a RangeScanner) are read at once
	// (default 4): a SQL round trip mostly waits.
	Lookups int
	TmpDir  string // for the temp files; default os.TempDir()
	// Memory is the budget for the buckets held in memory (beyond it they spill to temp files)
	// and for the bucket compared at a time; default 128 MiB.
	Memory int64
	// Phase, when set, is called as each phase starts (reading the source, reading the target,
	// looking up) with the rows it expects (-1: unknown) and the counters it advances: RowsIn
	// counts rows read, RowsWritten rows kept, RowsRejected rejected ones. It returns the
	// function that ends the display.
	Phase func(name string, total int64, c *pipeline.Counters) (done func())
	// Repair, when set, receives after the comparison, in source order, every source row of
	// the keys checked that the target misses or holds with other values (all the rows of such
	// a key, so that the last one wins again), from one more read of the source; and the result
	// lists the keys of target rows the source does not produce (ExtraKeys). It needs a source
	// that can be read again.
	Repair func(b *pipeline.Batch, rec *pipeline.Record) error
	Logger *zap.Logger
}

// maxExamples is how many examples each kind of difference keeps: those of the smallest key
// hashes, so that repeated runs show the same ones.
const maxExamples = 5

// Run verifies the target against the source. Differences are in the Result; an error means
// the verification itself could not be completed.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Program == nil || (cfg.Source == nil) == (cfg.Changes == nil) {
		return nil, errors.New("verify: a program and a source (rows or changes) are required")
	}
	if cfg.Changes != nil && cfg.Repair != nil {
		return nil, errors.New("verify: the repair rows are source rows, and a replication's changes are not rows to migrate: run replicate again from the offsets to repair, or verify against the table's source")
	}
	if (cfg.Folder == nil) == (cfg.Lookup == nil) {
		return nil, errors.New("verify: exactly one target (a folder or a lookup target) is required")
	}
	if cfg.Repair != nil && cfg.SourceOnce {
		return nil, errors.New("verify: the repair rows need a second read of the source, and it can be read only once")
	}
	if cfg.Sample.Rows > MaxSampleRows {
		return nil, fmt.Errorf("--sample %d: at most %d rows; give a percentage (--sample 1%%) for more", cfg.Sample.Rows, MaxSampleRows)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Lookups <= 0 {
		cfg.Lookups = 4
	}
	if cfg.Memory <= 0 {
		cfg.Memory = 128 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Phase == nil {
		cfg.Phase = func(string, int64, *pipeline.Counters) func() { return func() {} }
	}
	started := time.Now()
	dir, err := spill.New(cfg.TmpDir, "rekey-verify-", cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("verify: temp folder: %w (set --tmp to a folder with room)", err)
	}
	defer spill.Remove(dir)

	v := &run{cfg: cfg, schema: cfg.Program.Target(), dir: dir, res: newResult(cfg)}
	v.keyCols = v.schema.Columns[:v.schema.KeyLen]
	v.rowCols = v.schema.Columns[v.schema.KeyLen:]
	v.sampleMax = math.MaxUint64
	if f := cfg.Sample.Fraction; f > 0 && f < 1 {
		v.sampleMax = uint64(f * (1 << 64))
	}
	if fo := cfg.Folder; fo != nil {
		v.res.Notes = append(v.res.Notes, fo.Notes...)
	}
	// a replication's changes, or an output of replicate (upserts and deletes), compare by state
	v.state = cfg.Changes != nil || (cfg.Folder != nil && cfg.Folder.Replication != nil)
	if v.state && cfg.Lookup != nil {
		var zero int64
		v.res.Extra, v.res.ExtraScope = &zero, ExtraDeletedKeys
		v.res.Notes = append(v.res.Notes, "extra counts the keys the changes delete that the table still holds: a table read by key cannot list rows of keys the changes never name")
	}
	if cfg.Folder != nil && !cfg.SourceOnce && !v.state {
		diff, all, err := v.digestPass(ctx)
		if err != nil {
			return nil, err
		}
		if len(diff) > 0 || all {
			if err := v.detailPass(ctx, diff, all); err != nil {
				return nil, err
			}
		}
	} else if err := v.exact(ctx); err != nil {
		return nil, err
	}
	if cfg.Repair != nil && len(v.res.repairKeys) > 0 {
		if err := v.repairPass(ctx); err != nil {
			return nil, err
		}
	}
	if v.res.ExtraScope == ExtraAll && v.sampleMax != math.MaxUint64 {
		// the target rows of the keys the sample leaves out were passed over, not checked
		v.res.ExtraScope = ExtraSampledKeys
	}
	if cfg.Source != nil && v.state && v.res.Missing > 0 {
		v.res.Notes = append(v.res.Notes, "a replicate output holds the changes replicate applied from its topic, not the rows the source held before them (a copy by migrate, say): those show as missing here; to check a cut-over, verify the table the copy and the changes were both loaded into")
	}
	v.res.finish(time.Since(started))
	return v.res, nil
}

// exact compares the rows value by value: both sides are filed by key hash into buckets (half
// the budget holds them, beyond it they spill), then compared a bucket at a time, each comparing
// goroutine with its share of the other half.
func (v *run) exact(ctx context.Context) error {
	cfg := v.cfg
	v.src = newParts(v.dir, "source", topBuckets, 0, &v.used, cfg.Memory/2)
	defer v.src.close()
	var read pipeline.Counters
	var err error
	if cfg.Changes != nil {
		done := v.phase("reading changes", -1, &read)
		err = v.readChanges(ctx, &read)
		done()
	} else {
		done := v.phase("reading source", estimatedRows(cfg.Source), &read)
		err = v.readSource(ctx, &read)
		done()
	}
	if err != nil {
		return err
	}
	var dst *parts
	if fo := cfg.Folder; fo != nil {
		dst = newParts(v.dir, "target", topBuckets, 0, &v.used, cfg.Memory/2)
		defer dst.close()
		var read pipeline.Counters
		done := v.phase("reading target", fo.Rows, &read)
		err := v.readTarget(ctx, dst, &read, v.sampleMax)
		done()
		if err != nil {
			return err
		}
	}
	if rs, ok := cfg.Lookup.(RangeScanner); ok && !v.state && cfg.Sample == (Sample{}) && read.RowsWritten.Load() > 0 && !floatingKey(v.schema) {
		dst = newParts(v.dir, "table", topBuckets, 0, &v.used, cfg.Memory/2)
		defer dst.close()
		rows, whole, err := v.scanTable(ctx, rs, dst, read.RowsWritten.Load())
		if err != nil {
			return err
		}
		// the rows read are all compared: those of keys the source has not are extra
		v.scanned = true
		var zero int64
		switch {
		case whole:
			v.res.Extra, v.res.ExtraScope = &zero, ExtraAll
		case rows > 0:
			v.res.Extra, v.res.ExtraScope = &zero, ExtraRangesRead
			v.res.Notes = append(v.res.Notes, "the table was not read whole (it holds more rows than the source has keys, or a key range was refused): extra counts the rows of the key ranges read; the others were not checked")
		}
	}
	par, name := cfg.Workers, "comparing"
	if cfg.Lookup != nil {
		par, name = cfg.Lookups, "looking up"
	}
	var counters pipeline.Counters
	done := v.phase(name, -1, &counters)
	defer done()
	var mu sync.Mutex
	rowNames := make([]string, len(v.rowCols))
	for i, c := range v.rowCols {
		rowNames[i] = c.Name
	}
	budget := cfg.Memory / 2 / int64(par)
	return v.each(ctx, par, budget, &counters, v.src.n, func(ctx context.Context, cmp *comparer, b int) error {
		return cmp.bucket(ctx, v.src, dst, b, 0, func(r *bucketResult) {
			mu.Lock()
			v.res.add(r, rowNames)
			mu.Unlock()
		})
	})
}

// readTarget reads every file of the folder target into dst.
func (v *run) readTarget(ctx context.Context, dst *parts, c *pipeline.Counters, max uint64) error {
	all := make([]int, len(v.cfg.Folder.Files))
	for i := range all {
		all[i] = i
	}
	return v.readFolder(ctx, all, dst, c, max)
}

// phase starts a progress display (Config.Phase), its name prefixed in the detail pass.
func (v *run) phase(name string, total int64, c *pipeline.Counters) func() {
	return v.cfg.Phase(v.phasePrefix+name, total, c)
}

// topBuckets partitions each side; a bucket that turns out larger than a comparing goroutine's
// share of the memory budget is split again by further hash bits.
const topBuckets = 256

type run struct {
	cfg       Config
	schema    pipeline.TargetSchema
	keyCols   []pipeline.Column
	rowCols   []pipeline.Column
	dir       string
	used      atomic.Int64
	src       *parts
	sampleMax uint64 // keys whose hash is above are not verified
	// digests: rows are filed as digests (the first pass over a folder target); only: when
	// set, the keys (by hash) the detail pass compares, the others are passed over.
	digests     bool
	only        []uint64
	phasePrefix string
	positions   positions // where the source rows are (the value by value comparison only)
	// state: both sides are reduced to each key's state (state.go); ranges are the source's
	// range deletes, by ord
	state  bool
	ranges []rangeDelete
	// scanned: the lookup target's rows were read by key range (scan.go) into the target side;
	// the keys no row was read for are looked up
	scanned  bool
	rangesMu sync.Mutex
	res      *Result
	notesMu  sync.Mutex
}

// keyHashes is the key hash that files, samples and indexes keys, and the 32 more bits the
// digests tell keys apart by, from one 128-bit xxh3.
func keyHashes(key []byte) (uint64, uint32) {
	h := xxh3.Hash128(key)
	return h.Lo, uint32(h.Hi)
}

// readSource runs the source through the mapping as migrate does, and partitions the accepted
// rows by key.
func (v *run) readSource(ctx context.Context, counters *pipeline.Counters) error {
	cfg := v.cfg
	values, err := v.valueChecker()
	if err != nil {
		return err
	}
	workers := make([]*sourceWorker, cfg.Workers)
	// the rows are numbered in the order the source gives them: the last of a key wins
	engine := pipeline.EngineConfig{Source: cfg.Source, Workers: cfg.Workers, Queue: cfg.Workers,
		NewWorker: func(i int) (func(context.Context, *pipeline.Job) error, func()) {
			w := &sourceWorker{v: v, ev: cfg.Program.NewEvaluator(), out: make([]pipeline.Value, len(v.schema.Columns)),
				w: v.src.writer(), c: counters, rejects: map[string]int64{}, values: values}
			if cfg.Sample.Rows > 0 {
				w.heap = &maxHeap{limit: int(cfg.Sample.Rows)}
			}
			workers[i] = w
			return func(_ context.Context, j *pipeline.Job) error {
				w.process(&j.Batch, uint64(j.FirstOrd))
				return nil
			}, w.w.flush
		}}
	if !v.digests { // the comparison names source rows in its examples
		engine.Ack = func(j *pipeline.Job) error {
			v.positions.add(&j.Batch, uint64(j.FirstOrd))
			return nil
		}
	}
	o, err := pipeline.NewEngine(engine).Run(ctx)
	if err == nil {
		err = o.SourceErr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("read the source: %w", err)
	}
	if err := v.src.failed(); err != nil {
		return err
	}
	res := v.res
	for _, w := range workers {
		res.RowsRead += w.read + w.skipped
		res.RowsSkipped += w.skipped
		res.RowsRejected += w.rejected
		for c, n := range w.rejects {
			res.RejectCodes[c] += n
		}
	}
	if cfg.Sample.Rows > 0 {
		heaps := make([]*maxHeap, len(workers))
		for i, w := range workers {
			heaps[i], w.heap = w.heap, nil
		}
		v.sampleMax = sampleThreshold(heaps, int(cfg.Sample.Rows))
	}
	cfg.Logger.Info("source read", zap.Int64("rows", res.RowsRead), zap.Int64("rejected", res.RowsRejected), zap.Int64("skipped", res.RowsSkipped))
	return nil
}

// valueChecker is the target's own refusals of values, nil when it has none: a folder's format
// (CSV: values Spark's CSV reader cannot read back), a table's (a NaN has no SQL literal).
// migrate and replicate rejected the rows and changes it refuses.
func (v *run) valueChecker() (files.ValueChecker, error) {
	if v.cfg.Folder != nil {
		f, err := folderFormat(v.cfg.Folder)
		if err != nil {
			return nil, err
		}
		c, _ := f.(files.ValueChecker)
		return c, nil
	}
	c, _ := v.cfg.Lookup.(files.ValueChecker)
	return c, nil
}

func estimatedRows(src pipeline.Source) int64 {
	if s, ok := src.(pipeline.Sizer); ok {
		return s.EstimatedRows()
	}
	return -1
}

type sourceWorker struct {
	v        *run
	ev       *transform.Evaluator
	out      []pipeline.Value
	w        *writer
	c        *pipeline.Counters
	key, row []byte
	rec      []byte
	heap     *maxHeap
	read     int64
	skipped  int64 // rows the source's own filter left out (Batch.Skipped): not checked
	rejected int64
	rejects  map[string]int64
	values   files.ValueChecker // the folder format's own refusals; nil when it has none
}

func (w *sourceWorker) reject(code string) {
	w.rejected++
	w.rejects[code]++
}

func (w *sourceWorker) process(b *pipeline.Batch, firstOrd uint64) {
	v := w.v
	var kept, rejected int64
	before := w.rejected
	for i := range b.Records {
		rec := &b.Records[i]
		if rec.Err != nil {
			w.reject(rec.Err.Code)
			continue
		}
		if e := w.ev.Apply(b, rec, w.out); e != nil {
			w.reject(e.Code)
			continue
		}
		var e *pipeline.RowError
		w.key = w.key[:0]
		for c := range v.keyCols {
			if w.key, e = appendStored(w.key, v.keyCols[c], w.out[c]); e != nil {
				break
			}
		}
		if e == nil {
			w.row = w.row[:0]
			if v.state { // compared with a replicate output's state: each row is an upsert
				w.row = append(w.row, stateUpsert)
			}
			for c := range v.rowCols {
				if w.row, e = appendStored(w.row, v.rowCols[c], w.out[v.schema.KeyLen+c]); e != nil {
					break
				}
			}
		}
		if e == nil && w.values != nil {
			e = w.values.CheckValues(v.schema, w.out)
		}
		if e != nil { // the sink would have refused the row: migrate rejected it
			w.reject(e.Code)
			continue
		}
		h, k2 := keyHashes(w.key)
		if h > v.sampleMax || (w.heap != nil && !w.heap.offer(h)) || (v.only != nil && !has(v.only, h)) {
			continue
		}
		kept++
		if v.digests {
			w.rec = sourceDigest(w.rec[:0], h, k2, w.row, firstOrd+uint64(i))
			w.w.addRecord(h, w.rec)
		} else {
			w.w.add(h, firstOrd+uint64(i), w.key, w.row)
		}
	}
	w.ev.Reset() // every value kept was copied into the buckets: the engine releases the batch
	rejected = w.rejected - before
	w.read += int64(len(b.Records))
	w.skipped += b.Skipped // migrate leaves them out too
	w.c.RowsIn.Add(int64(len(b.Records)) + b.Skipped)
	// skipped: those, and the rows the sample (or a detail pass) passed over, as --stats-json
	// counts them
	w.c.RowsSkipped.Add(b.Skipped + int64(len(b.Records)) - kept - rejected)
	w.c.RowsWritten.Add(kept)
	w.c.RowsRejected.Add(rejected)
}

// maxHeap keeps the limit smallest hashes one worker saw (--sample N).
type maxHeap struct {
	limit int
	h     []uint64
}

// offer tells whether a row with hash x may be among the sample: the smallest hashes of all
// workers are among each worker's smallest. Equal hashes (rows of one key) are all kept.
func (m *maxHeap) offer(x uint64) bool {
	if len(m.h) < m.limit {
		m.h = append(m.h, x)
		m.up(len(m.h) - 1)
		return true
	}
	switch top := m.h[0]; {
	case x > top:
		return false
	case x == top:
		return true
	}
	m.h[0] = x
	m.down(0)
	return true
}

func (m *maxHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if m.h[p] >= m.h[i] {
			return
		}
		m.h[p], m.h[i] = m.h[i], m.h[p]
		i = p
	}
}

func (m *maxHeap) down(i int) {
	n := len(m.h)
	for {
		l, big := 2*i+1, i
		if l < n && m.h[l] > m.h[big] {
			big = l
		}
		if r := l + 1; r < n && m.h[r] > m.h[big] {
			big = r
		}
		if big == i {
			return
		}
		m.h[i], m.h[big] = m.h[big], m.h[i]
		i = big
	}
}

// sampleThreshold is the n-th smallest hash over the workers' heaps: rows whose key hashes at
// most this are the sample.
func sampleThreshold(heaps []*maxHeap, n int) uint64 {
	var all []uint64
	for _, h := range heaps {
		all = append(all, h.h...)
	}
	if len(all) < n { // no worker's heap filled up: nothing was left out
		return math.MaxUint64
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return all[n-1]
}

// floatingKey tells a key with a FLOAT or DOUBLE column, which verify looks up instead of reading
// by range: the server reads such a value back rounded (MariaDB prints a FLOAT with 6
// significant digits), so a row read could stand for a source key it does not equal, where a
// lookup compares on the server.
func floatingKey(s pipeline.TargetSchema) bool {
	for _, c := range s.Key() {
		if c.Type == pipeline.TypeFloat || c.Type == pipeline.TypeDouble {
			return true
		}
	}
	return false
}
