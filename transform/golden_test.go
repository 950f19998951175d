package transform

import (
	"path/filepath"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// TestMappingGoldens applies every shipped mapping to input rows and checks the exact key values.
// Expected digests were computed independently (printf abc | md5sum: 900150983cd2...).
func TestMappingGoldens(t *testing.T) {
	cases := []struct {
		file string
		in   map[string]V
		key  []V
		cols map[string]V // other target columns to check
		desc []bool       // DESC flags of the key columns, when any
	}{
		{"orders.yaml",
			map[string]V{"userid": txt("abc"), "orderid": num(42), "channel": txt("taobao"), "ts": num(1700000000000), "status": txt("paid"), "location": txt("hz"), "amount": pipeline.Decimal("12.50")},
			[]V{txt("9001abc"), num(42)},
			map[string]V{"channel": txt("tb"), "ts": num(1700000000000), "amount": pipeline.Decimal("12.50")}, nil},
		{"orders.yaml",
			map[string]V{"userid": txt("user1"), "orderid": num(7), "channel": txt("paypal")},
			[]V{txt("24c9user1"), num(7)},
			map[string]V{"channel": txt("paypal"), "status": pipeline.Null}, nil}, // on_missing_code: keep
		{"orders.yaml",
			map[string]V{"userid": txt("alice"), "orderid": num(1), "channel": txt("pdd")},
			[]V{txt("6384alice"), num(1)}, map[string]V{"channel": txt("pd")}, nil},
		{"users.yaml", map[string]V{"userid": txt("alice"), "name": txt("Alice")}, []V{txt("6384alice")}, map[string]V{"userid": txt("alice"), "name": txt("Alice")}, nil},
		{"users.yaml", map[string]V{"userid": txt("bob")}, []V{txt("9f9dbob")}, nil, nil},
		{"logs.yaml",
			map[string]V{"ts": num(1700000000007), "hostname": txt("web-1"), "log-event": txt("boot"), "latency_ms": num(12)},
			[]V{num(7), num(1700000000007), txt("web-1"), txt("boot")}, map[string]V{"latency_ms": num(12)}, nil},
		{"logs.yaml",
			map[string]V{"ts": num(1705786502068), "hostname": txt("db"), "log-event": txt("slow-query")},
			[]V{num(4), num(1705786502068), txt("db"), txt("slow-query")}, nil, nil},
		{"logs_latest.yaml",
			map[string]V{"ts": num(1700000000007), "hostname": txt("web-1"), "log-event": txt("boot"), "level": txt("INFO")},
			[]V{txt("web-1"), txt("boot"), num(1700000000007)}, map[string]V{"level": txt("INFO")}, []bool{false, false, true}},
		{"transactions_by_seller.yaml",
			map[string]V{"order_number": num(99), "seller_id": txt("s1"), "buyer_id": txt("b1"), "ts": num(1)},
			[]V{txt("s1"), num(1), num(99)}, map[string]V{"buyer_id": txt("b1")}, nil},
		{"transactions_by_buyer.yaml",
			map[string]V{"order_number": num(99), "seller_id": txt("s1"), "buyer_id": txt("b1"), "ts": num(1)},
			[]V{txt("b1"), num(1), num(99)}, map[string]V{"seller_id": txt("s1")}, nil},
		{"transactions_by_order.yaml",
			map[string]V{"order_number": num(12345), "seller_id": txt("s1")},
			[]V{txt("54321")}, map[string]V{"order_number": num(12345)}, nil},
		{"transactions_by_order.yaml", map[string]V{"order_number": num(1000)}, []V{txt("0001")}, nil, nil},
		{"channel_orders.yaml",
			map[string]V{"channel": txt("alipay"), "id": txt("a0001"), "ts": num(1705786502000), "status": txt("0"), "location": txt("shanghai")},
			[]V{txt("alipay"), txt("cea2a0001"), num(1705786502000)}, map[string]V{"id": txt("a0001"), "location": txt("shanghai")}, nil},
		{"channel_orders.yaml",
			map[string]V{"channel": txt("wechat"), "id": txt("w0002"), "ts": num(1705786502068)},
			[]V{txt("wechat"), txt("b954w0002"), num(1705786502068)}, nil, nil},
		{"ev.yaml", // the cut-over rehearsal's table: the key as Cassandra has it
			map[string]V{"a": num(6), "b": num(1), "c": num(2), "x": txt("s962"), "y": num(4)},
			[]V{num(6), num(1), num(2)}, map[string]V{"x": txt("s962"), "y": num(4)}, nil},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.file] = true
		p := loadProgram(t, c.file)
		r := &pipeline.Record{Values: make([]pipeline.Value, len(p.Source()))}
		for k, v := range c.in {
			j := p.Source().Index(k)
			if j < 0 {
				t.Fatalf("%s: no source column %s", c.file, k)
			}
			r.Values[j] = v
		}
		out := make([]pipeline.Value, len(p.Target().Columns))
		if rerr := p.NewEvaluator().ApplyKey(&pipeline.Batch{Stream: "golden"}, r, out); rerr != nil {
			t.Errorf("%s %v: %v", c.file, c.in, rerr)
			continue
		}
		if p.Target().KeyLen != len(c.key) {
			t.Errorf("%s: %d key columns, want %d", c.file, p.Target().KeyLen, len(c.key))
			continue
		}
		for i, want := range c.key {
			if !out[i].Equal(want) {
				t.Errorf("%s %v: key[%d] (%s) = %#v, want %#v", c.file, c.in, i, p.Target().Columns[i].Name, out[i], want)
			}
			if c.desc != nil && p.Target().Columns[i].Desc != c.desc[i] {
				t.Errorf("%s: key[%d] Desc = %v", c.file, i, p.Target().Columns[i].Desc)
			}
		}
		for name, want := range c.cols {
			j := p.Target().Index(name)
			if j < 0 || !out[j].Equal(want) { // a decimal may carry its number too
				t.Errorf("%s %v: column %s = %v, want %#v", c.file, c.in, name, out, want)
			}
		}
	}
	files, _ := filepath.Glob("../mappings/*.yaml")
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no golden test", f)
		}
	}
}

// The benchmark mapping's source columns are what gen:orders and the benchmark CSV produce.
func TestOrdersSourceColumns(t *testing.T) {
	p := loadProgram(t, "orders.yaml")
	want := "userid text,orderid bigint,channel text,ts timestamp,status text,location text,amount decimal"
	got := ""
	for i, c := range p.Source() {
		if i > 0 {
			got += ","
		}
		got += c.Name + " " + c.Type
	}
	if got != want {
		t.Errorf("orders.yaml source columns %s, want %s", got, want)
	}
	p = loadProgram(t, "logs.yaml")
	got = ""
	for i, c := range p.Source() {
		if i > 0 {
			got += ","
		}
		got += c.Name + " " + c.Type
	}
	if want := "ts timestamp,hostname text,log-event text,level text,latency_ms int,message text"; got != want {
		t.Errorf("logs.yaml source columns %s, want %s", got, want)
	}
}
