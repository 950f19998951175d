package transform

import (
	"strings"
	"testing"
)

// source.table names the table of a Debezium topic the mapping reads, as the events' source
// names it: two or three dotted parts; anything else is refused with its path.
func TestSourceTable(t *testing.T) {
	doc := func(table string) []byte {
		return []byte("version: 1\nsource:\n  name: shop\n  table: " + table + "\n  columns: {id: bigint}\ntarget:\n  table: t\n  primary_key: \"[id]\"\n")
	}
	for _, ok := range []string{"inventory.customers", "shop.public.orders", "capture.ev"} {
		m, err := Decode(doc(ok), "m.yaml")
		if err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
		p, err := Compile(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.SourceTable() != ok {
			t.Errorf("source.table %s: program says %q", ok, p.SourceTable())
		}
	}
	for _, bad := range []string{"customers", "a..b", "a.b.c.d", `" a.b"`} {
		if _, err := Decode(doc(bad), "m.yaml"); err == nil || !strings.Contains(err.Error(), "source.table") || !strings.Contains(err.Error(), "db.table") {
			t.Errorf("source.table %s: %v, want refused", bad, err)
		}
	}
}

// rekey check shows the table the mapping reads of a Debezium topic: what it resolves is what it
// applies. Before, Describe left source.table out.
func TestDescribeShowsSourceTable(t *testing.T) {
	m, err := Decode([]byte("version: 1\nsource:\n  name: shop\n  table: inventory.customers\n  columns: {id: bigint}\ntarget:\n  table: t\n  primary_key: \"[id]\"\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Describe(); !strings.Contains(d, "source.table inventory.customers") {
		t.Errorf("Describe does not show source.table:\n%s", d)
	}
}
