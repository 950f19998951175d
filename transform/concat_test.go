package transform

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A concatenation whose left side is the arena's last string (a hash prefix just computed)
// extends it in place: every row's key must still be the prefix and the value, when the arena's
// chunk fills up between the two (values of up to 40 KiB in 64 KiB chunks), and the earlier
// rows' strings must not change while the batch is held.
func TestConcatAfterADigestPrefix(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {u: text, id: bigint, v: text}}\n"+
		"target:\n  table: t\n  primary_key: '[id]'\n  columns: {pk: \"md5(u).substr(0,4) + u\", w: \"v + md5(u).substr(0,2)\"}\n  exclude: [u]\n")
	e := p.NewEvaluator()
	ncol := len(p.Target().Columns)
	var rows [][]pipeline.Value
	var want [][2]string
	for i := range 200 {
		u := strings.Repeat(strconv.Itoa(i), 1+(i*397)%(40<<10)/len(strconv.Itoa(i)))
		v := "v" + strconv.Itoa(i)
		out := make([]pipeline.Value, ncol)
		rec := &pipeline.Record{Values: []pipeline.Value{pipeline.Text(u), pipeline.Int(int64(i)), pipeline.Text(v)}}
		if rerr := e.Apply(nil, rec, out); rerr != nil {
			t.Fatal(rerr)
		}
		h := md5Hex(u)
		rows, want = append(rows, out), append(want, [2]string{h[:4] + u, v + h[:2]})
	}
	pk, w := -1, -1
	for i, c := range p.Target().Columns {
		switch c.Name {
		case "pk":
			pk = i
		case "w":
			w = i
		}
	}
	for i, out := range rows {
		if out[pk].Str != want[i][0] || out[w].Str != want[i][1] {
			t.Fatalf("row %d: pk %.20q... w %q, want %.20q... %q", i, out[pk].Str, out[w].Str, want[i][0], want[i][1])
		}
	}
}
