package verify

import (
	"bytes"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
)

// verify reads back what the CSV format writes at the edges of TIMESTAMP and DATE (years before
// 1 and after 9999 are written with a sign or a fifth digit, as Go and Spark write them) and the
// quotes and backslashes Spark's escapes carry: the stored form equals the one computed from
// the value.
func TestCSVFieldsReadAsWritten(t *testing.T) {
	f := csv.New()
	ts := pipeline.Column{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1}
	date := pipeline.Column{Name: "d", Type: pipeline.TypeDate, KeyPos: -1}
	text := pipeline.Column{Name: "s", Type: pipeline.TypeVarchar, KeyPos: -1}
	cases := []struct {
		col pipeline.Column
		v   pipeline.Value
	}{
		{ts, pipeline.Int(files.MaxTimestamp)}, {ts, pipeline.Int(files.MinTimestamp)}, {ts, pipeline.Int(-62135596800001)},
		{ts, pipeline.Int(253402300800000)}, {ts, pipeline.Int(-1)}, {ts, pipeline.Int(0)},
		{date, pipeline.Int(-2147483648)}, {date, pipeline.Int(2147483647)}, {date, pipeline.Int(-719163)}, {date, pipeline.Int(2932897)},
		{text, pipeline.Text(`a "b", c\`)}, {text, pipeline.Text(`\"`)}, {text, pipeline.Text(` x\y `)},
	}
	for _, c := range cases {
		field, err := f.AppendValue(nil, c.col, c.v)
		if err != nil {
			t.Fatalf("%s %v: %v", c.col.Type, c.v, err)
		}
		cr := &csvReader{delim: ','}
		cr.rec = field
		if err := cr.split(); err != nil || len(cr.fields) != 1 {
			t.Fatalf("%s %q: %v", c.col.Type, field, err)
		}
		got, err := appendCSVField(nil, c.col, cr.fields[0], cr.quoted[0])
		want, rerr := appendStored(nil, c.col, c.v)
		if err != nil || rerr != nil || !bytes.Equal(got, want) {
			t.Errorf("%s %q: read %x (%v), want %x (%v)", c.col.Type, field, got, err, want, rerr)
		}
	}
}
