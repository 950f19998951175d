package transform

import (
	"fmt"
	"testing"
)

func TestKeySourceColumns(t *testing.T) {
	m, err := Decode([]byte(`
version: 1
source:
  columns: {userid: text, orderid: bigint, ts: timestamp, channel: text}
target:
  table: t
  primary_key: "[md5(userid).substr(0,4) + userid AS pk1][bucket][ts][random(8)][pk2]"
  columns:
    bucket: ts % 16
    pk2: code(channel, d) + str(orderid)
  codes:
    d: {a: b}
`), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(p.KeySourceColumns())
	if want := "[[userid] [ts] [ts] [] [channel orderid]]"; got != want {
		t.Errorf("KeySourceColumns = %s, want %s", got, want)
	}
}

// A range of a source column is a range of the key column that keeps its order: the column as
// it is, or code() through a dictionary whose codes sort as its values and that rejects misses.
func TestKeyOrderedSources(t *testing.T) {
	for _, c := range []struct{ dict, missing, want string }{
		{"{alipay: '0', jd: '1', taobao: '2'}", "reject", "[channel  ts]"},
		{"{alipay: wx, jd: jd, taobao: tb}", "reject", "[  ts]"},  // wx > jd: not in order
		{"{alipay: '0', jd: '1', taobao: '2'}", "keep", "[  ts]"}, // a kept value falls anywhere
	} {
		p := compileYAML(t, `
version: 1
source:
  columns: {channel: text, id: text, ts: timestamp}
target:
  table: t
  primary_key: "[code(channel, d) AS c][md5(id).substr(0,4) + id AS h][ts DESC]"
  codes:
    d: `+c.dict+`
  on_missing_code: `+c.missing+`
`)
		if got := fmt.Sprint(p.KeyOrderedSources()); got != c.want {
			t.Errorf("%s, %s: KeyOrderedSources = %q, want %q", c.dict, c.missing, got, c.want)
		}
	}
	if got, err := KeyElementTexts("[code(channel, d) AS c][md5(id).substr(0,4) + id AS h][ts DESC]"); err != nil || fmt.Sprintf("%q", got) != `["code(channel, d) AS c" "md5(id).substr(0,4) + id AS h" "ts DESC"]` {
		t.Errorf("KeyElementTexts = %q, %v", got, err)
	}
	if _, err := KeyElementTexts("[a][b"); err == nil {
		t.Errorf("KeyElementTexts of an unclosed element: no error")
	}
}

// code(x, d) keeps the order of a column that is not text only when its codes rise in that
// column's order: the dictionary's keys are text, and "10" sorts before "2" as text, after it as
// a number. A range of n from 1 to 2 holds the codes a and c, and the key range between them b,
// the code of 10.
func TestKeyOrderedSourcesCodeOfANumber(t *testing.T) {
	for _, c := range []struct{ dict, want string }{
		{"{'1': a, '10': b, '2': c}", "[ id]"}, // text order a b c, number order a c b
		{"{'1': a, '2': b, '10': c}", "[n id]"},
	} {
		p := compileYAML(t, `
version: 1
source:
  columns: {n: int, id: text, v: text}
target:
  table: t
  primary_key: "[code(n, d) AS c][id]"
  codes:
    d: `+c.dict+`
`)
		if got := fmt.Sprint(p.KeyOrderedSources()); got != c.want {
			t.Errorf("%s: KeyOrderedSources = %q, want %q", c.dict, got, c.want)
		}
	}
}
