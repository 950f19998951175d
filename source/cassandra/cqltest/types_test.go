package cqltest

import (
	"math"
	"math/big"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"
)

// Every supported type goes in through the Go API and comes back through gocql unchanged.
func TestTypesRoundTrip(t *testing.T) {
	s := newServer(t)
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	cases := []struct {
		typ  string
		in   any
		out  any // pointer to scan into
		want any // nil: same as in
	}{
		{"ascii", "plain ascii", new(string), nil},
		{"text", "héllo, 世界 ✓", new(string), nil},
		{"text", "", new(string), nil},
		{"varchar", "v", new(string), nil},
		{"bigint", int64(math.MinInt64), new(int64), nil},
		{"int", int32(-2147483648), new(int32), nil},
		{"int", 7, new(int), nil},
		{"smallint", int16(-300), new(int16), nil},
		{"tinyint", int8(-128), new(int8), nil},
		{"boolean", true, new(bool), nil},
		{"float", float32(-2.5), new(float32), nil},
		{"double", -1e300, new(float64), nil},
		{"double", math.Inf(-1), new(float64), nil},
		{"decimal", inf.NewDec(-1234567, 4), new(*inf.Dec), nil},
		{"varint", huge, new(*big.Int), nil},
		{"varint", big.NewInt(-1), new(*big.Int), nil},
		{"blob", []byte{0, 1, 0xff}, new([]byte), nil},
		// gocql scans an empty blob into a nil destination slice as nil; a non-nil one shows it.
		{"blob", []byte{}, &[]byte{9}, nil},
		{"uuid", gocql.UUID{1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16}, new(gocql.UUID), nil},
		{"timeuuid", gocql.UUIDFromTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)), new(gocql.UUID), nil},
		{"timestamp", time.Date(1950, 6, 7, 8, 9, 10, 123e6, time.UTC), new(time.Time), nil},
		{"timestamp", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), new(time.Time), nil},
		{"date", time.Date(1901, 2, 3, 0, 0, 0, 0, time.UTC), new(time.Time), nil},
		{"time", 13*time.Hour + 5*time.Nanosecond, new(time.Duration), nil},
		{"duration", gocql.Duration{Months: -1, Days: 2, Nanoseconds: 3}, new(gocql.Duration), nil},
		{"inet", net.ParseIP("10.1.2.3").To4(), new(net.IP), nil},
		{"inet", net.ParseIP("2001:db8::1"), new(net.IP), nil},
		{"list<int>", []int{3, -1, 2}, new([]int), nil},
		{"set<text>", []string{"a", "b"}, new([]string), nil},
		{"map<text, int>", map[string]int{"x": -1, "y": 2}, new(map[string]int), nil},
		{"frozen<list<bigint>>", []int64{1, math.MaxInt64}, new([]int64), nil},
		{"map<int, frozen<list<text>>>", map[int][]string{1: {"p", "q"}}, new(map[int][]string), nil},
		{"list<frozen<map<text, double>>>", []map[string]float64{{"a": 0.5}}, new([]map[string]float64), nil},
	}
	cols := []Column{{"id", "int"}}
	row := map[string]any{"id": 1}
	for i, c := range cases {
		name := "c" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		cols = append(cols, Column{name, c.typ})
		row[name] = c.in
	}
	cols = append(cols, Column{"tup", "tuple<int, text>"})
	row["tup"] = []any{int32(5), "five"}
	must(t, s.CreateTable("ks", "types", cols, []string{"id"}, nil))
	must(t, s.Insert("ks", "types", row))
	// A second row with every column null.
	must(t, s.Insert("ks", "types", map[string]any{"id": 2}))

	sess := newSession(t, s)
	for i, c := range cases {
		name := cols[i+1].Name
		if err := sess.Query("SELECT " + name + " FROM ks.types WHERE id = 1").Scan(c.out); err != nil {
			t.Errorf("%s (%s): %v", name, c.typ, err)
			continue
		}
		got := reflect.ValueOf(c.out).Elem().Interface()
		want := c.want
		if want == nil {
			want = c.in
		}
		if !sameValue(got, want) {
			t.Errorf("%s: got %#v, want %#v", c.typ, got, want)
		}
	}
	var tupInt int
	var tupText string
	must(t, sess.Query("SELECT tup FROM ks.types WHERE id = 1").Scan(&tupInt, &tupText))
	if tupInt != 5 || tupText != "five" {
		t.Errorf("tuple = %d %q", tupInt, tupText)
	}

	// Nulls come back as nulls, not as zero values; the empty string and blob are not null.
	for i := range cases {
		name := cols[i+1].Name
		var raw *string
		if cases[i].typ == "text" || cases[i].typ == "ascii" || cases[i].typ == "varchar" {
			must(t, sess.Query("SELECT "+name+" FROM ks.types WHERE id = 2").Scan(&raw))
			if raw != nil {
				t.Errorf("%s: null read as %q", name, *raw)
			}
		}
	}
	var empty *string
	must(t, sess.Query("SELECT cac FROM ks.types WHERE id = 1").Scan(&empty))
	if empty == nil || *empty != "" {
		t.Errorf("empty string read as %v", empty)
	}
	emptyBlob := []byte{9} // gocql appends into dst[:0]: non-nil for empty, nil for null
	must(t, sess.Query("SELECT car FROM ks.types WHERE id = 1").Scan(&emptyBlob))
	if emptyBlob == nil || len(emptyBlob) != 0 {
		t.Errorf("empty blob read as %#v", emptyBlob)
	}
	var nullBlob []byte = []byte{1}
	must(t, sess.Query("SELECT car FROM ks.types WHERE id = 2").Scan(&nullBlob))
	if nullBlob != nil {
		t.Errorf("null blob read as %#v", nullBlob)
	}

	// Bad values are refused at insert time.
	if err := s.Insert("ks", "types", map[string]any{"id": 3, "cae": "not a number"}); err == nil {
		t.Error("inserting a string into bigint succeeded")
	}
	if err := s.Insert("ks", "types", map[string]any{"id": nil}); err == nil {
		t.Error("inserting a null primary key succeeded")
	}
	if err := s.Insert("ks", "types", map[string]any{"id": 4, "nope": 1}); err == nil {
		t.Error("inserting an unknown column succeeded")
	}
}

func sameValue(got, want any) bool {
	switch w := want.(type) {
	case *inf.Dec:
		g, ok := got.(*inf.Dec)
		return ok && g.Cmp(w) == 0 && g.Scale() == w.Scale()
	case *big.Int:
		g, ok := got.(*big.Int)
		return ok && g.Cmp(w) == 0
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	case net.IP:
		g, ok := got.(net.IP)
		return ok && g.Equal(w)
	}
	return reflect.DeepEqual(got, want)
}

// writetime() and ttl() return the cell's write time and TTL; they refuse key columns.
func TestWritetimeAndTTL(t *testing.T) {
	s := newServer(t)
	must(t, s.CreateTable("ks", "w", []Column{{"id", "int"}, {"a", "text"}, {"b", "text"}, {"l", "list<int>"}}, []string{"id"}, nil))
	before := time.Now().UnixMicro()
	must(t, s.Insert("ks", "w", map[string]any{"id": 1, "a": "x", "b": Cell{Value: "y", WriteTime: 42, TTL: 3600}}))
	after := time.Now().UnixMicro()
	sess := newSession(t, s)

	var wa, wb int64
	var ta, tb *int32
	must(t, sess.Query("SELECT writetime(a), writetime(b), ttl(a), ttl(b) FROM ks.w WHERE id = 1").Scan(&wa, &wb, &ta, &tb))
	if wa < before || wa > after {
		t.Errorf("writetime(a) = %d, want within [%d, %d]", wa, before, after)
	}
	if wb != 42 {
		t.Errorf("writetime(b) = %d, want 42", wb)
	}
	if ta != nil || tb == nil || *tb != 3600 {
		t.Errorf("ttl = %v %v", ta, tb)
	}
	must(t, s.Insert("ks", "w", map[string]any{"id": 2}))
	var wnull *int64
	must(t, sess.Query("SELECT writetime(a) FROM ks.w WHERE id = 2").Scan(&wnull))
	if wnull != nil {
		t.Errorf("writetime of a null cell = %d", *wnull)
	}
	for _, q := range []string{"SELECT writetime(id) FROM ks.w", "SELECT ttl(l) FROM ks.w"} {
		if err := sess.Query(q).Exec(); errCode(err) != gocql.ErrCodeInvalid {
			t.Errorf("%s: %v", q, err)
		}
	}
}

// Collections come back as Cassandra stores them: sets and map keys sorted and unique, and an
// empty non-frozen collection is null while an empty frozen one is not.
func TestCollectionsNormalized(t *testing.T) {
	s := newServer(t)
	must(t, s.CreateTable("ks", "coll", []Column{
		{"id", "int"}, {"s", "set<int>"}, {"m", "map<text, int>"}, {"l", "list<int>"},
		{"fl", "frozen<list<int>>"}, {"ms", "map<int, frozen<set<text>>>"},
	}, []string{"id"}, nil))
	must(t, s.Insert("ks", "coll", map[string]any{
		"id": 1, "s": []int{3, -1, 3, 2}, "m": map[string]int{"b": 2, "a": 1, "c": 3},
		"l": []int{3, 1, 3}, "fl": []int{}, "ms": map[int][]string{2: {"z", "y"}, 1: {"b", "a", "b"}},
	}))
	must(t, s.Insert("ks", "coll", map[string]any{"id": 2, "s": []int{}, "m": map[string]int{}, "l": []int{}}))
	sess := newSession(t, s)

	var set, list, flist []int
	var ms map[int][]string
	must(t, sess.Query("SELECT s, l, fl, ms FROM ks.coll WHERE id = 1").Scan(&set, &list, &flist, &ms))
	if !reflect.DeepEqual(set, []int{-1, 2, 3}) || !reflect.DeepEqual(list, []int{3, 1, 3}) {
		t.Errorf("set %v list %v", set, list)
	}
	if flist == nil || len(flist) != 0 {
		t.Errorf("empty frozen list read as %#v", flist)
	}
	if !reflect.DeepEqual(ms, map[int][]string{1: {"a", "b"}, 2: {"y", "z"}}) {
		t.Errorf("nested sets %v", ms)
	}
	// Map keys in order, as raw bytes show: decode the map as a list of alternating values.
	var raw []byte
	iter := sess.Query("SELECT m FROM ks.coll WHERE id = 1").Iter()
	cols := iter.Columns()
	if !iter.Scan(&rawBytes{&raw}) {
		t.Fatalf("no row: %v", iter.Close())
	}
	must(t, iter.Close())
	want := []byte{0, 0, 0, 3, 0, 0, 0, 1, 'a', 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 1, 'b', 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 1, 'c', 0, 0, 0, 4, 0, 0, 0, 3}
	if string(raw) != string(want) {
		t.Errorf("map %s bytes %v, want %v", cols[0].TypeInfo, raw, want)
	}

	var ps *[]int
	var pm *map[string]int
	var pl *[]int
	must(t, sess.Query("SELECT s, m, l FROM ks.coll WHERE id = 2").Scan(&ps, &pm, &pl))
	if ps != nil || pm != nil || pl != nil {
		t.Errorf("empty non-frozen collections should be null: %v %v %v", ps, pm, pl)
	}
}

// rawBytes captures a column's serialized value.
type rawBytes struct{ b *[]byte }

func (r *rawBytes) UnmarshalCQL(_ gocql.TypeInfo, data []byte) error {
	*r.b = append([]byte(nil), data...)
	return nil
}
