package kafka

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// A window's share of a partition is max messages in proportion to what the partition retains,
// whatever their numbers: max × retained overflowed int64 past 9.2e18 (two partitions of 4e9
// messages, a window of 6e9), and a partition got a negative share, read as nothing.
func TestWindowPartsOfLargePartitions(t *testing.T) {
	offs := []PartitionOffsets{{Partition: 0, First: 0, End: 4e9}, {Partition: 1, First: 1e9, End: 5e9}}
	for _, start := range []string{StartEarliest, StartLatest} {
		parts, total := windowParts(offs, start, 6e9)
		if total != 6e9 || len(parts) != 2 {
			t.Fatalf("start=%s: %d messages in %+v, want 6e9 in 2 partitions", start, total, parts)
		}
		for i, p := range parts {
			if n := p.end - p.start; n != 3e9 || p.start < offs[i].First || p.end > offs[i].End {
				t.Fatalf("start=%s: partition %d window [%d, %d), want 3e9 of [%d, %d)", start, p.partition, p.start, p.end, offs[i].First, offs[i].End)
			}
		}
	}
}

// A resume whose checkpoint names a bad cursor for one partition fails the read before any
// partition is read: Run returned the error while the goroutines of the partitions before it
// went on reading (their context alive) and sent batches on out, which the engine closes once
// Run returns: a send on a closed channel, a panic instead of the error.
func TestWindowBadResumeCursorStartsNoRead(t *testing.T) {
	w := &Window{cfg: Config{Topic: "t", Format: FormatJSON, Brokers: []string{"127.0.0.1:1"}},
		schema: pipeline.SourceSchema{{Name: "id", Type: "bigint"}}, log: zap.NewNop(), dialer: &kafkago.Dialer{},
		parts: []windowPart{{partition: 0, start: 0, end: 10}, {partition: 1, start: 5, end: 10}}, BatchSize: 1024, Idle: time.Hour}
	resume := map[string]pipeline.StreamState{"t/0": {Cursor: "2"}, "t/1": {Cursor: "3"}} // t/1 before its window
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan pipeline.Batch)
	err := w.Run(ctx, resume, out)
	if err == nil || !strings.Contains(err.Error(), "bad resume cursor") {
		t.Fatalf("Run: %v, want the bad resume cursor of t/1", err)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "kafka.(*Window).runPart") || strings.Contains(stacks, "errgroup.(*Group).Go") {
		t.Fatal("Run returned its error with partition t/0's read still running: it would send on out after Run returned")
	}
}

// keycol= decides which column a plain message key fills: a resume with another (or none) would
// write the rest of the window's rows otherwise than the rows already written, so the window's
// identity, which a resume compares, holds it (and a window without it keeps its identity).
func TestWindowIdentityHasTheKeyColumn(t *testing.T) {
	w := func(keycol string) *Window {
		return &Window{cfg: Config{Topic: "t", Format: FormatJSON, KeyColumn: keycol}, parts: []windowPart{{partition: 0, start: 0, end: 10}}}
	}
	if _, ok := w("").Identity()["keycol"]; ok {
		t.Errorf("a window without keycol= records one: %v", w("").Identity())
	}
	if d := w("id").Identity().Diff(w("").Identity()); len(d) == 0 {
		t.Error("a resume without keycol= of a window read with keycol=id is not told apart")
	}
	if d := w("id").Identity().Diff(w("sku").Identity()); len(d) == 0 {
		t.Error("a resume with keycol=sku of a window read with keycol=id is not told apart")
	}
}

// A resume reads the window its first run fixed: given another max= or start=, which asks for
// another window, it is refused naming it, where it read the first window without a word (a run
// asked for 2000 messages that read 1000). The same URI resumes, and so does a checkpoint of an
// earlier rekey, which recorded neither.
func TestWindowResumeWithAnotherMaxOrStartIsTold(t *testing.T) {
	w := func(start string, max, end int64) *Window {
		return &Window{cfg: Config{Topic: "t", Format: FormatJSON, Start: start, Max: max},
			parts: []windowPart{{partition: 0, start: 0, end: end}}, log: zap.NewNop()}
	}
	first := w(StartEarliest, 1000, 1000).Identity()
	diff := func(now *Window, recorded pipeline.Identity) []string {
		t.Helper()
		if err := now.AdoptIdentity(recorded); err != nil {
			t.Fatal(err)
		}
		return recorded.Diff(now.Identity())
	}
	if d := diff(w(StartEarliest, 1000, 5000), first); len(d) != 0 {
		t.Errorf("the same URI on a topic that grew: %v", d)
	}
	if d := diff(w(StartEarliest, 2000, 2000), first); len(d) == 0 {
		t.Error("a resume with max=2000 of a window of max=1000 is not told apart")
	}
	if d := diff(w(StartLatest, 1000, 5000), first); len(d) == 0 {
		t.Error("a resume with start=latest of a window of start=earliest is not told apart")
	}
	earlier := pipeline.Identity{}
	for k, v := range first {
		if k != "max" && k != "start" {
			earlier[k] = v
		}
	}
	if d := diff(w(StartEarliest, 1000, 5000), earlier); len(d) != 0 {
		t.Errorf("a checkpoint of an earlier rekey: %v", d)
	}
}
