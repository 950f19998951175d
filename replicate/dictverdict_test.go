package replicate

import (
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go/format"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka/kafkademo"
)

// A partition's rows spread over the regions' files, a few thousand rows each: its order
// timestamps are all distinct, and once the first regions' chunks find that out every region's
// file holds them plain, rather than each region's chunk dictionary-encoding them (a dictionary
// as large as the column, built value by value).
func TestRegionsShareDictionaryVerdicts(t *testing.T) {
	dir := t.TempDir()
	r := ordersReplicator(t, dir)
	defer r.man.close()
	w := r.detachedWorker(0, 1)
	gen := kafkademo.NewOrders(1)
	const n, batch = 40000, 1024
	msgs := make([]kafkago.Message, n)
	for i := range msgs {
		msgs[i] = gen.Next()
		msgs[i].Offset = int64(i)
	}
	for at := 0; at < n; at += batch {
		if err := w.processMessages(msgs[at:min(at+batch, n)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.closeRoll("stop"); err != nil {
		t.Fatal(err)
	}
	schema := r.target
	ts := -1
	for i, c := range schema.Columns {
		if c.Name == "ts" {
			ts = i
		}
	}
	files, rows := 0, int64(0)
	for _, seg := range r.man.segs {
		pf, err := sinktest.ReadParquet(filepath.Join(dir, seg.Data.Path), schema)
		if err != nil {
			t.Fatal(err)
		}
		files++
		rows += int64(len(pf.Rows))
		for g, rg := range pf.Meta.Metadata().RowGroups {
			for _, e := range rg.Columns[ts].MetaData.Encoding {
				//lint:ignore SA1019 PlainDictionary is what Parquet 1.0 writers record for the same thing
				if e == format.RLEDictionary || e == format.PlainDictionary {
					t.Errorf("%s row group %d (%d rows): ts is dictionary-encoded", seg.Data.Path, g, rg.NumRows)
				}
			}
		}
	}
	if files != 16 || rows != n {
		t.Fatalf("%d files, %d rows; want 16 files, %d rows", files, rows, n)
	}
}
