package replicate

import (
	"math"
	"sync/atomic"
	"time"
)

// lease tells whether this member still holds its generation's partitions, as far as it can
// know. The broker drops a member a session timeout after the last heartbeat it received, or a
// rebalance timeout after a rebalance began (another member joined) if it has not joined again,
// and gives its partitions to others; a member paused past that (a stopped process, a frozen VM,
// a network partition from the brokers but not from the table) and resumed would apply the batch
// it had read over newer changes their new owner applied. A table gives no fencing, so a SQL
// worker asks the lease before each of a batch's statements runs: it is held for the shorter of the
// two timeouts, less two heartbeat intervals, after the send of the last heartbeat the broker
// accepted with no rebalance under way (or after the join). A beat answered
// REBALANCE_IN_PROGRESS does not renew it: the rebalance began at some moment before.
type lease struct {
	start  time.Time     // the base of sent (monotonic)
	length time.Duration // how long a heartbeat holds the lease from its send
	sent   atomic.Int64  // time.Since(start) at the send of the last heartbeat accepted
	lost   atomic.Bool   // the broker answered that this member is no longer in the generation
}

// newLease starts a lease held from now, the generation's join.
func newLease(g GroupOptions) *lease {
	timeout := min(g.SessionTimeout, g.RebalanceTimeout)
	return &lease{start: time.Now(), length: max(timeout-2*g.HeartbeatInterval, timeout/2)}
}

// since is the lease's clock: the time since it started.
func (l *lease) since() time.Duration { return time.Since(l.start) }

// renew records a heartbeat the broker accepted, sent at sent (since()).
func (l *lease) renew(sent time.Duration) {
	for {
		old := l.sent.Load()
		if int64(sent) <= old || l.sent.CompareAndSwap(old, int64(sent)) {
			return
		}
	}
}

// held tells whether the member holds its partitions: no broker said otherwise, and a heartbeat
// it accepted was sent less than the lease's length ago.
func (l *lease) held() bool { return !l.lost.Load() && l.left() > 0 }

// left is the time until the lease runs out (negative once it has), unless a heartbeat renews it.
func (l *lease) left() time.Duration {
	sent := l.sent.Load()
	if sent == math.MaxInt64 {
		// forgone: length - (since - sent) would overflow to a negative time
		return math.MaxInt64
	}
	return l.length - (l.since() - time.Duration(sent))
}

// forgo gives up checking: the member cannot heartbeat on its own, so held says true for as
// long as no broker said otherwise.
func (l *lease) forgo() { l.renew(math.MaxInt64) }
