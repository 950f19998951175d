package parquet_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// A chunk of a few values near Lindorm's 2 MB limit reserves a page buffer for what the chunk
// holds, not for a whole write batch (1,024 values) of its mean value size: 5 values of 2 MB
// reserved 2 GiB for their column, and a migrate of those 5 rows allocated 12 GB and peaked at
// 4.2 GB resident under --memory 512MiB. The file still reads back whole.
func TestBigValuesReserveTheirOwnSize(t *testing.T) {
	schema := sinktest.Orders()
	rows := sinktest.OrdersRows(5, 7, sinktest.HexPlan(16))
	big := strings.Repeat("x", 2<<20-16)
	for _, r := range rows {
		r.Values[5].Str = big // location
	}
	f := parquet.New()
	buf, err := f.NewBuffer(schema)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	fw, err := f.NewWriter(&out, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := buf.Append(r.Values); err != nil {
			t.Fatal(err)
		}
	}
	c := buf.Cut()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if err := fw.Write(c); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	c.Release()
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	data := int64(len(rows) * len(big))
	if got := int64(m1.TotalAlloc - m0.TotalAlloc); got > 8*data {
		t.Errorf("writing %d bytes of values allocated %d bytes", data, got)
	}
	pf, err := sinktest.ReadParquetAt(bytes.NewReader(out.Bytes()), int64(out.Len()), "big.parquet", schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.Rows) != len(rows) || pf.Rows[4][5] != big {
		t.Fatalf("read back %d rows", len(pf.Rows))
	}
}
