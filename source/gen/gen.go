// Package gen provides synthetic sources for demos and benchmarks, named by URIs such as
// "gen:orders?rows=1000000&seed=7". Row i is a pure function of (seed, i): a full run, a resumed
// run, a parallel run and a sample all see the same rows.
package gen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// Config selects a generator and its size.
type Config struct {
	Name      string // generator: orders, logs, transactions
	Rows      int64  // rows to generate (default 1,000,000)
	Seed      int64  // default 1
	BatchSize int    // rows per batch (default 4096)
	Workers   int    // parallel generators (default GOMAXPROCS)
	// Shard, when not whole, generates only its part of the rows: shard i of N has rows
	// [Rows*i/N, Rows*(i+1)/N), the same rows a whole run gives them.
	Shard pipeline.Shard
}

const (
	defaultRows      = 1000000
	defaultBatchSize = 4096
)

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	if _, ok := generators[c.Name]; !ok {
		return fmt.Errorf("gen: unknown generator %q (have %s)", c.Name, strings.Join(Names(), ", "))
	}
	if c.Rows < 0 {
		return fmt.Errorf("gen:%s: rows must not be negative", c.Name)
	}
	if c.BatchSize <= 0 {
		c.BatchSize = defaultBatchSize
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	return nil
}

// ParseURI reads "gen:NAME?rows=N&seed=S". rows defaults to 1,000,000 and accepts k, m and b
// suffixes ("5m"); seed defaults to 1.
func ParseURI(uri string) (Config, error) {
	rest, ok := strings.CutPrefix(uri, "gen:")
	if !ok {
		return Config{}, fmt.Errorf("source %q: want gen:NAME?rows=N&seed=S", uri)
	}
	rest = strings.TrimPrefix(rest, "//")
	name, query, _ := strings.Cut(rest, "?")
	cfg := Config{Name: name, Rows: defaultRows, Seed: 1}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Config{}, fmt.Errorf("source %q: %w", uri, err)
	}
	for k, vs := range q {
		if len(vs) != 1 { // which one was meant is a guess
			return Config{}, fmt.Errorf("source %q: parameter %q is given %d times: give it once", uri, k, len(vs))
		}
		v := vs[0]
		switch k {
		case "rows":
			if cfg.Rows, err = parseCount(v); err != nil {
				return Config{}, fmt.Errorf("source %q: rows: %w", uri, err)
			}
		case "seed":
			if cfg.Seed, err = strconv.ParseInt(v, 10, 64); err != nil {
				return Config{}, fmt.Errorf("source %q: seed %q is not an integer", uri, v)
			}
		default:
			return Config{}, fmt.Errorf("source %q: unknown parameter %q (want rows, seed)", uri, k)
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func parseCount(v string) (int64, error) {
	s := strings.ReplaceAll(strings.ToLower(v), "_", "")
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1000, s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		mult, s = 1000000, s[:len(s)-1]
	case strings.HasSuffix(s, "b"):
		mult, s = 1000000000, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a row count", v)
	}
	return n * mult, nil
}

// Columns returns a generator's full schema.
func Columns(name string) (pipeline.SourceSchema, error) {
	g, ok := generators[name]
	if !ok {
		return nil, fmt.Errorf("gen: unknown generator %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return append(pipeline.SourceSchema(nil), g.columns...), nil
}

// Source generates rows. It implements pipeline.Source, pipeline.Sizer and pipeline.Sampler.
type Source struct {
	cfg      Config
	g        *generator
	seedHash uint64
	proj     []int // schema column -> generator column
	identity bool
	stream   string
	lo, hi   int64 // the rows [lo, hi) this source generates: all of them, or its shard's
	log      *zap.Logger
}

var (
	_ pipeline.Source   = (*Source)(nil)
	_ pipeline.Sizer    = (*Source)(nil)
	_ pipeline.Sampler  = (*Source)(nil)
	_ pipeline.Rereader = (*Source)(nil)
)

// New makes a source whose records hold the schema's columns in the schema's order. The schema
// must be a subset (same names and types) of the generator's columns; an empty schema means all.
func New(cfg Config, schema pipeline.SourceSchema, logger *zap.Logger) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	g := generators[cfg.Name]
	if len(schema) == 0 {
		schema = g.columns
	}
	s := &Source{cfg: cfg, g: g, seedHash: pipeline.SplitMix64(uint64(cfg.Seed)), stream: "gen:" + cfg.Name,
		log: logger, identity: len(schema) == len(g.columns), lo: 0, hi: cfg.Rows}
	if !cfg.Shard.Whole() {
		s.lo = cfg.Rows * int64(cfg.Shard.Index) / int64(cfg.Shard.Count)
		s.hi = cfg.Rows * int64(cfg.Shard.Index+1) / int64(cfg.Shard.Count)
	}
	var problems []string
	for i, col := range schema {
		gi := g.columns.Index(col.Name)
		if gi < 0 {
			problems = append(problems, fmt.Sprintf("no column %q", col.Name))
			continue
		}
		want, _ := cqlvalue.ParseType(g.columns[gi].Type)
		got, err := cqlvalue.ParseType(col.Type)
		if err != nil || !got.Equal(want) {
			problems = append(problems, fmt.Sprintf("column %q is %s, not %s", col.Name, want, col.Type))
			continue
		}
		s.proj = append(s.proj, gi)
		s.identity = s.identity && gi == i
	}
	if len(problems) > 0 {
		cols := make([]string, len(g.columns))
		for i, c := range g.columns {
			cols[i] = c.Name + " " + c.Type
		}
		return nil, fmt.Errorf("gen:%s: %s (the generator has: %s)", cfg.Name,
			strings.Join(problems, "; "), strings.Join(cols, ", "))
	}
	return s, nil
}

// Rereadable: Run generates the same rows every time.
func (s *Source) Rereadable() bool { return true }

// EstimatedRows is the exact row count.
func (s *Source) EstimatedRows() int64 { return s.hi - s.lo }

// WholeEstimatedRows is the rows of every shard, which a shard's region plan is made for.
func (s *Source) WholeEstimatedRows() int64 { return s.cfg.Rows }

// batch generates rows [from, to) as one batch with the schema's columns.
func (s *Source) batch(from, to int64) pipeline.Batch {
	n := int(to - from)
	gcols := len(s.g.columns)
	full := make([]pipeline.Value, n*gcols)
	arena := make([]byte, 0, n*16)
	var r rng // one allocation per batch: fill is called indirectly, so r escapes
	for k := 0; k < n; k++ {
		r = rowRNG(s.seedHash, from+int64(k))
		arena = s.g.fill(&r, from+int64(k), full[k*gcols:(k+1)*gcols:(k+1)*gcols], arena)
	}
	s.patch(full, gcols, string(arena))
	vals := full
	ncols := len(s.proj)
	if !s.identity {
		vals = make([]pipeline.Value, n*ncols)
		for k := 0; k < n; k++ {
			for c, gi := range s.proj {
				vals[k*ncols+c] = full[k*gcols+gi]
			}
		}
	}
	recs := make([]pipeline.Record, n)
	for k := range recs {
		recs[k] = pipeline.Record{Values: vals[k*ncols : (k+1)*ncols : (k+1)*ncols], Seq: from + int64(k)}
	}
	return pipeline.Batch{Stream: s.stream, Records: recs, Cursor: strconv.FormatInt(to, 10), Done: to >= s.hi}
}

// patch points the arena-backed placeholders at the batch's arena string.
func (s *Source) patch(vals []pipeline.Value, gcols int, arena string) {
	for _, c := range s.g.arenaCols {
		for k := c; k < len(vals); k += gcols {
			v := &vals[k]
			v.Str, v.Num = arena[v.Num>>32:v.Num&(1<<32-1)], 0
		}
	}
}

// Run generates batches in parallel and sends them in row order. The cursor is the index of the
// next row.
func (s *Source) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	start, done, err := s.resumeAt(resume)
	if err != nil || done {
		return err
	}
	s.log.Info("generating", zap.String("stream", s.stream), zap.Int64("rows", s.hi-start),
		zap.Int64("offset", start))
	if start >= s.hi {
		select {
		case out <- pipeline.Batch{Stream: s.stream, Cursor: strconv.FormatInt(s.hi, 10), Done: true}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan *genJob)
	order := make(chan *genJob, 2*s.cfg.Workers)
	go s.cut(ctx, start, order, jobs)
	workersDone := make(chan struct{}, s.cfg.Workers)
	for w := 0; w < s.cfg.Workers; w++ {
		go func() {
			defer func() { workersDone <- struct{}{} }()
			for j := range jobs {
				j.result <- s.batch(j.from, j.to)
			}
		}()
	}
	err = sendInOrder(ctx, order, out)
	cancel()
	for range order {
	}
	for w := 0; w < s.cfg.Workers; w++ {
		<-workersDone
	}
	return err
}

// resumeAt is the row a run starts at: the resume cursor's, or the first; done when the resume
// state says the stream was generated whole.
func (s *Source) resumeAt(resume map[string]pipeline.StreamState) (start int64, done bool, err error) {
	start = s.lo
	st, ok := resume[s.stream]
	if !ok {
		return start, false, nil
	}
	if st.Done {
		return start, true, nil
	}
	if st.Cursor != "" {
		n, err := strconv.ParseInt(st.Cursor, 10, 64)
		if err != nil || n < s.lo || n > s.hi {
			return start, false, fmt.Errorf("%s: bad resume cursor %q: want a row index in %d..%d", s.stream, st.Cursor, s.lo, s.hi)
		}
		start = n
	}
	return start, false, nil
}

// genJob is one batch to generate, rows [from, to), and where its batch goes.
type genJob struct {
	from, to int64
	result   chan pipeline.Batch
}

// cut hands out the rows from start on as jobs of BatchSize rows, each to order (the order the
// batches are sent in) and then to jobs (the workers), until the rows or ctx end; it closes both.
func (s *Source) cut(ctx context.Context, start int64, order, jobs chan<- *genJob) {
	defer close(order)
	defer close(jobs)
	bs := int64(s.cfg.BatchSize)
	for from := start; from < s.hi; from += bs {
		j := &genJob{from: from, to: min(from+bs, s.hi), result: make(chan pipeline.Batch, 1)}
		select {
		case order <- j:
		case <-ctx.Done():
			return
		}
		select {
		case jobs <- j:
		case <-ctx.Done():
			return
		}
	}
}

// sendInOrder sends each job's batch to out in the order the jobs were cut, as its worker
// finishes it, until the jobs or ctx end.
func sendInOrder(ctx context.Context, order <-chan *genJob, out chan<- pipeline.Batch) error {
	for j := range order {
		var b pipeline.Batch
		select {
		case b = <-j.result:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ctx.Err()
}

// Sample generates n rows spread over the indexes, one in each of n equal stretches at a position
// fixed by a hash (pipeline.SpreadPick; all rows when n >= Rows). A shard samples every row, not
// only its own, so that the shards plan the same regions as the whole run.
func (s *Source) Sample(ctx context.Context, n int) ([]pipeline.Record, error) {
	rows := s.cfg.Rows
	if n <= 0 || rows == 0 {
		return nil, ctx.Err()
	}
	if int64(n) > rows {
		n = int(rows)
	}
	recs := make([]pipeline.Record, 0, n)
	for k := 0; k < n; k++ {
		if k%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		i := pipeline.SpreadPick(k, n, rows)
		b := s.batch(i, i+1)
		recs = append(recs, b.Records[0])
	}
	return recs, nil
}

// WriteCSV writes rows [0, rows) of a generator as CSV with a header: timestamps as epoch
// milliseconds, decimals as text, text quoted only when it needs to be.
func WriteCSV(w io.Writer, name string, rows int64, seed int64) error {
	src, err := New(Config{Name: name, Rows: rows, Seed: seed, Workers: 1}, nil, nil)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	cols := src.g.columns
	line := make([]byte, 0, 256)
	for i, c := range cols {
		if i > 0 {
			line = append(line, ',')
		}
		line = appendCSVText(line, c.Name)
	}
	line = append(line, '\n')
	if _, err := bw.Write(line); err != nil {
		return err
	}
	const chunk = 8192
	for from := int64(0); from < rows; from += chunk {
		b := src.batch(from, min(from+chunk, rows))
		for _, rec := range b.Records {
			line = line[:0]
			for c, v := range rec.Values {
				if c > 0 {
					line = append(line, ',')
				}
				switch v.Kind {
				case pipeline.KindNull:
				case pipeline.KindText:
					line = appendCSVText(line, v.Str)
				default:
					line = v.AppendCanonical(line)
				}
			}
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// appendCSVText quotes a text field when it is empty (to tell it from null) or holds a
// delimiter, quote or line break.
func appendCSVText(dst []byte, s string) []byte {
	if s != "" && !strings.ContainsAny(s, ",\"\r\n") {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	dst = append(dst, strings.ReplaceAll(s, `"`, `""`)...)
	return append(dst, '"')
}

var _ pipeline.Identifier = (*Source)(nil)

// Identity is the generator, its row count and seed: together they fix every row.
func (s *Source) Identity() pipeline.Identity {
	id := pipeline.Identity{"gen": s.cfg.Name, "rows": strconv.FormatInt(s.cfg.Rows, 10), "seed": strconv.FormatInt(s.cfg.Seed, 10)}
	if !s.cfg.Shard.Whole() {
		id["shard"] = s.cfg.Shard.String()
	}
	return id
}
