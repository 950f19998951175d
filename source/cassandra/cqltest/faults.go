package cqltest

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// FaultMatch selects the data pages a fault applies to. Faults only ever apply to SELECTs on
// tables created through the API, never to system tables, so drivers keep working.
type FaultMatch struct {
	Keyspace string // "" matches any keyspace
	Table    string // "" matches any table
	// Page is the 1-based page number within one scan: the request without a paging state is
	// page 1, the request carrying page 1's paging state is page 2, and so on. A retried
	// request has the same page number as the original. 0 matches every page.
	Page int
	// Range, when set, must return true for the scan's token bounds (the values given to
	// token(pk) > / >= and < / <=; math.MinInt64 and math.MaxInt64 when a side is open).
	Range func(start, end int64) bool
	// Skip lets this many matching requests through before the fault starts firing.
	Skip int
	// Times is how many times the fault fires; 0 means every time.
	Times int
}

// RangeContains matches scans whose token bounds contain tok.
func RangeContains(tok int64) func(start, end int64) bool {
	return func(start, end int64) bool { return start <= tok && tok <= end }
}

// RangeIs matches scans with exactly these token bounds.
func RangeIs(start, end int64) func(int64, int64) bool {
	return func(s, e int64) bool { return s == start && e == end }
}

// Fault is an installed fault; see Server.FailPage, DelayPage and DropPage.
type Fault struct {
	match FaultMatch
	err   *cqlError
	delay time.Duration
	drop  bool
	seen  int
	fired atomic.Int64
}

// Fired reports how many times the fault has fired.
func (f *Fault) Fired() int { return int(f.fired.Load()) }

type faultAction struct {
	err   *cqlError
	delay time.Duration
	drop  bool
}

// FailPage makes matching pages fail with an ERROR of the given code, e.g. ErrReadTimeout,
// ErrUnavailable or ErrOverloaded (the extra fields each code carries are filled in).
func (s *Server) FailPage(m FaultMatch, code ErrorCode) *Fault {
	msg := map[ErrorCode]string{
		ErrReadTimeout:  "Operation timed out - received only 0 responses.",
		ErrUnavailable:  "Cannot achieve consistency level ONE",
		ErrOverloaded:   "Server is overloaded",
		ErrReadFailure:  "Operation failed - received 0 responses and 1 failures",
		ErrServer:       "injected server error",
		ErrWriteTimeout: "Operation timed out - received only 0 responses.",
	}[code]
	if msg == "" {
		msg = fmt.Sprintf("injected error 0x%04x", int32(code))
	}
	return s.addFault(&Fault{match: m, err: &cqlError{code: code, msg: msg}})
}

// DelayPage holds matching pages back for d before serving them.
func (s *Server) DelayPage(m FaultMatch, d time.Duration) *Fault {
	return s.addFault(&Fault{match: m, delay: d})
}

// DropPage closes the client connection that asks for a matching page, without answering.
func (s *Server) DropPage(m FaultMatch) *Fault {
	return s.addFault(&Fault{match: m, drop: true})
}

func (s *Server) addFault(f *Fault) *Fault {
	s.faultMu.Lock()
	s.faults = append(s.faults, f)
	s.faultMu.Unlock()
	return f
}

// RemoveFault uninstalls a fault.
func (s *Server) RemoveFault(f *Fault) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	for i, g := range s.faults {
		if g == f {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			return
		}
	}
}

// RefuseSelector makes statements that select fn(...) ("writetime" or "ttl") fail at PREPARE
// (and as a plain QUERY) with an Invalid error, as a server without that function does (Azure
// Cosmos DB's Cassandra API refuses WRITETIME(); Amazon Keyspaces does without client-side
// timestamps). "" refuses nothing again.
func (s *Server) RefuseSelector(fn string) {
	s.faultMu.Lock()
	s.refused = fn
	s.faultMu.Unlock()
}

func (s *Server) refusedSelector() string {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.refused
}

// ClearFaults uninstalls every fault.
func (s *Server) ClearFaults() {
	s.faultMu.Lock()
	s.faults = nil
	s.faultMu.Unlock()
}

// matchFault returns what the first firing fault wants done with this page, or nil.
func (s *Server) matchFault(r ScanRange, page int) *faultAction {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	for _, f := range s.faults {
		m := f.match
		if m.Keyspace != "" && m.Keyspace != r.Keyspace || m.Table != "" && m.Table != r.Table ||
			m.Page != 0 && m.Page != page || m.Range != nil && !m.Range(r.Start, r.End) {
			continue
		}
		if m.Times > 0 && f.Fired() >= m.Times {
			continue
		}
		f.seen++
		if f.seen <= m.Skip {
			continue
		}
		f.fired.Add(1)
		return &faultAction{err: f.err, delay: f.delay, drop: f.drop}
	}
	return nil
}

// ---- stats ----

// ScanRange identifies the token range of data SELECTs: the table and the bounds given to
// token(pk) (math.MinInt64 / math.MaxInt64 for an open side).
type ScanRange struct {
	Keyspace, Table string
	Start, End      int64
}

// RangeStats counts what was served for one ScanRange.
type RangeStats struct {
	Pages  int64 // ROWS results
	Rows   int64
	Faults int64 // injected faults
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	Connections int64 // client connections accepted
	Queries     int64 // QUERY (and BATCH) requests
	Prepares    int64
	Executes    int64
	Pages       int64 // ROWS results served for API tables (system tables excluded)
	Rows        int64 // rows served for API tables
	Faults      int64 // faults fired
	Ranges      map[ScanRange]RangeStats
	// NodeRequests counts QUERY and EXECUTE requests per node (index as in Server.Hosts), to
	// check token-aware routing.
	NodeRequests []int64
}

type statsCounter struct {
	connections, queries, prepares, executes atomic.Int64
	pages, rows, faults                      atomic.Int64
	mu                                       sync.Mutex
	ranges                                   map[ScanRange]RangeStats
	nodes                                    []atomic.Int64
}

func (c *statsCounter) page(r ScanRange, rows int) {
	c.pages.Add(1)
	c.rows.Add(int64(rows))
	c.mu.Lock()
	if c.ranges == nil {
		c.ranges = map[ScanRange]RangeStats{}
	}
	st := c.ranges[r]
	st.Pages++
	st.Rows += int64(rows)
	c.ranges[r] = st
	c.mu.Unlock()
}

func (c *statsCounter) fault(r ScanRange) {
	c.faults.Add(1)
	c.mu.Lock()
	if c.ranges == nil {
		c.ranges = map[ScanRange]RangeStats{}
	}
	st := c.ranges[r]
	st.Faults++
	c.ranges[r] = st
	c.mu.Unlock()
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	c := &s.stats
	c.mu.Lock()
	ranges := maps.Clone(c.ranges)
	c.mu.Unlock()
	if ranges == nil {
		ranges = map[ScanRange]RangeStats{}
	}
	nodes := make([]int64, len(c.nodes))
	for i := range c.nodes {
		nodes[i] = c.nodes[i].Load()
	}
	return Stats{
		Connections: c.connections.Load(), Queries: c.queries.Load(), Prepares: c.prepares.Load(),
		Executes: c.executes.Load(), Pages: c.pages.Load(), Rows: c.rows.Load(), Faults: c.faults.Load(),
		Ranges: ranges, NodeRequests: nodes,
	}
}

// ResetStats zeroes the counters (connections included).
func (s *Server) ResetStats() {
	c := &s.stats
	for _, a := range []*atomic.Int64{&c.connections, &c.queries, &c.prepares, &c.executes, &c.pages, &c.rows, &c.faults} {
		a.Store(0)
	}
	for i := range c.nodes {
		c.nodes[i].Store(0)
	}
	c.mu.Lock()
	c.ranges = nil
	c.mu.Unlock()
}
