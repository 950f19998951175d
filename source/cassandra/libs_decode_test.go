package cassandra

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"

	"github.com/rekey/rekey/internal/benchcpu"
	"github.com/rekey/rekey/pipeline"
)

// libColumn is one column of BenchmarkDecodeRow: how to make its cells, and the library path,
// gocql.Unmarshal into the Go type gocql documents for it (the cheapest where it accepts
// several: int64 for a timestamp, not time.Time) then the pipeline.Value the source must hand on.
type libColumn struct {
	cql  string
	info gocql.TypeInfo
	gen  func(r *rand.Rand) any
	lib  func(info gocql.TypeInfo, data []byte) (pipeline.Value, error)
}

func libColumns() []libColumn {
	list := gocql.CollectionType{NativeType: gocql.NewNativeType(4, gocql.TypeList, ""), Elem: native(gocql.TypeVarchar)}
	tags := []string{"gift", "express", "member", "coupon", "fragile", "bulk"}
	return []libColumn{
		{"uuid", native(gocql.TypeUUID), func(r *rand.Rand) any {
			var u gocql.UUID
			for i := range u {
				u[i] = byte(r.Uint32())
			}
			return u
		}, func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
			var u gocql.UUID
			err := gocql.Unmarshal(info, data, &u)
			return pipeline.Text(u.String()), err
		}},
		{"text", native(gocql.TypeVarchar), func(r *rand.Rand) any { return fmt.Sprintf("user%07d", r.IntN(500000)) },
			func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
				var s string
				err := gocql.Unmarshal(info, data, &s)
				return pipeline.Text(s), err
			}},
		{"bigint", native(gocql.TypeBigInt), func(r *rand.Rand) any { return 1_000_000_000 + r.Int64N(1<<30) },
			func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
				var n int64
				err := gocql.Unmarshal(info, data, &n)
				return pipeline.Int(n), err
			}},
		{"int", native(gocql.TypeInt), func(r *rand.Rand) any { return int32(r.IntN(100)) },
			func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
				var n int32
				err := gocql.Unmarshal(info, data, &n)
				return pipeline.Int(int64(n)), err
			}},
		{"timestamp", native(gocql.TypeTimestamp), func(r *rand.Rand) any { return 1_700_000_000_000 + r.Int64N(1<<35) },
			func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
				var ms int64
				err := gocql.Unmarshal(info, data, &ms)
				return pipeline.Int(ms), err
			}},
		{"decimal", native(gocql.TypeDecimal), func(r *rand.Rand) any { return inf.NewDec(r.Int64N(10_000_000), 2) },
			func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
				var d inf.Dec
				if err := gocql.Unmarshal(info, data, &d); err != nil {
					return pipeline.Null, err
				}
				if u := d.UnscaledBig(); u.IsInt64() {
					return pipeline.DecimalUnscaled(d.String(), u.Int64(), int(d.Scale())), nil
				}
				return pipeline.Decimal(d.String()), nil
			}},
		{"double", native(gocql.TypeDouble), func(r *rand.Rand) any { return r.Float64() * 1000 },
			func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
				var f float64
				err := gocql.Unmarshal(info, data, &f)
				return pipeline.Float(f), err
			}},
		{"boolean", native(gocql.TypeBoolean), func(r *rand.Rand) any { return r.IntN(2) == 0 },
			func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
				var v bool
				err := gocql.Unmarshal(info, data, &v)
				return pipeline.Bool(v), err
			}},
		{"list<text>", list, func(r *rand.Rand) any {
			t := make([]string, 1+r.IntN(3))
			for i := range t {
				t[i] = tags[r.IntN(len(tags))]
			}
			return t
		}, func(info gocql.TypeInfo, data []byte) (pipeline.Value, error) {
			var t []string
			if err := gocql.Unmarshal(info, data, &t); err != nil {
				return pipeline.Null, err
			}
			j, err := json.Marshal(t)
			return pipeline.Text(string(j)), err
		}},
	}
}

// BenchmarkDecodeRow: an orders row's cells, serialized as the native protocol carries them, to
// pipeline.Values: rekey's decode.go (colDecoder.decode into a page arena, as the scan does)
// against gocql.Unmarshal into Go values turned into the same Values. The row alone (one op is
// one row) and each type alone (one op is one cell); every library value is checked equal to
// rekey's first. 1,000 distinct rows are cycled; the arena is reset every 5,000 rows (a page).
func BenchmarkDecodeRow(b *testing.B) {
	const nrows, page = 1000, 5000
	cols := libColumns()
	rng := rand.New(rand.NewPCG(5, 8))
	cells := make([][][]byte, nrows)
	for r := range cells {
		cells[r] = make([][]byte, len(cols))
		for c, col := range cols {
			data, err := gocql.Marshal(col.info, col.gen(rng))
			if err != nil {
				b.Fatal(err)
			}
			cells[r][c] = data
		}
	}
	decs := make([]*colDecoder, len(cols))
	for c, col := range cols {
		d, err := newColDecoder(col.cql, col.info, col.cql, false)
		if err != nil {
			b.Fatal(err)
		}
		decs[c] = d
	}
	// like for like: the library path must give the very values rekey gives
	var a arena
	var scratch []byte
	for r := range cells {
		for c, col := range cols {
			want, err := decs[c].decode(cells[r][c], &a, &scratch)
			if err != nil {
				b.Fatal(err)
			}
			got, err := col.lib(col.info, cells[r][c])
			if err != nil || got != want {
				b.Fatalf("%s: gocql path %+v, %v; rekey %+v", col.cql, got, err, want)
			}
		}
	}
	all := make([]int, len(cols))
	for c := range all {
		all[c] = c
	}
	runs := []struct {
		name string
		cols []int
	}{{"row", all}}
	for c, col := range cols {
		runs = append(runs, struct {
			name string
			cols []int
		}{col.cql, []int{c}})
	}
	for _, run := range runs {
		vals := make([]pipeline.Value, len(cols))
		b.Run(run.name+"/rekey-decode", func(b *testing.B) {
			b.ReportAllocs()
			defer cpuPerOp(b, cpuNow())
			var a arena
			var scratch []byte
			r := 0
			for b.Loop() {
				if r%page == 0 {
					a.reset()
				}
				row := cells[r%nrows]
				for _, c := range run.cols {
					v, err := decs[c].decode(row[c], &a, &scratch)
					if err != nil {
						b.Fatal(err)
					}
					vals[c] = v
				}
				r++
			}
		})
		b.Run(run.name+"/gocql-Unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			defer cpuPerOp(b, cpuNow())
			r := 0
			for b.Loop() {
				row := cells[r%nrows]
				for _, c := range run.cols {
					v, err := cols[c].lib(cols[c].info, row[c])
					if err != nil {
						b.Fatal(err)
					}
					vals[c] = v
				}
				r++
			}
		})
	}
}

// cpuPerOp reports the process's CPU time per op: steadier than wall time on a shared machine,
// and it counts the garbage collector's work on other cores.
func cpuPerOp(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuNow is the process's user+system CPU time.
var cpuNow = benchcpu.Now
