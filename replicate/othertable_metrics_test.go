package replicate

import "testing"

// The events of other tables than the mapping's source.table are on /metrics, as the other
// messages that change nothing are (repeats, dropped tombstones). Before, only the summary and the
// logs counted them: a dashboard saw messages in that were neither written nor rejected.
func TestOtherTableEventsOnMetrics(t *testing.T) {
	m := newMetrics("t", "test", nil)
	m.otherTable("shop.customers")
	m.otherTable("shop.customers")
	fams, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "rekey_other_table_events_skipped_total" {
			if v := f.GetMetric()[0].GetCounter().GetValue(); v != 2 {
				t.Fatalf("%s = %v, want 2", f.GetName(), v)
			}
			return
		}
	}
	t.Fatal("no rekey_other_table_events_skipped_total on /metrics")
}
