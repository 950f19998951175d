package transform

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// guideKeys are the primary keys exactly as the design guides write them
// (/work/shared/seeds/primary-key-design-v2.txt, and the v1 page's extra forms).
var guideKeys = []string{
	"[userid]",
	"[userid][orderid]",
	"[md5(userid).subStr(0,4)][userId][orderid]",
	"[reverse(userid)][orderid]",
	"[bucket][timestamp][hostname][log-event]",
	"[userId][orderid][random(100)]",
	"[hostname][log-event][timestamp]",
	"[hostname][log-event][timestamp DESC]",
	"[seller_id][timestamp][order_number]",
	"[buyer_id][timestamp][order_number]",
	"[order_number]",
	"[pk1]",
	// v1 of the guide
	"[userid][orderid DESC]",
	"[seller_id][timestmap][order_number]",
	"[buyer_id][timestmap][order_number]",
}

// guideExprs are the guide's derived-column expressions, as target.columns entries.
var guideExprs = []string{
	"hash(pk).substring(0, 4) + pk",
	"hash(pk).substring(0,4)+pk",
	"timestamp % numBuckets",
	"Long('2015122410')",
	"long(2015122410)",
	"code(channel, channels)",
}

func TestGuideFormsParse(t *testing.T) {
	for _, k := range guideKeys {
		elems, outer := parseKey(k)
		if outer != nil {
			t.Errorf("%s: %v", k, outer)
			continue
		}
		for i, e := range elems {
			if e.err != nil {
				t.Errorf("%s: element %d: %v", k, i, e.err)
			}
		}
	}
	for _, x := range guideExprs {
		if _, err := parseExpression(x); err != nil {
			t.Errorf("%s: %v", x, err)
		}
	}
}

// Every guide key compiles against a schema that has the columns it names, with the derived
// names and types documented in README.md.
func TestGuideFormsCompile(t *testing.T) {
	src := pipeline.SourceSchema{
		{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"}, {Name: "timestamp", Type: "timestamp"},
		{Name: "hostname", Type: "text"}, {Name: "log-event", Type: "text"}, {Name: "seller_id", Type: "text"},
		{Name: "buyer_id", Type: "text"}, {Name: "order_number", Type: "bigint"}, {Name: "pk", Type: "text"},
		{Name: "timestmap", Type: "timestamp"}, {Name: "channel", Type: "text"},
	}
	want := map[string]string{
		"[md5(userid).subStr(0,4)][userId][orderid]": "userid_md5_4 VARCHAR, userid VARCHAR, orderid BIGINT",
		"[reverse(userid)][orderid]":                 "userid_reverse VARCHAR, orderid BIGINT",
		"[bucket][timestamp][hostname][log-event]":   "bucket BIGINT, timestamp TIMESTAMP, hostname VARCHAR, log-event VARCHAR",
		"[userId][orderid][random(100)]":             "userid VARCHAR, orderid BIGINT, random_100 BIGINT",
		"[hostname][log-event][timestamp DESC]":      "hostname VARCHAR, log-event VARCHAR, timestamp TIMESTAMP DESC",
		"[pk1]":                                      "pk1 VARCHAR",
	}
	for _, k := range guideKeys {
		m := &Mapping{Version: 1, Source: SourceSpec{Columns: src},
			Vars: []Var{{Name: "numBuckets", Value: pipeline.Int(16)}},
			Target: TargetSpec{Table: "t", PrimaryKey: k, OnMissingCode: "reject",
				Columns: []ColumnExpr{{Name: "pk1", Expr: "hash(pk).substring(0, 4) + pk"}, {Name: "bucket", Expr: "timestamp % numBuckets"}},
				Codes:   []Dict{{Name: "channels", Entries: [][2]string{{"taobao", "tb"}}}}}}
		p, err := Compile(m, nil)
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		var got []string
		for _, c := range p.Target().Key() {
			s := c.Name + " " + c.SQLType()
			if c.Desc {
				s += " DESC"
			}
			got = append(got, s)
		}
		if w, ok := want[k]; ok && strings.Join(got, ", ") != w {
			t.Errorf("%s: key %s, want %s", k, strings.Join(got, ", "), w)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ key, want string }{
		{"[md5(userid]", "at column 12: expected ',' or ')' in the argument list, found the end"},
		{"[userid][orderid", "at column 9: unterminated key element: missing ']'"},
		{"[a - b]", "at column 4: subtraction is not supported"},
		{"userid", "at column 1: expected '[' to start a key element, found 'u'"},
		{"[a],[b]", "at column 4: expected '[' to start a key element, found ','"},
		{"[x AS]", "at column 6: expected a column name after AS, found the end"},
		{"[x DESC AS y]", "at column 9: AS must come before ASC/DESC: [expr AS name DESC]"},
		{"[x AS y z]", "at column 9: expected an operator, AS name, ASC, DESC or ']', found name \"z\""},
		{"[1abc]", "at column 2: a name must start with a letter or '_'"},
		{`["x"]`, `at column 2: unexpected '"': string literals use single quotes`},
		{"[x :: ]", "at column 7: expected a type name after '::'"},
		{"[]", "at column 1: empty key element []"},
		{"[ ]", "at column 1: empty key element []"},
		{"", "at column 1: empty primary key"},
		{"[md5(userid).substr(0,4) + ]", "at column 28: expected a value"},
		{"[x.substr]", "at column 10: expected '(' after \"substr\", found the end"},
		{"['abc]", "at column 2: unterminated string literal"},
		{"[`abc]", "at column 2: unterminated back-quoted name"},
		{"[99999999999999999999]", "at column 2: integer 99999999999999999999 is out of the 64-bit range"},
		{"[a ; b]", "at column 4: unexpected character ';'"},
		{"[a:b]", "at column 3: unexpected ':'"},
		{"[(a]", "at column 4: expected ')', found the end"},
		{"[f(a b)]", "at column 6: expected ',' or ')' in the argument list, found name \"b\""},
	}
	for _, c := range cases {
		elems, outer := parseKey(c.key)
		var got string
		if outer != nil {
			got = outer.Error()
		}
		for _, e := range elems {
			if e.err != nil && got == "" {
				got = e.err.Error()
			}
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("parseKey(%q): %q, want prefix %q", c.key, got, c.want)
		}
	}
	// a column counts characters, not bytes
	_, err := parseExpression("'中文' + ?")
	if err == nil || !strings.HasPrefix(err.Error(), "at column 8:") {
		t.Errorf("unicode column: %v", err)
	}
}

func TestParseShapes(t *testing.T) {
	cases := []struct{ key, want string }{
		{"[md5(userid).subStr(0,4) AS h][userid][orderid DESC]", "[md5(userid).subStr(0, 4) AS h][userid][orderid DESC]"},
		{"[a+b*c%d]", "[a + b * c % d]"},
		{"[(a+b)*c]", "[(a + b) * c]"},
		{"[a+(b+c)]", "[a + (b + c)]"},
		{"[a + b :: BIGINT]", "[a + b :: BIGINT]"},
		{"[(a :: varchar) + b]", "[(a :: VARCHAR) + b]"},
		{"[x :: decimal(20, 4)]", "[x :: DECIMAL(20,4)]"},
		{"[log-event]", "[log-event]"},
		{"[`odd name`]", "[`odd name`]"},
		{"[`a``b`]", "[`a``b`]"},
		{"[`x` AS `y z`]", "[x AS `y z`]"},
		{"['it''s' + -5]", "['it''s' + -5]"},
		{"[x asc]", "[x]"},
		{"[x desc]", "[x DESC]"},
		{"[desc DESC]", "[desc DESC]"},
		{"[as]", "[as]"},
		{"[(a + b).substr(1)]", "[(a + b).substr(1)]"},
		{"[f()]", "[f()]"},
		{"[a-1]", "[a-1]"},
	}
	for _, c := range cases {
		elems, outer := parseKey(c.key)
		if outer != nil {
			t.Errorf("%s: %v", c.key, outer)
			continue
		}
		var sb strings.Builder
		for _, e := range elems {
			if e.err != nil {
				t.Errorf("%s: %v", c.key, e.err)
			}
			sb.WriteString(e.String())
		}
		if sb.String() != c.want {
			t.Errorf("%s printed as %s, want %s", c.key, sb.String(), c.want)
		}
	}
}
