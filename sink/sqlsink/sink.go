package sqlsink

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-sql-driver/mysql"
	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/backoff"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// Limits of one statement: Lindorm's wide-table guide (a write batch of at most 2,000 rows and
// 2 MB); Lindorm also reads at most 2,000 keys per multi-get.
const (
	DefaultMaxRows  = 2000
	DefaultMaxBytes = 2 << 20
	DefaultConns    = 4
	// DefaultConnMaxLifetime rotates connections: Lindorm's SQL front ends sit behind a load
	// balancer, and Alibaba advises SetConnMaxLifetime so that connections spread again after a
	// front end is added or restarted (and never outlive the balancer's idle timeout).
	DefaultConnMaxLifetime = 5 * time.Minute
)

// Config wires a Writer.
type Config struct {
	Target *Target
	// Schema is the mapping's target schema; Schema.Table is replaced by Target.Table when the
	// URI names one.
	Schema pipeline.TargetSchema
	// Conns bounds the connections, and so the statements running at once. Rows are spread
	// over Conns shards by a hash of their key: each shard runs its statements one at a time,
	// so two changes of one key never run reordered.
	Conns           int
	ConnMaxLifetime time.Duration
	MaxRows         int // rows per statement (default and most: 2,000)
	MaxBytes        int // bytes per statement (default and most: 2 MiB)
	// Retries is how many times a statement that failed with a transient error (connection
	// lost, timeout, deadlock, throttling) is tried again, with exponential backoff from
	// BackoffMin to BackoffMax, before the run fails. Default 10, 100ms .. 10s.
	Retries    int
	BackoffMin time.Duration
	BackoffMax time.Duration
	// Observe, when set, is called after every statement (metrics): kind "upsert", "delete" or
	// "select", rows in it, its duration, and its error (nil on success).
	Observe func(kind string, rows int, d time.Duration, err error)
	Logger  *zap.Logger
}

// Stats are a Writer's counters.
type Stats struct {
	Statements atomic.Int64
	Retries    atomic.Int64 // statements tried again after a transient error
	Upserts    atomic.Int64 // rows upserted
	Deletes    atomic.Int64 // keys deleted
	Rejected   atomic.Int64 // rows or deletes the server refused (or that have no literal)
	Bytes      atomic.Int64 // statement bytes sent (successful statements)
}

// Writer writes rows into one table. It implements pipeline.Sink for migrate (Write executes
// every row before it returns: Commit has nothing left to make durable) and Apply for replicate
// (upserts and deletes in source order).
type Writer struct {
	cfg    Config
	db     *sql.DB
	st     *statements
	shards []*shard
	log    *zap.Logger
	Stats  Stats
	pool   sync.Pool // *applyState
	shapes sync.Map  // set-column mask ("0110") -> *upsertShape of partial upserts
	// execHook, when set (tests of Lindorm's dialect, which has no server in the tests), runs
	// the statements instead of the server
	execHook func(stmt string) error
}

type shard struct{ mu sync.Mutex }

// RowsPerStatement is the most rows one statement writes: MaxRows, or the default (also the
// most) when it is unset or above it.
func (c Config) RowsPerStatement() int {
	if c.MaxRows <= 0 || c.MaxRows > DefaultMaxRows {
		return DefaultMaxRows
	}
	return c.MaxRows
}

func init() {
	// The driver logs a lost connection on its own, to stderr, before returning the error that
	// rekey retries and logs with context: keep the one.
	mysql.SetLogger(log.New(io.Discard, "", 0))
}

// Open connects, reads the table's definition and refuses a table that differs from the schema
// (ErrTableMismatch), before anything is written.
func Open(ctx context.Context, cfg Config) (*Writer, error) {
	if cfg.Target == nil {
		return nil, errors.New("sqlsink: no target")
	}
	if cfg.Target.Table != "" {
		cfg.Schema.Table = cfg.Target.Table
	}
	if cfg.Conns <= 0 {
		cfg.Conns = DefaultConns
	}
	if cfg.ConnMaxLifetime <= 0 {
		cfg.ConnMaxLifetime = DefaultConnMaxLifetime
	}
	cfg.MaxRows = cfg.RowsPerStatement()
	if cfg.MaxBytes <= 0 || cfg.MaxBytes > DefaultMaxBytes {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Retries == 0 {
		cfg.Retries = 10
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = 100 * time.Millisecond
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	w := &Writer{cfg: cfg, log: cfg.Logger}
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	w.shards = make([]*shard, cfg.Conns)
	for i := range w.shards {
		w.shards[i] = &shard{}
	}
	return w, nil
}

// connect opens the pool, checks that the server answers (and that the password is right), reads
// what the statements depend on and checks the table. A server that is restarting refuses
// connections for a while: those transient errors are retried with backoff and counted, as a
// statement's are, so that a replicate restarted together with its target waits for it rather
// than exit. A timeout is not retried here: a host that does not answer at all is more likely
// the wrong one, and the user hears it at once.
func (w *Writer) connect(ctx context.Context) error {
	t := w.cfg.Target
	conn, err := mysql.NewConnector(t.driverConfig())
	if err != nil {
		return fmt.Errorf("%s: %w", t.Redacted, err)
	}
	// each connection knows its session, so that a statement lost with it can be ended (sessions.go)
	db := sql.OpenDB(&sessionConnector{Connector: conn, d: t.Dialect, log: w.log, onRetry: func() { w.Stats.Retries.Add(1) }})
	db.SetMaxOpenConns(w.cfg.Conns)
	db.SetMaxIdleConns(w.cfg.Conns)
	db.SetConnMaxLifetime(w.cfg.ConnMaxLifetime)
	db.SetConnMaxIdleTime(w.cfg.ConnMaxLifetime)
	bo := w.backoff()
	for attempt := 0; ; attempt++ {
		err := checkServer(ctx, db, t, w.cfg.Schema)
		if err == nil {
			w.db, w.st = db, newStatements(t.Dialect, w.cfg.Schema)
			return nil
		}
		var ne net.Error
		if ctx.Err() != nil || classify(err) != classTransient || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			db.Close()
			return err
		}
		if attempt >= w.cfg.Retries {
			db.Close()
			return fmt.Errorf("%w (tried %d times: check that the server is up and reachable)", err, attempt+1)
		}
		w.Stats.Retries.Add(1)
		w.log.Warn("cannot connect to the server yet, retrying", zap.String("target", t.Redacted), zap.Int("attempt", attempt+1), zap.Duration("backoff", bo.Delay()), zap.Error(err))
		if err := bo.Wait(ctx); err != nil {
			db.Close()
			return err
		}
	}
}

// pingTimeout bounds the first answer of the server (its handshake and a ping).
var pingTimeout = 30 * time.Second

// checkServer pings the server, checks the session as its dialect requires (MySQL's: it takes
// backslash escapes), and checks the table against the schema (ErrTableMismatch).
func checkServer(ctx context.Context, db *sql.DB, t *Target, schema pipeline.TargetSchema) error {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		if ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("connect to %s: %s does not answer within %s (%w): check that it is the server's SQL port (Lindorm's MySQL-protocol endpoint: 33060) and that the server is up; run the same command again once it answers",
				t.Redacted, t.Addr, pingTimeout, err)
		}
		hint := ""
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1045 {
			hint = fmt.Sprintf(" (set the password in %s)", t.Dialect.PasswordEnv)
		}
		if errors.As(err, &me) && strings.Contains(strings.ToLower(me.Message), "time_zone") {
			hint = " (the server refused SET time_zone='+00:00': Lindorm needs LindormTable 2.7.6 or later for it; without it TIMESTAMP values would shift by the session's zone)"
		}
		return fmt.Errorf("connect to %s: %w%s", t.Redacted, err, hint)
	}
	if check := t.Dialect.CheckSession; check != nil {
		if err := check(ctx, db); err != nil {
			return err
		}
	}
	return CheckTable(ctx, db, t.Dialect, t.Database, schema)
}

// CellTimestamps tells whether the writes carry cell timestamps (Target.CellTimestamps).
func (w *Writer) CellTimestamps() bool { return w.cfg.Target.CellTimestamps }

// Table is the table written.
func (w *Writer) Table() string { return w.cfg.Schema.Table }

// DB is the connection pool (for tests and verify).
func (w *Writer) DB() *sql.DB { return w.db }

// Close closes the connections.
func (w *Writer) Close() error { return w.db.Close() }

// Op is one change for Apply: an upsert of a whole row, or the delete of the key in its first
// KeyLen values.
type Op struct {
	Delete bool
	Values []pipeline.Value
	// Set, when not nil, makes an upsert write the key and the columns Set names only (Set[i]
	// for target column i; a set column whose value is null becomes NULL): the others keep
	// their values. nil: the whole row.
	Set []bool
	// Range, with Delete, deletes every row in the key range instead of one key.
	Range *pipeline.KeyRange
	// Timestamp is the change's write time in epoch milliseconds, written as the cells'
	// timestamp when the target has CellTimestamps (0: the server's time).
	Timestamp int64
}

// Write upserts rows (pipeline.Sink). Every row is written, or refused by the server and
// returned as a reject (*pipeline.RowRejects), when Write returns: the rows are not retained.
//
// A copied row writes the cells it has: a null is left out of the statement, not written as a
// NULL (which Lindorm, like Cassandra, keeps as a delete marker of the cell), so a copy leaves no
// tombstones and does not clear a value the table already holds. A row whose cells carry write
// times (Row.Times, with the target's CellTimestamps) is written as one upsert per distinct
// write time, of the cells of that time, each with its timestamp.
func (w *Writer) Write(ctx context.Context, rows []pipeline.Row) error {
	return w.WriteInTurn(ctx, rows, nil)
}

// WriteInTurn is Write in the runner's order of batches (pipeline.OrderedSink): once its rows
// are rendered it waits for turn, queues its statements on every connection behind those of the
// batches before it, and gives the turn up, so that a key's row of a later batch is never
// written before one of an earlier batch, which would leave the older row. nil: no order.
func (w *Writer) WriteInTurn(ctx context.Context, rows []pipeline.Row, turn *pipeline.Turn) error {
	a := w.state()
	defer w.pool.Put(a)
	a.ops = a.ops[:0]
	a.opRow = a.opRow[:0]
	a.changes = false
	a.pieces = false
	keyLen, ncol := w.st.schema.KeyLen, len(w.st.schema.Columns)
	times := w.cfg.Target.CellTimestamps
	// the masks of the rows written in parts, in one slab: counted first, so that the ops'
	// Set slices never move
	parts := 0
	a.groups = a.groups[:0]
	for i := range rows {
		n := cellGroups(rows[i], keyLen, times)
		a.groups = append(a.groups, n)
		parts += n
	}
	if need := parts * ncol; cap(a.masks) < need {
		a.masks = make([]bool, need)
	}
	masks := a.masks[:parts*ncol]
	clear(masks)
	for i := range rows {
		r := rows[i]
		if a.groups[i] == 0 {
			a.ops = append(a.ops, Op{Values: r.Values})
			a.opRow = append(a.opRow, i)
			continue
		}
		a.pieces = true
		first := len(a.ops)
		for c := keyLen; c < ncol; c++ {
			if r.Values[c].IsNull() {
				continue
			}
			var ts int64
			if times && r.Times != nil {
				ts = r.Times[c]
			}
			j := first
			for j < len(a.ops) && a.ops[j].Timestamp != ts {
				j++
			}
			if j == len(a.ops) {
				set := masks[:ncol:ncol]
				masks = masks[ncol:]
				for k := range keyLen {
					set[k] = true
				}
				a.ops = append(a.ops, Op{Values: r.Values, Set: set, Timestamp: ts})
				a.opRow = append(a.opRow, i)
			}
			a.ops[j].Set[c] = true
		}
	}
	rej, err := w.apply(ctx, a, turn)
	if err != nil {
		return err
	}
	if len(rej) == 0 {
		return nil
	}
	// rejects name rows, each once, however many statements it was written in
	out := make([]pipeline.RowReject, 0, len(rej))
	seen := map[int]bool{}
	for _, r := range rej {
		row := a.opRow[r.Index]
		if !seen[row] {
			seen[row] = true
			out = append(out, pipeline.RowReject{Index: row, Err: r.Err})
		}
	}
	slices.SortFunc(out, func(x, y pipeline.RowReject) int { return x.Index - y.Index })
	return &pipeline.RowRejects{Rows: out}
}

// cellGroups tells in how many upserts a copied row is written: 0 when it is one upsert of the
// whole row (no null, no cell write times), else one per distinct write time of its non-null
// cells (one when no times are carried). A row with no non-null cell at all is written whole:
// the transform refuses key-only rows before they get here.
func cellGroups(r pipeline.Row, keyLen int, times bool) int {
	nulls := false
	for _, v := range r.Values[keyLen:] {
		if v.IsNull() {
			nulls = true
			break
		}
	}
	if !times || r.Times == nil {
		if !nulls || pipeline.AllNull(r.Values[keyLen:]) {
			return 0
		}
		return 1
	}
	n := 0
	for c := keyLen; c < len(r.Values); c++ {
		if r.Values[c].IsNull() {
			continue
		}
		dup := false
		for d := keyLen; d < c; d++ {
			if !r.Values[d].IsNull() && r.Times[d] == r.Times[c] {
				dup = true
				break
			}
		}
		if !dup {
			n++
		}
	}
	return n
}

// Commit has nothing to do: Write returns only once its statements succeeded.
func (w *Writer) Commit(context.Context) ([]pipeline.FileInfo, error) { return nil, nil }

// Abort has nothing to remove: what was written is in the table, and a resume writes it again
// (upserts are idempotent).
func (w *Writer) Abort(context.Context) error { return nil }

// Apply runs the changes in their order per key: rejects name the ops the server refused (or
// that have no literal), by index into ops; the error is a failure of the run (the server
// unreachable after every retry, a statement it refuses whole).
//
// A range delete covers keys of every shard: the ops before it finish first, then it runs alone.
func (w *Writer) Apply(ctx context.Context, ops []Op) ([]pipeline.RowReject, error) {
	a := w.state()
	defer w.pool.Put(a)
	var rejects []pipeline.RowReject
	for start := 0; start < len(ops); {
		if ops[start].Range != nil {
			if rerr, err := w.deleteRange(ctx, ops[start].Range, ops[start].Timestamp); err != nil {
				return nil, err
			} else if rerr != nil {
				rejects = append(rejects, pipeline.RowReject{Index: start, Err: rerr})
			}
			start++
			continue
		}
		end := start + 1
		for end < len(ops) && ops[end].Range == nil {
			end++
		}
		a.ops = append(a.ops[:0], ops[start:end]...)
		a.changes, a.pieces = true, false
		rej, err := w.apply(ctx, a, nil)
		if err != nil {
			return nil, err
		}
		for _, r := range rej {
			r.Index += start
			rejects = append(rejects, r)
		}
		start = end
	}
	return rejects, nil
}

// deleteRange deletes the rows of a key range: one DELETE where the dialect takes a range
// (MySQL), otherwise (Lindorm's DELETE names one whole key) the range's keys read by a SELECT
// and deleted one statement each, in batches of MaxRows.
func (w *Writer) deleteRange(ctx context.Context, kr *pipeline.KeyRange, ts int64) (*pipeline.RowError, error) {
	cond, rerr := w.st.appendRangeCond(nil, kr)
	if rerr != nil {
		w.Stats.Rejected.Add(1)
		return rerr, nil
	}
	if w.st.d.BatchDeletes {
		stmt := w.withTimestamp(w.st.deleteWhere+string(cond), ts)
		err := w.run(ctx, "delete", 1, stmt)
		if err != nil && classify(err) == classRow {
			w.Stats.Rejected.Add(1)
			return rowError(err, len(stmt), w.st.schema.Table), nil
		}
		return nil, err
	}
	// pages in key order, each after the last key of the one before: a delete at the change's
	// write time leaves the rows whose cells are newer, and a SELECT of the range from its
	// start would find them again, page after page
	page := *kr
	for {
		var keys [][]pipeline.Value
		q := w.st.keySelect + string(cond) + w.st.keyOrder + " LIMIT " + fmt.Sprint(w.cfg.MaxRows)
		err := w.retry(ctx, "select", 0, func(ctx context.Context) error {
			keys = keys[:0]
			rows, err := w.db.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rows.Close()
			sc := newRowScanner(w.st.keySchema())
			for rows.Next() {
				k, err := sc.scan(rows)
				if err != nil {
					return err
				}
				keys = append(keys, k)
			}
			return rows.Err()
		})
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			eq, rerr := w.st.appendKeyEq(nil, k)
			if rerr != nil {
				return rerr, nil
			}
			if err := w.run(ctx, "delete", 1, w.withTimestamp(w.st.deleteHead+string(eq), ts)); err != nil {
				return nil, err
			}
			w.Stats.Deletes.Add(1)
		}
		if len(keys) < w.cfg.MaxRows || len(kr.Prefix) >= w.st.schema.KeyLen {
			return nil, nil
		}
		page.Start = pipeline.KeyBound{Vals: keys[len(keys)-1][len(kr.Prefix):]}
		if cond, rerr = w.st.appendRangeCond(cond[:0], &page); rerr != nil {
			return rerr, nil
		}
	}
}

// applyState is one call's rendering: every op's literal text in one arena.
type applyState struct {
	ops    []Op
	arena  []byte
	spans  [][2]int // ops[i]'s text: arena[spans[i][0]:spans[i][1]]; [0,0] when rejected
	shards [][]int  // op indices per shard, in order
	// changes: the ops are Apply's changes (not Write's copied rows), whose upserts that write
	// no value but NULL are cell deletes: empty[i] marks those
	changes bool
	empty   []bool
	// pieces: Write's copied rows were split into upserts of some columns (nulls left out, or
	// cells of one write time each); opRow[i] is the row of ops[i], masks the ops' Set slab
	pieces bool
	opRow  []int
	masks  []bool
	groups []int // Write: each row's cellGroups
}

func (w *Writer) state() *applyState {
	if a, ok := w.pool.Get().(*applyState); ok {
		return a
	}
	return &applyState{}
}

// apply renders the ops and runs each shard's on its connection. With a turn, the shards are
// taken in order once it comes, and it is given up once they are all taken: the statements of
// the next turn's batch run after these on every connection.
func (w *Writer) apply(ctx context.Context, a *applyState, turn *pipeline.Turn) ([]pipeline.RowReject, error) {
	st := w.st
	n := len(w.shards)
	a.arena = a.arena[:0]
	a.spans = a.spans[:0]
	a.empty = a.empty[:0]
	if cap(a.shards) < n {
		a.shards = make([][]int, n)
	}
	a.shards = a.shards[:n]
	for i := range a.shards {
		a.shards[i] = a.shards[i][:0]
	}
	var rejects []pipeline.RowReject
	var mu sync.Mutex
	for i := range a.ops {
		op := &a.ops[i]
		start := len(a.arena)
		var rerr *pipeline.RowError
		switch {
		case !op.Delete && op.Set != nil:
			a.arena, rerr = st.appendPartialRow(a.arena, op.Values, op.Set)
		case !op.Delete:
			a.arena, rerr = st.appendRow(a.arena, op.Values)
		case st.d.BatchDeletes:
			a.arena, rerr = st.appendKeyTuple(a.arena, op.Values)
		default:
			a.arena, rerr = st.appendKeyEq(a.arena, op.Values)
		}
		if rerr != nil {
			a.arena = a.arena[:start]
			a.spans = append(a.spans, [2]int{})
			a.empty = append(a.empty, false)
			rejects = append(rejects, pipeline.RowReject{Index: i, Err: rerr})
			continue
		}
		a.spans = append(a.spans, [2]int{start, len(a.arena)})
		a.empty = append(a.empty, a.changes && !op.Delete && st.allNull != "" && writesNoValue(op, st.schema.KeyLen))
		s := int(st.keyHash(op.Values[:st.schema.KeyLen]) % uint64(n))
		a.shards[s] = append(a.shards[s], i)
	}
	if len(rejects) > 0 {
		w.Stats.Rejected.Add(int64(len(rejects)))
		if a.pieces {
			dropRejectedRows(a, rejects)
		}
	}
	if turn != nil {
		if err := turn.Wait(ctx); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for s, idx := range a.shards {
		if len(idx) == 0 {
			continue
		}
		sh := w.shards[s]
		if turn != nil {
			sh.mu.Lock() // within the turn: behind the batch before it, ahead of the next
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if turn == nil {
				sh.mu.Lock()
			}
			rej, err := w.runShard(ctx, a, idx)
			sh.mu.Unlock()
			if err != nil {
				errOnce.Do(func() { firstErr = err })
			}
			if len(rej) > 0 {
				mu.Lock()
				rejects = append(rejects, rej...)
				mu.Unlock()
			}
		}()
	}
	if turn != nil {
		turn.Done()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return rejects, nil
}

// dropRejectedRows takes out of the shards the other upserts of the copied rows that have an
// upsert rejected: a row is written whole or rejected, never in part.
func dropRejectedRows(a *applyState, rejects []pipeline.RowReject) {
	bad := make(map[int]bool, len(rejects))
	for _, r := range rejects {
		bad[a.opRow[r.Index]] = true
	}
	for s, idx := range a.shards {
		a.shards[s] = slices.DeleteFunc(idx, func(i int) bool { return bad[a.opRow[i]] })
	}
}

// keyHash spreads keys over the shards: one key, however its values are spelled, on one.
func (s *statements) keyHash(key []pipeline.Value) uint64 {
	var h uint64 = 0x9e3779b97f4a7c15
	for i, v := range key {
		v = KeyValue(s.schema.Columns[i], v)
		switch v.Kind {
		case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
			h = h*0x100000001b3 ^ xxh3.HashString(v.Str)
		default:
			h = h*0x100000001b3 ^ uint64(v.Num)*0xbf58476d1ce4e5b9 ^ uint64(v.Kind)
		}
	}
	return h ^ h>>31
}

// runShard runs one shard's ops in order. Copied rows (Write) go in statements within the size
// limits; changes (Apply) go in pieces (runPieces).
func (w *Writer) runShard(ctx context.Context, a *applyState, idx []int) ([]pipeline.RowReject, error) {
	if a.changes || a.pieces {
		return w.runPieces(ctx, a, idx)
	}
	if w.st.d.DistinctUpsertKeys {
		return w.runDistinct(ctx, a, idx)
	}
	return w.runBatch(ctx, a, idx, &w.st.full)
}

// runDistinct runs copied rows where one upsert statement must not hold one key twice: of a
// key's rows the last is sent, and when the server refuses it, the last of the rows before it
// (counted as written, they must not go with it).
func (w *Writer) runDistinct(ctx context.Context, a *applyState, run []int) ([]pipeline.RowReject, error) {
	var rejects []pipeline.RowReject
	for len(run) > 0 {
		keep := lastPerKey(w.st, a, run)
		rej, err := w.runBatch(ctx, a, keep, &w.st.full)
		if err != nil {
			return nil, err
		}
		rejects = append(rejects, rej...)
		if len(keep) == len(run) || len(rej) == 0 {
			break
		}
		refused := make(map[string]int, len(rej)) // key -> the refused row
		for _, r := range rej {
			refused[w.st.keyString(a.ops[r.Index].Values[:w.st.schema.KeyLen])] = r.Index
		}
		var before []int
		for _, i := range run {
			if r, ok := refused[w.st.keyString(a.ops[i].Values[:w.st.schema.KeyLen])]; ok && i < r {
				before = append(before, i)
			}
		}
		run = before
	}
	return rejects, nil
}

// runPieces runs a shard's changes: deletes, whole-row upserts and upserts of some columns. Only
// the changes of one key must keep their order, so the changes are cut into pieces where a key
// comes again, and within a piece (every key once) each kind goes in statements of its own:
// the deletes, then the upserts of each column set in the order the sets first appear (each
// kind's rows in key order), each
// followed by the delete of the rows it left without a value (dropEmptied). A shard of changes
// to distinct keys is one piece: a statement per kind, not per run of one kind.
func (w *Writer) runPieces(ctx context.Context, a *applyState, idx []int) ([]pipeline.RowReject, error) {
	var rejects []pipeline.RowReject
	var order []string // group names in first-appearance order: "D" deletes, else the set mask
	groups := map[string][]int{}
	// seen: the keys of the piece, each with the copied row it came from (-1: a change): the
	// upserts of one copied row write distinct cells, and need no order among them
	seen := map[string]int{}
	// a copy's upserts of several write times go in statements of one time each
	byTime := a.pieces && w.cfg.Target.CellTimestamps
	flush := func() error {
		for _, m := range order {
			g := groups[m]
			// in the table's key order: statements of several connections then lock rows in
			// one order, and InnoDB finds far fewer deadlocks among them
			slices.SortFunc(g, func(i, j int) int { return w.st.schema.CompareKeys(a.ops[i].Values, a.ops[j].Values) })
			var shape *upsertShape // nil: deletes
			if m != "D" {
				mask, _, _ := strings.Cut(m, "@")
				shape = w.shape(mask, a.ops[g[0]].Set)
			}
			rej, err := w.runBatch(ctx, a, g, shape)
			if err != nil {
				return err
			}
			rejects = append(rejects, rej...)
			if shape != nil {
				if err := w.dropEmptied(ctx, a, g); err != nil {
					return err
				}
			}
		}
		order = order[:0]
		clear(groups)
		clear(seen)
		return nil
	}
	var mask []byte
	for _, i := range idx {
		op := &a.ops[i]
		k := w.st.keyString(op.Values[:w.st.schema.KeyLen])
		row := -1
		if a.pieces {
			row = a.opRow[i]
		}
		if r, ok := seen[k]; ok && (r < 0 || r != row) {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		seen[k] = row
		mask = mask[:0]
		if op.Delete {
			mask = append(mask, 'D')
		}
		for _, s := range op.Set {
			mask = append(mask, '0'+b2i(s))
		}
		if byTime {
			mask = append(mask, '@')
			mask = strconv.AppendInt(mask, op.Timestamp, 10)
		}
		m := string(mask)
		if _, ok := groups[m]; !ok {
			order = append(order, m)
		}
		groups[m] = append(groups[m], i)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return rejects, nil
}

func b2i(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// shape returns the upsert text of the columns set names (mask is its text, "" for nil).
func (w *Writer) shape(mask string, set []bool) *upsertShape {
	if set == nil {
		return &w.st.full
	}
	if sh, ok := w.shapes.Load(mask); ok {
		return sh.(*upsertShape)
	}
	sh := w.st.upsertShape(set)
	w.shapes.Store(mask, &sh)
	return &sh
}

// writesNoValue tells whether an upsert writes NULL into every non-key column it names (or
// names none): it can leave a row holding its key alone.
func writesNoValue(op *Op, keyLen int) bool {
	if op.Set == nil {
		return pipeline.AllNull(op.Values[keyLen:])
	}
	for i := keyLen; i < len(op.Values); i++ {
		if op.Set[i] && op.Values[i].Kind != pipeline.KindNull {
			return false
		}
	}
	return true
}

// dropEmptied deletes the rows that the upserts of run which write no value but NULL left
// holding their key alone. A wide table has no row without a cell: Cassandra shows no row once
// an UPDATE's cells are deleted, Lindorm stores none, and Debezium's Cassandra connector sends
// a cell delete (`DELETE c FROM ...`), also of a row that does not exist, as an update setting
// c to null, which a MySQL-protocol table would otherwise keep as a row of NULLs. The rows are
// deleted only where every non-key column is NULL after the upserts, so a row another column
// still holds stays; MySQL deletes them in one statement, Lindorm (whose DELETE names one whole
// key) those a SELECT of the key finds empty, at the change's cell timestamp.
func (w *Writer) dropEmptied(ctx context.Context, a *applyState, run []int) error {
	st := w.st
	var keys [][]byte
	var ops []int
	for _, i := range run {
		if !a.empty[i] {
			continue
		}
		var k []byte
		var rerr *pipeline.RowError
		if st.d.BatchDeletes {
			k, rerr = st.appendKeyTuple(nil, a.ops[i].Values)
		} else {
			k, rerr = st.appendKeyEq(nil, a.ops[i].Values)
		}
		if rerr != nil { // its upsert was rendered from the same values
			return fmt.Errorf("sqlsink: rendering the key of a row to check for emptiness: %s", rerr.Message)
		}
		keys = append(keys, k)
		ops = append(ops, i)
	}
	if len(keys) == 0 {
		return nil
	}
	if st.d.BatchDeletes {
		for len(keys) > 0 {
			n := min(len(keys), w.cfg.MaxRows)
			stmt := st.deletes(keys[:n])[0] + st.allNull
			if err := w.run(ctx, "delete", n, stmt); err != nil {
				return fmt.Errorf("sqlsink: deleting rows left without a value: %w", err)
			}
			keys = keys[n:]
		}
		return nil
	}
	for j, k := range keys {
		q := st.keySelect + string(k) + st.allNull
		found := false
		err := w.retry(ctx, "select", 0, func(ctx context.Context) error {
			rows, err := w.db.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rows.Close()
			found = rows.Next()
			return rows.Err()
		})
		if err != nil {
			return fmt.Errorf("sqlsink: looking for a row left without a value: %w", err)
		}
		if found {
			stmt := w.withTimestamp(st.deleteHead+string(k), a.ops[ops[j]].Timestamp)
			if err := w.run(ctx, "delete", 1, stmt); err != nil {
				return fmt.Errorf("sqlsink: deleting a row left without a value: %w", err)
			}
		}
	}
	return nil
}

// lastPerKey keeps, of the upserts of one key (its first keyLen values) in a run of upserts of
// the same columns (no delete between them), the last: it writes every column the earlier ones
// do, so they change nothing.
func lastPerKey(st *statements, a *applyState, run []int) []int {
	keyLen := st.schema.KeyLen
	if len(run) < 2 {
		return run
	}
	seen := make(map[string]bool, len(run))
	keep := make([]int, 0, len(run))
	for i := len(run) - 1; i >= 0; i-- {
		k := st.keyString(a.ops[run[i]].Values[:keyLen])
		if !seen[k] {
			seen[k] = true
			keep = append(keep, run[i])
		}
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	return keep
}

// keyString is a key as the table compares it (KeyValue): one text however its values are
// spelled. Each value's text goes with its length: text may hold any byte, and a separator
// made ("a\x00\x04", "b") and ("a", "\x00\x04b") one key, the first row dropped as overwritten.
func (s *statements) keyString(key []pipeline.Value) string {
	var b, text []byte
	for i, x := range key {
		x = KeyValue(s.schema.Columns[i], x)
		text = x.AppendCanonical(text[:0])
		b = append(b, byte(x.Kind))
		b = binary.AppendUvarint(b, uint64(len(text)))
		b = append(b, text...)
	}
	return string(b)
}

// KeyValue is v as key column col holds it: a DECIMAL at the column's scale (1.5, 1.50 and
// 0.15e1 are one key), text and bytes alike in a text or binary column, with the text of any
// other kind it takes; an integer, TIMESTAMP or DATE column's int whatever kind gave it. A value
// with no literal of the column's type is returned as it is (it is rejected before it is written).
func KeyValue(col pipeline.Column, v pipeline.Value) pipeline.Value {
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON, pipeline.TypeVarbinary:
		if v.Kind == pipeline.KindText {
			return v
		}
		if t, err := files.TextValue(col, v); err == nil {
			return pipeline.Value{Kind: pipeline.KindText, Str: t}
		}
	case pipeline.TypeDecimal:
		if d, err := files.DecimalValue(col, v); err == nil {
			return pipeline.Value{Kind: pipeline.KindDecimal, Str: string(d.AppendText(nil, col.Scale))}
		}
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint, pipeline.TypeTimestamp, pipeline.TypeDate:
		if v.Kind == pipeline.KindInt {
			return v
		}
		if i, err := files.IntValue(col, v); err == nil {
			return pipeline.Int(i)
		}
	}
	return v
}

func keyString(v []pipeline.Value) string {
	var b strings.Builder
	for _, x := range v {
		b.WriteByte(byte(x.Kind))
		b.WriteString(x.String())
		b.WriteByte(0)
	}
	return b.String()
}

// runBatch sends a run of upserts of one shape (or deletes: shape nil) in statements within
// MaxRows and MaxBytes.
func (w *Writer) runBatch(ctx context.Context, a *applyState, run []int, shape *upsertShape) ([]pipeline.RowReject, error) {
	del := shape == nil
	if del && !w.st.d.BatchDeletes || w.cfg.Target.CellTimestamps && !a.pieces {
		// one statement per change: a statement carries one cell timestamp (a copy's upserts
		// come in runs of one write time: runPieces)
		var rejects []pipeline.RowReject
		for _, i := range run {
			rej, err := w.exec(ctx, a, []int{i}, shape)
			if err != nil {
				return nil, err
			}
			rejects = append(rejects, rej...)
		}
		return rejects, nil
	}
	head := len(w.st.deleteHead) + 1
	if !del {
		head = len(shape.head) + len(shape.tail)
	}
	var rejects []pipeline.RowReject
	for len(run) > 0 {
		n, size := 0, head
		for n < len(run) && n < w.cfg.MaxRows {
			sp := a.spans[run[n]]
			l := sp[1] - sp[0] + 1
			if n > 0 && size+l > w.cfg.MaxBytes {
				break
			}
			size += l
			n++
		}
		rej, err := w.exec(ctx, a, run[:n], shape)
		if err != nil {
			return nil, err
		}
		rejects = append(rejects, rej...)
		run = run[n:]
	}
	return rejects, nil
}

// withTimestamp gives stmt the cell timestamp ts when the target writes cell timestamps.
func (w *Writer) withTimestamp(stmt string, ts int64) string {
	if !w.cfg.Target.CellTimestamps || ts <= 0 {
		return stmt
	}
	return cellTimestamp(stmt, ts)
}

// exec runs one statement of ops, retrying transient errors; when the server refuses a row of
// it, the statement is split in halves until the refused rows are alone, and those are rejected.
func (w *Writer) exec(ctx context.Context, a *applyState, ops []int, shape *upsertShape) ([]pipeline.RowReject, error) {
	del := shape == nil
	tuples := make([][]byte, len(ops))
	for i, o := range ops {
		sp := a.spans[o]
		tuples[i] = a.arena[sp[0]:sp[1]]
	}
	kind := "upsert"
	var stmt string
	if del {
		kind = "delete"
		stmt = w.st.deletes(tuples)[0]
	} else {
		buf := w.st.upsert(make([]byte, 0, len(shape.head)+len(shape.tail)+len(tuples)*(len(tuples[0])+1)), shape, tuples)
		stmt = unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is this statement's alone and never changed
	}
	if len(ops) == 1 || a.pieces {
		stmt = w.withTimestamp(stmt, a.ops[ops[0]].Timestamp)
	}
	err := w.run(ctx, kind, len(ops), stmt)
	if err == nil {
		if del {
			w.Stats.Deletes.Add(int64(len(ops)))
		} else {
			w.Stats.Upserts.Add(int64(len(ops)))
		}
		return nil, nil
	}
	if classify(err) != classRow {
		return nil, err
	}
	if len(ops) == 1 {
		w.Stats.Rejected.Add(1)
		w.log.Warn("row refused by the server", zap.String("kind", kind), zap.Error(err))
		return []pipeline.RowReject{{Index: ops[0], Err: rowError(err, len(stmt), w.st.schema.Table)}}, nil
	}
	half := len(ops) / 2
	r1, err := w.exec(ctx, a, ops[:half], shape)
	if err != nil {
		return nil, err
	}
	r2, err := w.exec(ctx, a, ops[half:], shape)
	if err != nil {
		return nil, err
	}
	return append(r1, r2...), nil
}

// run executes a statement, retrying transient errors.
func (w *Writer) run(ctx context.Context, kind string, rows int, stmt string) error {
	return w.retry(ctx, kind, rows, func(ctx context.Context) error {
		var err error
		if w.execHook != nil {
			err = w.execHook(stmt)
		} else {
			_, err = w.db.ExecContext(ctx, stmt)
		}
		if err == nil {
			w.Stats.Bytes.Add(int64(len(stmt)))
		}
		return err
	})
}

// guardKey is the context key of WithGuard's guard.
type guardKey struct{}

// WithGuard returns a context whose statements run only while guard holds (returns nil): it is
// asked before every statement is sent (and every retry of one), and its error stops the writes.
// It also says how long a statement may run before it is asked again (0: for as long as it
// runs); a statement still running when it no longer holds is cut off, and ended on the server
// (sessions.go), and the guard's error is returned. replicate guards with its lease: a member
// paused in the middle of a batch, or whose lease runs out while a statement waits on the
// server, must not run the rest of it over the newer changes of the partition's next owner.
func WithGuard(ctx context.Context, guard func() (time.Duration, error)) context.Context {
	return context.WithValue(ctx, guardKey{}, guard)
}

// guarded runs f with a context that guard, asked again whenever the time it gave (left)
// passes, cuts off with its error; cut tells whether it did.
func guarded(ctx context.Context, guard func() (time.Duration, error), left time.Duration, f func(context.Context) error) (cut bool, err error) {
	if guard == nil || left <= 0 {
		return false, f(ctx)
	}
	gctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	var ended sync.WaitGroup
	ended.Add(1)
	go func() {
		defer ended.Done()
		t := time.NewTimer(left)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			d, err := guard()
			if err != nil {
				cancel(err)
				return
			}
			if d <= 0 {
				return
			}
			t.Reset(d)
		}
	}()
	err = f(gctx)
	close(done)
	ended.Wait()
	if err != nil && ctx.Err() == nil && gctx.Err() != nil {
		return true, context.Cause(gctx) // the guard's error
	}
	return false, err
}

// retry runs f until it succeeds, retrying transient errors with exponential backoff and
// jitter; a row-level error is returned as is, a fatal one with context.
func (w *Writer) retry(ctx context.Context, kind string, rows int, f func(context.Context) error) error {
	bo := w.backoff()
	deadlocks := 0
	guard, _ := ctx.Value(guardKey{}).(func() (time.Duration, error))
	for attempt := 0; ; {
		var left time.Duration
		if guard != nil {
			var err error
			if left, err = guard(); err != nil {
				return err
			}
		}
		start := time.Now()
		cut, err := guarded(ctx, guard, left, f)
		if w.cfg.Observe != nil {
			w.cfg.Observe(kind, rows, time.Since(start), err)
		}
		if cut {
			return err
		}
		if err == nil {
			w.Stats.Statements.Add(1)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c := classify(err)
		if c != classTransient {
			if c == classFatal {
				return fmt.Errorf("%s of %d rows in %s: %w", kind, rows, w.cfg.Target.Redacted, err)
			}
			return err
		}
		w.Stats.Retries.Add(1)
		if isDeadlock(err) && deadlocks < maxDeadlockRetries {
			// InnoDB rolled the statement back to let another connection's go on: nothing is
			// wrong with the server, and waiting would only idle this connection
			deadlocks++
			w.log.Debug("statement chosen as a deadlock's victim, running it again", zap.String("kind", kind), zap.Int("rows", rows), zap.Int("deadlocks", deadlocks))
			continue
		}
		if attempt >= w.cfg.Retries {
			check := "check that the server is up and reachable"
			if readOnly(err) {
				check = "the server refuses writes as read-only: check that the target is the primary (a failover may still be under way)"
			}
			return fmt.Errorf("%s of %d rows in %s failed %d times, the last: %w; %s, then run again (what was written is kept; writes are idempotent)",
				kind, rows, w.cfg.Target.Redacted, attempt+deadlocks+1, err, check)
		}
		attempt++
		w.log.Warn("statement failed, retrying", zap.String("kind", kind), zap.Int("rows", rows), zap.Int("attempt", attempt), zap.Duration("backoff", bo.Delay()), zap.Error(err))
		if err := bo.Wait(ctx); err != nil {
			return err
		}
	}
}

// maxDeadlockRetries bounds how often one statement runs again at once after deadlocks; beyond
// it, deadlocks are retried like any transient error, with backoff.
const maxDeadlockRetries = 100

// backoff starts a retry sequence: jittered, so that connections that failed together do not
// retry together.
func (w *Writer) backoff() *backoff.Backoff {
	return backoff.Policy{Min: w.cfg.BackoffMin, Max: w.cfg.BackoffMax, Jitter: true}.Start()
}
