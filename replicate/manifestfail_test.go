package replicate_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/store"
)

// failAfterManifest is a folder whose write of manifest.json, once armed, fails after the file was
// replaced: as when the fsync of the folder after the rename fails (EIO), so that the caller
// cannot tell whether the new manifest, which lists the roll, is the folder's.
type failAfterManifest struct {
	*store.Local
	armed  atomic.Bool
	failed atomic.Bool
}

var errSyncFolder = errors.New("sync the output folder: input/output error")

func (f *failAfterManifest) Put(ctx context.Context, name string, data []byte) error {
	if err := f.Local.Put(ctx, name, data); err != nil {
		return err
	}
	if name == output.ManifestFile && f.armed.Load() && f.failed.CompareAndSwap(false, true) {
		return errSyncFolder
	}
	return nil
}

// A roll whose manifest write failed may be committed: the manifest that lists it may be the
// folder's. Its files are then left as a kill leaves them, for the partition's next owner to
// rename (the manifest lists them) or remove (it does not). Before, the failing member removed
// them: the next run found the manifest listing a roll whose files were gone and stopped at every
// start ("a committed file is lost").
func TestRollWhoseManifestWriteFailedKeepsItsFiles(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-manifest-fail", 1)
	group := c.Group("g-manifest-fail")
	msgs, want, _ := jsonStream(1, 60)
	c.Produce(t, topic, msgs...)
	dir := t.TempDir()
	cfg := config(t, c, topic, group, "json", dir)
	local, ok := sinktest.Folder(t, dir).(*store.Local)
	if !ok {
		t.Fatal("sinktest.Folder is not a *store.Local")
	}
	fst := &failAfterManifest{Local: local}
	cfg.Store = fst
	r, err := replicate.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	fst.armed.Store(true) // past the manifest New writes: the first roll's commit fails
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), make(chan struct{})) }()
	select {
	case err := <-done:
		if !errors.Is(err, errSyncFolder) {
			t.Fatalf("run ended with %v, want the manifest's write error", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the manifest's write did not fail the run")
	}
	m := readManifest(t, dir)
	if len(m.Replication.Segments) == 0 {
		t.Fatal("the failed write left no roll in manifest.json: the test does not reach the case")
	}

	cfg = config(t, c, topic, group, "json", dir)
	rn := start(t, cfg)
	ends := endOffsets(t, c, topic)
	caughtUp := func() bool { return c.Committed(t, group, topic, 1)[0] >= ends[0] }
	wait.For(t, func() bool { return caughtUp() || len(rn.done) > 0 }, "the next run to catch up, or to fail")
	if !caughtUp() {
		t.Fatalf("the next run failed: %v", <-rn.done)
	}
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	checkDisk(t, dir, readManifest(t, dir))
}
