package replicate

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/transform"
)

// A DECIMAL key is one key however a message spells it (1.50 and 1.5): the upsert that follows
// the key's delete (a tombstone's, or an update's whose before image spells the key otherwise) is
// loaded after the DELETE, so the row stays, as it does in the source.
func TestKeySpelledTwoWaysKeepsItsOrderInFiles(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		msgs         []kafkago.Message
	}{
		{"tombstone then upsert", "json", []kafkago.Message{
			{Offset: 0, Key: []byte(`{"id":"1.50"}`)}, // a tombstone: the delete of 1.50
			{Offset: 1, Key: []byte(`{"id":1.5}`), Value: []byte(`{"id":1.5,"v":"a"}`)},
		}},
		{"update of the key's spelling", "debezium", []kafkago.Message{
			{Offset: 0, Key: []byte(`{"id":"1.5"}`), Value: []byte(`{"before":{"id":"1.50","v":"a"},"after":{"id":"1.5","v":"b"},"op":"u"}`)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := decimalKeyReplicator(t, tc.format)
			defer r.man.close()
			w := r.detachedWorker(0, 1)
			if err := w.processMessages(tc.msgs); err != nil {
				t.Fatal(err)
			}
			if err := w.closeRoll("stop"); err != nil {
				t.Fatal(err)
			}
			// the segments in the order they are loaded: each one's data file, then its DELETEs
			segs := make([]SegmentEntry, 0, len(r.man.segs))
			for _, s := range r.man.segs {
				segs = append(segs, s)
			}
			SortSegments(segs)
			upsertAt, deleteAt := -1, -1
			for i, s := range segs {
				if s.Data != nil {
					upsertAt = 2 * i
				}
				if s.Deletes != nil {
					deleteAt = 2*i + 1
				}
			}
			if upsertAt < 0 {
				t.Fatalf("segments %+v: no upsert", segs)
			}
			if upsertAt < deleteAt {
				t.Errorf("the upsert of 1.5 is loaded before a DELETE of 1.50 that came before it, which then deletes it: segments %+v", segs)
			}
		})
	}
}

// decimalKeyReplicator is a replicator into a folder of a table keyed by a DECIMAL(10,2).
func decimalKeyReplicator(t *testing.T, format string) *Replicator {
	t.Helper()
	const yaml = "version: 1\nsource: {columns: {id: decimal, v: text}}\n" +
		"target: {table: t, primary_key: '[id]', columns: {id: 'id :: DECIMAL(10,2)'}}\nregions: {count: 1}\n"
	m, err := transform.Decode([]byte(yaml), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return folderReplicator(t, m, "kafka://127.0.0.1:9/t?group=g&format="+format, t.TempDir(), 64<<20)
}
