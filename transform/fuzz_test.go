package transform

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

func printKey(elems []keyElem) string {
	var sb strings.Builder
	for _, e := range elems {
		sb.WriteString(e.String())
	}
	return sb.String()
}

func keyErrs(elems []keyElem, outer *syntaxError) string {
	var s []string
	if outer != nil {
		s = append(s, outer.Error())
	}
	for _, e := range elems {
		if e.err != nil {
			s = append(s, e.err.Error())
		}
	}
	return strings.Join(s, "; ")
}

// FuzzParseKey: the parser never panics, is deterministic, and what it prints parses back to the
// same print.
func FuzzParseKey(f *testing.F) {
	for _, k := range guideKeys {
		f.Add(k)
	}
	for _, k := range []string{
		"[md5(userid).substr(0,4) + userid AS pk1][orderid DESC]", "[`a``b` AS `c d`][x :: DECIMAL(20,4)]",
		"['it''s' + -5 * (a % 3)]", "[a-b-c][_x][f()]", "[md5(userid]", "[a - b]", "[1abc]", "['abc]",
		"[x.substr]", "[中文 AS 名字]", "[a :: varchar :: bigint]",
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e1, o1 := parseKey(s)
		e2, o2 := parseKey(s)
		if keyErrs(e1, o1) != keyErrs(e2, o2) || printKey(e1) != printKey(e2) {
			t.Fatalf("not deterministic: %q", s)
		}
		if keyErrs(e1, o1) != "" {
			return
		}
		p1 := printKey(e1)
		e3, o3 := parseKey(p1)
		if errs := keyErrs(e3, o3); errs != "" {
			t.Fatalf("%q printed as %q which does not parse: %s", s, p1, errs)
		}
		if p3 := printKey(e3); p3 != p1 {
			t.Fatalf("%q printed as %q, reprinted as %q", s, p1, p3)
		}
	})
}

// FuzzApply: compiling and applying any expression to any values never panics, is
// deterministic across evaluators, and every value it outputs has the kind its column's type
// stores.
func FuzzApply(f *testing.F) {
	seeds := []struct {
		expr, s string
		n       int64
	}{
		{"md5(s).substr(0,4)+s", "abc", 1}, {"reverse(s)", "中文", 0}, {"n % 16", "", -5}, {"s.substr(n)", "héllo", 2},
		{"s.substr(n, 3)", "a😀b", 1}, {"code(s, channels)", "taobao", 0}, {"random(7)", "x", 3}, {"long(s) / n", "42", 0},
		{"s :: DECIMAL(5,2)", "1.23", 0}, {"n * n", "", 1 << 40}, {"s :: BIGINT + n", "12", 3}, {"str(n) + s", "\xff\xfe", 9},
		{"sha256(s).substr(60)", "", 0}, {"crc32(s) % n", "abc", -7}, {"murmur3(n)", "", 1}, {"int(s)", "99999999999", 0},
		{"s :: TIMESTAMP", "2024-01-02T03:04:05Z", 0}, {"s :: DATE", "2024-01-02", 0}, {"d :: VARCHAR", "", 0},
		{"(ts % numBuckets) :: TINYINT", "", 0}, {"reverse(s).substr(0, n)", "\xe4\xb8", 1},
	}
	for _, s := range seeds {
		f.Add(s.expr, s.s, s.n)
	}
	f.Fuzz(func(t *testing.T, expr, s string, n int64) {
		p, err := Compile(testMapping(expr), nil)
		if err != nil {
			return
		}
		r := record(map[string]V{"s": txt(s), "n": num(n), "ts": num(n), "i": num(n % 1000), "d": pipeline.Decimal("1.5"),
			"b": pipeline.Bool(n%2 == 0), "f": pipeline.Float(float64(n) / 3), "bl": pipeline.Bytes(s), "u": txt(s), "userid": txt(s)})
		b := &pipeline.Batch{Stream: "fuzz", SaltOrigin: n%2 == 0}
		run := func() ([]pipeline.Value, string) {
			out := make([]pipeline.Value, len(p.Target().Columns))
			e := p.NewEvaluator()
			e.Apply(b, r, out) // warm the arena so the second Apply reuses memory
			e.Reset()
			if rerr := e.Apply(b, r, out); rerr != nil {
				return nil, rerr.Error()
			}
			for i := range out {
				out[i].Str = strings.Clone(out[i].Str)
			}
			return out, ""
		}
		o1, e1 := run()
		o2, e2 := run()
		if e1 != e2 {
			t.Fatalf("%s: errors differ: %q vs %q", expr, e1, e2)
		}
		for i := range o1 {
			if o1[i] != o2[i] {
				t.Fatalf("%s: column %d differs: %#v vs %#v", expr, i, o1[i], o2[i])
			}
			col := p.Target().Columns[i]
			if o1[i].Kind != pipeline.KindNull && o1[i].Kind != kindOf(col.Type) {
				t.Fatalf("%s: column %s %s holds a %s value %#v", expr, col.Name, col.SQLType(), o1[i].Kind, o1[i])
			}
		}
	})
}

// FuzzDecode: any file decodes to a mapping or a MappingError, never a panic; a mapping that
// decodes also compiles.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{hexDescYAML, saltYAML, goodHead + `target: {table: t, primary_key: "[userid]"}`,
		"version: 1\nsource: {columns: {a: text}}\ntarget: {table: t, primary_key: '[a]', columns: {b: a + a}}\nregions: {split_keys: [x]}\n",
		"version: 1\nvars: {n: 3}\nregions: {count: n}\n", "- a\n- b\n", "a: &x {b: *x}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data, "fuzz.yaml")
		if err != nil || len(m.Source.Columns) == 0 {
			return
		}
		p, err := Compile(m, nil)
		if err != nil {
			t.Fatalf("decoded but does not compile: %v", err)
		}
		_ = p.Describe()
		_, _ = p.PlanRegions(RegionRequest{})
	})
}
