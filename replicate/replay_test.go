package replicate_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/output"
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
	steps := []replicate.CommitStep{"", replicate.StepFinished, replicate.StepStaging, replicate.StepStaged,
		replicate.StepManifest, replicate.StepRenaming, replicate.StepRenamed, replicate.StepOffset}
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

// TestKilledRollLeavesNoVisibleFile: before, a roll killed after its files were renamed to their
// final names and before manifest.json listed it left them under data/ (which the bulk load reads
// whole), deletes/ and rejects/ until its partition was next assigned: a bulk load then loaded rows
// whose offsets were never committed, and loaded them again from the replay. A roll killed at any
// step of its commit leaves no file a reader sees that the manifest does not list; the roll killed
// after its manifest is finished by the next run.
func TestKilledRollLeavesNoVisibleFile(t *testing.T) {
	const parts, perPart = 2, 200
	for _, step := range []replicate.CommitStep{replicate.StepStaging, replicate.StepStaged, replicate.StepManifest,
		replicate.StepRenaming, replicate.StepRenamed} {
		t.Run(string(step), func(t *testing.T) {
			c := kafkatest.Start(t)
			topic := c.CreateTopic(t, "orders-visible-"+string(step), parts)
			group := "g-visible-" + string(step)
			msgs, want, _ := jsonStream(parts, perPart)
			c.Produce(t, topic, msgs...)
			dir := t.TempDir()
			cfg := config(t, c, topic, group, "json", dir)
			crashAt(t, cfg, step)
			// the process is gone: what a bulk load of data/ would read now must be committed
			visibleCommitted(t, dir)

			rn := start(t, cfg)
			waitCommitted(t, c, group, topic, endOffsets(t, c, topic), 60*time.Second)
			if err := rn.shutdown(t); err != nil {
				t.Fatal(err)
			}
			p := program(t)
			compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
		})
	}
}

// visibleCommitted fails for every file under data/, deletes/ or rejects/ that a reader skipping
// dot-files sees and manifest.json does not list.
func visibleCommitted(t testing.TB, dir string) {
	t.Helper()
	listed := map[string]bool{}
	if _, err := os.Stat(filepath.Join(dir, output.ManifestFile)); err == nil {
		listed = manifestFiles(readManifest(t, dir))
	}
	for _, top := range []string{output.DataDir, output.DeletesDir, output.RejectsDir} {
		filepath.WalkDir(filepath.Join(dir, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			if !listed[filepath.ToSlash(rel)] {
				t.Errorf("%s is visible but manifest.json does not list it: its roll is not committed", filepath.ToSlash(rel))
			}
			return nil
		})
	}
}
