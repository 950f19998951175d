package transform

import (
	"crypto/md5"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// md5x8 must give crypto/md5's digest in every lane, for every length a lane takes (the padding
// byte and the length land in different words for each), whichever records around it hold no
// input (errors, nulls, values longer than a block).
func TestMD5LanesMatchCryptoMD5(t *testing.T) {
	if !hasMD5x8 {
		t.Skip("no AVX2 here: digests are computed one at a time")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var recs []pipeline.Record
	for n := 0; n <= md5ShortMax; n++ {
		for trial := range 9 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
				if trial == 1 {
					b[i] = 0xff
				}
			}
			recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text(string(b))}})
		}
		switch n % 4 { // records whose lane stays empty, among the others
		case 0:
			recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text(strings.Repeat("x", md5ShortMax+1+n))}})
		case 1:
			recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Int(1), pipeline.Null}})
		case 2:
			recs = append(recs, pipeline.Record{Err: &pipeline.RowError{Code: "bad"}})
		}
	}
	var l md5Lanes
	var m md5Scratch
	for from := range recs {
		l.fill(&m, recs, from, 1)
		for k := range 8 {
			j := from + k
			eligible := j < len(recs) && recs[j].Err == nil && recs[j].Values[1].Kind == pipeline.KindText && len(recs[j].Values[1].Str) <= md5ShortMax
			if !eligible {
				if l.n[k] != -1 {
					t.Fatalf("from %d lane %d: holds %d bytes, want no input (record %d)", from, k, l.n[k], j)
				}
				continue
			}
			s := recs[j].Values[1].Str
			want := md5.Sum([]byte(s))
			if !l.holds(k, s) || [16]byte(l.sum[k][:16]) != want {
				t.Fatalf("from %d lane %d: %d bytes %x: digest %x, crypto/md5 %x", from, k, len(s), s, l.sum[k][:16], want)
			}
		}
	}
}

// A hash prefix computed in lanes is the one computed alone, however the rows are applied: in
// order, backwards, every third one, and after the batch's records were reused for other values
// (a pooled batch): a lane is used only for the bytes it hashed.
func TestDigestLanesFollowTheRows(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {u: text, id: bigint}}\n"+
		"target:\n  table: t\n  primary_key: '[md5(u).substr(0,4) + u AS pk][id]'\n  columns: {h: md5(u)}\n  exclude: [u]\n")
	e := p.NewEvaluator()
	out := make([]pipeline.Value, len(p.Target().Columns))
	b := &pipeline.Batch{Stream: "s", Records: make([]pipeline.Record, 37)}
	fillBatch := func(prefix string) {
		for i := range b.Records {
			u := prefix + strconv.Itoa(i*7919%1000)
			if i%5 == 4 {
				u = strings.Repeat(u, 10) // longer than a block: computed alone
			}
			b.Records[i] = pipeline.Record{Values: []pipeline.Value{pipeline.Text(u), pipeline.Int(int64(i))}}
		}
		b.Records[11].Values[0] = pipeline.Null
	}
	apply := func(i int) {
		t.Helper()
		rec := &b.Records[i]
		rerr := e.Apply(b, rec, out)
		u := rec.Values[0]
		if u.Kind == pipeline.KindNull {
			if rerr == nil {
				t.Fatalf("row %d: a null key part was not rejected", i)
			}
			return
		}
		if rerr != nil {
			t.Fatalf("row %d: %v", i, rerr)
		}
		if want := md5Hex(u.Str)[:4] + u.Str; out[0].Str != want {
			t.Fatalf("row %d: pk %q, want %q", i, out[0].Str, want)
		}
		if want := md5Hex(u.Str); out[2].Str != want {
			t.Fatalf("row %d: h %q, want %q", i, out[2].Str, want)
		}
	}
	for round, prefix := range []string{"u", "v", "u"} {
		fillBatch(prefix)
		switch round {
		case 0:
			for i := range b.Records {
				apply(i)
			}
		case 1:
			for i := len(b.Records) - 1; i >= 0; i-- {
				apply(i)
			}
		case 2:
			for i := 0; i < len(b.Records); i += 3 {
				apply(i)
			}
		}
		e.Reset()
	}
	if hasMD5x8 && (e.lanes == nil || e.lanes[0] == nil || e.lanes[1] == nil) {
		t.Fatal("the digests were not computed in lanes")
	}
}

// BenchmarkDigestLanes: a hash prefix of one-block keys computed in lanes against one at a
// time (md5Short), per row.
func BenchmarkDigestLanes(b *testing.B) {
	p := compileYAML(b, "version: 1\nsource: {columns: {u: text, id: bigint}}\n"+
		"target:\n  table: t\n  primary_key: '[md5(u).substr(0,4) + u AS pk][id]'\n  exclude: [u]\n")
	batch := &pipeline.Batch{Stream: "s", Records: make([]pipeline.Record, 1024)}
	for i := range batch.Records {
		batch.Records[i] = pipeline.Record{Values: []pipeline.Value{pipeline.Text("u" + strconv.Itoa(1234567891+i*7919)), pipeline.Int(int64(i))}}
	}
	out := make([]pipeline.Value, len(p.Target().Columns))
	for _, lanes := range []bool{true, false} {
		if lanes && !hasMD5x8 {
			continue
		}
		b.Run("lanes="+strconv.FormatBool(lanes), func(b *testing.B) {
			saved := hasMD5x8
			hasMD5x8 = lanes
			defer func() { hasMD5x8 = saved }()
			e := p.NewEvaluator()
			for b.Loop() {
				for i := range batch.Records {
					if rerr := e.Apply(batch, &batch.Records[i], out); rerr != nil {
						b.Fatal(rerr)
					}
				}
				e.Reset()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch.Records)), "ns/row")
		})
	}
}
