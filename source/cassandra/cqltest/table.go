package cqltest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/transform/murmur3"
)

// Column declares one column of a table: its name and CQL type text, e.g. "int",
// "map<text, int>", "frozen<list<int>>", "tuple<int, text>".
type Column struct {
	Name string
	Type string
}

// Cell is a row value with its own write time and TTL. Use it as a value in the map given to
// Insert when a test needs writetime(col) or ttl(col) to return something specific.
type Cell struct {
	Value     any
	WriteTime int64 // microseconds since the epoch; 0 means the insert's time
	TTL       int32 // seconds; 0 means no TTL (ttl(col) returns null)
}

// column is a column of a table with its kind, in storage order.
type column struct {
	name     string
	typ      *cqlType
	kind     string // partition_key, clustering, regular
	position int    // index within the partition key or clustering key; -1 for regular
	desc     bool   // clustering order DESC
}

// table holds a table's schema and its rows sorted by (token, partition key bytes, clustering).
type table struct {
	keyspace string
	name     string
	id       gocql.UUID
	cols     []*column // storage order: partition key, clustering, regular columns by name
	byName   map[string]int
	npk, nck int
	// ttl is the table's default_time_to_live in seconds (SetDefaultTTL); base names the table
	// a materialized view is of (CreateView), "" for a table
	ttl  int
	base string

	mu      sync.RWMutex
	rows    []row
	pending []row // inserted but not yet merged into rows
	seq     uint64
	gen     uint64 // bumped by every change of the rows

	estMu sync.Mutex
	est   map[int]estimates // node index -> its size_estimates rows, while gen is unchanged
}

// estimates are a node's system.size_estimates rows for the table, computed at generation gen.
// Cassandra refreshes the real table every few minutes in the background; computing it on every
// read would make a 1M-row table's estimate cost a full scan.
type estimates struct {
	gen  uint64
	rows []map[string]any
}

// row is one CQL row. buf holds, back to back: the serialized partition key (composite form
// when it has several columns), the clustering values as [int32 len][bytes] each, and every
// column's cell in storage order as [int32 len][bytes] (len -1 for null).
type row struct {
	token int64
	buf   []byte
	pkEnd uint32
	ckEnd uint32
	wt    int64     // write time of the insert, microseconds
	seq   uint64    // insertion order, so the last insert of a primary key wins
	meta  *cellMeta // per-cell write times and TTLs, nil when all cells use wt and no TTL
}

type cellMeta struct {
	wt  []int64 // per column; 0 means row.wt
	ttl []int32 // per column; 0 means none
}

func (r *row) pk() []byte    { return r.buf[:r.pkEnd] }
func (r *row) ck() []byte    { return r.buf[r.pkEnd:r.ckEnd] }
func (r *row) cells() []byte { return r.buf[r.ckEnd:] }

func newTable(keyspace, name string, cols []Column, partitionKey, clustering []string) (*table, error) {
	if keyspace == "" || name == "" {
		return nil, fmt.Errorf("keyspace and table names are required")
	}
	if len(partitionKey) == 0 {
		return nil, fmt.Errorf("table %s.%s: a partition key is required", keyspace, name)
	}
	types := make(map[string]*cqlType, len(cols))
	var order []string
	for _, c := range cols {
		if c.Name == "" {
			return nil, fmt.Errorf("table %s.%s: empty column name", keyspace, name)
		}
		if _, dup := types[c.Name]; dup {
			return nil, fmt.Errorf("table %s.%s: duplicate column %q", keyspace, name, c.Name)
		}
		t, err := parseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("table %s.%s column %s: %w", keyspace, name, c.Name, err)
		}
		types[c.Name] = t
		order = append(order, c.Name)
	}
	t := &table{keyspace: keyspace, name: name, byName: map[string]int{}, npk: len(partitionKey), nck: len(clustering)}
	t.id = nameUUID("table:" + keyspace + "." + name)
	used := map[string]bool{}
	add := func(n, kind string, pos int, desc bool) error {
		typ, ok := types[n]
		if !ok {
			return fmt.Errorf("table %s.%s: key column %q is not declared", keyspace, name, n)
		}
		if used[n] {
			return fmt.Errorf("table %s.%s: column %q used twice in the primary key", keyspace, name, n)
		}
		if kind != "regular" && typ.isMultiCell() {
			return fmt.Errorf("table %s.%s: key column %q must not be a non-frozen collection", keyspace, name, n)
		}
		used[n] = true
		t.byName[n] = len(t.cols)
		t.cols = append(t.cols, &column{name: n, typ: typ, kind: kind, position: pos, desc: desc})
		return nil
	}
	for i, n := range partitionKey {
		if err := add(n, "partition_key", i, false); err != nil {
			return nil, err
		}
	}
	for i, n := range clustering {
		desc := false
		if c, ok := cutSuffixFold(n, " desc"); ok {
			n, desc = c, true
		} else if c, ok := cutSuffixFold(n, " asc"); ok {
			n = c
		}
		if err := add(n, "clustering", i, desc); err != nil {
			return nil, err
		}
	}
	var regular []string
	for _, n := range order {
		if !used[n] {
			regular = append(regular, n)
		}
	}
	sort.Strings(regular) // Cassandra lists regular columns by name
	for _, n := range regular {
		if err := add(n, "regular", -1, false); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && bytes.EqualFold([]byte(s[len(s)-len(suffix):]), []byte(suffix)) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// arena hands out byte slices carved from large blocks, so bulk seeding allocates rarely.
type arena struct{ block []byte }

func (a *arena) alloc(n int) []byte {
	if a == nil || n > 64<<10 {
		return make([]byte, 0, n)
	}
	if cap(a.block)-len(a.block) < n {
		a.block = make([]byte, 0, 1<<20)
	}
	start := len(a.block)
	a.block = a.block[:start+n]
	return a.block[start : start : start+n]
}

// encodeRow turns a map of Go values into a row. Missing columns are null.
func (t *table) encodeRow(vals map[string]any, wt int64, ar *arena, scratch [][]byte) (row, [][]byte, error) {
	if cap(scratch) < len(t.cols) {
		scratch = make([][]byte, len(t.cols))
	}
	enc := scratch[:len(t.cols)]
	var meta *cellMeta
	size := 0
	for i, c := range t.cols {
		v, ok := vals[c.name]
		if cell, isCell := v.(Cell); isCell {
			v = cell.Value
			if cell.WriteTime != 0 || cell.TTL != 0 {
				if meta == nil {
					meta = &cellMeta{wt: make([]int64, len(t.cols)), ttl: make([]int32, len(t.cols))}
				}
				meta.wt[i], meta.ttl[i] = cell.WriteTime, cell.TTL
			}
		}
		var b []byte
		if ok && v != nil {
			var err error
			if b, err = c.typ.marshal(v); err != nil {
				return row{}, scratch, fmt.Errorf("%s.%s column %s (%s): %w", t.keyspace, t.name, c.name, c.typ.name, err)
			}
		}
		if b == nil && c.kind != "regular" {
			return row{}, scratch, fmt.Errorf("%s.%s: primary key column %s must not be null", t.keyspace, t.name, c.name)
		}
		enc[i] = b
		size += 4 + len(b)
	}
	for k := range vals {
		if _, ok := t.byName[k]; !ok {
			return row{}, scratch, fmt.Errorf("%s.%s: unknown column %q", t.keyspace, t.name, k)
		}
	}
	pkSize := 0
	for i := 0; i < t.npk; i++ {
		pkSize += len(enc[i])
		if t.npk > 1 {
			pkSize += 3
		}
	}
	ckSize := 0
	for i := t.npk; i < t.npk+t.nck; i++ {
		ckSize += 4 + len(enc[i])
	}
	buf := ar.alloc(pkSize + ckSize + size)
	if t.npk == 1 {
		buf = append(buf, enc[0]...)
	} else {
		buf = murmur3.CompositeKey(buf, enc[:t.npk]...)
	}
	pkEnd := len(buf)
	for i := t.npk; i < t.npk+t.nck; i++ {
		buf = appendValue(buf, enc[i])
	}
	ckEnd := len(buf)
	for _, b := range enc {
		buf = appendValue(buf, b)
	}
	r := row{token: murmur3.Token(buf[:pkEnd]), buf: buf, pkEnd: uint32(pkEnd), ckEnd: uint32(ckEnd), wt: wt, meta: meta}
	return r, scratch, nil
}

// insert queues rows; they are merged into the sorted slice before the next read.
func (t *table) insert(rows []row) {
	t.mu.Lock()
	for i := range rows {
		t.seq++
		rows[i].seq = t.seq
	}
	t.gen++
	t.pending = append(t.pending, rows...)
	t.mu.Unlock()
}

// compareKey orders rows by token, then partition key bytes, then clustering values.
func (t *table) compareKey(tokA int64, pkA, ckA []byte, tokB int64, pkB, ckB []byte) int {
	if tokA != tokB {
		if tokA < tokB {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(pkA, pkB); c != 0 {
		return c
	}
	for i := 0; i < t.nck; i++ {
		va, ra := splitValue(ckA)
		vb, rb := splitValue(ckB)
		ckA, ckB = ra, rb
		c := compareValues(t.cols[t.npk+i].typ, va, vb)
		if t.cols[t.npk+i].desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func (t *table) compareRows(a, b *row) int {
	return t.compareKey(a.token, a.pk(), a.ck(), b.token, b.pk(), b.ck())
}

// splitValue returns the first [int32 len][bytes] value of b and the rest.
func splitValue(b []byte) (v, rest []byte) {
	if len(b) < 4 {
		return nil, nil
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n < 0 {
		return nil, b[4:]
	}
	return b[4 : 4+n], b[4+n:]
}

// readLocked returns the sorted rows, merging pending inserts first. The caller must call
// t.mu.RUnlock when done with the slice.
func (t *table) readLocked() []row {
	t.mu.RLock()
	if len(t.pending) == 0 {
		return t.rows
	}
	t.mu.RUnlock()
	t.mu.Lock()
	t.mergeLocked()
	t.mu.Unlock()
	t.mu.RLock()
	return t.rows
}

func (t *table) mergeLocked() {
	if len(t.pending) == 0 {
		return
	}
	p := t.pending
	t.pending = nil
	// Among rows with the same primary key, the last inserted wins.
	slices.SortFunc(p, func(a, b row) int {
		if c := t.compareRows(&a, &b); c != 0 {
			return c
		}
		return cmpUint64(a.seq, b.seq)
	})
	w := 0
	for i := range p {
		if w > 0 && t.compareRows(&p[w-1], &p[i]) == 0 {
			p[w-1] = p[i]
			continue
		}
		p[w] = p[i]
		w++
	}
	p = p[:w]
	if len(t.rows) == 0 {
		t.rows = p
		return
	}
	// Fast path: all new rows sort after the existing ones.
	if t.compareRows(&t.rows[len(t.rows)-1], &p[0]) < 0 {
		t.rows = append(t.rows, p...)
		return
	}
	merged := make([]row, 0, len(t.rows)+len(p))
	i, j := 0, 0
	for i < len(t.rows) && j < len(p) {
		switch c := t.compareRows(&t.rows[i], &p[j]); {
		case c < 0:
			merged = append(merged, t.rows[i])
			i++
		case c > 0:
			merged = append(merged, p[j])
			j++
		default: // same primary key: the insert replaces the row
			merged = append(merged, p[j])
			i++
			j++
		}
	}
	merged = append(merged, t.rows[i:]...)
	merged = append(merged, p[j:]...)
	t.rows = merged
}

func (t *table) count() int {
	rows := t.readLocked()
	n := len(rows)
	t.mu.RUnlock()
	return n
}

// nowMicros is the default write time of inserted cells.
func nowMicros() int64 { return time.Now().UnixMicro() }
