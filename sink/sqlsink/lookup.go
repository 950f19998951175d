package sqlsink

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// MaxLookupKeys is the most keys one multi-get names: Lindorm reads at most 2,000 rows per query
// and takes IN lists of at most 2,000 values.
const MaxLookupKeys = 2000

// Lookup reads rows of a table by key, for rekey verify. It never writes.
type Lookup struct {
	w *Writer
}

// OpenLookup connects to the lindorm:// or mysql:// table uri names (the password from getenv)
// and checks that the table matches the target schema (as the sink does) before any read. conns
// is how many lookups run at once, each on its own connection (a lookup mostly waits for the
// server: fewer connections than lookups in flight left verify at 0.6x the speed migrate wrote).
func OpenLookup(ctx context.Context, uri string, target pipeline.TargetSchema, getenv func(string) string, conns int) (*Lookup, error) {
	t, err := ParseURI(uri, getenv)
	if err != nil {
		return nil, err
	}
	if t.CellTimestamps {
		return nil, fmt.Errorf("%s: write_time applies to the writes of replicate; verify reads the table: drop the parameter", t.Redacted)
	}
	w, err := Open(ctx, Config{Target: t, Schema: target, Conns: max(conns, 1)})
	if err != nil {
		return nil, err
	}
	return &Lookup{w: w}, nil
}

// MaxKeys is the most keys one Lookup takes.
func (l *Lookup) MaxKeys() int { return MaxLookupKeys }

// Close closes the connections.
func (l *Lookup) Close() error { return l.w.Close() }

// Lookup returns the rows stored under keys (each the key columns' values in key order), in
// the same order, nil where no row exists. Values follow pipeline.Value's conventions for the
// target schema's types: TIMESTAMP as epoch milliseconds, DATE as days, DECIMAL as its text at
// the column's scale, BOOLEAN as a bool, FLOAT rounded to float32.
func (l *Lookup) Lookup(ctx context.Context, keys [][]pipeline.Value) ([][]pipeline.Value, error) {
	if len(keys) > MaxLookupKeys {
		return nil, fmt.Errorf("lookup of %d keys: at most %d at once", len(keys), MaxLookupKeys)
	}
	out := make([][]pipeline.Value, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	st := l.w.st
	tuples := st.lookupKeyForm()
	rendered := make([][]byte, len(keys))
	at := make(map[string][]int, len(keys)) // a key's canonical tuple text -> its positions
	for i, k := range keys {
		if len(k) != st.schema.KeyLen {
			return nil, fmt.Errorf("lookup: key %d has %d values, the primary key has %d columns", i, len(k), st.schema.KeyLen)
		}
		tup, rerr := st.appendKeyTuple(nil, k)
		if rerr != nil {
			return nil, fmt.Errorf("lookup: key %d: %v", i, rerr)
		}
		at[string(tup)] = append(at[string(tup)], i)
		if tuples {
			rendered[i] = tup
		} else if rendered[i], rerr = st.appendKeyEq(nil, k); rerr != nil {
			return nil, fmt.Errorf("lookup: key %d: %v", i, rerr)
		}
	}
	query := st.lookup(rendered)
	err := l.w.retry(ctx, "select", len(keys), func(ctx context.Context) error {
		rows, err := l.w.db.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		sc := newRowScanner(st.schema)
		for rows.Next() {
			vals, err := sc.scan(rows)
			if err != nil {
				return err
			}
			tup, rerr := st.appendKeyTuple(nil, vals)
			if rerr != nil {
				return fmt.Errorf("lookup: a row of the table: %v", rerr)
			}
			for _, i := range at[string(tup)] {
				out[i] = vals
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CheckValues is ValueChecker's (files.ValueChecker).
func (l *Lookup) CheckValues(schema pipeline.TargetSchema, values []pipeline.Value) *pipeline.RowError {
	return ValueChecker{}.CheckValues(schema, values)
}

// ScanPage is the most rows one page of Scan reads: Lindorm returns at most 2,000 rows a query.
const ScanPage = 2000

// Scan calls fn with every row (all columns, schema order, typed as Lookup returns them) whose
// key lies in kr (its bounds in key order; the zero KeyRange is the whole table), in key order,
// a page of ScanPage rows per query: each page after the first starts after the last key read.
// Reading the table in key ranges costs the server a fraction of looking each key up (MariaDB:
// 1M rows in 2,000-row pages took 1 s of its CPU, the same rows by IN lookups 10 s). fn must not
// keep row. UNCERTAIN: whether Lindorm takes a range bounded on one side only (the first and
// last ranges verify reads) as a scan rather than refusing it as a full table scan; verify then
// looks the keys up.
func (l *Lookup) Scan(ctx context.Context, kr pipeline.KeyRange, fn func(row []pipeline.Value) error) error {
	st := l.w.st
	sc := newRowScanner(st.schema)
	page := make([][]pipeline.Value, 0, ScanPage)
	for {
		q, rerr := st.appendScanCond([]byte(st.selectHead), &kr)
		if rerr != nil {
			return fmt.Errorf("scan: a bound: %v", rerr)
		}
		q = append(q, st.scanTail...)
		err := l.w.retry(ctx, "select", ScanPage, func(ctx context.Context) error {
			page = page[:0] // a page read again after a lost connection is read whole
			rows, err := l.w.db.QueryContext(ctx, string(q))
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				vals, err := sc.scan(rows)
				if err != nil {
					return err
				}
				page = append(page, vals)
			}
			return rows.Err()
		})
		if err != nil {
			return err
		}
		for _, row := range page {
			if err := fn(row); err != nil {
				return err
			}
		}
		if len(page) < ScanPage {
			return nil
		}
		kr.Start = pipeline.KeyBound{Vals: page[len(page)-1][:st.schema.KeyLen]}
	}
}

// appendScanCond appends a scan page's condition: kr's, and when its start is a whole key (a
// page after the first), that key's first column as a bound of its own too, so that a planner
// that looks for a range of the first key column at the top of the condition (Lindorm refuses
// a query without one as a full table scan) finds it, not only inside the ORs.
func (s *statements) appendScanCond(dst []byte, kr *pipeline.KeyRange) ([]byte, *pipeline.RowError) {
	if len(kr.Start.Vals) > 1 {
		first := s.schema.Columns[0]
		dst = append(dst, s.d.Ident(first.Name)...)
		if first.Desc {
			dst = append(dst, "<="...)
		} else {
			dst = append(dst, ">="...)
		}
		var rerr *pipeline.RowError
		if dst, rerr = s.appendLiteral(dst, first, kr.Start.Vals[0]); rerr != nil {
			return dst, rerr
		}
		dst = append(dst, " AND "...)
	}
	return s.appendRangeCond(dst, kr)
}

// scanRow reads one row of the schema's columns (in schema order) from the text protocol.
func scanRow(rows *sql.Rows, schema pipeline.TargetSchema) ([]pipeline.Value, error) {
	return newRowScanner(schema).scan(rows)
}

// rowScanner reads the rows of one query: its scan buffers serve every row, and a row's text
// values share one string (a lookup reads 2,000 rows; a string and two slices per value made
// allocation a quarter of verify's CPU against a table).
type rowScanner struct {
	schema pipeline.TargetSchema
	raw    []sql.RawBytes
	ptrs   []any
}

func newRowScanner(schema pipeline.TargetSchema) *rowScanner {
	s := &rowScanner{schema: schema, raw: make([]sql.RawBytes, len(schema.Columns)), ptrs: make([]any, len(schema.Columns))}
	for i := range s.raw {
		s.ptrs[i] = &s.raw[i]
	}
	return s
}

func (s *rowScanner) scan(rows *sql.Rows) ([]pipeline.Value, error) {
	if err := rows.Scan(s.ptrs...); err != nil {
		return nil, err
	}
	n := 0
	for _, b := range s.raw {
		n += len(b)
	}
	var all strings.Builder
	all.Grow(n)
	for _, b := range s.raw {
		all.Write(b)
	}
	text := all.String()
	vals := make([]pipeline.Value, len(s.raw))
	at := 0
	for i, c := range s.schema.Columns {
		b := s.raw[i]
		if b == nil {
			continue // NULL
		}
		v, err := decodeValue(c, text[at:at+len(b)])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		vals[i] = v
		at += len(b)
	}
	return vals, nil
}

// decodeValue turns a column's text-protocol value (not NULL) into a pipeline.Value of the
// column's type.
func decodeValue(c pipeline.Column, s string) (pipeline.Value, error) {
	switch c.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		return pipeline.Text(s), nil
	case pipeline.TypeVarbinary:
		return pipeline.Bytes(s), nil
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint:
		i, err := strconv.ParseInt(s, 10, 64)
		return pipeline.Int(i), err
	case pipeline.TypeBoolean:
		switch strings.ToLower(s) {
		case "1", "true":
			return pipeline.Bool(true), nil
		case "0", "false":
			return pipeline.Bool(false), nil
		}
		return pipeline.Null, fmt.Errorf("%q is not a boolean", s)
	case pipeline.TypeFloat, pipeline.TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if c.Type == pipeline.TypeFloat {
			f = float64(float32(f))
		}
		if math.IsNaN(f) {
			return pipeline.Float(f), nil
		}
		return pipeline.Float(f), err
	case pipeline.TypeDecimal:
		return pipeline.Decimal(s), nil
	case pipeline.TypeTimestamp:
		// the session's zone is UTC (time_zone='+00:00' on every connection)
		t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", s, time.UTC)
		if err != nil {
			return pipeline.Null, err
		}
		if t.Nanosecond()%int(time.Millisecond) != 0 {
			// a finer column (datetime(6)) holding what rekey never writes: read as its
			// millisecond, it would compare equal to a source value it is not
			return pipeline.Null, fmt.Errorf("%q has a fraction of a millisecond: the mapping's TIMESTAMP holds milliseconds", s)
		}
		return pipeline.Int(t.UnixMilli()), nil
	case pipeline.TypeDate:
		t, err := time.ParseInLocation("2006-01-02", s, time.UTC)
		if err != nil {
			return pipeline.Null, err
		}
		return pipeline.Int(t.Unix() / 86400), nil
	}
	return pipeline.Null, fmt.Errorf("unsupported column type %s", c.Type)
}
