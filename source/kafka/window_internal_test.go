package kafka

import "testing"

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
