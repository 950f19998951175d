package cassandra

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gocql/gocql"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/backoff"
	"github.com/rekey/rekey/pipeline"
)

// Run reads this source's ranges, Config.Workers at a time, and sends one batch per page. A
// range whose stream is marked done in resume is skipped; one with a cursor continues from its
// paging state. resume must name only ranges of this source (same ring, splits and shard).
//
// A page that fails with a timeout, an unavailable or overloaded node or a lost connection is
// retried with backoff; a range whose page keeps failing is given up while the others go on,
// and Run then returns a *RangesError naming the ranges that were not read. Other errors (an
// invalid query, a lost table, bad credentials) stop the run at once.
func (s *Source) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	if err := s.checkResume(resume); err != nil {
		return err
	}
	var todo []Range
	for _, r := range s.ranges {
		if resume[r.Name()].Done {
			continue
		}
		todo = append(todo, r)
	}
	workers := s.cfg.Workers
	if workers <= 0 {
		workers = defaultWorkers()
	}
	s.log.Info("scanning token ranges", zap.Int("ranges", len(todo)), zap.Int("done", len(s.ranges)-len(todo)),
		zap.Int("workers", workers), zap.Int("page_size", s.cfg.PageSize), zap.String("shard", s.cfg.Shard.String()))

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan Range)
	var mu sync.Mutex
	var failed []RangeFailure
	var wg sync.WaitGroup
	for w := 0; w < min(workers, max(len(todo), 1)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				err := s.readRange(runCtx, r, resume[r.Name()], out)
				if err == nil {
					continue
				}
				if runCtx.Err() != nil {
					return
				}
				var gaveUp *retriesExhausted
				if errors.As(err, &gaveUp) {
					s.log.Error("token range failed; going on with the other ranges", zap.String("range", r.Name()),
						zap.Int("page", gaveUp.page), zap.Int("attempts", gaveUp.attempts), zap.Error(gaveUp.err))
					mu.Lock()
					failed = append(failed, RangeFailure{Range: r, Page: gaveUp.page, Err: gaveUp.err})
					mu.Unlock()
					continue
				}
				cancel(fmt.Errorf("read %s: %w", r.Name(), err))
				return
			}
		}()
	}
feed:
	for _, r := range todo {
		select {
		case jobs <- r:
		case <-runCtx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if runCtx.Err() != nil {
		return context.Cause(runCtx)
	}
	if len(failed) > 0 {
		sortFailures(failed)
		return &RangesError{Failed: failed, Total: len(s.ranges)}
	}
	return nil
}

func defaultWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// checkResume verifies that a checkpoint's streams are ranges of this source. When splits was
// left to its default (which depends on the number of cores) and the checkpoint was written on a
// machine with another core count, the ranges of that run are found again and adopted.
func (s *Source) checkResume(resume map[string]pipeline.StreamState) error {
	if len(resume) == 0 {
		return nil
	}
	if s.cfg.Splits == 0 && s.cfg.Shard.Count <= 1 && !s.holds(s.all, resume) {
		for cores := 1; cores <= 1024; cores++ {
			splits := 8 * cores * s.nodes
			all, err := SplitRing(s.ring, splits)
			if err == nil && s.holds(all, resume) {
				s.log.Info("resuming with the ranges of the interrupted run", zap.Int("splits", splits), zap.Int("ranges", len(all)))
				s.splits, s.all, s.ranges = splits, all, all
				break
			}
		}
	}
	mine := make(map[string]bool, len(s.ranges))
	for _, r := range s.ranges {
		mine[r.Name()] = true
	}
	all := make(map[string]bool, len(s.all))
	for _, r := range s.all {
		all[r.Name()] = true
	}
	for name := range resume {
		if mine[name] {
			continue
		}
		if _, err := ParseRange(name); err != nil {
			return fmt.Errorf("cannot resume: the checkpoint's stream %q is not a token range of a Cassandra source", name)
		}
		if all[name] {
			return fmt.Errorf("cannot resume: the checkpoint's range %s belongs to another shard than %s: resume with the same --shard as the run that wrote the checkpoint", name, s.cfg.Shard)
		}
		return fmt.Errorf("cannot resume: the checkpoint's token ranges do not match the %d ranges computed now from the ring (%d nodes, %d tokens) with splits=%d: %s is not one of them. "+
			"Either the ring changed (nodes added, removed or moved) or splits differs from the first run (its default depends on the number of cores): "+
			"resume with the same splits=N in the source URI as the run that wrote the checkpoint, or start over in a new --out directory",
			len(s.all), s.nodes, len(s.ring), s.splits, name)
	}
	return nil
}

// holds tells whether every stream of resume is one of ranges.
func (s *Source) holds(ranges []Range, resume map[string]pipeline.StreamState) bool {
	names := make(map[string]bool, len(ranges))
	for _, r := range ranges {
		names[r.Name()] = true
	}
	for name := range resume {
		if !names[name] {
			return false
		}
	}
	return true
}

// RangesError reports the token ranges a run gave up on after retries.
type RangesError struct {
	Failed []RangeFailure
	Total  int // ranges of the run (this shard's)
}

// RangeFailure is one range that could not be read.
type RangeFailure struct {
	Range Range
	Page  int // the page that kept failing (1-based, counted from where the run started the range)
	Err   error
}

func (e *RangesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d token ranges could not be read after retries: ", len(e.Failed), e.Total)
	for i, f := range e.Failed {
		if i == 10 {
			fmt.Fprintf(&b, "; ... and %d more", len(e.Failed)-10)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (page %d: %v)", f.Range.Name(), f.Page, f.Err)
	}
	// what to do next is the command's to say: verify and report have no --resume, and a
	// migrate of several mappings refuses it
	b.WriteString(". The other ranges were read")
	return b.String()
}

// Names lists the failed ranges.
func (e *RangesError) Names() []string {
	out := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f.Range.Name()
	}
	return out
}

func sortFailures(f []RangeFailure) {
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].Range.Start < f[j-1].Range.Start; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}

// retriesExhausted is a page that kept failing with retryable errors.
type retriesExhausted struct {
	page, attempts int
	err            error
}

func (e *retriesExhausted) Error() string {
	return fmt.Sprintf("page %d failed %d times: %v", e.page, e.attempts, e.err)
}
func (e *retriesExhausted) Unwrap() error { return e.err }

// ---- cursors ----

// A cursor is "rows=N;state=BASE64" after a page with more to come (N rows of the range read so
// far, the paging state to continue from) and "rows=N" after the last page.
func encodeCursor(rows int64, state []byte) string {
	c := "rows=" + strconv.FormatInt(rows, 10)
	if len(state) > 0 {
		c += ";state=" + base64.RawURLEncoding.EncodeToString(state)
	}
	return c
}

func decodeCursor(c string) (rows int64, state []byte, err error) {
	a, b, hasState := strings.Cut(c, ";")
	n, ok := strings.CutPrefix(a, "rows=")
	if ok {
		rows, err = strconv.ParseInt(n, 10, 64)
		ok = err == nil && rows >= 0
	}
	if ok && hasState {
		var st string
		st, ok = strings.CutPrefix(b, "state=")
		if ok {
			state, err = base64.RawURLEncoding.DecodeString(st)
			ok = err == nil && len(state) > 0
		}
	}
	if !ok {
		return 0, nil, fmt.Errorf("bad cursor %q: want rows=N;state=BASE64", c)
	}
	return rows, state, nil
}

// ---- reading a range ----

type pageResult struct {
	iter *gocql.Iter
	err  error
}

// readRange reads one range from its start, or from the cursor of an earlier run, and sends
// a batch per page. The next page is fetched while the current one is decoded and delivered.
func (s *Source) readRange(parent context.Context, r Range, st pipeline.StreamState, out chan<- pipeline.Batch) error {
	name := r.Name()
	var rows int64
	var state []byte
	if st.Cursor != "" {
		var err error
		if rows, state, err = decodeCursor(st.Cursor); err != nil {
			return fmt.Errorf("resume %s: %w", name, err)
		}
		if state == nil { // a cursor without paging state is the end of the range
			return nil
		}
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	ctx = preferring(ctx, s.owner(r))
	fetch := func(state []byte, page, size int) chan pageResult {
		ch := make(chan pageResult, 1)
		go func() {
			iter, err := s.fetchPage(ctx, r, state, size, page)
			ch <- pageResult{iter, err}
		}()
		return ch
	}
	var pd *pageDecoder
	// rowBytes: what a row of this range took in its last page (Config.PageBytes); the next
	// page is fetched while this one is decoded, so it is sized by the page before
	var rowBytes int64
	next := fetch(state, 1, s.pageRows(0))
	started := time.Now()
	for page := 1; ; page++ {
		var res pageResult
		select {
		case res = <-next:
		case <-ctx.Done():
			return ctx.Err()
		}
		if res.err != nil {
			return res.err
		}
		more := append([]byte(nil), res.iter.PageState()...)
		last := len(more) == 0
		// a row's size not known yet (the first page read): the next page waits for this one's
		sized := s.cfg.PageBytes <= 0 || rowBytes > 0 || s.rowBytes.Load() > 0
		if !last && sized {
			next = fetch(more, page+1, s.pageRows(rowBytes))
		}
		if pd == nil {
			decs, err := s.decoders(res.iter.Columns())
			if err != nil {
				res.iter.Close()
				return err
			}
			pd = newPageDecoder(decs, &s.pages, len(s.sel.dating), s.sinceMicros()).withCells(s.sel.cells, &s.expiry)
			pd.rowTimes = s.cfg.RowWriteTimes && len(s.sel.dating) > 0
			pd.undated = s.sel.undated
		}
		recs, skipped, release, err := pd.decodePage(res.iter, rows)
		if err != nil {
			return &retriesExhausted{page: page, attempts: 1, err: fmt.Errorf("decode page: %w", err)}
		}
		rows += int64(len(recs) + skipped)
		if s.cfg.PageBytes > 0 && pd.pageRows > 0 {
			rowBytes = max(1, pd.pageBytes/int64(pd.pageRows))
			s.rowBytes.Store(rowBytes)
		}
		if !last && !sized {
			next = fetch(more, page+1, s.pageRows(rowBytes))
		}
		b := pipeline.Batch{Stream: name, Records: recs, Skipped: int64(skipped), Cursor: encodeCursor(rows, more), Done: last, Release: release}
		if pd.rowTimes {
			b.WriteTimes = pd.times
		}
		// the rate bounds the rows read from Cassandra: those left out (since=, expired) too
		if err := s.limiter.wait(ctx, len(recs)+skipped); err != nil {
			return err
		}
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		if last {
			s.log.Debug("range done", zap.String("range", name), zap.Int64("rows", rows), zap.Int("page", page),
				zap.Duration("took", time.Since(started)))
			return nil
		}
	}
}

// pageRows is the rows of the next page: PageSize, or fewer when PageBytes would not hold them
// at rowBytes a row (0: the size last seen in any range; none seen yet: one row, which tells).
func (s *Source) pageRows(rowBytes int64) int {
	if s.cfg.PageBytes <= 0 {
		return s.cfg.PageSize
	}
	if rowBytes <= 0 {
		rowBytes = s.rowBytes.Load()
	}
	if rowBytes <= 0 {
		return 1
	}
	return int(min(int64(s.cfg.PageSize), max(1, s.cfg.PageBytes/rowBytes)))
}

// fetchPage runs the range query for one page, retrying retryable failures with backoff.
func (s *Source) fetchPage(ctx context.Context, r Range, state []byte, pageSize, page int) (*gocql.Iter, error) {
	bo := backoff.Policy{Min: s.cfg.RetryBackoff, Max: s.cfg.MaxBackoff}.Start()
	for attempt := 1; ; attempt++ {
		q := s.sess.Query(s.stmt, r.Start, r.End).WithContext(inDC(ctx)).Consistency(s.cons).
			PageSize(pageSize).PageState(state).Idempotent(true)
		iter := q.Iter()
		var err error
		if iter.NumRows() == 0 {
			err = iter.Close() // an empty page, or the query failed
		}
		if err == nil {
			return iter, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retryable(err) {
			var rf *gocql.RequestErrReadFailure
			var re gocql.RequestError
			if errors.As(err, &rf) || errors.As(err, &re) && re.Code() == gocql.ErrCodeReadFailure {
				// the coordinator's word for a replica that threw while reading: the page was
				// asked of Cassandra, which the command's resume would ask again
				err = fmt.Errorf("%w (a replica failed to read the page, most often for more tombstones in it than tombstone_failure_threshold: "+
					"read smaller pages with page_size= (this page was of %d rows), or compact the table; the nodes' logs name the cause)", err, pageSize)
			}
			return nil, fmt.Errorf("page %d: %w", page, err)
		}
		if attempt > s.cfg.Retries {
			if s.cfg.DC != "" && errors.Is(err, gocql.ErrNoConnections) {
				err = fmt.Errorf("no node of dc=%s answers (dc= keeps the reads there; bring them up, or name another data center): %w", s.cfg.DC, err)
			}
			err = timeoutHint(err, pageSize, s.cfg.Timeout)
			return nil, &retriesExhausted{page: page, attempts: attempt, err: err}
		}
		s.log.Warn("page failed; retrying", zap.String("range", r.Name()), zap.Int("page", page),
			zap.Int("attempt", attempt), zap.Duration("backoff", bo.Delay()), zap.Error(err))
		if err := bo.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

// timeoutHint adds to a page's last timeout what to change, as a resume reads the same pages:
// smaller pages, or (the driver's own wait) a longer timeout=.
func timeoutHint(err error, pageSize int, timeout time.Duration) error {
	var rt *gocql.RequestErrReadTimeout
	var re gocql.RequestError
	switch {
	case errors.As(err, &rt) || errors.As(err, &re) && re.Code() == gocql.ErrCodeReadTimeout:
		return fmt.Errorf("%w (the replicas did not read the page within the server's read timeout: read smaller pages with page_size= (this page was of %d rows))", err, pageSize)
	case errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (no answer within timeout=%s: read smaller pages with page_size= (this page was of %d rows), or wait longer with timeout=)", err, timeout, pageSize)
	}
	return err
}

// retryable tells whether a failed page may succeed when asked again: coordinator timeouts,
// unavailable replicas, an overloaded or bootstrapping node, client-side timeouts, lost
// connections, and a cancellation that is not the run's (gocql prepares a statement under the
// connection's context: a connection closed during the prepare fails the query with its
// cancellation). Everything else (syntax, invalid query, authorization, a dropped table) is not.
func retryable(err error) bool {
	var rt *gocql.RequestErrReadTimeout
	var un *gocql.RequestErrUnavailable
	if errors.As(err, &rt) || errors.As(err, &un) {
		return true
	}
	var re gocql.RequestError
	if errors.As(err, &re) {
		switch re.Code() {
		case gocql.ErrCodeOverloaded, gocql.ErrCodeBootstrapping, gocql.ErrCodeReadTimeout, gocql.ErrCodeUnavailable:
			return true
		}
		return false
	}
	switch {
	case errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, gocql.ErrConnectionClosed),
		errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrNoStreams),
		errors.Is(err, gocql.ErrTooManyTimeouts), errors.Is(err, gocql.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.Canceled): // the driver's own (fetchPage returns the run's first)
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "no connection available") || strings.Contains(msg, "connection closed") ||
		strings.Contains(msg, "connection reset")
}

// decoders compiles the column decoders from a page's result metadata, once.
func (s *Source) decoders(cols []gocql.ColumnInfo) ([]*colDecoder, error) {
	s.decOnce.Do(func() { s.decs, s.decErr = s.compileDecoders(cols) })
	return s.decs, s.decErr
}

func (s *Source) compileDecoders(cols []gocql.ColumnInfo) ([]*colDecoder, error) {
	if len(cols) != len(s.sel.schema)+len(s.sel.dating)+2*len(s.sel.cells) {
		return nil, fmt.Errorf("the scan returned %d columns, want %d (%s)", len(cols), len(s.sel.schema)+len(s.sel.dating)+2*len(s.sel.cells),
			strings.Join(append(s.sel.schema.Names(), s.sel.dating...), ", "))
	}
	decs := make([]*colDecoder, len(s.sel.schema))
	for i, c := range cols[:len(decs)] {
		d, err := newColDecoder(s.sel.schema[i].Name, c.TypeInfo, s.sel.types[i], s.sel.wt[i])
		if err != nil {
			return nil, err
		}
		decs[i] = d
	}
	return decs, nil
}

// sinceMicros is Config.Since as a WRITETIME (microseconds); 0 when not set.
func (s *Source) sinceMicros() int64 {
	if s.cfg.Since.IsZero() {
		return 0
	}
	return s.cfg.Since.UnixMicro()
}

// ---- decoding pages ----

// pageDecoder turns the rows of a page into records. gocql hands each cell's bytes to the
// column's sink (a gocql.Unmarshaler), which decodes it into the current row's values.
type pageDecoder struct {
	decs    []*colDecoder
	dests   []any
	tuples  []*tupleSink
	vals    []pipeline.Value
	mem     *pageMem // the page being decoded
	pool    *sync.Pool
	scratch []byte
	rowErr  *pipeline.RowError
	// since (microseconds; 0: no filter) drops rows whose newest dating writetime is older;
	// newest is the current row's, -1 when none of its dated cells is set. A row with a value
	// in an undated column is kept.
	since, newest int64
	undated       []int
	// rowTimes: the records' earliest dating writetime goes to Batch.WriteTimes (earliest is
	// the current row's, -1 when none of its dated cells is set).
	rowTimes bool
	earliest int64
	times    []int64 // the last page's write times, with rowTimes (in its page memory)
	// cells: the record columns whose writetime() and ttl() follow the dating ones
	// (Record.Times); ctimes is the current row's Times, cttls its cells' TTL() (0: none)
	cells  []int
	ctimes []int64
	cttls  []int32
	expiry *expiry
	// pageBytes and pageRows are the last page's: its values' bytes (strings and slab) and its
	// rows, skipped ones included (Config.PageBytes sizes the next pages by them)
	pageBytes int64
	pageRows  int
}

// pageMem is the memory of one page's records: their values and the bytes of their strings.
// It is reused for a later page once the pipeline releases the page's batch (Batch.Release),
// which spares the allocation, zeroing and first-touch page faults of about a megabyte per page.
type pageMem struct {
	slab  []pipeline.Value
	recs  []pipeline.Record
	times []int64 // with rowTimes: each record's write time (epoch ms)
	// ctimes: with cells, each record's cell write times (Record.Times)
	ctimes []int64
	arena  arena
}

type colSink struct {
	pd *pageDecoder
	i  int
	d  *colDecoder
}

func (c *colSink) UnmarshalCQL(_ gocql.TypeInfo, data []byte) error {
	pd := c.pd
	// the commonest well-formed cells, without decode's call and switch; the rest, nulls and
	// every error go through decode
	switch c.d.kind {
	case kText:
		if len(data) > 0 && validUTF8(data) {
			pd.vals[c.i] = pipeline.Value{Str: pd.mem.arena.str(data), Kind: pipeline.KindText}
			return nil
		}
	case kBigint, kTimestamp, kTime:
		if len(data) == 8 {
			pd.vals[c.i] = pipeline.Value{Num: int64(binary.BigEndian.Uint64(data)), Kind: pipeline.KindInt}
			return nil
		}
	}
	v, err := c.d.decode(data, &pd.mem.arena, &pd.scratch)
	if err != nil && pd.rowErr == nil {
		pd.rowErr = cellError(c.d.name, err)
	}
	pd.vals[c.i] = v
	return nil
}

// tupleSink collects a top-level tuple's elements, which gocql unmarshals one by one.
type tupleSink struct {
	i     int
	d     *colDecoder
	parts [][]byte
}

type tupleElem struct {
	t *tupleSink
	k int
}

func (e *tupleElem) UnmarshalCQL(_ gocql.TypeInfo, data []byte) error {
	e.t.parts[e.k] = data
	return nil
}

// datingSink keeps the newest writetime() of the row's dated cells (null: the cell is not set).
type datingSink struct{ pd *pageDecoder }

func (d datingSink) UnmarshalCQL(_ gocql.TypeInfo, data []byte) error {
	if data == nil {
		return nil
	}
	if len(data) != 8 {
		return fmt.Errorf("writetime() returned %d bytes, want 8", len(data))
	}
	wt := int64(binary.BigEndian.Uint64(data))
	d.pd.newest = max(d.pd.newest, wt)
	if d.pd.earliest < 0 || wt < d.pd.earliest {
		d.pd.earliest = wt
	}
	return nil
}

// cellSink puts a cell's writetime() (ttl: its ttl(), seconds left) into the row's Times (TTLs);
// null, the cell not set or without a TTL, is 0.
type cellSink struct {
	pd  *pageDecoder
	i   int
	ttl bool
}

func (c cellSink) UnmarshalCQL(_ gocql.TypeInfo, data []byte) error {
	fn, size := "writetime", 8
	if c.ttl {
		fn, size = "ttl", 4
	}
	if data != nil && len(data) != size {
		return fmt.Errorf("%s() returned %d bytes, want %d", fn, len(data), size)
	}
	switch {
	case c.ttl && data == nil:
		c.pd.cttls[c.i] = 0
	case c.ttl:
		c.pd.cttls[c.i] = int32(binary.BigEndian.Uint32(data))
	case data == nil:
		c.pd.ctimes[c.i] = 0
	default:
		c.pd.ctimes[c.i] = cellMillis(int64(binary.BigEndian.Uint64(data)))
	}
	return nil
}

// cellMillis is a cell's WRITETIME() (microseconds) as a Record.Times entry, epoch milliseconds in
// which 0 means none: a time before 1 ms (USING TIMESTAMP 0, which applications write so that
// every later write wins, or a negative one) becomes 1 ms, which every later write still beats.
// As none, the copy would take the target's clock and beat the writes after it.
func cellMillis(us int64) int64 {
	return max(1, microsToMillis(us))
}

// newPageDecoder returns a decoder taking page memory from pool (nil: no reuse). dating
// writetime() columns follow the decoded ones; rows whose newest is older than since
// (microseconds; 0: none) are skipped.
func newPageDecoder(decs []*colDecoder, pool *sync.Pool, dating int, since int64) *pageDecoder {
	if pool == nil {
		pool = &sync.Pool{}
	}
	pd := &pageDecoder{decs: decs, pool: pool, since: since}
	for i, d := range decs {
		if d.tupleN > 0 {
			ts := &tupleSink{i: i, d: d, parts: make([][]byte, d.tupleN)}
			pd.tuples = append(pd.tuples, ts)
			for k := 0; k < d.tupleN; k++ {
				pd.dests = append(pd.dests, &tupleElem{t: ts, k: k})
			}
			continue
		}
		pd.dests = append(pd.dests, &colSink{pd: pd, i: i, d: d})
	}
	for range dating {
		pd.dests = append(pd.dests, datingSink{pd})
	}
	return pd
}

// withCells makes the decoder read the cells' writetime()s after the dating ones.
func (pd *pageDecoder) withCells(cells []int, ex *expiry) *pageDecoder {
	pd.cells, pd.expiry = cells, ex
	if cells != nil {
		pd.cttls = make([]int32, len(pd.decs))
	}
	for _, i := range cells {
		pd.dests = append(pd.dests, cellSink{pd, i, false}, cellSink{pd, i, true})
	}
	return pd
}

// finishTuples rebuilds each tuple's serialized form and decodes it. gocql does not tell a null
// tuple from one whose elements are all null: both read as null.
func (pd *pageDecoder) finishTuples() {
	for _, ts := range pd.tuples {
		null := true
		for _, p := range ts.parts {
			null = null && p == nil
		}
		if null {
			pd.vals[ts.i] = pipeline.Null
			continue
		}
		var body []byte
		for _, p := range ts.parts {
			if p == nil {
				body = binary.BigEndian.AppendUint32(body, 0xffffffff)
				continue
			}
			body = binary.BigEndian.AppendUint32(body, uint32(len(p)))
			body = append(body, p...)
		}
		v, err := ts.d.decode(body, &pd.mem.arena, &pd.scratch)
		if err != nil && pd.rowErr == nil {
			pd.rowErr = cellError(ts.d.name, err)
		}
		pd.vals[ts.i] = v
		clear(ts.parts)
	}
}

// anyUndated tells whether the current row has a value in a column dating cannot see.
func (pd *pageDecoder) anyUndated() bool {
	for _, i := range pd.undated {
		if !pd.vals[i].IsNull() {
			return true
		}
	}
	return false
}

// decodePage reads every row of the page; seq0 is the range's row count before it. skipped
// counts the rows older than since, which get no record. release hands the records' memory
// back for reuse: call it once nothing refers to them anymore.
func (pd *pageDecoder) decodePage(iter *gocql.Iter, seq0 int64) (recs []pipeline.Record, skipped int, release func(), err error) {
	n := iter.NumRows()
	ncol := len(pd.decs)
	mem, _ := pd.pool.Get().(*pageMem)
	if mem == nil {
		mem = &pageMem{}
	}
	if cap(mem.slab) < n*ncol {
		mem.slab = make([]pipeline.Value, n*ncol)
	}
	if cap(mem.recs) < n {
		mem.recs = make([]pipeline.Record, 0, n)
	}
	pd.mem = mem
	slab, recs, times := mem.slab[:n*ncol], mem.recs[:0], mem.times[:0]
	var ctimes []int64
	if pd.cells != nil {
		if cap(mem.ctimes) < n*ncol {
			mem.ctimes = make([]int64, n*ncol)
		}
		ctimes = mem.ctimes[:n*ncol]
		clear(ctimes)
	}
	for i := 0; i < n; i++ {
		k := len(recs) // a skipped row's values are overwritten by the next row's
		pd.vals = slab[k*ncol : (k+1)*ncol : (k+1)*ncol]
		if ctimes != nil {
			pd.ctimes = ctimes[k*ncol : (k+1)*ncol : (k+1)*ncol]
		}
		pd.rowErr, pd.newest, pd.earliest = nil, -1, -1
		if !iter.Scan(pd.dests...) {
			break
		}
		if pd.since != 0 && pd.newest >= 0 && pd.newest < pd.since && !pd.anyUndated() {
			skipped++ // an undated row (newest -1: no regular cell set) is kept
			continue
		}
		if pd.tuples != nil {
			pd.finishTuples()
		}
		if pd.cells != nil && pd.expiry.row(pd.vals, pd.ctimes, pd.cttls, pd.cells) {
			skipped++ // every cell it had is past the target's TTL
			continue
		}
		recs = append(recs, pipeline.Record{Values: pd.vals, Seq: seq0 + int64(i), Err: pd.rowErr, Times: pd.ctimes})
		if pd.rowTimes {
			wt := int64(math.MinInt64) // no regular cell set: no write time
			if pd.earliest >= 0 {
				wt = pd.earliest / 1000 // microseconds -> ms
			}
			times = append(times, wt)
		}
	}
	mem.times, pd.times = times, times
	pd.vals, pd.mem, pd.ctimes = nil, nil, nil
	pd.pageBytes = mem.arena.size() + int64(n*ncol)*int64(unsafe.Sizeof(pipeline.Value{}))
	pd.pageRows = n
	release = func() {
		mem.arena.reset() // slab and records are overwritten by the next page
		pd.pool.Put(mem)
	}
	if err := iter.Close(); err != nil {
		release()
		return nil, 0, nil, err
	}
	if len(recs)+skipped != n {
		release()
		return nil, 0, nil, fmt.Errorf("read %d of the page's %d rows", len(recs)+skipped, n)
	}
	return recs, skipped, release, nil
}

// ---- sampling ----

// Sample reads about n records spread evenly over the whole ring: the first rows, in token
// order, of each of Config.SampleRanges equal slices of the ring. Token order is a hash of the
// partition key, so these rows are a fair sample of the table. The slices depend on nothing but
// their number (not on the ring, splits or shard), so every shard of a sharded run, and an
// unsharded run of the same table, draw the same sample and place the same quantile split keys.
func (s *Source) Sample(ctx context.Context, n int) ([]pipeline.Record, error) {
	bs, err := s.SampleBatches(ctx, n)
	return pipeline.SampleRecords(bs), err
}

// DescribeSample says how Sample drew rows rows: runs of consecutive rows in token order, one per
// slice of the ring, so a partition's rows come together and the sample holds fewer partitions
// than rows.
func (s *Source) DescribeSample(rows int) string {
	return fmt.Sprintf("%d rows, the first in token order of each of %d slices of the ring, where a partition's rows come together: fewer partitions than rows", rows, min(rows, len(equalSlices(s.cfg.SampleRanges))))
}

// sampleRowBytes is what a row takes, as a few rows of the first slices that hold any say (0:
// none found there).
func (s *Source) sampleRowBytes(ctx context.Context, picks []Range) (int64, error) {
	if b := s.rowBytes.Load(); b > 0 {
		return b, nil
	}
	for _, r := range picks[:min(len(picks), 4)] {
		iter, err := s.fetchPage(preferring(ctx, s.owner(r)), r, nil, 4, 1)
		if err != nil {
			return 0, fmt.Errorf("sample %s: %w", r.Name(), err)
		}
		if iter.NumRows() == 0 {
			iter.Close()
			continue
		}
		decs, err := s.decoders(iter.Columns())
		if err != nil {
			iter.Close()
			return 0, err
		}
		pd := newPageDecoder(decs, nil, len(s.sel.dating), 0).withCells(s.sel.cells, &expiry{ttl: s.expiry.ttl, now: s.expiry.now, untimed: s.expiry.untimed})
		_, _, release, err := pd.decodePage(iter, 0)
		if err != nil {
			return 0, fmt.Errorf("sample %s: %w", r.Name(), err)
		}
		release()
		if pd.pageRows > 0 {
			return max(1, pd.pageBytes/int64(pd.pageRows)), nil
		}
	}
	return 0, nil
}

// SampleBatches is Sample with one batch per slice of the ring, each carrying its rows' write
// times when Config.RowWriteTimes asks for them (RowWriteTimes).
func (s *Source) SampleBatches(ctx context.Context, n int) ([]pipeline.Batch, error) {
	if n <= 0 {
		return nil, nil
	}
	picks := equalSlices(s.cfg.SampleRanges)
	per := (n + len(picks) - 1) / len(picks)
	workers := s.cfg.Workers
	if workers <= 0 {
		workers = defaultWorkers()
	}
	if s.cfg.PageBytes > 0 {
		// the sample holds as much as the pages of the workers' ranges: fewer rows a slice
		// (at least one) when they are large
		rowBytes, err := s.sampleRowBytes(ctx, picks)
		if err != nil {
			return nil, err
		}
		if rowBytes > 0 {
			per = int(min(int64(per), max(1, s.cfg.PageBytes*int64(workers)/int64(len(picks))/rowBytes)))
		}
	}
	results := make([]pipeline.Batch, len(picks))
	errs := make([]error, len(picks))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, r := range picks {
		// slice i's share of n: the shares add up to n, none rounded up to be cut from the last
		// slices
		share := min(per, n*(i+1)/len(picks)-n*i/len(picks))
		if share == 0 {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			iter, err := s.fetchPage(preferring(ctx, s.owner(r)), r, nil, share, 1)
			if err != nil {
				errs[i] = err
				return
			}
			decs, err := s.decoders(iter.Columns())
			if err != nil {
				iter.Close()
				errs[i] = err
				return
			}
			// the sample draws split keys from every row, older than since or not
			pd := newPageDecoder(decs, nil, len(s.sel.dating), 0).withCells(s.sel.cells, &expiry{ttl: s.expiry.ttl, now: s.expiry.now, untimed: s.expiry.untimed})
			pd.rowTimes = s.RowWriteTimes()
			recs, _, _, err := pd.decodePage(iter, 0) // kept: not released
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = pipeline.Batch{Stream: r.Name(), Records: recs}
			if pd.rowTimes {
				results[i].WriteTimes = pd.times
			}
		}()
	}
	wg.Wait()
	var out []pipeline.Batch
	rows := 0
	for i, b := range results {
		if errs[i] != nil {
			return nil, fmt.Errorf("sample %s: %w", picks[i].Name(), errs[i])
		}
		if k := n - rows; len(b.Records) > k {
			b.Records = b.Records[:k]
			if b.WriteTimes != nil {
				b.WriteTimes = b.WriteTimes[:k]
			}
		}
		if len(b.Records) > 0 {
			out = append(out, b)
			rows += len(b.Records)
		}
	}
	s.log.Debug("sampled", zap.Int("rows", rows), zap.Int("ranges", len(picks)))
	return out, nil
}
