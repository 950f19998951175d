package transform

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

func compileYAML(t testing.TB, yml string) *Program {
	t.Helper()
	m, err := Decode([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// applyAll runs records through p and returns cloned rows. The records may carry their key
// columns only: ApplyKey does not reject rows whose non-key values are all null.
func applyAll(t testing.TB, p *Program, recs []pipeline.Record) [][]pipeline.Value {
	t.Helper()
	e := p.NewEvaluator()
	var rows [][]pipeline.Value
	for i := range recs {
		row := make([]pipeline.Value, len(p.Target().Columns))
		if rerr := e.ApplyKey(&pipeline.Batch{Stream: "s"}, &recs[i], row); rerr != nil {
			t.Fatal(rerr)
		}
		for j := range row {
			row[j].Str = strings.Clone(row[j].Str)
		}
		rows = append(rows, row)
	}
	e.Reset()
	return rows
}

func splitStrings(plan pipeline.RegionPlan) string {
	var s []string
	for _, v := range plan.Splits {
		s = append(s, v.String())
	}
	return strings.Join(s, ",")
}

// routeAll routes every row and checks that each lands in range and inside its region's bounds.
func routeAll(t *testing.T, plan pipeline.RegionPlan, rows [][]pipeline.Value) []int {
	t.Helper()
	counts := make([]int, plan.Count())
	for _, row := range rows {
		r := plan.Route(row[0])
		if r < 0 || r >= plan.Count() {
			t.Fatalf("%v routed to region %d of %d", row[0], r, plan.Count())
		}
		counts[r]++
	}
	return counts
}

func TestHexPrefix16Regions(t *testing.T) {
	for _, file := range []string{"orders.yaml", "users.yaml"} {
		p := loadProgram(t, file)
		plan, err := p.PlanRegions(RegionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		want := "1000,2000,3000,4000,5000,6000,7000,8000,9000,a000,b000,c000,d000,e000,f000"
		if plan.Strategy != "hex_prefix" || plan.Type != pipeline.TypeVarchar || plan.Desc || splitStrings(plan) != want {
			t.Errorf("%s: %s %v %s, want hex_prefix %s", file, plan.Strategy, plan.Type, splitStrings(plan), want)
		}
		// 16k users spread evenly over the 16 regions
		var recs []pipeline.Record
		for i := 0; i < 16000; i++ {
			vals := make([]pipeline.Value, len(p.Source()))
			vals[0] = pipeline.Text("user" + strconv.Itoa(i))
			if file == "orders.yaml" {
				vals[1] = pipeline.Int(int64(i))
			}
			recs = append(recs, pipeline.Record{Values: vals})
		}
		for r, n := range routeAll(t, plan, applyAll(t, p, recs)) {
			if n < 700 || n > 1300 {
				t.Errorf("%s: region %d has %d of 16000 rows", file, r, n)
			}
		}
	}
}

// More regions than a 4-hex-digit prefix has are refused: before, `--regions 100000` silently
// became 65,536 regions.
func TestHexPrefixRefusesMoreRegionsThanItHas(t *testing.T) {
	p := loadProgram(t, "orders.yaml")
	if _, err := p.PlanRegions(RegionRequest{Count: 100000}); err == nil || !strings.Contains(err.Error(), "at most 65536 regions") {
		t.Fatalf("100000 regions on a 4-hex-digit prefix: %v", err)
	}
	if plan, err := p.PlanRegions(RegionRequest{Count: 65536}); err != nil || plan.Count() != 65536 {
		t.Fatalf("65536 regions: %v", err)
	}
}

func TestHexSplits(t *testing.T) {
	cases := []struct {
		n, k int
		want string
	}{
		{16, 4, "1000,2000,3000,4000,5000,6000,7000,8000,9000,a000,b000,c000,d000,e000,f000"},
		{10, 4, "1999,3333,4ccc,6666,8000,9999,b333,cccc,e666"},
		{3, 2, "55,aa"},
		{4, 1, "4,8,c"},
		{2, 8, "80000000"},
		{1, 4, ""},
	}
	for _, c := range cases {
		plan := pipeline.RegionPlan{Splits: hexSplits(c.n, c.k, false, false)}
		if got := splitStrings(plan); got != c.want {
			t.Errorf("hexSplits(%d, %d) = %s, want %s", c.n, c.k, got, c.want)
		}
	}
	// more regions than prefixes: one per prefix value
	if got := hexSplits(300, 2, false, false); len(got) != 255 || got[0].Str != "01" || got[254].Str != "ff" {
		t.Errorf("hexSplits(300, 2): %d splits %v..%v", len(got), got[0], got[len(got)-1])
	}
}

const hexDescYAML = `version: 1
source: {columns: {u: text}}
target: {table: t, primary_key: "[md5(u).substr(0,1) DESC][u]"}
regions: {count: 4}
`

func TestHexPrefixDesc(t *testing.T) {
	p := compileYAML(t, hexDescYAML)
	plan, err := p.PlanRegions(RegionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// exact one-character values: regions f..c, b..8, 7..4, 3..0
	if !plan.Desc || splitStrings(plan) != "b,7,3" {
		t.Fatalf("desc plan %v %s", plan.Desc, splitStrings(plan))
	}
	for v, want := range map[string]int{"f": 0, "c": 0, "b": 1, "8": 1, "7": 2, "4": 2, "3": 3, "0": 3} {
		if got := plan.Route(pipeline.Text(v)); got != want {
			t.Errorf("Route(%s) = %d, want %d", v, got, want)
		}
	}
	// longer values after the prefix: the boundaries themselves split them evenly
	p = compileYAML(t, strings.Replace(hexDescYAML, "md5(u).substr(0,1) DESC][u]", "md5(u).substr(0,1) + u AS k DESC]", 1))
	plan, _ = p.PlanRegions(RegionRequest{})
	if splitStrings(plan) != "c,8,4" {
		t.Fatalf("desc prefix plan %s", splitStrings(plan))
	}
	for v, want := range map[string]int{"fz": 0, "cz": 0, "c0": 0, "bz": 1, "8a": 1, "7z": 2, "4a": 2, "3z": 3, "0a": 3} {
		if got := plan.Route(pipeline.Text(v)); got != want {
			t.Errorf("Route(%s) = %d, want %d", v, got, want)
		}
	}
	// 16 DESC hex regions over 4 characters, all rows evenly
	p = compileYAML(t, "version: 1\nsource: {columns: {u: text}}\ntarget: {table: t, primary_key: '[md5(u).substr(0,4) DESC][u]'}\nregions: {count: 16}\n")
	plan, _ = p.PlanRegions(RegionRequest{})
	if splitStrings(plan) != "efff,dfff,cfff,bfff,afff,9fff,8fff,7fff,6fff,5fff,4fff,3fff,2fff,1fff,0fff" {
		t.Errorf("desc 16: %s", splitStrings(plan))
	}
	var recs []pipeline.Record
	for i := 0; i < 16000; i++ {
		recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Text(strconv.Itoa(i))}})
	}
	for r, n := range routeAll(t, plan, applyAll(t, p, recs)) {
		if n < 800 || n > 1200 {
			t.Errorf("desc region %d: %d rows", r, n)
		}
	}
}

func TestIntBucketDesc(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {n: bigint}}\ntarget: {table: t, primary_key: '[n % 16 AS b DESC][n]'}\nregions: {count: 4}\n")
	plan, _ := p.PlanRegions(RegionRequest{})
	if splitStrings(plan) != "11,7,3" {
		t.Fatalf("desc buckets %s", splitStrings(plan))
	}
	for b := int64(0); b < 16; b++ {
		if got, want := plan.Route(pipeline.Int(b)), int(3-b/4); got != want {
			t.Errorf("bucket %d -> region %d, want %d", b, got, want)
		}
	}
	plan, _ = p.PlanRegions(RegionRequest{Count: 16})
	for b := int64(0); b < 16; b++ {
		if got := plan.Route(pipeline.Int(b)); got != int(15-b) {
			t.Errorf("bucket %d -> region %d, want %d", b, got, 15-b)
		}
	}
}

func TestIntBucketRegions(t *testing.T) {
	p := loadProgram(t, "logs.yaml")
	cases := []struct {
		count int
		want  string
	}{
		{0, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"}, // count: numBuckets
		{16, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"},
		{16, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"},
		{4, "4,8,12"},
		{3, "5,10"},
		{1, ""},
	}
	var recs []pipeline.Record
	for i := 0; i < 1600; i++ {
		recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Int(1_700_000_000_000 + int64(i)*7), pipeline.Text("h"), pipeline.Text("e"), pipeline.Null, pipeline.Null, pipeline.Null}})
	}
	rows := applyAll(t, p, recs)
	for _, c := range cases {
		plan, err := p.PlanRegions(RegionRequest{Count: c.count})
		if err != nil {
			t.Fatal(err)
		}
		wantStrategy := "int_bucket"
		if c.count == 1 {
			wantStrategy = "single"
		}
		if plan.Strategy != wantStrategy || plan.Type != pipeline.TypeBigint || splitStrings(plan) != c.want {
			t.Errorf("count %d: %s %s, want %s %s", c.count, plan.Strategy, splitStrings(plan), wantStrategy, c.want)
		}
		routeAll(t, plan, rows)
	}
	// before, more regions than buckets was silently clamped to the bucket count.
	if _, err := p.PlanRegions(RegionRequest{Count: 64}); err == nil || !strings.Contains(err.Error(), "at most 16 regions") {
		t.Errorf("64 regions on 16 buckets: %v", err)
	}
	// random(n) as the first column is a bucket too
	p = compileYAML(t, "version: 1\nsource: {columns: {u: text}}\ntarget: {table: t, primary_key: '[random(8)][u]'}\nregions: {count: 8}\n")
	plan, err := p.PlanRegions(RegionRequest{})
	if err != nil || plan.Strategy != "int_bucket" || splitStrings(plan) != "1,2,3,4,5,6,7" {
		t.Errorf("random: %v %s %v", plan.Strategy, splitStrings(plan), err)
	}
	// a cast to text is no bucket: its order is not numeric
	p = compileYAML(t, "version: 1\nsource: {columns: {n: bigint}}\ntarget: {table: t, primary_key: '[n % 8 :: VARCHAR][n]'}\nregions: {count: 8}\n")
	if _, err := p.PlanRegions(RegionRequest{}); err == nil || !strings.Contains(err.Error(), "need a sample") {
		t.Errorf("text bucket: %v", err)
	}
}

func sellerSample(t *testing.T, p *Program, sellers, rows int) [][]pipeline.Value {
	var recs []pipeline.Record
	for i := 0; i < rows; i++ {
		seller := fmt.Sprintf("seller%03d", (i*37)%sellers)
		recs = append(recs, pipeline.Record{Values: []pipeline.Value{
			pipeline.Int(int64(i)), pipeline.Text(seller), pipeline.Text("b"), pipeline.Int(int64(i)),
			pipeline.Text("item"), pipeline.Int(1), pipeline.Decimal("1.5"), pipeline.Text("ok")}})
	}
	return applyAll(t, p, recs)
}

func TestQuantileRegions(t *testing.T) {
	p := loadProgram(t, "transactions_by_seller.yaml")
	sample := sellerSample(t, p, 100, 5000)
	plan, err := p.PlanRegions(RegionRequest{Count: 4, Sample: sample})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Strategy != "quantile" || plan.Count() != 4 || splitStrings(plan) != "seller025,seller050,seller075" {
		t.Errorf("quantile: %s %s", plan.Strategy, splitStrings(plan))
	}
	for r, n := range routeAll(t, plan, sample) {
		if n != 1250 {
			t.Errorf("region %d: %d rows, want 1250", r, n)
		}
	}
	// weighted by RowBytes: heavier rows get narrower regions
	heavy := sellerSample(t, p, 100, 5000)
	for _, row := range heavy {
		if row[0].Str < "seller050" {
			row[p.Target().Index("item_id")] = pipeline.Text(strings.Repeat("x", 400))
		}
	}
	plan, _ = p.PlanRegions(RegionRequest{Count: 2, Sample: heavy})
	if splitStrings(plan) >= "seller050" {
		t.Errorf("weighted split %s should be below seller050", splitStrings(plan))
	}
	// fewer distinct values than regions: deduplicated, no empty range
	few := sellerSample(t, p, 2, 1000)
	plan, err = p.PlanRegions(RegionRequest{Count: 8, Sample: few})
	if err != nil || splitStrings(plan) != "seller001" {
		t.Errorf("two sellers: %s %v", splitStrings(plan), err)
	}
	one := sellerSample(t, p, 1, 100)
	plan, _ = p.PlanRegions(RegionRequest{Count: 8, Sample: one})
	if plan.Count() != 1 {
		t.Errorf("one seller: %s", splitStrings(plan))
	}
	for _, n := range routeAll(t, plan, one) {
		if n != 100 {
			t.Errorf("one seller routing %v", n)
		}
	}
	// no sample: a clear error
	if _, err := p.PlanRegions(RegionRequest{Count: 4}); err == nil || !strings.Contains(err.Error(), `first key column "seller_id" need a sample`) {
		t.Errorf("no sample: %v", err)
	}
}

func TestQuantileDesc(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {ts: timestamp, h: text}}\ntarget: {table: t, primary_key: '[ts DESC][h]'}\nregions: {count: 4}\n")
	var recs []pipeline.Record
	for i := 0; i < 400; i++ {
		recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("h")}})
	}
	rows := applyAll(t, p, recs)
	plan, err := p.PlanRegions(RegionRequest{Sample: rows})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Desc || plan.Strategy != "quantile" || splitStrings(plan) != "299,199,99" {
		t.Fatalf("desc quantile: %v %s %s", plan.Desc, plan.Strategy, splitStrings(plan))
	}
	for r, n := range routeAll(t, plan, rows) {
		if n != 100 {
			t.Errorf("region %d: %d rows", r, n)
		}
	}
	if plan.Route(pipeline.Int(399)) != 0 || plan.Route(pipeline.Int(0)) != 3 {
		t.Error("DESC: the largest values must be in region 0")
	}
}

func TestExplicitAndSingleRegions(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {n: bigint}}\ntarget: {table: t, primary_key: '[n]'}\nregions: {split_keys: [100, 200, '300']}\n")
	plan, err := p.PlanRegions(RegionRequest{})
	if err != nil || plan.Strategy != "explicit" || plan.Type != pipeline.TypeBigint || splitStrings(plan) != "100,200,300" || plan.Splits[0] != pipeline.Int(100) {
		t.Errorf("explicit: %v %s %v", plan.Strategy, splitStrings(plan), err)
	}
	// --regions overrides the mapping (here: quantile over a sample)
	var recs []pipeline.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Int(int64(i))}})
	}
	plan, err = p.PlanRegions(RegionRequest{Count: 2, Sample: applyAll(t, p, recs)})
	if err != nil || plan.Strategy != "quantile" || splitStrings(plan) != "5" {
		t.Errorf("override: %v %s %v", plan.Strategy, splitStrings(plan), err)
	}
	p = compileYAML(t, "version: 1\nsource: {columns: {n: bigint}}\ntarget: {table: t, primary_key: '[n DESC]'}\nregions: {split_keys: [300, 200]}\n")
	plan, _ = p.PlanRegions(RegionRequest{})
	if !plan.Desc || plan.Route(pipeline.Int(500)) != 0 || plan.Route(pipeline.Int(250)) != 1 || plan.Route(pipeline.Int(1)) != 2 {
		t.Errorf("explicit DESC routing: %+v", plan)
	}
	p = compileYAML(t, "version: 1\nsource: {columns: {s: text}}\ntarget: {table: t, primary_key: '[s]'}\nregions: {split_keys: [b, m, x]}\n")
	plan, _ = p.PlanRegions(RegionRequest{})
	if splitStrings(plan) != "b,m,x" || plan.Splits[0] != pipeline.Text("b") {
		t.Errorf("explicit text: %s", splitStrings(plan))
	}
	// no regions: section -> one region, unless --regions
	p = loadProgram(t, "users.yaml")
	p.regions = nil
	plan, err = p.PlanRegions(RegionRequest{})
	if err != nil || plan.Strategy != "single" || plan.Count() != 1 {
		t.Errorf("single: %+v %v", plan, err)
	}
	plan, _ = p.PlanRegions(RegionRequest{Count: 4})
	if plan.Strategy != "hex_prefix" || splitStrings(plan) != "4000,8000,c000" {
		t.Errorf("--regions 4: %+v", plan)
	}
	if _, err := p.PlanRegions(RegionRequest{Count: -1}); err == nil {
		t.Error("negative count accepted")
	}
}

func TestSizeRegions(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {u: text}}\ntarget: {table: t, primary_key: '[md5(u).substr(0,4) + u AS k]'}\nregions: {size: 1KiB}\n")
	if p.RegionSize() != 1024 {
		t.Errorf("RegionSize %d", p.RegionSize())
	}
	for est, want := range map[int64]int{0: 1, 1: 1, 1024: 1, 1025: 2, 4096: 4, 4097: 5} {
		plan, err := p.PlanRegions(RegionRequest{EstimatedBytes: est})
		if err != nil || plan.Count() != want {
			t.Errorf("%d bytes: %d regions (%v), want %d", est, plan.Count(), err, want)
		}
	}
	plan, _ := p.PlanRegions(RegionRequest{EstimatedBytes: 4096})
	if plan.Strategy != "hex_prefix" || splitStrings(plan) != "4000,8000,c000" {
		t.Errorf("size plan %s %s", plan.Strategy, splitStrings(plan))
	}
	// logs_latest: size-based with no estimate yet -> one region, no sample needed
	plan, err := loadProgram(t, "logs_latest.yaml").PlanRegions(RegionRequest{})
	if err != nil || plan.Count() != 1 || plan.Strategy != "single" {
		t.Errorf("logs_latest: %+v %v", plan, err)
	}
}

func TestParseSize(t *testing.T) {
	ok := map[string]int64{
		"0": 0, "1048576": 1048576, "8GiB": 8 << 30, "512MiB": 512 << 20, "8GB": 8_000_000_000, "8 GiB": 8 << 30,
		"1.5GiB": 1610612736, "100b": 100, "64KiB": 65536, "2kB": 2000, "1TiB": 1 << 40, "1PB": 1e15, "0.5MB": 500000,
		"8gib": 8 << 30, " 16MiB ": 16 << 20,
	}
	for s, want := range ok {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "GiB", "8G", "8 m", "-1", "1.2.3MiB", "8XB", "99999999999PiB", ".5GiB", "5.GiB", "1e3"} {
		if _, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) accepted", s)
		}
	}
}

func TestPlanNeedsSample(t *testing.T) {
	cases := []struct {
		file  string
		count int
		want  bool
	}{
		{"orders.yaml", 0, false},                // hex prefix
		{"logs.yaml", 0, false},                  // modulo bucket
		{"logs_latest.yaml", 16, true},           // quantiles of hostname
		{"logs_latest.yaml", 1, false},           // one region
		{"transactions_by_seller.yaml", 0, true}, // regions.size: needs the data size
	}
	for _, c := range cases {
		p := loadProgram(t, c.file)
		if got := p.PlanNeedsSample(c.count); got != c.want {
			t.Errorf("%s count %d: PlanNeedsSample = %v, want %v", c.file, c.count, got, c.want)
		}
	}
}

// A quantile that falls on a value SPLITKEYS cannot carry (a comma, a backslash) moves to the
// next sample value: ddl.sql never holds it, and the plan routes rows by the split it writes.
func TestQuantileSkipsUnwritableSplitValues(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {a: text}}\ntarget: {table: t, primary_key: '[a]'}\n")
	var sample [][]pipeline.Value
	for _, v := range []string{"a1", "b1", "c1", "d1", "e,1", `e\2`, "f1", "g1", "h1"} {
		sample = append(sample, []pipeline.Value{pipeline.Text(v)})
	}
	plan, err := p.PlanRegions(RegionRequest{Count: 2, Sample: sample})
	if err != nil {
		t.Fatal(err)
	}
	if got := splitStrings(plan); got != "f1" {
		t.Errorf("splits %q, want f1 (the first value from the median e,1 on that SPLITKEYS can carry)", got)
	}
}

// A DOUBLE first column's NaN sorts after every number: quantile splits stay increasing over a
// sample holding NaN, and a NaN is never a split point (whether SPLITKEYS reads 'NaN' is not
// documented): the NaN rows share the last region, ascending, or the first, descending.
func TestQuantileOverNaN(t *testing.T) {
	for _, desc := range []bool{false, true} {
		key := "[d][h]"
		if desc {
			key = "[d DESC][h]"
		}
		p := compileYAML(t, "version: 1\nsource: {columns: {d: double, h: text}}\ntarget: {table: t, primary_key: '"+key+"'}\nregions: {count: 4}\n")
		var recs []pipeline.Record
		for i := 0; i < 400; i++ {
			v := float64((i * 7919) % 400)
			if i%2 == 1 {
				v = math.NaN()
			}
			recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Float(v), pipeline.Text("h")}})
		}
		rows := applyAll(t, p, recs)
		plan, err := p.PlanRegions(RegionRequest{Sample: rows})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range plan.Splits {
			if math.IsNaN(v.Float()) {
				t.Fatalf("desc %v: split %d is NaN: %s", desc, i, splitStrings(plan))
			}
			if i > 0 && (pipeline.Compare(plan.Type, plan.Splits[i-1], v) < 0) == desc {
				t.Fatalf("desc %v: splits out of order: %s", desc, splitStrings(plan))
			}
		}
		want := plan.Count() - 1
		if desc {
			want = 0
		}
		if r := plan.Route(pipeline.Float(math.NaN())); r != want {
			t.Errorf("desc %v: NaN routed to region %d of %s, want %d", desc, r, splitStrings(plan), want)
		}
	}
}

// The data size estimate a regions.size plan is counted from: the sample's mean row size times
// the source's row estimate; nothing when either is unknown.
func TestEstimateBytesExtrapolatesTheSample(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {id: bigint, v: text}}\ntarget:\n  table: t\n  primary_key: '[id]'\n")
	rows := applyAll(t, p, []pipeline.Record{
		{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text("ab")}},
		{Values: []pipeline.Value{pipeline.Int(2), pipeline.Text("abcdef")}},
	})
	mean := int64(p.RowBytes(rows[0])+p.RowBytes(rows[1])) / 2
	if got := p.EstimateBytes(rows, 1000); got != mean*1000 {
		t.Fatalf("EstimateBytes = %d, want %d (mean row %d x 1000 rows)", got, mean*1000, mean)
	}
	if p.EstimateBytes(rows, -1) != 0 || p.EstimateBytes(nil, 1000) != 0 {
		t.Fatal("an unknown row count or an empty sample must give no estimate")
	}
}

// A plan placed from a subsample reads an even spread of it (every len/n-th record), skipping
// the records the mapping rejects.
func TestSpreadRowsTakesAnEvenSpread(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {id: bigint, v: text}}\ntarget:\n  table: t\n  primary_key: '[id]'\n")
	var recs []pipeline.Record
	for i := range 100 {
		recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("x")}})
	}
	rejected := pipeline.SpreadIndexes(100, 10)[3]
	recs[rejected].Err = &pipeline.RowError{Code: pipeline.CodeParse}
	rows := p.SpreadRows(recs, 10)
	var stretches []string
	lastDigits := map[int64]bool{}
	for _, r := range rows {
		stretches = append(stretches, fmt.Sprint(r[0].Num/10))
		lastDigits[r[0].Num%10] = true
	}
	// one record of each stretch of ten, at places that are not all the same
	if got := strings.Join(stretches, ","); got != "0,1,2,4,5,6,7,8,9" || len(lastDigits) < 3 {
		t.Fatalf("spread from stretches %s (last digits %v), want one of each ten records but the rejected %d, not every 10th", got, lastDigits, rejected)
	}
}

// A first column of no more distinct values than the regions asked (a bucket written as text,
// str(crc32(userid) % 16)) gets one region per value, as an integer bucket does: quantiles of
// rows of uneven counts fell a row short of a value's start and put two neighbours in one
// region (16 values, 16 regions asked: 15 planned, the busiest holding twice its share).
func TestQuantileGivesEveryValueItsRegionWhenValuesAreFew(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {b: text, id: bigint}}\ntarget: {table: t, primary_key: '[b][id]'}\n")
	var recs []pipeline.Record
	id := 0
	for k := 0; k < 16; k++ {
		for i := 0; i < 100+(k*37)%21-10; i++ {
			id++
			recs = append(recs, pipeline.Record{Values: []pipeline.Value{pipeline.Text(strconv.Itoa(k)), pipeline.Int(int64(id))}})
		}
	}
	rows := applyAll(t, p, recs)
	plan, err := p.PlanRegions(RegionRequest{Count: 16, Sample: rows})
	if err != nil {
		t.Fatal(err)
	}
	if want := "1,10,11,12,13,14,15,2,3,4,5,6,7,8,9"; splitStrings(plan) != want {
		t.Fatalf("splits %s, want %s (one region per value)", splitStrings(plan), want)
	}
	// more values than regions: quantiles as before
	plan, _ = p.PlanRegions(RegionRequest{Count: 4, Sample: rows})
	if plan.Count() != 4 {
		t.Errorf("4 regions over 16 values: %s", splitStrings(plan))
	}
}

// Split keys of a VARBINARY first column are written in hex, as ddl.sql's SPLITKEYS, the
// manifest and rekey report's recommended split keys give them: a key pasted from there splits
// where it said. Read as the bytes of their text, '00ff' split at 30 30 66 66 and ddl.sql
// printed SPLITKEYS='30306666'.
func TestExplicitVarbinarySplitKeysAreHex(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {b: blob}}\ntarget: {table: t, primary_key: '[b]'}\nregions: {split_keys: ['00ff', '7F', '0x80']}\n")
	plan, err := p.PlanRegions(RegionRequest{})
	if err != nil || len(plan.Splits) != 3 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	for i, want := range []string{"\x00\xff", "\x7f", "\x80"} {
		if plan.Splits[i] != pipeline.Bytes(want) {
			t.Errorf("split %d: %q, want the bytes %x", i, plan.Splits[i].Str, want)
		}
	}
	var got []string
	for _, v := range plan.Splits {
		got = append(got, pipeline.SplitValue(plan.Type, v))
	}
	if s := strings.Join(got, ","); s != "00ff,7f,80" {
		t.Errorf("SPLITKEYS %s, want 00ff,7f,80 (as the mapping gave them)", s)
	}
	if plan.Route(pipeline.Bytes("\x00\xfe")) != 0 || plan.Route(pipeline.Bytes("\x00\xff\x01")) != 1 || plan.Route(pipeline.Bytes("\xff")) != 3 {
		t.Error("routing does not follow the hex split keys")
	}
	m, err := Decode([]byte("version: 1\nsource: {columns: {b: blob}}\ntarget: {table: t, primary_key: '[b]'}\nregions: {split_keys: [m, '123']}\n"), "test.yaml")
	if err == nil {
		_, err = Compile(m, nil)
	}
	var me *MappingError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), `regions.split_keys[0]: "m" is not hex`) || !strings.Contains(err.Error(), `regions.split_keys[1]: "123" is not hex`) {
		t.Errorf("split keys that are not hex: %v", err)
	}
}
