package cqltest

import (
	"math"
	"testing"

	"github.com/rekey/rekey/transform/murmur3"
)

// Known tokens from a real Cassandra (SELECT token(k) ...), as in transform/murmur3's tests.
func TestTokensMatchCassandra(t *testing.T) {
	s := newServer(t)
	sess := newSession(t, s)

	type tc struct {
		table, typ string
		key        any
		want       int64
	}
	cases := []tc{
		{"ti", "int", int32(1), -4069959284402364209},
		{"ti", "int", int32(0), -3485513579396041028},
		{"ti", "int", int32(-1), 7297452126230313552},
		{"ti", "int", int32(128), -9081975895656599623},
		{"ti", "int", int32(-1000), 5905661066942090405},
		{"tb", "bigint", int64(1), 6292367497774912474},
		{"tb", "bigint", int64(math.MinInt64), 9204767954415360687},
		{"tt", "text", "hello", -3758069500696749310},
		{"tt", "text", "a", -8839064797231613815},
		{"tt", "text", "0123456789abcde", -6472281833689111727},
		{"tt", "text", "0123456789abcdef", 5467490433528156583},
		{"tt", "text", "this is a longer test key for murmur3 hashing", -7889617755374116647},
		{"tx", "blob", []byte{0x80}, -5284281814142962636},
		{"tx", "blob", []byte{0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89}, -7623170703309721106},
	}
	created := map[string]bool{}
	for _, c := range cases {
		if !created[c.table] {
			must(t, s.CreateTable("ks", c.table, []Column{{"k", c.typ}, {"v", "int"}}, []string{"k"}, nil))
			created[c.table] = true
		}
		must(t, s.Insert("ks", c.table, map[string]any{"k": c.key, "v": 1}))
	}
	must(t, s.CreateTable("ks", "tc", []Column{{"a", "text"}, {"b", "int"}, {"v", "int"}}, []string{"a", "b"}, nil))
	must(t, s.Insert("ks", "tc", map[string]any{"a": "hello", "b": 42, "v": 1}))

	for _, c := range cases {
		got, err := s.Token("ks", c.table, c.key)
		must(t, err)
		if got != c.want {
			t.Errorf("Server.Token(%s %v) = %d, want %d", c.typ, c.key, got, c.want)
		}
		// The same token through CQL: SELECT token(k) ... WHERE k = ?.
		var tok int64
		if err := sess.Query("SELECT token(k) FROM ks."+c.table+" WHERE k = ?", c.key).Scan(&tok); err != nil {
			t.Fatalf("%s %v: %v", c.typ, c.key, err)
		}
		if tok != c.want {
			t.Errorf("SELECT token(k) for %s %v = %d, want %d", c.typ, c.key, tok, c.want)
		}
	}

	const wantComposite = 7666157718303755816
	var tok int64
	must(t, sess.Query("SELECT token(a, b) FROM ks.tc WHERE a = ? AND b = ?", "hello", 42).Scan(&tok))
	if tok != wantComposite {
		t.Errorf("composite token = %d, want %d", tok, wantComposite)
	}
	if got := murmur3.Token(murmur3.CompositeKey(nil, []byte("hello"), int32Bytes(42))); got != tok {
		t.Errorf("murmur3.Token = %d, server = %d", got, tok)
	}
	if got, _ := s.Token("ks", "tc", "hello", 42); got != wantComposite {
		t.Errorf("Server.Token composite = %d", got)
	}
	// A token-range SELECT returns the same token column for every row.
	iter := sess.Query("SELECT k, token(k) FROM ks.ti WHERE token(k) >= ? AND token(k) <= ?", int64(math.MinInt64), int64(math.MaxInt64)).Iter()
	var k int32
	n := 0
	for iter.Scan(&k, &tok) {
		n++
		if want := murmur3.Token(int32Bytes(k)); want != tok {
			t.Errorf("token(%d) = %d, murmur3 says %d", k, tok, want)
		}
	}
	must(t, iter.Close())
	if n != 5 {
		t.Errorf("scan returned %d rows, want 5", n)
	}
}
