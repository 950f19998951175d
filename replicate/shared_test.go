package replicate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// tempFiles lists the uncommitted files of dir's region and rejects folders.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"data/region-*/*", "deletes/region-*/*", "rejects/*"} {
		ents, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, e := range ents {
			if atomicfile.IsTemp(e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// TestSharedFolderMembers: before, two members of one consumer group with separate --out folders,
// one killed, left a union holding 2,048 rows twice, and the killed member's folder kept .rekey-tmp
// files. Members share one folder: a member starting there leaves the open rolls (temporary files)
// of a live member alone; a killed member's temporary files are removed by the member its
// partitions move to; the folder holds every message once.
func TestSharedFolderMembers(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-shared", 2)
	msgs, want, poison := jsonStream(2, 300)
	var phase [3][]kafkago.Message
	for i, m := range msgs {
		phase[min(i%300/100, 2)] = append(phase[min(i%300/100, 2)], m)
	}
	// each partition's first message first: the first roll of an assignment closes after its
	// first batch, and the rest of phase 0 must be in A's open rolls
	c.Produce(t, topic, phase[0][0], phase[0][100])
	dir := t.TempDir()
	cfgA := config(t, c, topic, "g-shared", "json", dir)
	cfgA.RollInterval = time.Hour // A's rolls stay open until a rebalance or its stop
	var killA atomic.Bool
	var leftByA atomic.Pointer[[]string] // the temporary files on disk as A is killed
	cfgA.Hooks.Commit = func(step replicate.CommitStep, partition int, first, last int64) error {
		if step == replicate.StepFinished && killA.Load() {
			left := tempFiles(t, dir)
			leftByA.CompareAndSwap(nil, &left)
			return errCrash
		}
		return nil
	}
	a := start(t, cfgA)
	waitCommitted(t, c, "g-shared", topic, map[int]int64{0: 1, 1: 1}, 60*time.Second)
	c.Produce(t, topic, append(append([]kafkago.Message{}, phase[0][1:100]...), phase[0][101:]...)...)
	wait.For(t, func() bool {
		return a.r.Metrics().MessagesIn.Load() >= int64(len(phase[0])) && len(tempFiles(t, dir)) > 0
	}, "A to read phase 0 into open temporary files")
	open := tempFiles(t, dir)

	// B starts in the same folder while A's rolls are open
	cfgB := config(t, c, topic, "g-shared", "json", dir)
	b := start(t, cfgB)
	for _, f := range open {
		if !exists(f) && !committedAs(t, f) {
			t.Errorf("member B removed live member A's open file %s", filepath.Base(f))
		}
	}
	wait.For(t, func() bool { return a.r.Metrics().Assigned() == 1 && b.r.Metrics().Assigned() == 1 }, "one partition assigned to each of A and B")
	// From here A is killed at its next roll close, its files left under temporary names: the
	// stop's, or a rebalance's (kfake may run one more generation after B joined, which closes
	// A's roll and hands A a partition it has not read yet). Until phase 1 arrives, A's rolls
	// are empty: B's join committed them.
	killA.Store(true)
	c.Produce(t, topic, phase[1]...)
	wait.For(t, func() bool {
		if len(a.done) > 0 {
			return true // a rebalance closed A's roll holding phase 1 messages: A is killed
		}
		ma, mb := a.r.Metrics(), b.r.Metrics()
		return ma.Assigned() == 1 && mb.Assigned() == 1 && ma.Lag() == 0 && mb.Lag() == 0 && ma.Uncommitted() > 0 &&
			ma.MessagesIn.Load()+mb.MessagesIn.Load() >= int64(len(phase[0])+len(phase[1]))
	}, "phase 1 read into an open roll of A")
	close(a.stop)
	select {
	case err := <-a.done:
		if !errors.Is(err, errCrash) {
			t.Fatalf("A ended with %v, want the crash", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("A did not stop")
	}
	// checked when A was killed: by now B may have taken A's partition over and removed them
	if left := leftByA.Load(); left == nil || len(*left) == 0 {
		t.Fatal("the killed member left no temporary files: the test does not test their removal")
	}
	c.Produce(t, topic, phase[2]...)
	waitCommitted(t, c, "g-shared", topic, endOffsets(t, c, topic), 60*time.Second)
	if err := b.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if n := b.r.Metrics().Assigned(); n != 0 {
		t.Errorf("B still holds %d partitions", n)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want) // checkDisk: no temporary file left
	lines := rejectLines(t, dir)
	for k := range poison {
		if lines[k] != 1 {
			t.Errorf("poison message %s: %d reject lines", k, lines[k])
		}
	}
	m := readManifest(t, dir)
	if m.RowsIn != int64(len(msgs)) || m.RowsRejected != int64(len(poison)) || m.RowsWritten+m.RowsRejected != m.RowsIn {
		t.Errorf("manifest: rows_in %d, rows_written %d, rows_rejected %d; %d messages, %d poison", m.RowsIn, m.RowsWritten, m.RowsRejected, len(msgs), len(poison))
	}
}

// committedAs tells whether the roll file that had the temporary name pending is committed: a
// file of its partition and first offset, with its extension, under its final name in its folder.
func committedAs(t testing.TB, pending string) bool {
	t.Helper()
	base := strings.TrimPrefix(filepath.Base(pending), atomicfile.TempPrefix)
	part, rest, _ := strings.Cut(base, "-")
	first, _, _ := strings.Cut(rest, "-")
	final, _ := filepath.Glob(filepath.Join(filepath.Dir(pending), part+"-"+first+"-*"+filepath.Ext(base)))
	for _, f := range final {
		if !atomicfile.IsTemp(f) {
			return true
		}
	}
	return false
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestFolderStartRemovesOnlyTopLevelLeftovers: a member starting on a shared folder removes the
// temporary files a killed member left at its top (written only under the folder's lock:
// replicate.json, ddl.sql, bulkload.json, manifest.json), and leaves those of the region folders,
// which may be a live member's open roll; a damaged revision in replicate.lock is refused, naming it.
func TestFolderStartRemovesOnlyTopLevelLeftovers(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-leftovers", 2)
	dir := t.TempDir()
	top := filepath.Join(dir, atomicfile.TempPrefix+"manifest.json")
	live := filepath.Join(dir, "data", "region-0000", atomicfile.TempPrefix+"p0001-0000000000000010-aaaaaaaa.parquet")
	for _, f := range []string{top, live} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := replicate.New(context.Background(), config(t, c, topic, "g-leftovers", "json", dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(top); !os.IsNotExist(err) {
		t.Errorf("the top-level leftover stays: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a region folder's temporary file was removed at start: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "replicate.lock"), []byte("x1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := replicate.New(context.Background(), config(t, c, topic, "g-leftovers", "json", dir))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "replicate.lock")+` is damaged ("x1")`) {
		t.Errorf("a damaged replicate.lock: %v", err)
	}
}

// TestStaleGenerationLeavesNewOwnersFiles: a generation can end before the member that received
// it has claimed its partitions (kafka-go rejoins at once when no worker of the generation has
// started). The partitions then move to another member, which opens rolls of them; the first
// member, claiming late, must not remove those open files: a generation that ended before its
// workers started claims nothing.
func TestStaleGenerationLeavesNewOwnersFiles(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-stale-gen", 2)
	msgs, want, poison := jsonStream(2, 200)
	// a quarter of each partition's messages before the members start, a quarter once B has
	// committed its first roll (which closes after its first batch), then the rest
	var early, middle, late []kafkago.Message
	for i, m := range msgs {
		switch {
		case i%200 < 50:
			early = append(early, m)
		case i%200 < 100:
			middle = append(middle, m)
		default:
			late = append(late, m)
		}
	}
	c.Produce(t, topic, early...)
	dir := t.TempDir()

	cfgA := config(t, c, topic, "g-stale", "json", dir)
	held, release := make(chan struct{}), make(chan struct{})
	var joins atomic.Int32
	cfgA.Hooks.Joined = func(int32, []int) {
		if joins.Add(1) == 1 {
			close(held)
			<-release // the group moves on while A holds its first generation unclaimed
		}
	}
	a := start(t, cfgA)
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("A joined no generation")
	}

	cfgB := config(t, c, topic, "g-stale", "json", dir)
	cfgB.RollInterval = time.Hour // B's rolls stay open until a rebalance or its stop
	// a roll's commit starts once its files are finished (they are then renamed) and ends with
	// its offset: counted apart, so that a roll whose files are being renamed is never taken for
	// an open one
	var bCommits, bCommitted atomic.Int32
	cfgB.Hooks.Commit = func(step replicate.CommitStep, _ int, _, _ int64) error {
		switch step {
		case replicate.StepFinished:
			bCommits.Add(1)
		case replicate.StepOffset:
			bCommitted.Add(1)
		}
		return nil
	}
	b := start(t, cfgB)
	wait.For(t, func() bool {
		n := b.r.Metrics().Assigned()
		return n > 0 && int(bCommitted.Load()) >= n && bCommits.Load() == bCommitted.Load()
	}, "B to be assigned partitions of A's first generation and commit each one's first roll")
	// B's next rolls stay open (an hour's interval): their files are what A must leave alone
	c.Produce(t, topic, middle...)
	wait.For(t, func() bool { return len(tempFiles(t, dir)) > 0 }, "B to open rolls of the messages that followed")
	commits := bCommits.Load()
	open := tempFiles(t, dir) // A has claimed nothing and started no worker: these are B's
	if bCommits.Load() != commits || bCommitted.Load() != commits {
		t.Fatal("B committed a roll while the test listed its open files: the hour's roll interval should keep them open")
	}

	close(release)
	wait.For(t, func() bool { return joins.Load() >= 2 }, "A to finish its first generation and receive the next")
	if bCommits.Load() == commits { // B's open rolls are still open: their files must be there
		for _, f := range open {
			if !exists(f) {
				t.Errorf("member A, claiming a generation that had ended, removed member B's open file %s", filepath.Base(f))
			}
		}
	}

	// B's stop commits its open rolls (their files must be whole); A takes its partitions over
	if err := b.shutdown(t); err != nil {
		t.Errorf("B: %v", err)
	}
	c.Produce(t, topic, late...)
	waitCommitted(t, c, "g-stale", topic, endOffsets(t, c, topic), 60*time.Second)
	if err := a.shutdown(t); err != nil {
		t.Errorf("A: %v", err)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	lines := rejectLines(t, dir)
	for k := range poison {
		if lines[k] != 1 {
			t.Errorf("poison message %s: %d reject lines", k, lines[k])
		}
	}
	m := readManifest(t, dir)
	if m.RowsIn != int64(len(msgs)) || m.RowsWritten+m.RowsRejected != m.RowsIn {
		t.Errorf("manifest: rows_in %d, rows_written %d, rows_rejected %d; %d messages", m.RowsIn, m.RowsWritten, m.RowsRejected, len(msgs))
	}
}

// TestLockFileReplacedWhileMembersRun: replicate.lock removed while a member runs (by hand, by a
// clean-up of .lock files) and made again by a member started since: the two members' flocks were
// on two files, each trusted its own copy of manifest.json, and the new member, claiming a
// partition, removed the first member's committed rolls of it (files its copy did not list) and
// wrote a manifest without them. A member whose lock file is no longer the folder's stops at its
// next commit, saying so, before it changes anything; restarted, it takes the folder's lock file.
func TestLockFileReplacedWhileMembersRun(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-relocked", 2)
	msgs, want, poison := jsonStream(2, 200)
	var early, late []kafkago.Message
	for i, m := range msgs {
		if i%200 < 100 {
			early = append(early, m)
		} else {
			late = append(late, m)
		}
	}
	c.Produce(t, topic, early...)
	dir := t.TempDir()
	a := start(t, config(t, c, topic, "g-relocked", "json", dir))
	waitCommitted(t, c, "g-relocked", topic, map[int]int64{0: 100, 1: 100}, 60*time.Second) // a committed rolls of both partitions
	if err := os.Remove(filepath.Join(dir, "replicate.lock")); err != nil {
		t.Fatal(err)
	}
	b := start(t, config(t, c, topic, "g-relocked", "json", dir))
	c.Produce(t, topic, late...)
	// a stops at its next commit (the rebalance b's join starts): restarted, it joins again
	var restarted *running
	wait.For(t, func() bool {
		if restarted == nil && len(a.done) > 0 {
			err := <-a.done
			if err == nil || !strings.Contains(err.Error(), "replicate.lock") {
				t.Fatalf("a ended with %v, want its lock file named", err)
			}
			restarted = start(t, config(t, c, topic, "g-relocked", "json", dir))
		}
		got := c.Committed(t, "g-relocked", topic, 2)
		return got[0] == 200 && got[1] == 200
	}, "every offset committed")
	for _, rn := range []*running{b, restarted} {
		if rn == nil {
			continue
		}
		if err := rn.shutdown(t); err != nil {
			t.Fatal(err)
		}
	}
	if restarted == nil {
		t.Error("a went on with the lock file it had opened: the test did not see it stop")
		if err := a.shutdown(t); err != nil {
			t.Fatal(err)
		}
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	m := readManifest(t, dir)
	if m.RowsIn != int64(len(msgs)) || m.RowsRejected != int64(len(poison)) {
		t.Errorf("manifest: rows_in %d, rows_rejected %d; %d messages, %d poison", m.RowsIn, m.RowsRejected, len(msgs), len(poison))
	}
}
