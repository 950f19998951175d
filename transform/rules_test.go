package transform

import (
	"slices"
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
		{"[a][b][c][id]", []string{RuleManyKeyColumns}},
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
