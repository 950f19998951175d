package replicate

import (
	"context"
	"testing"

	"github.com/rekey/rekey/source/kafka"
)

// A partition revoked in a rebalance is another member's: its offsets move on there, so this
// process no longer exports the committed offset it last saw for it. The stale series stayed
// forever, at an offset the group had long passed (a drain or an alert comparing the committed
// offsets with the end offsets waited on it), and the partition's old position stood in for
// the new one when it came back.
func TestRevokedPartitionDropsItsGauges(t *testing.T) {
	ends := func(context.Context) ([]kafka.PartitionOffsets, error) {
		return []kafka.PartitionOffsets{{Partition: 0, First: 0, End: 900}, {Partition: 1, First: 0, End: 900}}, nil
	}
	m := newMetrics("t", "test", ends)
	for p := range 2 {
		m.assign(p, true)
		m.committed(p, 100)
		m.position(p, 100, 500)
	}
	// the rebalance: both revoked, partition 0 comes back where the group committed it
	// meanwhile, partition 1 is another member's
	m.assign(0, false)
	m.assign(1, false)
	m.assign(0, true)
	m.committed(0, 700)
	m.position(0, 700, -1)

	fams, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{}
	for _, f := range fams {
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if l.GetName() == "partition" {
					if got[f.GetName()] == nil {
						got[f.GetName()] = map[string]float64{}
					}
					got[f.GetName()][l.GetValue()] = s.GetGauge().GetValue()
				}
			}
		}
	}
	if v, ok := got["rekey_committed_offset"]["1"]; ok {
		t.Errorf("rekey_committed_offset of revoked partition 1 = %v, want none", v)
	}
	if v := got["rekey_committed_offset"]["0"]; v != 700 {
		t.Errorf("rekey_committed_offset of partition 0 = %v, want 700", v)
	}
	if v := got["rekey_consumer_lag"]["0"]; v != 200 {
		t.Errorf("rekey_consumer_lag of partition 0 = %v, want 200", v)
	}
	if _, ok := got["rekey_consumer_lag"]["1"]; ok {
		t.Error("a lag for revoked partition 1")
	}
	// before partition 0's first fetch its end is unknown here: no lag from the watermark of
	// the earlier assignment (500, below where it starts now)
	if n := m.Uncommitted(); n != 0 {
		t.Errorf("%d messages uncommitted, want 0", n)
	}
	if n := m.Assigned(); n != 1 {
		t.Errorf("%d partitions assigned, want 1", n)
	}
}
