package cqltest

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"go.uber.org/zap"

	"github.com/rekey/rekey/transform/murmur3"
)

type outKind int

const (
	outCell outKind = iota
	outToken
	outWritetime
	outTTL
	outCount
)

type outCol struct {
	kind outKind
	col  int // column index for outCell, outWritetime, outTTL
	name string
	typ  *cqlType
}

type bindSpec struct {
	name string
	typ  *cqlType
}

type filterRel struct {
	col int
	op  string
	val operand
}

// plan is a statement resolved against a table: what to return and how to restrict rows.
type plan struct {
	id        []byte
	keyspace  string
	table     string
	sys       bool   // system table, rebuilt for each request
	tbl       *table // the data table, or a system table's schema
	st        *statement
	out       []outCol
	star      bool // output is every cell in storage order
	binds     []bindSpec
	pkIdx     []uint16 // bind marker index of each partition key column, when all are bound by =
	tokenRels []relation
	pkEq      []operand // one per partition key column when all are restricted by =
	filters   []filterRel
	count     bool
}

var (
	typBigint = newNative(gocql.TypeBigInt)
	typInt    = newNative(gocql.TypeInt)
)

func invalid(format string, args ...any) *cqlError { return errorf(ErrInvalid, format, args...) }

func isSystemKeyspace(ks string) bool {
	switch ks {
	case "system", "system_schema", "system_auth", "system_distributed", "system_traces", "system_virtual_schema", "system_views":
		return true
	}
	return false
}

// buildPlan resolves a SELECT statement.
func (s *Server) buildPlan(st *statement, curKeyspace string) (*plan, *cqlError) {
	ks := st.keyspace
	if ks == "" {
		ks = curKeyspace
	}
	if ks == "" {
		return nil, invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
	}
	p := &plan{keyspace: ks, table: st.table, st: st, binds: make([]bindSpec, st.markers)}
	if isSystemKeyspace(ks) {
		t := systemSchema(ks, st.table)
		if t == nil {
			if ks == "system" || ks == "system_schema" {
				return nil, invalid("unconfigured table %s", st.table)
			}
			return nil, invalid("Keyspace %s does not exist", ks)
		}
		p.sys, p.tbl = true, t
	} else {
		s.mu.RLock()
		k := s.keyspaces[ks]
		var t *table
		if k != nil {
			t = k.tables[st.table]
		}
		s.mu.RUnlock()
		if k == nil {
			return nil, invalid("Keyspace %s does not exist", ks)
		}
		if t == nil {
			return nil, invalid("unconfigured table %s", st.table)
		}
		p.tbl = t
	}
	t := p.tbl
	colIndex := func(name string) (int, *cqlError) {
		i, ok := t.byName[name]
		if !ok {
			return 0, invalid("Undefined column name %s in table %s.%s", name, ks, st.table)
		}
		return i, nil
	}

	// Selection.
	if st.star {
		p.star = true
		for i, c := range t.cols {
			p.out = append(p.out, outCol{kind: outCell, col: i, name: c.name, typ: c.typ})
		}
	}
	for _, it := range st.items {
		var oc outCol
		switch it.fn {
		case "":
			i, err := colIndex(it.args[0])
			if err != nil {
				return nil, err
			}
			oc = outCol{kind: outCell, col: i, name: t.cols[i].name, typ: t.cols[i].typ}
		case "token":
			if err := checkTokenArgs(t, it.args); err != nil {
				return nil, err
			}
			oc = outCol{kind: outToken, name: "system.token(" + strings.Join(it.args, ", ") + ")", typ: typBigint}
		case "writetime", "ttl":
			if !p.sys && s.refusedSelector() == it.fn {
				return nil, invalid("Unsupported selector %s: this server does not support it", strings.ToUpper(it.fn))
			}
			i, err := colIndex(it.args[0])
			if err != nil {
				return nil, err
			}
			c := t.cols[i]
			if c.kind != "regular" {
				return nil, invalid("Cannot use selection function %s on PRIMARY KEY part %s", it.fn, c.name)
			}
			if c.typ.isMultiCell() {
				return nil, invalid("Cannot use selection function %s on non-frozen collection %s", it.fn, c.name)
			}
			oc = outCol{kind: outWritetime, col: i, name: "writetime(" + c.name + ")", typ: typBigint}
			if it.fn == "ttl" {
				oc = outCol{kind: outTTL, col: i, name: "ttl(" + c.name + ")", typ: typInt}
			}
		case "count":
			if len(st.items) != 1 {
				return nil, invalid("count(*) must be the only selected item in this server")
			}
			p.count = true
			oc = outCol{kind: outCount, name: "count", typ: typBigint}
		}
		if it.alias != "" {
			oc.name = it.alias
		}
		p.out = append(p.out, oc)
	}

	// Restrictions.
	pkEq := make([]operand, t.npk)
	pkSet := make([]bool, t.npk)
	var pkOther []filterRel
	for _, rel := range st.where {
		if rel.token {
			if err := checkTokenArgs(t, rel.cols); err != nil {
				return nil, err
			}
			if rel.val.bind >= 0 {
				p.binds[rel.val.bind] = bindSpec{name: "partition key token", typ: typBigint}
			}
			p.tokenRels = append(p.tokenRels, rel)
			continue
		}
		i, err := colIndex(rel.cols[0])
		if err != nil {
			return nil, err
		}
		c := t.cols[i]
		if rel.val.bind >= 0 {
			p.binds[rel.val.bind] = bindSpec{name: c.name, typ: c.typ}
		}
		if c.kind == "partition_key" {
			if rel.op != "=" {
				return nil, invalid("Only EQ and IN relation are supported on the partition key (unless you use the token() function)")
			}
			if pkSet[c.position] {
				pkOther = append(pkOther, filterRel{col: i, op: rel.op, val: rel.val})
				continue
			}
			pkEq[c.position], pkSet[c.position] = rel.val, true
			continue
		}
		p.filters = append(p.filters, filterRel{col: i, op: rel.op, val: rel.val})
	}
	fullPK := true
	for i := range pkSet {
		if !pkSet[i] {
			fullPK = false
		}
	}
	if fullPK {
		p.pkEq = pkEq
		p.pkIdx = make([]uint16, t.npk)
		for i, op := range pkEq {
			if op.bind < 0 {
				p.pkIdx = nil
				break
			}
			p.pkIdx[i] = uint16(op.bind)
		}
	} else {
		for i, set := range pkSet {
			if set {
				p.filters = append(p.filters, filterRel{col: i, op: "=", val: pkEq[i]})
			}
		}
	}
	p.filters = append(p.filters, pkOther...)
	if !p.sys && !st.allowFiltering && len(p.filters) > 0 {
		onlyClustering := fullPK
		for _, f := range p.filters {
			if t.cols[f.col].kind != "clustering" {
				onlyClustering = false
			}
		}
		if !onlyClustering {
			return nil, invalid("Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING")
		}
	}
	if st.limit != nil && st.limit.bind >= 0 {
		p.binds[st.limit.bind] = bindSpec{name: "[limit]", typ: typInt}
	}
	if p.count && st.distinct {
		return nil, invalid("DISTINCT with count(*) is not supported by this server")
	}
	if st.distinct {
		for _, oc := range p.out {
			if oc.kind == outCell && t.cols[oc.col].kind != "partition_key" {
				return nil, invalid("SELECT DISTINCT queries must only request partition key columns and/or static columns (not %s)", oc.name)
			}
		}
	}
	return p, nil
}

func checkTokenArgs(t *table, args []string) *cqlError {
	ok := len(args) == t.npk
	for i := 0; ok && i < t.npk; i++ {
		ok = args[i] == t.cols[i].name
	}
	if !ok {
		names := make([]string, t.npk)
		for i := range names {
			names[i] = t.cols[i].name
		}
		return invalid("The token function arguments must be in the partition key order: %s", strings.Join(names, ", "))
	}
	return nil
}

// ---- request handling ----

func (c *conn) handleRequest(stream int16, op byte, r *reader) {
	s := c.s
	var err *cqlError
	switch op {
	case opQuery:
		s.stats.queries.Add(1)
		s.stats.nodes[c.node.idx].Add(1)
		q := r.longString()
		params := r.queryParams()
		if r.err != nil {
			err = errorf(ErrProtocol, "malformed QUERY: %v", r.err)
			break
		}
		s.log.Debug("query", zap.String("cql", q))
		err = c.query(stream, q, params)
	case opPrepare:
		s.stats.prepares.Add(1)
		q := r.longString()
		if r.err != nil {
			err = errorf(ErrProtocol, "malformed PREPARE: %v", r.err)
			break
		}
		s.log.Debug("prepare", zap.String("cql", q))
		err = c.prepare(stream, q)
	case opExecute:
		s.stats.executes.Add(1)
		s.stats.nodes[c.node.idx].Add(1)
		id := r.shortBytes()
		params := r.queryParams()
		if r.err != nil {
			err = errorf(ErrProtocol, "malformed EXECUTE: %v", r.err)
			break
		}
		s.mu.RLock()
		p := s.prepared[string(id)]
		s.mu.RUnlock()
		if p != nil {
			s.log.Debug("execute", zap.String("table", p.keyspace+"."+p.table), zap.Int("page_size", int(params.pageSize)),
				zap.Bool("paging_state", len(params.pagingState) > 0))
		}
		if p == nil {
			err = &cqlError{code: ErrUnprepared, msg: fmt.Sprintf("Prepared query with ID %x not found", id), id: append([]byte(nil), id...)}
			break
		}
		err = c.run(stream, p, params)
	case opBatch:
		s.stats.queries.Add(1)
		err = invalid("BATCH is not supported by the cqltest server")
	}
	if err != nil {
		c.writeError(stream, err)
	}
}

func (c *conn) query(stream int16, q string, params queryParams) *cqlError {
	st, perr := parseStatement(q)
	if perr != nil {
		return errorf(ErrSyntax, "%v (in %q)", perr, q)
	}
	if st.kind == stmtUse {
		return c.use(stream, st.keyspace)
	}
	p, err := c.s.buildPlan(st, c.currentKeyspace())
	if err != nil {
		return err
	}
	return c.run(stream, p, params)
}

func (c *conn) use(stream int16, ks string) *cqlError {
	if !isSystemKeyspace(ks) {
		c.s.mu.RLock()
		_, ok := c.s.keyspaces[ks]
		c.s.mu.RUnlock()
		if !ok {
			return invalid("Keyspace '%s' does not exist", ks)
		}
	}
	c.ksMu.Lock()
	c.keyspace = ks
	c.ksMu.Unlock()
	b := appendInt(nil, resultSetKeyspace)
	b = appendString(b, ks)
	c.writeFrame(stream, opResult, b)
	return nil
}

func (c *conn) prepare(stream int16, q string) *cqlError {
	st, perr := parseStatement(q)
	if perr != nil {
		return errorf(ErrSyntax, "%v (in %q)", perr, q)
	}
	if st.kind != stmtSelect {
		return invalid("only SELECT statements can be prepared by this server")
	}
	ks := c.currentKeyspace()
	p, err := c.s.buildPlan(st, ks)
	if err != nil {
		return err
	}
	sum := md5.Sum([]byte(ks + "\x00" + q))
	p.id = sum[:]
	c.s.mu.Lock()
	c.s.prepared[string(p.id)] = p
	c.s.mu.Unlock()

	b := appendInt(nil, resultPrepared)
	b = appendShortBytes(b, p.id)
	// Bind variables metadata.
	flags := int32(0)
	if len(p.binds) > 0 {
		flags = mfGlobalTableSpec
	}
	b = appendInt(b, flags)
	b = appendInt(b, int32(len(p.binds)))
	if c.versionOrDefault() >= 4 {
		b = appendInt(b, int32(len(p.pkIdx)))
		for _, i := range p.pkIdx {
			b = appendShort(b, i)
		}
	}
	if len(p.binds) > 0 {
		b = appendString(b, p.keyspace)
		b = appendString(b, p.table)
		for _, bs := range p.binds {
			typ := bs.typ
			if typ == nil { // a marker we did not type: treat as blob
				typ = newNative(gocql.TypeBlob)
			}
			b = appendString(b, bs.name)
			b = typ.appendOption(b)
		}
	}
	// Result metadata.
	b = p.appendResultMetadata(b, 0, nil, false)
	c.writeFrame(stream, opResult, b)
	return nil
}

// appendResultMetadata appends <metadata> for a ROWS result or a PREPARED result.
func (p *plan) appendResultMetadata(b []byte, flags int32, pagingState []byte, noMetadata bool) []byte {
	if pagingState != nil {
		flags |= mfHasMorePages
	}
	if noMetadata {
		flags |= mfNoMetadata
	} else if len(p.out) > 0 {
		flags |= mfGlobalTableSpec
	}
	b = appendInt(b, flags)
	b = appendInt(b, int32(len(p.out)))
	if pagingState != nil {
		b = appendValue(b, pagingState)
	}
	if noMetadata || len(p.out) == 0 {
		return b
	}
	b = appendString(b, p.keyspace)
	b = appendString(b, p.table)
	for _, oc := range p.out {
		b = appendString(b, oc.name)
		b = oc.typ.appendOption(b)
	}
	return b
}

// ---- execution ----

// scanRange is the token interval of a request, both ends inclusive.
type scanRange struct {
	lo, hi     int64
	empty      bool
	start, end int64 // the bounds as the query gave them, for stats and fault matching
}

func (c *conn) operandValue(p *plan, op operand, typ *cqlType, values [][]byte, unset []bool) ([]byte, *cqlError) {
	if op.bind >= 0 {
		if op.bind >= len(values) {
			return nil, invalid("There were %d markers(?) in CQL but %d bound variables", p.st.markers, len(values))
		}
		if unset != nil && unset[op.bind] {
			return nil, invalid("Invalid unset value for %s", p.binds[op.bind].name)
		}
		return values[op.bind], nil
	}
	v, err := typ.literal(op.lit)
	if err != nil {
		return nil, invalid("%v", err)
	}
	return v, nil
}

func (c *conn) tokenRange(p *plan, params queryParams) (scanRange, *cqlError) {
	r := scanRange{lo: math.MinInt64, hi: math.MaxInt64, start: math.MinInt64, end: math.MaxInt64}
	startIncl, endIncl := true, true
	hasStart, hasEnd := false, false
	for _, rel := range p.tokenRels {
		v, err := c.operandValue(p, rel.val, typBigint, params.values, params.unset)
		if err != nil {
			return r, err
		}
		if v == nil {
			return r, invalid("Invalid null token value")
		}
		if len(v) != 8 {
			return r, invalid("Invalid token value: expected 8 bytes, got %d", len(v))
		}
		tok := int64(binary.BigEndian.Uint64(v))
		switch rel.op {
		case ">", ">=":
			if hasStart {
				return r, invalid("More than one restriction was found for the start bound on token")
			}
			hasStart, r.start, startIncl = true, tok, rel.op == ">="
		case "<", "<=":
			if hasEnd {
				return r, invalid("More than one restriction was found for the end bound on token")
			}
			hasEnd, r.end, endIncl = true, tok, rel.op == "<="
		case "=":
			if hasStart || hasEnd {
				return r, invalid("Token equality cannot be combined with other token restrictions")
			}
			hasStart, hasEnd = true, true
			r.start, r.end = tok, tok
		}
	}
	// Cassandra (StatementRestrictions.getPartitionKeyBoundsForTokenRestrictions): the minimum
	// token as a bound means "unbounded"; otherwise a wrapping or empty interval selects nothing.
	startMin := !hasStart || r.start == math.MinInt64
	endMin := !hasEnd || r.end == math.MinInt64
	if !startMin && !endMin && (r.start > r.end || r.start == r.end && (!startIncl || !endIncl)) {
		r.empty = true
		return r, nil
	}
	if !startMin {
		r.lo = r.start
		if !startIncl {
			if r.start == math.MaxInt64 {
				r.empty = true
			}
			r.lo = r.start + 1
		}
	}
	if !endMin {
		r.hi = r.end
		if !endIncl {
			r.hi = r.end - 1
		}
	}
	if hasEnd && r.end == math.MinInt64 {
		r.end = math.MaxInt64
	}
	if r.lo > r.hi {
		r.empty = true
	}
	return r, nil
}

// pagingState is the server's opaque resume cursor: the key of the last row returned.
type pagingState struct {
	page      uint32 // number of pages already returned
	remaining int32  // rows left under LIMIT, -1 without LIMIT
	token     int64
	pk, ck    []byte
}

func (ps *pagingState) encode() []byte {
	b := make([]byte, 0, 29+len(ps.pk)+len(ps.ck))
	b = append(b, 1)
	b = binary.BigEndian.AppendUint32(b, ps.page)
	b = appendInt(b, ps.remaining)
	b = appendLong(b, ps.token)
	b = appendInt(b, int32(len(ps.pk)))
	b = append(b, ps.pk...)
	b = appendInt(b, int32(len(ps.ck)))
	return append(b, ps.ck...)
}

func decodePagingState(b []byte) (*pagingState, error) {
	r := &reader{b: b}
	if r.byte() != 1 {
		return nil, fmt.Errorf("unknown paging state version")
	}
	ps := &pagingState{}
	ps.page = uint32(r.int())
	ps.remaining = r.int()
	ps.token = r.long()
	ps.pk = r.raw(int(r.int()))
	ps.ck = r.raw(int(r.int()))
	if r.err != nil || len(r.b) != 0 {
		return nil, fmt.Errorf("malformed paging state")
	}
	return ps, nil
}

var rowBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// scan is a SELECT bound to its values: what to read and where to resume.
type scan struct {
	rng       scanRange
	pk        []byte   // serialized partition key when the query names one partition
	filters   [][]byte // values of plan.filters
	remaining int32    // rows left under LIMIT, -1 without LIMIT
	ps        *pagingState
	page      int // 1-based page number within the scan
}

// bind resolves a plan's bind markers and literals and decodes the paging state.
func (c *conn) bind(p *plan, params queryParams) (*scan, *cqlError) {
	if len(params.values) < p.st.markers {
		return nil, invalid("There were %d markers(?) in CQL but %d bound variables", p.st.markers, len(params.values))
	}
	rng, err := c.tokenRange(p, params)
	if err != nil {
		return nil, err
	}
	sc := &scan{rng: rng, remaining: -1, page: 1}
	t := p.tbl
	// Partition key equality restricts the scan to one token and one key.
	if p.pkEq != nil {
		parts := make([][]byte, t.npk)
		for i, op := range p.pkEq {
			v, err := c.operandValue(p, op, t.cols[i].typ, params.values, params.unset)
			if err != nil {
				return nil, err
			}
			if v == nil {
				return nil, invalid("Invalid null value in condition for column %s", t.cols[i].name)
			}
			parts[i] = v
		}
		sc.pk = murmur3.CompositeKey(nil, parts...)
		tok := murmur3.Token(sc.pk)
		if tok < sc.rng.lo || tok > sc.rng.hi {
			sc.rng.empty = true
		}
		sc.rng.lo, sc.rng.hi = tok, tok
	}
	sc.filters = make([][]byte, len(p.filters))
	for i, f := range p.filters {
		v, err := c.operandValue(p, f.val, t.cols[f.col].typ, params.values, params.unset)
		if err != nil {
			return nil, err
		}
		sc.filters[i] = v
	}
	if p.st.limit != nil {
		v, err := c.operandValue(p, *p.st.limit, typInt, params.values, params.unset)
		if err != nil {
			return nil, err
		}
		if len(v) != 4 || int32(binary.BigEndian.Uint32(v)) <= 0 {
			return nil, invalid("LIMIT must be strictly positive")
		}
		sc.remaining = int32(binary.BigEndian.Uint32(v))
	}
	if len(params.pagingState) > 0 && !p.count {
		ps, perr := decodePagingState(params.pagingState)
		if perr != nil {
			return nil, errorf(ErrProtocol, "Invalid paging state: %v", perr)
		}
		sc.ps, sc.remaining, sc.page = ps, ps.remaining, int(ps.page)+1
	}
	return sc, nil
}

// injectFault applies the first matching fault. stop means no answer must be sent.
func (c *conn) injectFault(key ScanRange, page int) (stop bool, err *cqlError) {
	act := c.s.matchFault(key, page)
	if act == nil {
		return false, nil
	}
	c.s.stats.fault(key)
	if act.delay > 0 {
		select {
		case <-time.After(act.delay):
		case <-c.done:
			return true, nil
		}
	}
	if act.drop {
		c.s.log.Debug("fault: dropping connection", zap.Int("page", page))
		c.close()
		return true, nil
	}
	return false, act.err
}

// run executes a resolved SELECT and writes its ROWS result.
func (c *conn) run(stream int16, p *plan, params queryParams) *cqlError {
	sc, err := c.bind(p, params)
	if err != nil {
		return err
	}
	key := ScanRange{Keyspace: p.keyspace, Table: p.table, Start: sc.rng.start, End: sc.rng.end}
	t := p.tbl
	if p.sys {
		st, err := c.s.systemTable(c.node, p.keyspace, p.table)
		if err != nil {
			return invalid("%v", err)
		}
		t = st
	} else if stop, err := c.injectFault(key, sc.page); stop || err != nil {
		return err
	}

	pageSize := int(params.pageSize)
	if pageSize <= 0 || p.sys || p.count {
		pageSize = math.MaxInt
	}
	bp := rowBufPool.Get().(*[]byte)
	out, n, state := scanRows(t, p, sc, pageSize, (*bp)[:0])
	defer func() {
		if cap(out) <= 16<<20 {
			*bp = out[:0]
			rowBufPool.Put(bp)
		}
	}()

	head := appendInt(make([]byte, 0, 256), resultRows)
	head = p.appendResultMetadata(head, 0, state, params.skipMetadata && p.id != nil)
	head = appendInt(head, int32(n))
	if !p.sys {
		c.s.stats.page(key, n)
	}
	c.writeFrame(stream, opResult, head, out)
	return nil
}

// scanRows appends up to pageSize result rows to out. It returns the rows' count and, when
// more rows follow, the paging state to resume after the last one.
func scanRows(t *table, p *plan, sc *scan, pageSize int, out []byte) ([]byte, int, []byte) {
	rows := t.readLocked()
	defer t.mu.RUnlock()
	n := 0
	var count int64
	var last *row
	more := false
	remaining := sc.remaining
	if !sc.rng.empty {
		ps := sc.ps
		var i int
		if ps != nil {
			i = sort.Search(len(rows), func(k int) bool {
				r := &rows[k]
				return t.compareKey(r.token, r.pk(), r.ck(), ps.token, ps.pk, ps.ck) > 0
			})
		} else {
			lo := sc.rng.lo
			i = sort.Search(len(rows), func(k int) bool { return rows[k].token >= lo })
		}
		var cellBuf [32][]byte
		cells := cellBuf[:0]
		if len(t.cols) > len(cellBuf) {
			cells = make([][]byte, 0, len(t.cols))
		}
		var lastPK []byte // DISTINCT: the partition returned last
		if ps != nil {
			lastPK = ps.pk
		}
		for ; i < len(rows); i++ {
			r := &rows[i]
			if r.token > sc.rng.hi {
				break
			}
			if n >= pageSize || remaining == 0 {
				more = remaining != 0
				break
			}
			if sc.pk != nil && string(r.pk()) != string(sc.pk) {
				continue
			}
			cells = splitCells(r.cells(), cells[:0], len(t.cols))
			if !matchFilters(t, p.filters, sc.filters, cells) {
				continue
			}
			if p.st.distinct {
				if lastPK != nil && string(lastPK) == string(r.pk()) {
					continue
				}
				lastPK = r.pk()
			}
			if p.count {
				count++
				continue
			}
			out = appendRow(out, p, r, cells)
			n++
			last = r
			if remaining > 0 {
				remaining--
			}
		}
	}
	if p.count {
		return appendValue(out, binary.BigEndian.AppendUint64(nil, uint64(count))), 1, nil
	}
	var state []byte
	if more && last != nil {
		st := pagingState{page: uint32(sc.page), remaining: remaining, token: last.token, pk: last.pk(), ck: last.ck()}
		state = st.encode()
	}
	return out, n, state
}

// splitCells returns each column's raw [int32 len][bytes] cell.
func splitCells(b []byte, dst [][]byte, n int) [][]byte {
	for k := 0; k < n && len(b) >= 4; k++ {
		l := int32(binary.BigEndian.Uint32(b))
		end := 4
		if l > 0 {
			end += int(l)
		}
		dst = append(dst, b[:end])
		b = b[end:]
	}
	return dst
}

// cellValue strips the length prefix; null is nil.
func cellValue(raw []byte) []byte {
	if int32(binary.BigEndian.Uint32(raw)) < 0 {
		return nil
	}
	return raw[4:]
}

func matchFilters(t *table, rels []filterRel, vals [][]byte, cells [][]byte) bool {
	for i, f := range rels {
		v := cellValue(cells[f.col])
		if v == nil || vals[i] == nil {
			return false
		}
		c := compareValues(t.cols[f.col].typ, v, vals[i])
		ok := false
		switch f.op {
		case "=":
			ok = c == 0
		case "<":
			ok = c < 0
		case "<=":
			ok = c <= 0
		case ">":
			ok = c > 0
		case ">=":
			ok = c >= 0
		}
		if !ok {
			return false
		}
	}
	return true
}

func appendRow(out []byte, p *plan, r *row, cells [][]byte) []byte {
	if p.star {
		return append(out, r.cells()...)
	}
	for _, oc := range p.out {
		switch oc.kind {
		case outCell:
			out = append(out, cells[oc.col]...)
		case outToken:
			out = appendInt(out, 8)
			out = appendLong(out, r.token)
		case outWritetime:
			if cellValue(cells[oc.col]) == nil {
				out = appendInt(out, -1)
				continue
			}
			wt := r.wt
			if r.meta != nil && r.meta.wt[oc.col] != 0 {
				wt = r.meta.wt[oc.col]
			}
			out = appendInt(out, 8)
			out = appendLong(out, wt)
		case outTTL:
			if cellValue(cells[oc.col]) == nil || r.meta == nil || r.meta.ttl[oc.col] == 0 {
				out = appendInt(out, -1)
				continue
			}
			out = appendInt(out, 4)
			out = appendInt(out, r.meta.ttl[oc.col])
		}
	}
	return out
}
