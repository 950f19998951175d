package replicate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// shortLockTTL makes a killed run's object-store lock expire quickly, so that a restart (which
// waits for it) does not wait the default two minutes.
func shortLockTTL(t *testing.T) {
	t.Helper()
	old := output.LockTTL
	output.LockTTL = 1500 * time.Millisecond
	t.Cleanup(func() { output.LockTTL = old })
}

// openStore opens the object store prefix of srv.
func openStore(t testing.TB, srv *s3test.Server, prefix string) store.Store {
	t.Helper()
	st, err := s3store.Open(context.Background(), srv.URIFor(prefix), s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// mirror copies every object of st into a new local folder (rejects 0600, as the local store
// writes them), so that the folder checks (applyOutputs, checkDisk, rejectLines) read it.
func mirror(t testing.TB, st store.Store) (string, []string) {
	t.Helper()
	ctx := context.Background()
	objs, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
		data, err := st.Get(ctx, o.Name)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(o.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		perm := os.FileMode(0o644)
		if output.PrivateName(o.Name) {
			perm = 0o600
		}
		if err := os.WriteFile(path, data, perm); err != nil {
			t.Fatal(err)
		}
	}
	return dir, names
}

// Before, `rekey replicate --out s3://...` was refused ("not yet to an object store"). Replicated
// to an S3 server (gofakes3, in process), each roll's files are objects under data/, deletes/ and
// rejects/ with manifest.json beside; for every step of a roll's commit, partition 1 is killed
// there twice (the lock left behind as a kill leaves it: the restart waits for it to expire), then
// a third run finishes: the objects hold every message once (parquet-go reads them), every poison
// message has one reject line, the manifest's counts are a clean run's, and no object is left that
// the manifest does not list.
func TestReplicateToObjectStore(t *testing.T) {
	shortLockTTL(t)
	const parts, perPart = 3, 300
	// an object store's files are uploaded as they are staged, before the manifest: none is renamed
	steps := []replicate.CommitStep{"", replicate.StepFinished, replicate.StepStaging, replicate.StepStaged,
		replicate.StepManifest, replicate.StepRenamed, replicate.StepOffset}
	for _, step := range steps {
		name := string(step)
		if name == "" {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			c := kafkatest.Start(t)
			topic := c.CreateTopic(t, "orders-store-"+name, parts)
			group := "g-store-" + name
			msgs, want, poison := jsonStream(parts, perPart)
			var early, late []kafkago.Message
			for i, m := range msgs {
				if i%perPart < perPart/2 {
					early = append(early, m)
				} else {
					late = append(late, m)
				}
			}
			c.Produce(t, topic, early...)
			srv := s3test.StartGofakes3(t, nil)
			st := openStore(t, srv, "repl")
			cfg := config(t, c, topic, group, "json", "")
			cfg.Store = st
			cfg.SpoolDir = t.TempDir()
			if step != "" {
				crashAt(t, cfg, step)
			}
			c.Produce(t, topic, late...)
			if step != "" {
				crashAt(t, cfg, step) // the replay is killed too
			}
			rn := start(t, cfg)
			waitCommitted(t, c, group, topic, endOffsets(t, c, topic), 60*time.Second)
			if err := rn.shutdown(t); err != nil {
				t.Fatal(err)
			}
			if spooled, _ := os.ReadDir(cfg.SpoolDir); len(spooled) > 0 {
				t.Errorf("spool files left: %d", len(spooled))
			}

			dir, names := mirror(t, st)
			allowed := map[string]bool{"data": true, output.DeletesDir: true, output.RejectsDir: true, output.ManifestFile: true,
				output.DDLFile: true, output.BulkloadFile: true, output.ReplicateStateFile: true}
			for _, n := range names {
				top, _, _ := strings.Cut(n, "/")
				if !allowed[top] {
					t.Errorf("unexpected object %s (the lock is released on a clean stop)", n)
				}
			}
			p := program(t)
			// applyOutputs checks that every object under data/, deletes/ and rejects/ is listed
			compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
			lines := rejectLines(t, dir)
			for k, n := range lines {
				if n > 1 {
					t.Errorf("message %s rejected %d times", k, n)
				}
				if !poison[k] {
					t.Errorf("message %s rejected, not poison", k)
				}
			}
			for k := range poison {
				if lines[k] == 0 {
					t.Errorf("poison message %s not rejected", k)
				}
			}
			m := readManifest(t, dir)
			in, rejected := int64(len(msgs)), int64(len(poison))
			if m.RowsIn != in || m.RowsRejected != rejected || m.RowsWritten != in-rejected {
				t.Errorf("manifest: rows_in %d, rows_written %d, rows_rejected %d; a clean run: %d, %d, %d",
					m.RowsIn, m.RowsWritten, m.RowsRejected, in, in-rejected, rejected)
			}
			for _, pe := range m.Replication.Partitions {
				if pe.NextOffset != perPart {
					t.Errorf("partition %d: next offset %d, want %d", pe.Partition, pe.NextOffset, perPart)
				}
			}
			job, err := st.Get(context.Background(), output.BulkloadFile)
			if err != nil {
				t.Fatal(err)
			}
			// the job reads the bucket: its path is the prefix's, not a local folder's
			var loaded struct {
				ReaderConfig struct {
					FilePath string `json:"filePath"`
				} `json:"readerConfig"`
			}
			if err := json.Unmarshal(job, &loaded); err != nil || loaded.ReaderConfig.FilePath != "repl/data/*/" {
				t.Errorf("bulkload.json does not name the prefix's data/ (%v):\n%s", err, job)
			}
		})
	}
}

// On an object store a prefix has one member: a second process replicating to the same --out is
// refused (its lock is renewed by a live member) with a message saying why.
func TestObjectStoreSecondMemberRefused(t *testing.T) {
	shortLockTTL(t)
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-store-two", 2)
	msgs, _, _ := jsonStream(2, 50)
	c.Produce(t, topic, msgs...)
	srv := s3test.StartGofakes3(t, nil)
	cfg := config(t, c, topic, "g-store-two", "json", "")
	cfg.Store = openStore(t, srv, "repl")
	a := start(t, cfg)
	waitCommitted(t, c, "g-store-two", topic, endOffsets(t, c, topic), 60*time.Second)
	cfgB := cfg
	cfgB.Store = openStore(t, srv, "repl")
	_, err := replicate.New(context.Background(), cfgB)
	if err == nil || !strings.Contains(err.Error(), "one member per --out prefix") {
		t.Errorf("a second member on the same prefix: %v", err)
	}
	if err := a.shutdown(t); err != nil {
		t.Fatal(err)
	}
}

// stallingList is an object store whose listings of data/ hang until their context ends, as an
// unreachable bucket's would.
type stallingList struct {
	store.Store
	stalled chan struct{} // closed when the first listing hangs
	once    sync.Once
}

func (s *stallingList) List(ctx context.Context, prefix string) ([]store.Info, error) {
	if prefix != output.DataDir+"/" {
		return s.Store.List(ctx, prefix)
	}
	s.once.Do(func() { close(s.stalled) })
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestObjectStoreHardStopCancelsAListing: a hard stop (Ctrl-C twice, Run's ctx cancelled) while
// the member lists the bucket for an interrupted roll's objects, when it is assigned its
// partitions, ends the run at once with the cancellation, rather than waiting for the bucket.
func TestObjectStoreHardStopCancelsAListing(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-store-stall", 2)
	srv := s3test.StartGofakes3(t, nil)
	cfg := config(t, c, topic, "g-store-stall", "json", "")
	st := &stallingList{Store: openStore(t, srv, "repl"), stalled: make(chan struct{})}
	cfg.Store = st
	r, err := replicate.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, make(chan struct{})) }()
	select {
	case <-st.stalled:
	case err := <-done:
		t.Fatalf("run ended before listing the bucket: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the member never listed the bucket")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("run ended with %v, want the cancellation", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a hard stop did not cancel the bucket's listing: the run is still waiting for it")
	}
}
