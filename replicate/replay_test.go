package replicate_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// TestReplayCountsOnce: before, after replays, rejects.jsonl held the same poison offsets two and
// three times (28 lines for 25 poison messages) and the manifest said rows_written 523,981 >
// rows_in 521,504. For every step of a roll's commit, partition 1 is killed there twice (the second
// time in the replay, with more messages), then a third process finishes: every poison message has
// exactly one reject line, and the manifest's counts, in total and per partition, are those of a
// run without a crash ("clean", run first).
func TestReplayCountsOnce(t *testing.T) {
	const parts, perPart = 3, 300
	steps := []replicate.CommitStep{"", replicate.StepFinished, replicate.StepRenaming, replicate.StepRenamed,
		replicate.StepManifest, replicate.StepOffset}
	for _, step := range steps {
		name := string(step)
		if name == "" {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			c := kafkatest.Start(t)
			topic := c.CreateTopic(t, "orders-replay-"+name, parts)
			group := "g-replay-" + name
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
			dir := t.TempDir()
			cfg := config(t, c, topic, group, "json", dir)
			// crashRun runs until partition 1's first roll reaches the step: the process is
			// killed there (a hook error leaves the disk as a kill would)
			crashRun := func() {
				t.Helper()
				var crashed atomic.Bool
				cfg.Hooks.Commit = func(s replicate.CommitStep, partition int, first, last int64) error {
					if s == step && partition == 1 && crashed.CompareAndSwap(false, true) {
						return errCrash
					}
					return nil
				}
				rn := start(t, cfg)
				select {
				case err := <-rn.done:
					if !errors.Is(err, errCrash) {
						t.Fatalf("run ended with %v, want the crash", err)
					}
				case <-time.After(60 * time.Second):
					t.Fatal("no crash")
				}
			}
			if step != "" {
				crashRun()
			}
			c.Produce(t, topic, late...)
			if step != "" {
				crashRun() // the replay is killed too
			}
			cfg.Hooks = replicate.Hooks{}
			rn := start(t, cfg)
			waitCommitted(t, c, group, topic, endOffsets(t, c, topic), 60*time.Second)
			if err := rn.shutdown(t); err != nil {
				t.Fatal(err)
			}
			p := program(t)
			compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want) // and no file left over

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

			// a clean run's counts, from the stream
			type counts struct{ in, written, rejected, upserts int64 }
			clean := make([]counts, parts)
			for i, mm := range msgs {
				c := &clean[mm.Partition]
				c.in++
				switch {
				case poison[fmt.Sprintf("%d/%d", mm.Partition, i%perPart)]:
					c.rejected++
				case mm.Value != nil:
					c.written++
					c.upserts++
				default:
					c.written++ // a tombstone: a DELETE statement
				}
			}
			m := readManifest(t, dir)
			in, rejected := int64(len(msgs)), int64(len(poison))
			if m.RowsIn != in || m.RowsRejected != rejected || m.RowsWritten != in-rejected {
				t.Errorf("manifest: rows_in %d, rows_written %d, rows_rejected %d; a clean run: %d, %d, %d",
					m.RowsIn, m.RowsWritten, m.RowsRejected, in, in-rejected, rejected)
			}
			if len(m.Replication.Partitions) != parts {
				t.Fatalf("manifest: %d partitions", len(m.Replication.Partitions))
			}
			var rows, upserts int64
			for _, pe := range m.Replication.Partitions {
				cl := clean[pe.Partition]
				got := counts{pe.Messages, pe.Written, pe.Rejected, pe.Upserts}
				if got != cl || pe.NextOffset != perPart {
					t.Errorf("partition %d: %+v next offset %d; a clean run: %+v next offset %d", pe.Partition, got, pe.NextOffset, cl, perPart)
				}
				upserts += cl.upserts
			}
			for _, r := range m.Regions {
				rows += r.Rows
			}
			if rows != upserts {
				t.Errorf("the data files hold %d rows, the stream %d upserts: a replayed message was written twice", rows, upserts)
			}
			var listed int64
			for _, r := range m.Replication.Rejects {
				listed += r.Rejects
			}
			if listed != rejected {
				t.Errorf("the manifest lists %d rejects in its rejects files, want %d", listed, rejected)
			}
		})
	}
}
