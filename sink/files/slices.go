package files

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
)

// DefaultTimeSlice is the width of a time slice when none is given (--time-slice).
const DefaultTimeSlice = 24 * time.Hour

// DefaultMaxSlices caps the slices open at once: each holds a sink with its share of the memory.
const DefaultMaxSlices = 64

// SliceConfig configures a SliceSink.
type SliceConfig struct {
	Width time.Duration // the width of a slice (default DefaultTimeSlice); at least a millisecond
	Max   int           // the most slices one run writes (default DefaultMaxSlices)
	// New opens the sink of one slice: its files' names begin with prefix (cfg.NamePrefix) and
	// it gets memory bytes of the budget.
	New func(ctx context.Context, prefix string) (*Sink, error)
}

// SliceSink writes rows that carry cell write times (Row.Times) into one Sink per time slice:
// a row goes to the slice of its newest cell time (its start: that time rounded down to a
// multiple of Width, epoch milliseconds), a row without times to the slice without a time. Each
// slice's files are named by output.SliceFilePrefix, so each can be loaded by its own bulkload
// job stamped with the slice's newest write time (FileInfo.NewestTime; the job takes at most the
// run's start: lindorm.SliceJobs). Safe for concurrent
// Writes, as Sink.
type SliceSink struct {
	cfg   SliceConfig
	width int64

	mu     sync.Mutex
	slices map[int64]*slice
}

type slice struct {
	sink   *Sink
	newest int64 // under SliceSink.mu
}

// TooManySlicesError fails a run whose rows' write times open more than Max slices of Width: a
// run of wider slices starts over (a resume keeps the slices' width of its first attempt).
type TooManySlicesError struct {
	Max   int
	Width time.Duration
}

func (e *TooManySlicesError) Error() string {
	return fmt.Sprintf("files: the rows' write times span more than %d time slices of %s: widen them (--time-slice, e.g. %s); "+
		"each slice is one bulkload job", e.Max, e.Width, e.Width*4)
}

// NewSliceSink returns a SliceSink; no slice is opened before a row needs it.
func NewSliceSink(cfg SliceConfig) (*SliceSink, error) {
	if cfg.Width == 0 {
		cfg.Width = DefaultTimeSlice
	}
	if cfg.Max == 0 {
		cfg.Max = DefaultMaxSlices
	}
	if cfg.Width < time.Millisecond || cfg.Max < 1 || cfg.New == nil {
		return nil, fmt.Errorf("files: time slices of %s (at least 1ms), at most %d (at least 1)", cfg.Width, cfg.Max)
	}
	return &SliceSink{cfg: cfg, width: cfg.Width.Milliseconds(), slices: map[int64]*slice{}}, nil
}

// SliceMemory is each slice's share of a sink memory budget: the budget split across the most
// slices a run may open.
func SliceMemory(budget int64, max int) int64 {
	if max <= 0 {
		max = DefaultMaxSlices
	}
	return budget / int64(max)
}

// SliceStart is the start of the slice of a row whose newest cell time is newest (-1: none).
func (s *SliceSink) SliceStart(newest int64) int64 {
	if newest <= 0 {
		return -1
	}
	return newest - newest%s.width
}

// Newest is the newest of a row's cell times (0: none).
func Newest(times []int64) int64 {
	var n int64
	for _, t := range times {
		n = max(n, t)
	}
	return n
}

// Write sends each row to the sink of its slice, opening the slice's sink on its first row. A
// row that would open more than Max slices fails the run, saying to widen the slices.
func (s *SliceSink) Write(ctx context.Context, rows []pipeline.Row) error {
	groups := map[int64][]int{}
	for i := range rows {
		start := s.SliceStart(Newest(rows[i].Times))
		groups[start] = append(groups[start], i)
	}
	var rejects []RowReject
	for start, idx := range groups {
		sl, err := s.open(ctx, start)
		if err != nil {
			return err
		}
		part := make([]pipeline.Row, len(idx))
		for j, i := range idx {
			part[j] = rows[i]
		}
		err = sl.sink.Write(ctx, part)
		var re *RejectError
		rejected := map[int]bool{}
		if errors.As(err, &re) {
			for _, r := range re.Rows {
				rejected[r.Index] = true
				rejects = append(rejects, RowReject{Index: idx[r.Index], Err: r.Err})
			}
		} else if err != nil {
			return err
		}
		// only the rows the slice's files hold stamp its job: a rejected row is not loaded
		var newest int64
		for j, i := range idx {
			if !rejected[j] {
				newest = max(newest, Newest(rows[i].Times))
			}
		}
		s.raise(sl, newest)
	}
	if len(rejects) > 0 {
		sort.Slice(rejects, func(a, b int) bool { return rejects[a].Index < rejects[b].Index })
		return &RejectError{Rows: rejects}
	}
	return nil
}

// open returns the slice that starts at start, opening it if needed.
func (s *SliceSink) open(ctx context.Context, start int64) (*slice, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slices[start]
	if sl == nil {
		if len(s.slices) >= s.cfg.Max {
			return nil, &TooManySlicesError{Max: s.cfg.Max, Width: s.cfg.Width}
		}
		sink, err := s.cfg.New(ctx, output.SliceFilePrefix(start))
		if err != nil {
			return nil, err
		}
		sl = &slice{sink: sink}
		s.slices[start] = sl
	}
	return sl, nil
}

// raise raises sl's newest time to newest.
func (s *SliceSink) raise(sl *slice, newest int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl.newest = max(sl.newest, newest)
}

// Commit commits every slice's sink and returns their files, each with its slice's newest time.
func (s *SliceSink) Commit(ctx context.Context) ([]pipeline.FileInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []pipeline.FileInfo
	for _, start := range s.starts() {
		sl := s.slices[start]
		infos, err := sl.sink.Commit(ctx)
		if err != nil {
			return nil, err
		}
		for i := range infos {
			infos[i].NewestTime = sl.newest
		}
		all = append(all, infos...)
	}
	sortInfos(all)
	return all, nil
}

// Abort aborts every slice's sink.
func (s *SliceSink) Abort(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, sl := range s.slices {
		errs = append(errs, sl.sink.Abort(ctx))
	}
	return errors.Join(errs...)
}

// Bytes is the bytes every slice has written so far.
func (s *SliceSink) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, sl := range s.slices {
		n += sl.sink.Stats().Bytes
	}
	return n
}

func (s *SliceSink) starts() []int64 {
	starts := make([]int64, 0, len(s.slices))
	for start := range s.slices {
		starts = append(starts, start)
	}
	sort.Slice(starts, func(a, b int) bool { return starts[a] < starts[b] })
	return starts
}
