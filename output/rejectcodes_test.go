package output

import (
	"context"
	"errors"
	"testing"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/migrate/runner"
)

// A resumed run that fails before it commits anything reports what its checkpoint holds: the
// rejects by code add up to the rows rejected, rather than counting also the rows it rejected
// since it resumed, which no checkpoint (and no rejects file) holds.
func TestFailedResumeReportsTheCheckpointsRejectCodes(t *testing.T) {
	src := &seqSource{streams: 1, rows: 2000, batch: 10, pauseAfter: 20}
	sink := &memSink{}
	cfg := testConfig(t, src, sink, copyTransform{rejectEvery: 7})
	r, _ := newRunner(t, cfg)
	stop := make(chan struct{})
	go func() { // interrupted once rows flow; the source stalls after 20 batches
		wait.Until(func() bool { return r.Counters.RowsRejected.Load() > 0 }, wait.Timeout)
		close(stop)
	}()
	if _, err := r.Run(context.Background(), stop, nil); !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("the first run: %v, want interrupted", err)
	}
	cp, err := resumeFrom(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cp.RowsRejected == 0 || cp.RejectCodes["dict_miss"] != cp.RowsRejected {
		t.Fatalf("the first run's checkpoint: %d rows rejected, codes %v", cp.RowsRejected, cp.RejectCodes)
	}
	// the resume reads the rest, and its only commit, the last, fails
	src.pauseAfter = 0
	sink.failAfter = sink.commits + 1
	cfg.CheckpointEvery = 0
	r2, _ := newRunner(t, cfg)
	res, err := r2.Run(context.Background(), nil, cp)
	if err == nil {
		t.Fatal("the resumed run did not fail")
	}
	var byCode int64
	for _, n := range res.RejectCodes {
		byCode += n
	}
	if res.RowsRejected != cp.RowsRejected || byCode != res.RowsRejected {
		t.Fatalf("the failed resume reports %d rows rejected and %v by code; its checkpoint holds %d (%v)", res.RowsRejected, res.RejectCodes, cp.RowsRejected, cp.RejectCodes)
	}
}
