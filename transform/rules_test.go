package transform

import (
	"slices"
	"strings"
	"testing"
)

// DesignRules flags a first key column whose values grow with time, and only the first: a
// modulo bucket or a hash prefix before it is the guide's remedy.
func TestDesignRulesMonotonicFirstKey(t *testing.T) {
	cases := []struct {
		key  string
		want []string
	}{
		{"[ts][id]", []string{RuleMonotonicFirst}},
		{"[day][id]", []string{RuleMonotonicFirst}},
		{"[id][ts]", nil},
		{"[(ts % 16) :: TINYINT AS bucket][ts][id]", nil},
		{"[md5(id).substr(0,4) + id AS pk][ts]", nil},
		{"[ts :: BIGINT AS t][id]", []string{RuleMonotonicFirst}},
		{"[id :: VARCHAR AS s][ts]", nil},
		{"[tu][id]", []string{RuleMonotonicFirst}},
		{"[tu :: VARCHAR AS t][id]", []string{RuleMonotonicFirst}},
		{"[id][tags]", []string{RuleCollectionInKey}},
		{"[a][b][c][id]", nil}, // four key columns: the rule table's key_columns judges the key's shape
		// a salt names its cost; behind the first column it also spreads nothing
		{"[random(8) AS s][id]", []string{RuleSaltedKey}},
		{"[id][a][random(100) AS s]", []string{RuleTrailingSalt, RuleSaltedKey}},
	}
	for _, c := range cases {
		p := compileYAML(t, `
version: 1
source:
  name: ks.t
  columns: {ts: timestamp, day: date, tu: timeuuid, id: text, tags: list<int>, a: int, b: int, c: int, v: text}
target:
  table: t
  primary_key: "`+c.key+`"
regions:
  count: 1
`)
		var got []string
		for _, r := range p.DesignRules(false) {
			got = append(got, r.Code)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: rules %v, want %v", c.key, got, c.want)
		}
	}
}

// A timestamp column read in a unit (source.timestamp_unit, or its own timestamp(us)) is still a
// time: cast to another type as the first key column, it is flagged as it is without the unit,
// and TimeKey says so.
func TestDesignRulesMonotonicFirstKeyWithUnit(t *testing.T) {
	for _, src := range []string{
		"  timestamp_unit: us\n  columns: {ts: timestamp, id: text, v: text}",
		"  columns: {ts: timestamp(us), id: text, v: text}",
	} {
		p := compileYAML(t, `
version: 1
source:
  name: ks.t
`+src+`
target:
  table: t
  primary_key: "[ts :: BIGINT AS t][id]"
regions:
  count: 1
`)
		var got []string
		for _, r := range p.DesignRules(false) {
			got = append(got, r.Code)
		}
		if !slices.Equal(got, []string{RuleMonotonicFirst}) {
			t.Errorf("%s: rules %v, want %v", src, got, []string{RuleMonotonicFirst})
		}
		if why := p.TimeKey(0); !strings.Contains(why, "times only grow") {
			t.Errorf("%s: TimeKey(0) = %q, want a time that grows", src, why)
		}
	}
}

// The salt rules name the salt's cost and where it stands.
func TestDesignRulesSalt(t *testing.T) {
	p := compileYAML(t, `
version: 1
source:
  name: ks.t
  columns: {userid: text, orderid: bigint, v: text}
target:
  table: t
  primary_key: "[userid][orderid][random(100) AS salt]"
regions:
  count: 1
`)
	at, n := p.SaltColumns()
	if !slices.Equal(at, []int{2}) || !slices.Equal(n, []int64{100}) {
		t.Errorf("salt columns %v %v", at, n)
	}
	rules := p.DesignRules(false)
	if len(rules) != 2 || rules[0].Path != "target.primary_key[2]" || rules[1].Message != "the key has a salt (random(100)): "+SaltCost(100) {
		t.Fatalf("rules %+v", rules)
	}
	for _, want := range []string{"spreads nothing", `"data is distributed based on the columns in a left-to-right order"`} {
		if !strings.Contains(rules[0].Message, want) {
			t.Errorf("trailing_salt does not say %q: %s", want, rules[0].Message)
		}
	}
	for _, want := range []string{"a GET of one row becomes 100 lookups", "Use this pattern only when write distribution is more critical than read simplicity", "leaves the old row behind", "rekey replicate rejects deletes"} {
		if !strings.Contains(SaltCost(100), want) {
			t.Errorf("SaltCost does not say %q", want)
		}
	}
}

// workload: takes reads_first or write_heavy; anything else is an error at its path.
func TestWorkloadField(t *testing.T) {
	base := "version: 1\nsource:\n  columns: {id: text, v: text}\ntarget:\n  table: t\n  primary_key: \"[id]\"\n"
	for _, w := range []string{WorkloadReadsFirst, WorkloadWriteHeavy} {
		m, err := Decode([]byte(base+"workload: "+w+"\n"), "m.yaml")
		if err != nil || m.Workload != w {
			t.Errorf("%s: %v %q", w, err, m.Workload)
		}
	}
	if m, err := Decode([]byte(base), "m.yaml"); err != nil || m.Workload != "" {
		t.Errorf("no workload: %v %q", err, m.Workload)
	}
	_, err := Decode([]byte(base+"workload: writes\n"), "m.yaml")
	if err == nil || !strings.Contains(err.Error(), `workload: want reads_first (the default: reads weigh more than write spread) or write_heavy`) {
		t.Errorf("workload: writes: %v", err)
	}
}

// A dictionary that gives several values one code merges their keys where a key column reads
// it: the rule names the column, the dictionary and the values. A code that only a value
// column reads, a dictionary whose codes differ, and a key that also holds the column itself
// lose nothing.
func TestDesignRulesCodeMergesKeys(t *testing.T) {
	cases := []struct {
		key, cols string
		want      []string
	}{
		{"[code(ch, merging) AS c][id]", "", []string{RuleKeyCodeMerges}},
		{"[md5(c).substr(0,4) + c AS pk][id]", "c: code(ch, merging)", []string{RuleKeyCodeMerges}},
		{"[code(ch, distinct) AS c][id]", "", nil},
		{"[id][code(ch, merging) AS c][ch]", "", nil},
		{"[id]", "c: code(ch, merging)", nil},
	}
	for _, c := range cases {
		cols := ""
		if c.cols != "" {
			cols = "\n  columns:\n    " + c.cols
		}
		p := compileYAML(t, `
version: 1
source:
  name: ks.t
  columns: {id: text, ch: text, v: text}
target:
  table: t
  primary_key: "`+c.key+`"`+cols+`
  codes:
    merging: {taobao: tb, alipay: ap, tbshop: tb}
    distinct: {taobao: tb, alipay: ap}
regions:
  count: 1
`)
		var got []string
		for _, r := range p.DesignRules(false) {
			got = append(got, r.Code)
			if r.Code == RuleKeyCodeMerges && !strings.Contains(r.Message, `dictionary merging gives "taobao" and "tbshop" one code, "tb"`) {
				t.Errorf("%s: the message does not name the values: %s", c.key, r.Message)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: rules %v, want %v", c.key, got, c.want)
		}
	}
}

// A key column concatenating two parts whose lengths vary merges rows whose values split
// differently ("ab" + "c", "a" + "bc"): the rule names the parts. The guide's hash prefix (a
// fixed-length part, then one that varies), parts the key also holds as they are, codes of one
// length and a separator-free single varying part lose nothing.
func TestDesignRulesConcatMergesKeys(t *testing.T) {
	cases := []struct {
		key, cols string
		want      []string
	}{
		{"[a + b AS k][id]", "", []string{RuleKeyConcatMerges}},
		{"[a + str(n) AS k][id]", "", []string{RuleKeyConcatMerges}},
		{"[k][id]", "k: a + '#' + b", []string{RuleKeyConcatMerges}},
		{"[md5(a).substr(0,4) + a AS k][id]", "", nil},
		{"[md5(a) + b AS k][id]", "", nil},
		{"[a.substr(0,3) + b AS k][id]", "", nil},
		{"[code(ch, even) + a AS k][id]", "", nil},
		{"[code(ch, uneven) + a AS k][id]", "", []string{RuleKeyConcatMerges}},
		{"[a + b AS k][a]", "", nil},
		{"[a + str(n) AS k][n]", "", nil},
		{"[id]", "k: a + b", nil},
	}
	for _, c := range cases {
		cols := ""
		if c.cols != "" {
			cols = "\n  columns:\n    " + c.cols
		}
		p := compileYAML(t, `
version: 1
source:
  name: ks.t
  columns: {id: text, a: text, b: text, n: bigint, ch: text, v: text}
target:
  table: t
  primary_key: "`+c.key+`"`+cols+`
  codes:
    even: {taobao: tb, alipay: ap}
    uneven: {taobao: tb, alipay: alip}
regions:
  count: 1
`)
		var got []string
		for _, r := range p.DesignRules(false) {
			got = append(got, r.Code)
			if r.Code == RuleKeyConcatMerges && !strings.Contains(r.Message, "concatenates ") {
				t.Errorf("%s: the message does not name the parts: %s", c.key, r.Message)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: rules %v, want %v", c.key, c.cols, got, c.want)
		}
	}
}

// Explicit split keys on a hex hash prefix cut the prefix's space, which the digest fills evenly:
// decimal split keys (1..9) leave 9 and a-f, 7/16 of the space, to the last of 10 regions. The
// mapping alone shows it: a warning naming the region and its share, and what gives equal slices.
func TestDesignRulesSplitKeysUnevenOverHexPrefix(t *testing.T) {
	rule := func(p *Program) *DesignRule {
		for _, r := range p.DesignRules(false) {
			if r.Code == RuleSplitKeysUneven {
				return &r
			}
		}
		return nil
	}
	const head = "version: 1\nsource: {columns: {u: text, v: text}}\ntarget: {table: t, primary_key: '[md5(u).substr(0,4) + u AS pk][v]'}\n"
	p := compileYAML(t, head+"regions: {split_keys: ['1','2','3','4','5','6','7','8','9']}\n")
	r := rule(p)
	if r == nil || r.Path != "regions.split_keys" || !strings.Contains(r.Message, `region 9 ["9", +inf) takes 43.8%`) || !strings.Contains(r.Message, "count: 10") {
		t.Fatalf("decimal split keys on a hex prefix: %+v", r)
	}
	// hex split keys of equal slices, a count, or a column that is no hash prefix: no warning
	for _, y := range []string{
		head + "regions: {split_keys: ['4000','8000','c000']}\n",
		head + "regions: {count: 10}\n",
		"version: 1\nsource: {columns: {u: text, v: text}}\ntarget: {table: t, primary_key: '[u][v]'}\nregions: {split_keys: ['1','2']}\n",
	} {
		if r := rule(compileYAML(t, y)); r != nil {
			t.Errorf("%s: %+v", y, r)
		}
	}
}
