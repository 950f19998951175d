package replicate

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka"
)

func TestTracker(t *testing.T) {
	tr := newTracker()
	a := tr.open(10)
	a.extend(19)
	b := tr.open(25) // a gap (compaction): contiguity is in fetch order
	b.extend(30)
	c := tr.open(31)
	if got := tr.done(b); got != -1 {
		t.Fatalf("a later span made %d committable before the first one", got)
	}
	if got := tr.done(a); got != 31 {
		t.Fatalf("committable %d, want 31 (after a and b)", got)
	}
	if got := tr.done(c); got != 32 {
		t.Fatalf("committable %d, want 32", got)
	}
}

func TestDeleteStatement(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "order", KeyLen: 6, Columns: []pipeline.Column{
		{Name: "pk1", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "log-event", Type: pipeline.TypeBigint, KeyPos: 1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: 2},
		{Name: "d", Type: pipeline.TypeDate, KeyPos: 3},
		{Name: "x", Type: pipeline.TypeDouble, KeyPos: 4},
		{Name: "b", Type: pipeline.TypeVarbinary, KeyPos: 5},
		{Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1},
	}}
	row := []pipeline.Value{pipeline.Text("it's"), pipeline.Int(-7), pipeline.Int(1700000000123), pipeline.Int(19000),
		pipeline.Float(math.Inf(1)), pipeline.Bytes("\x01\xff"), pipeline.Text("ignored")}
	got := string(newDeleteStmt(schema).append(nil, row))
	want := "DELETE FROM `order` WHERE pk1 = 'it''s' AND `log-event` = -7 AND ts = '2023-11-14 22:13:20.123' AND d = '2022-01-08' AND x = '+Inf' AND b = X'01ff';\n"
	if got != want {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
	if strings.Contains(got, "ignored") {
		t.Fatal("a non-key column in the WHERE")
	}
}

// TestClaimRemovesOnlyOwnedLeftovers: a member assigned partition 1 removes what an interrupted
// roll of partition 1 left (temporary files of any member, committed names that manifest.json does
// not list) and nothing of partition 0, which a live member may be writing (members share one
// folder, and a killed member's temporary files must not stay for ever).
func TestClaimRemovesOnlyOwnedLeftovers(t *testing.T) {
	dir := t.TempDir()
	base := func() *output.Manifest { return &output.Manifest{Regions: make([]output.RegionInfo, 1)} }
	m, err := openManifest(context.Background(), sinktest.Folder(t, dir), dir, base, Replication{Topic: "t", Group: "g"}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	write := func(rel string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed := "data/region-0000/" + output.RollName(1, 0, 9) + ".parquet"
	committedRejects := output.RejectsDir + "/" + output.RollName(1, 0, 9) + ".jsonl"
	write(committed)
	write(committedRejects)
	err = m.commit(context.Background(), &rollCommit{partition: 1, first: 0, last: 9, messages: 10, rejected: 1, upserts: 9,
		stage: func() ([]segmentFiles, *RejectFile, []output.Staged, error) {
			return []segmentFiles{{Region: 0, Partition: 1, First: 0, Last: 9, Data: &pipeline.FileInfo{Path: committed, Rows: 9, Bytes: 1}}},
				&RejectFile{Partition: 1, FirstOffset: 0, RollLast: 9, Path: committedRejects, Rejects: 1}, nil, nil
		}, rename: noRename})
	if err != nil {
		t.Fatal(err)
	}
	keep := []string{
		committed, committedRejects,
		"data/region-0000/" + atomicfile.TempPrefix + "p0000-0000000000000010-aaaaaaaa.parquet", // live member, partition 0
		"data/region-0000/" + output.RollName(0, 10, 19) + ".parquet",                           // partition 0: not ours to judge
		"data/region-0000/notes.txt",
	}
	gone := []string{
		"deletes/region-0000/" + atomicfile.TempPrefix + "p0001-0000000000000010-bbbbbbbb.sql", // killed member
		"deletes/region-0000/" + output.RollName(1, 10, 19) + ".sql",                           // renamed, never committed
		"data/region-0000/" + atomicfile.TempPrefix + "p0001-0000000000000010.parquet",         // an earlier rekey's name
		"data/region-0000/" + output.RollName(1, 10, 19) + ".parquet",                          // renamed, never committed
		output.RejectsDir + "/" + atomicfile.TempPrefix + "p0001-0000000000000010-bbbbbbbb.jsonl",
		output.RejectsDir + "/" + output.RollName(1, 10, 19) + ".jsonl",
	}
	for _, f := range append(keep[2:], gone...) {
		write(f)
	}
	// another process sees the commit through the folder's manifest
	other, err := openManifest(context.Background(), sinktest.Folder(t, dir), dir, base, Replication{Topic: "t", Group: "g"}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer other.close()
	cl, err := other.claim(context.Background(), []int{1, 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range keep {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("removed: %v", err)
		}
	}
	for _, f := range gone {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("left: %s", f)
		}
	}
	if c := cl[1]; !c.known || c.entry.NextOffset != 10 || c.entry.Messages != 10 || c.entry.Rejected != 1 {
		t.Errorf("partition 1: %+v", c)
	}
	if c := cl[2]; c.known || !c.other {
		t.Errorf("partition 2: %+v", c)
	}
	// the other process commits partition 1's next roll; the first one, its copy not knowing
	// it, may not commit those messages again (it lost the partition)
	none := func() ([]segmentFiles, *RejectFile, []output.Staged, error) { return nil, nil, nil, nil }
	if err := other.commit(context.Background(), &rollCommit{partition: 1, first: 10, last: 19, expect: 10, messages: 10, stage: none, rename: noRename}); err != nil {
		t.Fatal(err)
	}
	err = m.commit(context.Background(), &rollCommit{partition: 1, first: 10, last: 12, expect: 10, stage: func() ([]segmentFiles, *RejectFile, []output.Staged, error) {
		t.Error("staged the files of a lost partition")
		return nil, nil, nil, nil
	}, rename: noRename})
	if !errors.Is(err, errLost) {
		t.Errorf("commit over a committed roll: %v", err)
	}
	var mf Manifest
	if data, err := os.ReadFile(filepath.Join(dir, output.ManifestFile)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &mf); err != nil {
		t.Fatal(err)
	}
	if len(mf.Replication.Partitions) != 1 || mf.Replication.Partitions[0].NextOffset != 20 || mf.RowsIn != 20 || mf.RowsRejected != 1 || mf.RowsWritten != 19 {
		t.Errorf("manifest: %+v, rows_in %d, rows_written %d, rows_rejected %d", mf.Replication.Partitions, mf.RowsIn, mf.RowsWritten, mf.RowsRejected)
	}
}

// TestLoadManifestRefusesPathsOutsideTheOutput: a crafted manifest.json of a replication output
// listing "../canary.parquet" was carried into every manifest written after it, for merge and the
// bulk load to follow; a restart now refuses it, naming the manifest.
func TestLoadManifestRefusesPathsOutsideTheOutput(t *testing.T) {
	for _, seg := range []string{
		`{"region":0,"partition":0,"first_offset":0,"roll_last_offset":9,"data":{"path":"../canary.parquet","rows":1,"bytes":1}}`,
		`{"region":0,"partition":0,"first_offset":0,"roll_last_offset":9,"deletes":{"path":"/etc/x.sql","statements":1,"bytes":1}}`,
	} {
		dir := t.TempDir()
		data := `{"regions":[],"replication":{"segments":[` + seg + `]}}`
		if err := os.WriteFile(filepath.Join(dir, output.ManifestFile), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := openManifest(context.Background(), sinktest.Folder(t, dir), dir, nil, Replication{}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.lock(context.Background())
		m.close()
		if !errors.Is(err, output.ErrUnsafePath) || !strings.Contains(err.Error(), filepath.Join(dir, output.ManifestFile)) {
			t.Errorf("%s: %v", seg, err)
		}
	}
	dir := t.TempDir()
	good := `{"regions":[],"replication":{"segments":[{"region":1,"partition":0,"first_offset":0,"roll_last_offset":9,"data":{"path":"data/region-0001/p.parquet","rows":1,"bytes":1}}]}}`
	if err := os.WriteFile(filepath.Join(dir, output.ManifestFile), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := openManifest(context.Background(), sinktest.Folder(t, dir), dir, nil, Replication{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if unlock, err := m.lock(context.Background()); err != nil || len(m.segs) != 1 {
		t.Errorf("a good manifest: %v", err)
	} else {
		unlock()
	}
}

// A member on an object store whose assignment lacks partitions waits for a killed predecessor's
// session to time out before it blames another member: the wait follows the session timeout.
func TestOtherMemberWaitOutlastsTheSession(t *testing.T) {
	for _, session := range []time.Duration{6 * time.Second, 30 * time.Second, 2 * time.Minute} {
		r := &Replicator{cfg: Config{Group: GroupOptions{SessionTimeout: session}}}
		if w := r.otherMemberWait(); w <= session {
			t.Errorf("session timeout %s: waits %s for the other member, not longer than its session", session, w)
		}
	}
}

// Into a SQL table the metrics count the statements the table took (the status line shows them:
// a table has no files); failed tries are not counted.
func TestMetricsCountSQLStatements(t *testing.T) {
	m := newMetrics("t", "test", nil)
	if m.ToSQL() {
		t.Fatal("a replication into files counts as one into a table")
	}
	observe := m.enableSQL()
	observe("upsert", 2000, time.Millisecond, nil)
	observe("delete", 3, time.Millisecond, nil)
	observe("upsert", 2000, time.Millisecond, errors.New("deadlock"))
	if !m.ToSQL() || m.Statements.Load() != 2 {
		t.Fatalf("to SQL %v, %d statements; want true, 2", m.ToSQL(), m.Statements.Load())
	}
}

// A fetch that found nothing new reaches the worker as a batch without changes: it moves the
// partition's lag to the high watermark it brings, and nothing is applied.
func TestBatchWithoutChangesMovesTheLagOnly(t *testing.T) {
	w := opsWorker(t, "[id]", outputCaps{})
	w.r.metrics = newMetrics("t", "test", nil)
	w.r.metrics.assign(0, true)
	w.r.metrics.position(0, 10, 10)
	step := w.step(func(context.Context, *kafka.Decoded) error {
		t.Fatal("a batch without changes was applied")
		return nil
	})
	if err := step(context.Background(), &pipeline.Job{Batch: pipeline.Batch{Payload: &kafka.Decoded{HighWaterMark: 25}}}); err != nil {
		t.Fatal(err)
	}
	if lag := w.r.metrics.Lag(); lag != 15 || w.hwm != 25 {
		t.Fatalf("lag %d, high watermark %d; want 15 and 25", lag, w.hwm)
	}
}

// A member's lease is held for the shorter of the session and rebalance timeouts, less two
// heartbeat intervals, after the send of the last heartbeat the broker accepted (or after the
// join), and no longer once the broker said the member is out; a late answer to an older beat
// does not move it back.
func TestLeaseHeldUntilItsLengthAfterTheLastAcceptedBeat(t *testing.T) {
	if l := newLease(GroupOptions{SessionTimeout: 10 * time.Second, RebalanceTimeout: 5 * time.Second, HeartbeatInterval: time.Second}); l.length != 3*time.Second {
		t.Fatalf("lease of %s with a rebalance timeout of 5 s, want 3 s: a rebalance drops a member that has not joined again after it", l.length)
	}
	l := newLease(GroupOptions{SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Minute, HeartbeatInterval: time.Second}) // 8 s
	if !l.held() {
		t.Fatal("not held right after the join")
	}
	l.start = time.Now().Add(-20 * time.Second) // the join was 20 s ago
	if l.held() {
		t.Fatal("held 20 s after the join without a beat accepted")
	}
	l.renew(15 * time.Second) // a beat sent 5 s ago
	l.renew(2 * time.Second)  // an older one's answer, late
	if !l.held() {
		t.Fatal("not held 5 s after the send of a beat accepted")
	}
	l.start = l.start.Add(-4 * time.Second) // 9 s after that send
	if l.held() {
		t.Fatal("held 9 s after the last beat accepted, past the lease's 8 s")
	}
	l.forgo()
	if !l.held() {
		t.Fatal("not held once the member cannot heartbeat on its own")
	}
	l.lost.Store(true)
	if l.held() {
		t.Fatal("held after the broker said the member is out")
	}
}

func noRename() error { return nil }

// A member that cannot heartbeat on its own from its join on (forgo) holds its lease as long as
// no broker says otherwise, from the first instant: its statements run. The lease's clock
// overflowed until its length had passed, and every batch of the generation's first seconds was
// refused as if the lease had run out, the member rejoining the group again and again.
func TestLeaseForgoneAtTheJoinIsHeld(t *testing.T) {
	l := newLease(GroupOptions{SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Minute, HeartbeatInterval: time.Second})
	l.forgo()
	if !l.held() {
		t.Fatalf("not held right after the join once the member cannot heartbeat on its own (left %s)", l.left())
	}
	if l.left() <= 0 {
		t.Fatalf("left %s, want it unbounded", l.left())
	}
}
