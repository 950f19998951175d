// Package report is rekey's dry-run key distribution report and key-design advisor. It reads a
// source (all of it or a sample) through the same mapping a migration would use, routes every
// row to its region, writes no data files, and describes what the key design will do to Lindorm:
// rejected rows, key shape against the design guide, key collisions (rows bulkload would silently
// overwrite), first-column cardinality, skew, prefix and monotonicity, rows and bytes per region,
// write hotspots over time, the same analysis for alternative designs derived from the mapping,
// and how many regions to pre-split with which split keys.
//
// Memory is bounded by sketches and samples, not by the input: HyperLogLog distinct counts,
// Space-Saving heavy hitters, a fixed key-length histogram, a bounded windows x regions matrix, a
// bounded order-preserving subsample for the advisor, and an exact collision check that spills
// 20 bytes plus a short text per row (salt, column hashes and origin, or the row's values) to
// temp files and reads them back one bucket at a time.
//
// See README.md in this folder for the report's JSON schema and the rules.
package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/cpu"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/collide"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// ParseSample reads --sample: a row count ("100000", "1m") or a percentage ("5%").
func ParseSample(s string) (model.Sample, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return model.Sample{}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 || v > 100 {
			return model.Sample{}, fmt.Errorf("--sample %q: want a row count (100000) or a percentage between 0 and 100 (5%%)", s)
		}
		if v == 100 {
			return model.Sample{}, nil
		}
		return model.Sample{Fraction: v / 100}, nil
	}
	mult := int64(1)
	t := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1000, t[:len(t)-1]
	case strings.HasSuffix(t, "m"):
		mult, t = 1000000, t[:len(t)-1]
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return model.Sample{}, fmt.Errorf("--sample %q: want a row count (100000, 1m) or a percentage (5%%)", s)
	}
	return model.Sample{Rows: n * mult}, nil
}

// Config is one report run.
type Config struct {
	Program *transform.Program
	// Mapping is the decoded mapping the program was compiled from; the advisor edits copies of
	// it to build alternative key designs. Nil skips the advisor.
	Mapping *transform.Mapping
	Source  pipeline.Source
	// SourceURI names the source in the report.
	SourceURI string
	// PlanSample is target rows from a spread sample of the source (migrate.Sample), used for
	// quantile split keys. Nil: the report samples the source itself (Sampler), or for a source
	// that cannot sample (a stream), the first planSampleRows rows.
	PlanSample [][]pipeline.Value
	// EstimatedBytes of the whole input, for the region count before the run; 0: estimated from
	// PlanSample and the source's row estimate.
	EstimatedBytes int64
	Regions        int          // --regions: the plan to analyse; 0: the mapping's, else the recommendation
	Nodes          int          // --nodes: for the API-write recommendation (nodes x 4)
	Sample         model.Sample // --sample
	Strict         bool         // --strict: warnings make the exit code 1
	Workers        int          // transform workers; default GOMAXPROCS
	TmpDir         string       // for the collision check's temp files; default os.TempDir()
	// SubsampleMax bounds the advisor's order-preserving subsample (records kept in memory).
	SubsampleMax int
	// SubsampleBytes bounds the same subsample's bytes (default 128 MiB): large rows are kept
	// fewer.
	SubsampleBytes int64
	// Counters, when set, are updated as rows are read (for a progress bar): RowsIn counts
	// records read, RowsWritten accepted ones, RowsRejected rejected ones, RowsSkipped those the
	// source or the sample left out.
	Counters  *pipeline.Counters
	Logger    *zap.Logger
	Generator string // "rekey <version>"
	// FormatSplit renders a split value of the first key column as SPLITKEYS writes it
	// (cmd passes pipeline.SplitValue, so the report shows what ddl.sql will hold);
	// default: the canonical text.
	FormatSplit func(pipeline.Type, pipeline.Value) string
	// Queries are the access patterns the advisor ranks designs by (--query); nil: the
	// mapping's queries: section.
	Queries []transform.Query
	// Workload overrides the mapping's workload: (transform.WorkloadReadsFirst or
	// transform.WorkloadWriteHeavy); "": the mapping's, else reads first.
	Workload string
	// Order is what the caller knows about the order the application writes rows in (the
	// write-order model's evidence).
	Order model.OrderHints
	// Whole is how many rows the input holds that the source reads part of (a Kafka window max=
	// cuts short: the messages the topic retains), and Part says which part, in words; 0: the
	// source reads all of its input; -1: a part of an input whose rows are not known (a window of
	// gzip files or stdin). The report then judges a sample of that input.
	Whole int64
	Part  string
	// Reread, when set, is called before the collision check reads the source a second time
	// (a source that can be read again, when keys collide), with the counters that read
	// updates (RowsIn), and returns what to call when it ends: for a progress display.
	Reread func(c *pipeline.Counters) (done func())
	// Unread, when set, is called once the source has been read: what of its input the source
	// did not reach, in words ("" for nothing), as a Kafka window that an open transaction held
	// back. The report then judges what it read as a sample of the input.
	Unread func() string
}

const (
	planSampleRows   = 20000
	defaultSubsample = 100000
	// defaultSubsampleBytes is Config.SubsampleBytes's default: 100,000 rows of 1.3 KB
	defaultSubsampleBytes = 128 << 20
	samplerMaxRows        = 200000
	maxCollisionExamples  = 5
	maxExampleOrigins     = 4
)

// job is what a worker made of one batch, for the timeline (in source order).
type job struct {
	_        cpu.CacheLinePad // see worker
	batch    pipeline.Batch   // the engine's (it releases it)
	firstOrd int64
	regions  []uint32
	wo       []int64 // per accepted row, with regions: its write-order value (the best evidence)
	wo2      []int64 // and the fallback evidence's, when there is one
	first    pipeline.Value
	last     pipeline.Value
	hasFirst bool
	analysed int64
	_        cpu.CacheLinePad
}

type runner struct {
	cfg     Config
	prog    *transform.Program
	d       *collide.Design
	every   int64 // analyse records whose ordinal is a multiple of every
	limit   int64 // stop after this many records (0: no limit)
	estRows int64
	spill   *collide.Spill
	// bySource is a second collision check keyed by the source key, when the mapping's key has a
	// salt: rows that share a source key then need not share the mapping's key, and the advisor's
	// designs read the source key.
	bySource *collide.Spill
	// rereadable: the source read can be read again (pipeline.Rereader), so the collision check
	// leaves the rows' texts out of its temp files and, when keys collide, reads the source again
	// for their rows (recount)
	rereadable pipeline.Source
	// partScale is the input's rows over the source's (Config.Whole), 1 when the source reads
	// all of it: the sample's figures scale by it on top of --sample's
	partScale float64
	hashed    int    // source columns hashed per row (at most maxHashedColumns)
	saltN     uint64 // the advisor's salt design's n: each row keeps saltToken % saltN (0: none)
	queries   []transform.Query
	adv       *advise.Advisor
	order     *collide.OrderModel
	log       *zap.Logger
}

// Run reads the source and builds the report: the sample and the region plan are chosen
// first (plan), then every row goes through the workers (analyse), then the collision check,
// the advisor and the figures are put together (assemble).
func Run(ctx context.Context, cfg Config) (*model.Report, error) {
	if cfg.Program == nil || cfg.Source == nil {
		return nil, errors.New("report: no program or source")
	}
	cfg = withDefaults(cfg)
	started := time.Now()
	r := &runner{cfg: cfg, prog: cfg.Program, every: 1, estRows: -1, partScale: 1, log: cfg.Logger}
	if sz, ok := cfg.Source.(pipeline.Sizer); ok {
		r.estRows = sz.EstimatedRows()
	}
	src, info, err := r.sample(ctx)
	if err != nil {
		return nil, err
	}
	// the region plan, from a spread sample (or the stream's first rows); a source is sampled
	// before it runs, never while
	sample := cfg.PlanSample
	if sample == nil {
		if sampler, ok := cfg.Source.(pipeline.Sampler); ok {
			recs, err := sampler.Sample(ctx, planSampleRows)
			if err != nil {
				return nil, fmt.Errorf("report: sample the source: %w", err)
			}
			sample = r.prog.SampleRows(recs)
		}
	}
	if rr, ok := src.(pipeline.Rereader); ok && rr.Rereadable() && src == cfg.Source && !sampleCollides(sample, r.prog.Target().KeyLen) {
		r.rereadable = src
	}
	feed := pipeline.StartFeed(ctx, src, nil, cfg.Workers*2)
	var held []pipeline.Batch
	if sample == nil {
		if held, sample, err = r.prefixSample(ctx, feed.Batches); err != nil {
			_ = feed.Discard()
			return nil, err
		}
	}
	plan, planInfo, err := r.plan(sample)
	if err != nil {
		_ = feed.Discard()
		return nil, err
	}
	tl, total, cleanup, err := r.analyse(ctx, feed, held, plan)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	r.log.Info("read the source", zap.Int64("rows", tl.read), zap.Duration("took", time.Since(started)))
	return r.assemble(ctx, total, tl, plan, planInfo, info, started)
}

// withDefaults fills the zero fields of cfg.
func withDefaults(cfg Config) Config {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.SubsampleMax <= 0 {
		cfg.SubsampleMax = defaultSubsample
	}
	if cfg.SubsampleMax < 2 {
		cfg.SubsampleMax = 2
	}
	if cfg.SubsampleBytes <= 0 {
		cfg.SubsampleBytes = defaultSubsampleBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Counters == nil {
		cfg.Counters = &pipeline.Counters{}
	}
	if cfg.TmpDir == "" {
		cfg.TmpDir = os.TempDir()
	}
	if cfg.FormatSplit == nil {
		cfg.FormatSplit = func(_ pipeline.Type, v pipeline.Value) string { return v.String() }
	}
	return cfg
}

// sample applies --sample: one row in k (sampleSkips), the first N rows, or a spread sample read up front
// (then the source to read is that sample).
func (r *runner) sample(ctx context.Context) (pipeline.Source, model.SourceInfo, error) {
	cfg, src := r.cfg, r.cfg.Source
	info := model.SourceInfo{URI: cfg.SourceURI, EstimatedRows: r.estRows, Sample: "all", Scale: 1, ScaleKnown: true}
	switch s := cfg.Sample; {
	case s.Fraction > 0 && s.Fraction < 1:
		r.every = max(1, int64(math.Round(1/s.Fraction)))
		info.Sampled, info.Sample = true, everyLabel(r.every)
	case s.Rows > 0:
		sampler, isSampler := src.(pipeline.Sampler)
		if h, ok := src.(pipeline.HeadSampler); ok && h.SamplesHead() {
			// its sample is no spread of the input but the first rows (a gzip file's): read
			// one row in k of it, or its first rows, and say so
			isSampler = false
		}
		switch {
		case r.estRows >= 0 && s.Rows >= r.estRows:
			// the whole input is smaller than the sample
		case isSampler && s.Rows <= samplerMaxRows:
			bs, err := sampleBatches(ctx, sampler, int(s.Rows))
			if err != nil {
				return nil, info, fmt.Errorf("report: sample the source: %w", err)
			}
			ss := &sliceSource{batches: bs}
			src = ss
			rows := ss.rows()
			info.Sampled, info.Sample = true, strconv.FormatInt(int64(rows), 10)+" rows spread over the input"
			if d, ok := sampler.(pipeline.SampleDescriber); ok {
				info.Sample = d.DescribeSample(rows)
			}
			if r.estRows > 0 {
				info.Scale = float64(r.estRows) / float64(max(1, rows))
			} else {
				info.ScaleKnown = false
			}
		case r.estRows > 0:
			r.every = max(1, (r.estRows+s.Rows-1)/s.Rows)
			if r.every > 1 {
				info.Sampled, info.Sample = true, everyLabel(r.every)
			}
		default:
			r.limit = s.Rows
			info.Sampled, info.Sample, info.ScaleKnown = true, "first "+strconv.FormatInt(s.Rows, 10)+" rows", false
		}
	}
	if cfg.Whole > 0 && r.estRows > 0 && cfg.Whole > r.estRows {
		// the source is itself part of its input: what it reads is a sample of that, whatever
		// --sample takes of it
		r.partScale = float64(cfg.Whole) / float64(r.estRows)
		if info.Sampled {
			info.Sample += ", of " + cfg.Part
		} else {
			info.Sampled, info.Sample = true, cfg.Part
		}
		info.Scale *= r.partScale
	}
	if cfg.Whole < 0 {
		// a part of an input of unknown size: a sample, never the whole, by an unknown factor
		if info.Sampled {
			info.Sample += ", of " + cfg.Part
		} else {
			info.Sampled, info.Sample = true, cfg.Part
		}
		info.ScaleKnown = false
	}
	return src, info, nil
}

// plan chooses the region plan from the sample and sets up the design and the advisor.
func (r *runner) plan(sample [][]pipeline.Value) (pipeline.RegionPlan, model.PlanInfo, error) {
	cfg := r.cfg
	est := cfg.EstimatedBytes
	if est <= 0 {
		est = r.prog.EstimateBytes(sample, r.estRows)
	}
	plan, planInfo, err := r.choosePlan(sample, est)
	if err != nil {
		return plan, planInfo, err
	}
	r.d = collide.NewDesign(r.prog, plan)
	r.queries = cfg.Queries
	if r.queries == nil && cfg.Mapping != nil {
		r.queries = cfg.Mapping.Queries
	}
	r.adv = advise.NewAdvisor(r.prog, r.cfg.Mapping, r.queries, r.cfg.Workers, r.workload(), planInfo.Asked)
	r.hashed = min(len(r.prog.Source()), collide.MaxHashedColumns)
	if len(r.adv.Specs) > 0 {
		r.saltN = uint64(r.adv.N) // the salt design's random(n): the regions asked, not the plan's
	}
	return plan, planInfo, nil
}

// analyse runs every row through the workers: sketches per worker (merged into total), the
// collision check's temp files, and the timeline in arrival order. cleanup removes the temp
// files; call it after assemble.
func (r *runner) analyse(ctx context.Context, feed *pipeline.Feed, held []pipeline.Batch, plan pipeline.RegionPlan) (tl *timeline, total *collide.Acc, cleanup func(), err error) {
	cfg := r.cfg
	var closers []func()
	cleanup = func() {
		for _, c := range closers {
			c()
		}
	}
	fail := func(err error) (*timeline, *collide.Acc, func(), error) {
		_ = feed.Discard()
		return nil, nil, cleanup, err
	}
	sp, err := collide.NewSpill(cfg.TmpDir, collide.SpillBuckets(r.expectedAnalysed()), r.log)
	if err != nil {
		return fail(err)
	}
	r.spill = sp
	closers = append(closers, sp.Close)
	sp.LeaveOutOriginHashes(r.d.SrcCols, r.hashed)
	if r.prog.UsesSalt() && len(r.adv.Sets) > 0 {
		if r.bySource, err = collide.NewSpill(cfg.TmpDir, collide.SpillBuckets(r.expectedAnalysed()), r.log); err != nil {
			return fail(err)
		}
		closers = append(closers, r.bySource.Close)
		r.rereadable = nil // the source key's check keeps its texts: no second read
	}
	tl = newTimeline(plan.Count(), r.expectedAnalysed(), cfg.SubsampleMax, cfg.SubsampleBytes, r.every, plan.Type)
	r.order = collide.NewOrderModel(r.prog, cfg.Order)
	if collide.HasAxis(r.order.Primary.Kind) {
		tl.heat = collide.NewTimeHeat(plan.Count())
	}
	tl.order = r.order
	if b := r.order.Backup; b != nil && collide.HasAxis(b.Kind) {
		tl.heat2 = collide.NewTimeHeat(plan.Count())
	}
	accs, o, err := r.pass(ctx, held, feed, tl)
	if err != nil {
		return nil, nil, cleanup, err
	}
	if err := o.SourceErr; err != nil {
		return nil, nil, cleanup, fmt.Errorf("report: source: %w", err)
	}
	total = accs[0]
	for _, a := range accs[1:] {
		total.Merge(a)
	}
	return tl, total, cleanup, nil
}

// assemble runs the collision check and the advisor and builds the report.
func (r *runner) assemble(ctx context.Context, total *collide.Acc, tl *timeline, plan pipeline.RegionPlan, planInfo model.PlanInfo, info model.SourceInfo, started time.Time) (*model.Report, error) {
	cfg := r.cfg
	// the collision check reads the temp files while the write order is put together and the
	// advisor analyses its designs on the subsample; the exact figures are put together after both
	counted := time.Now()
	var coll, coll2 collide.CollisionResult
	var err error
	var countTook time.Duration
	counting := make(chan struct{})
	go func() {
		coll, coll2, err = r.countCollisions(ctx)
		countTook = time.Since(counted)
		close(counting)
	}()
	ord := r.writeOrder(tl, total.Rows)
	// a sequence's values are judged dense against the rows of the input the subsample stands
	// for: --sample's rows stand for k times as many
	stands := int64(float64(total.Rows) * r.sampleScale(tl, info))
	judged := make(chan struct{})
	go func() {
		r.judge(tl, &ord, stands)
		close(judged)
	}()
	r.adv.Wo, r.adv.Analysed, r.adv.Inferred = ord.wo, stands, ord.kind == model.OrderTimeColumn
	advised := time.Now()
	if len(r.adv.Specs) > 0 && len(tl.subsample) > 0 {
		r.adv.SpreadBuckets(tl.subsample)
		r.adv.AddRewrites(tl.subsample, total)
		r.adv.Results, r.adv.Errs = r.adv.Evaluate(tl.subsample, r.adv.Specs, true)
	}
	<-judged
	<-counting
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(started)
	r.log.Info("collision check", zap.Int64("keys", coll.Keys), zap.Int64("collision_rows", coll.Rows), zap.Duration("took", countTook))

	if !info.Sampled || r.every > 1 {
		info.Scale = r.partScale
		if tl.analysed > 0 && r.every > 1 {
			info.Scale = float64(tl.read) / float64(tl.analysed) * r.partScale
		}
	}
	if r.limit > 0 {
		if r.estRows > 0 && tl.read > 0 {
			info.Scale, info.ScaleKnown = float64(r.estRows)/float64(tl.read)*r.partScale, true
		}
	}
	if cfg.Unread != nil {
		if what := cfg.Unread(); what != "" {
			// the rows read are part of the input: a sample of it, of the rows read over the
			// source's estimate when nothing else sampled it
			if !info.Sampled && r.estRows > tl.read && tl.read > 0 {
				info.Scale = float64(r.estRows) / float64(tl.read) * r.partScale
			}
			if info.Sampled {
				info.Sample += ", " + what
			} else {
				info.Sampled, info.Sample = true, what
			}
		}
	}
	rep := r.build(total, tl, coll, plan, planInfo, info, elapsed, ord)
	rep.Queries = r.queryInfo()
	rep.HotRows = ord.hot
	rep.Workload = r.workload()
	rep.Design = r.prog.DesignRules(cfg.Regions > 0)
	ex := advise.ExactFigures{Mapping: coll, Sets: coll2, Analysed: tl.analysed, Rejected: total.Rejected, SourceRejected: total.SourceRejected, SetsExact: len(r.adv.Sets) > 0}
	if m := cfg.Mapping; m != nil {
		compile := func(pk string) (*transform.Program, error) {
			m2 := *m
			m2.Target.PrimaryKey = pk
			return transform.Compile(&m2, r.prog.Source())
		}
		ex.Suggest = advise.SuggestKey(coll, r.prog, m.Target.PrimaryKey, compile)
		rep.Uniqueness.Suggestion = ex.Suggest
		derived := ex.Suggest
		if r.bySource != nil {
			// the source key's own collisions were compared in the second check
			derived = advise.SuggestKey(coll2, r.prog, advise.Bracketed(advise.SourceKey(r.prog)), compile)
		}
		if derived != nil && derived.SeparatesAll && derived.Checked {
			ex.Derived = derived.Add
		}
	}
	rep.Alternatives = r.adv.Finish(tl.subsample, ex)
	rep.Indexes = r.adv.IndexOffers(rep.Alternatives, r.prog.Table())
	r.log.Info("advisor", zap.Int("subsample", len(tl.subsample)), zap.Int("designs", len(rep.Alternatives)), zap.Duration("took", time.Since(advised)))
	r.recommend(rep, tl.subsample)
	advise.Evaluate(rep, cfg.Strict)
	return rep, nil
}

// sampleScale is how many rows of the source each row --sample analyses stands for: the rows
// read over those analysed for one row in k, the source's estimate over the rows of a spread
// sample; 1 without --sample, for the first N rows of a source of unknown size, and for a source
// that reads a part of its input (a window is a stretch of it, its values as dense as the
// input's).
func (r *runner) sampleScale(tl *timeline, info model.SourceInfo) float64 {
	switch {
	case r.every > 1 && tl.analysed > 0:
		return float64(tl.read) / float64(tl.analysed)
	case r.every > 1 || r.limit > 0 || !info.Sampled || !info.ScaleKnown || r.partScale <= 0:
		return 1
	}
	return max(1, info.Scale/r.partScale) // a spread sample (Source.sample): the source's estimate over its rows
}

// countCollisions runs the collision check: the mapping's key (with the column sets the advisor
// needs, unless the key has a salt), and the source key's when it does.
func (r *runner) countCollisions(ctx context.Context) (collide.CollisionResult, collide.CollisionResult, error) {
	spec := collide.CountSpec{MaxExamples: maxCollisionExamples, MaxOrigins: maxExampleOrigins, Pairs: true, Cols: r.hashed}
	if r.bySource == nil {
		spec.Sets, spec.Salted, spec.SaltN, spec.SaltOrder = r.adv.Sets, r.saltN > 0, r.saltN, r.prog.SaltOrder()
	}
	first := spec
	first.KeysOnly = r.rereadable != nil
	coll, err := r.spill.Count(first)
	if err == nil && first.KeysOnly && coll.Colliding > 0 {
		coll, err = r.recount(ctx, spec, coll)
	}
	if err != nil || r.bySource == nil {
		return coll, coll, err
	}
	spec2 := collide.CountSpec{Pairs: true, Cols: r.hashed, Sets: r.adv.Sets, Salted: r.saltN > 0, SaltN: r.saltN, SaltOrder: r.prog.SaltOrder()}
	coll2, err := r.bySource.Count(spec2)
	return coll, coll2, err
}

// sampleCollides: two rows of the plan sample (target rows) share a key but differ. Keys that
// collide widely show it there; the report then keeps every row's text in its first read
// rather than read the source twice.
func sampleCollides(sample [][]pipeline.Value, keyLen int) bool {
	rows := make(map[uint64]uint64, len(sample))
	for _, row := range sample {
		kh, rh := collide.HashValues(row[:keyLen]), collide.HashValues(row)
		if prev, ok := rows[kh]; ok && prev != rh {
			return true
		}
		rows[kh] = rh
	}
	return false
}

// recount completes the collision check of a first read that left the rows' texts out and
// found colliding keys (first): the source is read again, the rows of those keys are spilled
// with their texts, and counted with spec. The second read must find the same collisions, or
// the source changed in between.
func (r *runner) recount(ctx context.Context, spec collide.CountSpec, first collide.CollisionResult) (collide.CollisionResult, error) {
	started := time.Now()
	keys := first.CollidingKeys
	if first.Colliding > int64(len(keys)) {
		keys = nil // too many to look for: every row
	} else {
		slices.Sort(keys)
	}
	r.log.Info("collision check: reading the source again for the rows of the colliding keys",
		zap.Int64("colliding_keys", first.Colliding), zap.Bool("every_row", keys == nil))
	var read pipeline.Counters
	done := func() {}
	if r.cfg.Reread != nil {
		done = r.cfg.Reread(&read)
	}
	sp, err := r.respill(ctx, keys, &read)
	done()
	if err != nil {
		return first, err
	}
	defer sp.Close()
	res, err := sp.Count(spec)
	if err != nil {
		return first, err
	}
	if res.Colliding != first.Colliding || res.Rows != first.Rows {
		return first, fmt.Errorf("report: collision check: the source changed between its two reads (%d colliding keys, then %d): run the report again on input that stays as it is while it is read", first.Colliding, res.Colliding)
	}
	// the second spill held the colliding keys' rows: the keys and duplicates are the first's
	res.Keys, res.Duplicates = first.Keys, first.Duplicates
	r.log.Info("collision check: second read", zap.Duration("took", time.Since(started)))
	return res, nil
}

// respill reads the source again, as the first read did (the same sampling and limit), and
// spills with their texts the rows whose key hash is in keys (sorted; nil: every row); read
// counts the rows read.
func (r *runner) respill(ctx context.Context, keys []uint64, read *pipeline.Counters) (*collide.Spill, error) {
	cfg := r.cfg
	buckets := collide.MinBuckets
	if keys == nil {
		buckets = collide.SpillBuckets(r.expectedAnalysed())
	}
	sp, err := collide.NewSpill(cfg.TmpDir, buckets, r.log)
	if err != nil {
		return nil, err
	}
	sp.LeaveOutOriginHashes(r.d.SrcCols, r.hashed)
	o, err := pipeline.NewEngine(pipeline.EngineConfig{Source: r.rereadable, Workers: cfg.Workers, Queue: cfg.Workers, Limit: r.limit,
		NewWorker: func(int) (func(context.Context, *pipeline.Job) error, func()) {
			wk := &worker{r: r, ev: r.prog.NewEvaluator(), sw: sp.Writer(), out: make([]pipeline.Value, len(r.prog.Target().Columns))}
			return func(_ context.Context, j *pipeline.Job) error {
				read.RowsIn.Add(int64(len(j.Batch.Records)))
				wk.respill(&j.Batch, j.FirstOrd, keys)
				return nil
			}, wk.sw.Flush
		}}).Run(ctx)
	if err == nil {
		err = o.SourceErr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		sp.Close()
		return nil, fmt.Errorf("report: collision check: second read of the source: %w", err)
	}
	return sp, nil
}

// respill spills the rows of a batch the second read gave whose key hash is in keys (nil: all).
func (w *worker) respill(b *pipeline.Batch, firstOrd int64, keys []uint64) {
	r := w.r
	var sid uint64
	if len(b.Records) > 0 {
		sid = w.sw.S.StreamID(b.Stream)
	}
	for i := range b.Records {
		if sampleSkips(r.every, firstOrd+int64(i)) {
			continue
		}
		rec := &b.Records[i]
		if rec.Err != nil || w.ev.Apply(b, rec, w.out) != nil {
			continue
		}
		key := w.out[:r.d.KeyLen]
		kh := collide.HashValues(key)
		if _, found := slices.BinarySearch(keys, kh); keys != nil && !found {
			continue
		}
		w.spillRow(sid, b, rec, key, kh, true)
	}
	w.ev.Reset()
}

// workload is how the advisor weighs reads against write spread: Config.Workload, else the
// mapping's workload:, else reads first.
func (r *runner) workload() string {
	switch {
	case r.cfg.Workload != "":
		return r.cfg.Workload
	case r.cfg.Mapping != nil && r.cfg.Mapping.Workload != "":
		return r.cfg.Mapping.Workload
	}
	return transform.WorkloadReadsFirst
}

// queryInfo lists the declared queries.
func (r *runner) queryInfo() []model.QueryInfo {
	origin := "mapping"
	if r.cfg.Queries != nil {
		origin = "--query"
	}
	out := []model.QueryInfo{}
	for _, q := range r.queries {
		eq := append([]string{}, q.Equal...)
		out = append(out, model.QueryInfo{Query: q.String(), Equal: eq, Range: q.Range, NewestFirst: q.NewestFirst, Origin: origin})
	}
	return out
}

// everyLabel names the sample of one row in every: not every k-th row (see sampleSkips).
func everyLabel(every int64) string {
	return "1 row in " + strconv.FormatInt(every, 10) + ", chosen by a hash of its position"
}

// sampleSkips tells whether --sample leaves out the row of ordinal ord: it keeps one row in
// every, chosen by a hash of the ordinal, not every k-th row, which lines up with a key cycling
// with the row number (every 5th sequential order number ends in 0 or 5).
func sampleSkips(every, ord int64) bool {
	return every > 1 && pipeline.SplitMix64(uint64(ord))%uint64(every) != 0
}

func (r *runner) expectedAnalysed() int64 {
	n := r.estRows
	if r.limit > 0 && (n < 0 || r.limit < n) {
		n = r.limit
	}
	if n > 0 && r.every > 1 {
		n /= r.every
	}
	return n
}

// prefixSample holds the stream's first batches until planSampleRows records are read, or half
// of SubsampleBytes: a source that cannot sample (a stream) places its quantile splits from its
// first rows.
func (r *runner) prefixSample(ctx context.Context, batches <-chan pipeline.Batch) ([]pipeline.Batch, [][]pipeline.Value, error) {
	var held []pipeline.Batch
	var recs []pipeline.Record
	var bytes int64
	for len(recs) < planSampleRows && bytes < r.cfg.SubsampleBytes/2 {
		select {
		case b, ok := <-batches:
			if !ok {
				return held, r.prog.SampleRows(recs), nil
			}
			held = append(held, b)
			recs = append(recs, b.Records...)
			for i := range b.Records {
				bytes += b.Records[i].Size()
			}
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return held, r.prog.SampleRows(recs), nil
}

// bulkRegions is the design guide's bulkload pre-split: data size / region size, at least 1.
func bulkRegions(bytes, regionSize int64) int {
	if regionSize <= 0 {
		regionSize = transform.DefaultRegionSize
	}
	n := (bytes + regionSize - 1) / regionSize
	return int(min(max(n, 1), 1<<20))
}

// choosePlan picks the plan to analyse: --regions, else the mapping's regions: section, else the
// recommendation (bulkload data size / 8 GiB, or nodes x 4), and when all of these give a single
// region, 16 regions: with one region every write lands in it whatever the key, and the report's
// point is how the key spreads once the table has many.
func (r *runner) choosePlan(sample [][]pipeline.Value, est int64) (pipeline.RegionPlan, model.PlanInfo, error) {
	prog := r.prog
	req := transform.RegionRequest{Sample: sample, EstimatedBytes: est}
	var info model.PlanInfo
	var plan pipeline.RegionPlan
	var err error
	switch {
	case r.cfg.Regions > 0:
		req.Count = r.cfg.Regions
		plan, err = prog.PlanRegions(req)
		info.Origin = "--regions"
	default:
		plan, err = prog.PlanRegions(req)
		info.Origin = "mapping"
		if err == nil && plan.Count() <= 1 {
			n := bulkRegions(est, prog.RegionSize())
			info.Origin = "recommendation"
			if r.cfg.Nodes > 0 {
				n = max(n, 4*r.cfg.Nodes)
			}
			if n <= 1 {
				n = collide.DefaultAnalysisRegions
				info.Origin = "default"
				info.Note = fmt.Sprintf("the mapping and the data size (%s estimated) give a single region, where every write lands whatever the key; the distribution is analysed over %d regions, as the table will have once Lindorm splits it (--regions to choose)", transform.FormatSize(est), n)
			}
			req.Count = n
			plan, err = prog.PlanRegions(req)
		}
	}
	if err != nil && len(sample) == 0 {
		// nothing to place quantile splits from (an empty input, or every sampled row rejected)
		first := prog.Target().Columns[0]
		plan, err = pipeline.RegionPlan{Type: first.Type, Desc: first.Desc, Strategy: "single"}, nil
		info.Note = strings.TrimSpace(info.Note + " no source rows to place quantile split keys from: one region.")
	}
	if err != nil {
		return plan, info, fmt.Errorf("report: region plan: %w", err)
	}
	if plan.Count() < req.Count && plan.Strategy == "quantile" {
		info.Note = strings.TrimSpace(info.Note + fmt.Sprintf(" %d regions asked, %d placed: the sampled first column has too few distinct values for more quantile splits.", req.Count, plan.Count()))
	}
	info.Regions, info.Strategy, info.Desc = plan.Count(), plan.Strategy, plan.Desc
	info.Asked = max(req.Count, r.mappingRegionCount(est), plan.Count())
	info.SplitKeys = []string{}
	for _, s := range plan.Splits {
		info.SplitKeys = append(info.SplitKeys, r.cfg.FormatSplit(plan.Type, s))
	}
	return plan, info, nil
}

// pass runs every batch through the workers and feeds the timeline in arrival order: the
// engine hands the batches out in source order, the workers process them in any order, and its
// in-order step consumes each in turn once its worker is done with it. The held batches (a prefix
// sample) go first, then the rest of feed.
func (r *runner) pass(ctx context.Context, held []pipeline.Batch, feed *pipeline.Feed, tl *timeline) ([]*collide.Acc, pipeline.Outcome, error) {
	cfg := r.cfg
	workers := cfg.Workers
	jobPool := sync.Pool{New: func() any { return &job{} }}
	accs := make([]*collide.Acc, workers)
	o, err := pipeline.NewEngine(pipeline.EngineConfig{Feed: feed, Held: held, Workers: workers, Queue: workers, Limit: r.limit,
		NewWorker: func(i int) (func(context.Context, *pipeline.Job) error, func()) {
			a := collide.NewAcc(r.d)
			accs[i] = a
			wk := &worker{r: r, a: a, ev: r.prog.NewEvaluator(), sw: r.spill.Writer(),
				out: make([]pipeline.Value, len(r.prog.Target().Columns))}
			if r.bySource != nil {
				wk.sw2 = r.bySource.Writer()
			}
			return func(_ context.Context, pj *pipeline.Job) error {
					j := jobPool.Get().(*job)
					j.batch, j.firstOrd = pj.Batch, pj.FirstOrd
					wk.process(j)
					pj.Data = j
					return nil
				}, func() {
					wk.sw.Flush()
					if wk.sw2 != nil {
						wk.sw2.Flush()
					}
				}
		},
		Ack: func(pj *pipeline.Job) error {
			j := pj.Data.(*job)
			tl.consume(j, r.every)
			// nothing refers to the records anymore (the subsample and the first and last values
			// are copies): the engine gives their memory back to the source
			j.batch = pipeline.Batch{}
			j.first, j.last = pipeline.Value{}, pipeline.Value{}
			jobPool.Put(j)
			return nil
		}}).Run(ctx)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, o, err
	}
	return accs, o, nil
}

// Workers are allocated one after the other and write their fields for every row: the pads keep
// two workers (and their jobs) off one cache line, which otherwise bounces between the cores.
type worker struct {
	_    cpu.CacheLinePad
	r    *runner
	a    *collide.Acc
	ev   *transform.Evaluator
	sw   *collide.SpillWriter
	sw2  *collide.SpillWriter // the source-key check, when there is one
	out  []pipeline.Value
	cols []uint64 // the record's column hashes
	salt []byte   // scratch for saltToken
	_    cpu.CacheLinePad
}

func (w *worker) process(j *job) {
	r, a := w.r, w.a
	d := r.d
	b := &j.batch
	j.regions = j.regions[:0]
	j.wo, j.wo2 = j.wo[:0], j.wo2[:0]
	j.hasFirst = false
	j.analysed = 0
	a.HasPrev = false
	var sid uint64
	if len(b.Records) > 0 {
		sid = r.spill.StreamID(b.Stream)
	}
	var ok, rejected int64
	out := w.out
	for i := range b.Records {
		ord := j.firstOrd + int64(i)
		if sampleSkips(r.every, ord) {
			continue
		}
		j.analysed++
		rec := &b.Records[i]
		if rec.Err != nil {
			rejected++
			a.SourceRejected++
			e := rec.Err
			a.Reject(e.Code, ord, func() model.RejectExample {
				return model.RejectExample{Position: b.Position(rec), Stage: "source", Code: e.Code, Field: e.Field, Message: e.Message}
			})
			continue
		}
		if e := w.ev.Apply(b, rec, out); e != nil {
			rejected++
			a.Reject(e.Code, ord, func() model.RejectExample {
				return model.RejectExample{Position: b.Position(rec), Stage: "transform", Code: e.Code, Field: e.Field, Message: e.Message}
			})
			continue
		}
		ok++
		region := d.Route(out[0])
		a.Row(out, region)
		key := out[:d.KeyLen]
		w.spillRow(sid, b, rec, key, collide.HashValues(key), r.rereadable == nil)
		w.finish(j, b, i, ord, region)
	}
	if j.hasFirst {
		j.last = cloneValue(a.Prev)
	}
	a.HasPrev = false
	a.Prev = pipeline.Value{}
	w.ev.Reset()
	c := r.cfg.Counters
	c.RowsIn.Add(int64(len(b.Records)) + b.Skipped) // the rows the source left out were read too
	// skipped: those, and the rows the sample passed over, as --stats-json counts them
	c.RowsSkipped.Add(b.Skipped + int64(len(b.Records)) - int64(j.analysed))
	c.RowsWritten.Add(ok)
	c.RowsRejected.Add(rejected)
}

// spillRow adds a row, whose key is key (hashed kh), to the collision check (w.sw; sid: its
// stream's id there): its record, and its text when withText. Without the text the record's
// source hash is the same as with it: the rows a second read spills (respill) count alike.
func (w *worker) spillRow(sid uint64, b *pipeline.Batch, rec *pipeline.Record, key []pipeline.Value, kh uint64, withText bool) {
	r, d, sw := w.r, w.r.d, w.sw
	var keep []pipeline.Value
	long := longSource(rec.Values, d.SrcCols)
	if d.StoreKey || long {
		keep = key
	}
	// the text goes straight into the spill's buffer
	text := sw.TextFor(kh)
	mark := len(text)
	if vals := rec.Values; r.saltN > 0 && w.sw2 == nil && len(vals) <= len(r.prog.Source()) && collide.FitsWhole(vals) {
		// the salt and the column hashes are computed by the collision check, for the rows
		// it reads. Equal rows always come here together, so their source hashes (the
		// values' encoding's, not hashColumns') are equal.
		var src uint64
		text, src = collide.AppendWhole(text, b.SaltOrigin, sid, rec.Seq, keep, vals)
		if !withText {
			text = text[:mark]
		}
		sw.Commit(kh, src, text)
		return
	}
	var src uint64
	w.cols, src = collide.HashColumns(rec.Values, w.cols)
	if !withText && w.sw2 == nil {
		sw.Commit(kh, src, text)
		return
	}
	var salt uint64
	if r.saltN > 0 {
		var tok uint64
		tok, w.salt = transform.SaltToken(w.salt, b, rec, r.prog.SaltOrder())
		salt = tok % r.saltN
	}
	var skip uint64
	if !long && w.sw2 == nil { // the source-key check's texts are the row info alone
		skip = sw.S.Skip
	}
	text = collide.AppendRowInfo(text, salt, w.cols, r.hashed, skip)
	if w.sw2 != nil {
		w.sw2.Add(collide.HashSubset(w.cols, d.SrcCols), src, text[mark:])
	}
	text = collide.AppendOrigin(text, sid, rec.Seq, keep, d.SrcCols, rec.Values)
	sw.Commit(kh, src, text)
}

// finish records an accepted row's region and write order in its job.
func (w *worker) finish(j *job, b *pipeline.Batch, i int, ord int64, region int) {
	r := w.r
	j.regions = append(j.regions, uint32(region))
	j.wo = append(j.wo, r.order.Primary.Value(b, i, ord))
	if bk := r.order.Backup; bk != nil {
		j.wo2 = append(j.wo2, bk.Value(b, i, ord))
	}
	if !j.hasFirst {
		j.first, j.hasFirst = cloneValue(w.out[0]), true
	}
}

func cloneValue(v pipeline.Value) pipeline.Value {
	v.Str = strings.Clone(v.Str)
	return v
}

// timeline is what needs arrival order: windows, monotonicity across batch boundaries and the
// advisor's order-preserving subsample.
type timeline struct {
	w        *collide.Windows
	typ      pipeline.Type
	read     int64 // records delivered
	skipped  int64 // rows the source read and left out itself (Batch.Skipped)
	analysed int64 // records run through the mapping
	last     pipeline.Value
	hasLast  bool
	up, down int64
	pairs    int64

	heat  *collide.TimeHeat // by the write order's best evidence; nil when it is no time or value (arrival, offsets)
	heat2 *collide.TimeHeat // by the fallback evidence
	order *collide.OrderModel

	subsample []pipeline.Record
	subWO     []int64 // each kept record's write-order value (best evidence)
	subWO2    []int64 // and its fallback's
	subLevel  []uint8 // each kept record's level (see sampleLevel)
	subMax    int
	subBytes  int64 // the kept records' bytes, at most subBudget (or one record)
	subBudget int64
	level     uint8 // keep analysed records whose level is at least this
}

// sampleLevel is an analysed record's level: the trailing zero bits of a hash of its ordinal.
// The advisor's subsample keeps the records of level >= L (one in 2^L, in arrival order) and,
// when full, raises L and drops the others: bounded like every k-th record, but without its
// aliasing (every 20th row of data that advances 2 ms a row has ts % 16 in {0, 8} only, and a
// modulo bucket would look twice as hot as it is).
func sampleLevel(ord int64) uint8 {
	return uint8(bits.TrailingZeros64(collide.Mix64(uint64(ord), 0x5a3b1e) | 1<<62))
}

func newTimeline(regions int, expected int64, subMax int, subBudget int64, every int64, typ pipeline.Type) *timeline {
	tl := &timeline{w: collide.NewWindows(regions, expected, collide.MainWindows, collide.MainWindowsMax), typ: typ, subMax: subMax, subBudget: subBudget}
	for expected > int64(subMax)<<tl.level {
		tl.level++
	}
	// the subsample's slices at the size it will reach (one growth copy after another cost a
	// small report a fifth of its time)
	n := subMax + 1
	if expected > 0 {
		n = int(min(int64(n), expected>>tl.level+1))
	}
	tl.subsample = make([]pipeline.Record, 0, n)
	tl.subWO, tl.subWO2 = make([]int64, 0, n), make([]int64, 0, n)
	tl.subLevel = make([]uint8, 0, n)
	return tl
}

func (tl *timeline) consume(j *job, every int64) {
	for i, reg := range j.regions {
		tl.w.Add(int(reg))
		if tl.heat != nil {
			tl.heat.Add(j.wo[i], int(reg))
		}
		if tl.heat2 != nil {
			tl.heat2.Add(j.wo2[i], int(reg))
		}
	}
	if j.hasFirst {
		if tl.hasLast {
			c := pipeline.Compare(tl.typ, tl.last, j.first)
			if c <= 0 {
				tl.up++
			}
			if c >= 0 {
				tl.down++
			}
			tl.pairs++
		}
		tl.last, tl.hasLast = j.last, true
	}
	recs := j.batch.Records
	for i := range recs {
		ord := j.firstOrd + int64(i)
		if sampleSkips(every, ord) {
			continue
		}
		a := tl.analysed
		tl.analysed++
		lv := sampleLevel(a)
		if lv < tl.level || recs[i].Err != nil {
			continue
		}
		wo2 := int64(collide.NoTime)
		if bk := tl.order.Backup; bk != nil {
			wo2 = bk.Value(&j.batch, i, ord)
		}
		tl.subsample = append(tl.subsample, cloneRecord(&recs[i]))
		tl.subBytes += tl.subsample[len(tl.subsample)-1].Size()
		tl.subWO = append(tl.subWO, tl.order.Primary.Value(&j.batch, i, ord))
		tl.subWO2 = append(tl.subWO2, wo2)
		tl.subLevel = append(tl.subLevel, lv)
		for len(tl.subsample) > tl.subMax || tl.subBytes > tl.subBudget && len(tl.subsample) > 1 {
			// keep the records of the next level: still one in 2^level, in order
			tl.level++
			k := 0
			tl.subBytes = 0
			for q := range tl.subsample {
				if tl.subLevel[q] >= tl.level {
					tl.subsample[k], tl.subLevel[k] = tl.subsample[q], tl.subLevel[q]
					tl.subWO[k], tl.subWO2[k] = tl.subWO[q], tl.subWO2[q]
					tl.subBytes += tl.subsample[k].Size()
					k++
				}
			}
			clear(tl.subsample[k:])
			tl.subsample, tl.subLevel = tl.subsample[:k], tl.subLevel[:k]
			tl.subWO, tl.subWO2 = tl.subWO[:k], tl.subWO2[:k]
		}
	}
	tl.read += int64(len(recs))
	tl.skipped += j.batch.Skipped
}

// cloneRecord copies a record's values and strings into one allocation each.
func cloneRecord(r *pipeline.Record) pipeline.Record {
	n := 0
	for _, v := range r.Values {
		n += len(v.Str)
	}
	buf := make([]byte, 0, n)
	for _, v := range r.Values {
		buf = append(buf, v.Str...)
	}
	all := string(buf)
	vals := make([]pipeline.Value, len(r.Values))
	off := 0
	for i, v := range r.Values {
		vals[i] = pipeline.Value{Kind: v.Kind, Num: v.Num, Str: all[off : off+len(v.Str)]}
		off += len(v.Str)
	}
	return pipeline.Record{Values: vals, Seq: r.Seq}
}

// sampleBatches draws a sample as batches: a BatchSampler's keep their streams and write
// times (the write order's evidence), a plain Sampler's records make one batch.
func sampleBatches(ctx context.Context, s pipeline.Sampler, n int) ([]pipeline.Batch, error) {
	if bs, ok := s.(pipeline.BatchSampler); ok {
		return bs.SampleBatches(ctx, n)
	}
	recs, err := s.Sample(ctx, n)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return []pipeline.Batch{{Stream: "sample", Records: recs}}, nil
}

// sliceSource replays a sample's batches, cut to at most 4096 records each.
type sliceSource struct {
	batches []pipeline.Batch
}

func (s *sliceSource) rows() int {
	n := 0
	for _, b := range s.batches {
		n += len(b.Records)
	}
	return n
}

func (s *sliceSource) Run(ctx context.Context, _ map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	const batch = 4096
	for _, sb := range s.batches {
		for i := 0; i < len(sb.Records); i += batch {
			end := min(i+batch, len(sb.Records))
			b := pipeline.Batch{Stream: sb.Stream, Records: sb.Records[i:end], Done: end == len(sb.Records), SaltOrigin: sb.SaltOrigin}
			if sb.WriteTimes != nil {
				b.WriteTimes = sb.WriteTimes[i:end]
			}
			select {
			case out <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// longSource tells whether a value the key is computed from is longer than the temp files keep
// (then the key cannot be recomputed from them and is kept itself).
func longSource(vals []pipeline.Value, cols []int) bool {
	for _, c := range cols {
		if c < len(vals) && len(vals[c].Str) > collide.MaxOriginText {
			return true
		}
	}
	return false
}
