package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/transform"
	"github.com/rekey/rekey/verify"
)

// replication is a kafka:// source verified as a replication: its changes up to the offsets
// replicate committed, and where those offsets come from.
type replication struct {
	changes func(ctx context.Context, fn func(*verify.ChangeBatch) error) error
	upTo    string
	notes   []string
	// refused counts, by code, the changes a folder output refuses (replicate rejected them
	// there) that verify applies to the source side; filled as the changes are read
	refused   map[string]int64
	refusedMu sync.Mutex
}

// refusedNote says what the changes a folder output refuses did to the comparison.
func (r *replication) refusedNote(location string) string {
	r.refusedMu.Lock()
	defer r.refusedMu.Unlock()
	var n int64
	for _, c := range r.refused {
		n += c
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d changes of the topic cannot be written to bulk-load files (%s): replicate rejected them for %s, and verify applies them as a table does (the columns a change sets, the rows a range delete covers), so the keys they change show as differing, missing or extra. Replicate Debezium's Cassandra events into the table instead (--out mysql://... or lindorm://...)",
		n, verify.CodeCounts(r.refused), location)
}

// replicationSource says whether a kafka:// --source is verified as the replication the target
// holds: when the target is a replicate output (its manifest.json records the offsets) or a table
// and the URI names the consumer group (group=, whose committed offsets say where it stands). nil:
// the topic is read as a window of rows, as migrate reads it.
func (inv *invocation) replicationSource(ctx context.Context, uri string, prog *transform.Program, folder *verify.Folder, logger *zap.Logger) (*replication, error) {
	if !isKafkaURI(uri) {
		return nil, nil
	}
	kc, err := inv.kafkaConfig(uri)
	if err != nil {
		return nil, err
	}
	end, from, isReplication, err := replicatedUpTo(ctx, &kc, folder)
	if err != nil || !isReplication {
		return nil, err
	}
	q := uriParams(uri)
	for _, p := range []string{"start", "max"} {
		if q[p] {
			return nil, fmt.Errorf("--source %s: %s= does not apply when verifying a replication: the changes are read up to %s", sourceuri.Redact(uri), p, from)
		}
	}
	// a replicate output's manifest says up to where, whatever a group committed
	if folder != nil && q["group"] {
		return nil, fmt.Errorf("--source %s: group= does not apply when verifying a replicate output: the changes are read up to %s, not to a group's committed offsets; drop group=", sourceuri.Redact(uri), from)
	}
	cfg := replicate.ChangesConfig{Kafka: kc, Program: prog, End: end, Logger: logger.Named("verify.changes")}
	windows, err := replicate.ChangeWindows(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r := &replication{refused: map[string]int64{}}
	r.upTo, r.notes = describeWindows(kc.Topic, windows, from)
	r.changes = func(ctx context.Context, fn func(*verify.ChangeBatch) error) error {
		return replicate.ReadChanges(ctx, cfg, windows, func(b *replicate.ChangeBatch) error {
			if folder != nil {
				r.countRefused(b.FilesRefuse)
			}
			return fn(verify.ReplicatedBatch(kafka.Stream(kc.Topic, b.Partition), b))
		})
	}
	return r, nil
}

// replicatedUpTo is where the replication the target holds stands: the next offsets a replicate
// output's manifest records, or a consumer group's committed offsets when the target is a table;
// from says which, in messages. isReplication is false when the target holds no replication of
// kc's topic that verify can tell (a migrate output, a table and no group=).
func replicatedUpTo(ctx context.Context, kc *kafka.Config, folder *verify.Folder) (end map[int]int64, from string, isReplication bool, err error) {
	switch {
	case folder != nil && folder.Replication != nil:
		rep := folder.Replication
		if rep.Topic != kc.Topic {
			return nil, "", false, fmt.Errorf("%s holds a replication of topic %s, not %s: give that topic", folder.Location, rep.Topic, kc.Topic)
		}
		end = map[int]int64{}
		for _, p := range rep.Partitions {
			end[p.Partition] = p.NextOffset
		}
		return end, "the next offsets " + folder.Location + "/" + output.ManifestFile + " records", true, nil
	case folder == nil && kc.Group != "":
		if end, err = kc.GroupOffsets(ctx); err != nil {
			return nil, "", false, err
		}
		return end, "the committed offsets of consumer group " + kc.Group, true, nil
	}
	return nil, "", false, nil
}

// describeWindows says what a replication's changes are read up to (upTo: each partition's end,
// and from where those come) and what its windows leave out (notes: changes retention deleted,
// no offset committed yet).
func describeWindows(topic string, windows []replicate.PartitionWindow, from string) (upTo string, notes []string) {
	var parts []string
	for _, w := range windows {
		parts = append(parts, fmt.Sprintf("%s < %d", kafka.Stream(topic, w.Partition), w.End))
		if w.Deleted > 0 {
			notes = append(notes, fmt.Sprintf("topic %s retains partition %d from offset %d only: changes replicate may have applied before it cannot be read, and their keys may show as extra or differing",
				topic, w.Partition, w.From))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		parts = append(parts, "nothing committed yet")
		notes = append(notes, fmt.Sprintf("nothing to check: %s names no offset of topic %s that replicate committed (has it applied anything yet? is this the group= it runs with?)", from, topic))
	}
	return strings.Join(parts, ", ") + " (" + from + ")", notes
}

// countRefused adds a batch's changes that a folder output refuses to r.refused.
func (r *replication) countRefused(refused map[string]int) {
	if len(refused) == 0 {
		return
	}
	r.refusedMu.Lock()
	defer r.refusedMu.Unlock()
	for code, n := range refused {
		r.refused[code] += int64(n)
	}
}

// uriParams names the query parameters a URI gives.
func uriParams(uri string) map[string]bool {
	out := map[string]bool{}
	_, q, ok := strings.Cut(uri, "?")
	if !ok {
		return out
	}
	for _, kv := range strings.Split(q, "&") {
		k, _, _ := strings.Cut(kv, "=")
		out[k] = true
	}
	return out
}

var errRepairChanges = errors.New("--repair writes source rows for migrate, and a replication's changes are not rows: to repair a replication, run replicate again from earlier offsets (or migrate the table's source and replicate from the offsets noted before it)")
