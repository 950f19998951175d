package pipeline

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// Counters are live figures for progress displays; read them with Load.
type Counters struct {
	RowsIn       atomic.Int64
	RowsWritten  atomic.Int64
	RowsRejected atomic.Int64
	RowsSkipped  atomic.Int64 // Batch.Skipped: in RowsIn, neither written nor rejected
}

// Result is the outcome of a run: what its last checkpoint holds. Files lists every committed
// file (across resumes).
type Result struct {
	// RowsIn = RowsWritten + RowsRejected + RowsSkipped (rows the source's filter left out).
	RowsIn, RowsWritten, RowsRejected, RowsSkipped int64
	RejectCodes                                    map[string]int64
	Files                                          []FileInfo
	Resumed                                        bool
	// RowsInThisRun is what this attempt read: RowsIn less what the checkpoint it resumed from
	// held. Rates divide this by Duration (which is this attempt's time too).
	RowsInThisRun int64
	Interrupted   bool // stopped by the caller's stop signal before the end
	Duration      time.Duration
	// StartedAt is when the first attempt of the run started (a resume keeps it); zero for a
	// checkpoint written before rekey recorded it.
	StartedAt time.Time
}

// ErrDamagedInput is wrapped by a source's error when its input turned out to be damaged (a
// truncated or corrupt file): what was read from it is not committed, since it may already hold
// wrong values, and the run fails.
var ErrDamagedInput = errors.New("damaged input")

// ErrUnreachable is wrapped by the error of a server that could not be reached (connection
// refused, a name that does not resolve, a dial timeout) where the driver loses the network
// error itself; Unreachable also finds the network error. The same command may succeed once
// the server is up, so it is a failure of the run, never invalid use.
var ErrUnreachable = errors.New("could not be reached")

// Unreachable tells whether err is a server that could not be reached: it wraps
// ErrUnreachable or a network error (*net.OpError: dial, read or write on a connection).
func Unreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, ErrUnreachable) || errors.As(err, &op)
}
