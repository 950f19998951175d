package murmur3

import (
	"encoding/binary"
	"testing"
)

func int32Bytes(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func int64Bytes(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// Known tokens produced by a real Cassandra (SELECT token(k) FROM t), covering every tail
// length class, the sign-extension quirk and composite keys.
func TestTokenKnownValues(t *testing.T) {
	cases := []struct {
		name string
		key  []byte
		want int64
	}{
		{"int 1", int32Bytes(1), -4069959284402364209},
		{"int 0", int32Bytes(0), -3485513579396041028},
		{"int -1", int32Bytes(-1), 7297452126230313552},
		{"int 128", int32Bytes(128), -9081975895656599623},
		{"int -1000", int32Bytes(-1000), 5905661066942090405},
		{"bigint 1", int64Bytes(1), 6292367497774912474},
		{"bigint min", int64Bytes(-1 << 63), 9204767954415360687},
		{"text hello", []byte("hello"), -3758069500696749310},
		{"text a", []byte("a"), -8839064797231613815},
		{"15 bytes", []byte("0123456789abcde"), -6472281833689111727},
		{"16 bytes", []byte("0123456789abcdef"), 5467490433528156583},
		{"long text", []byte("this is a longer test key for murmur3 hashing"), -7889617755374116647},
		{"blob 0x80 sign-extended", []byte{0x80}, -5284281814142962636},
		{"blob high bytes", []byte{0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89}, -7623170703309721106},
		{"composite (hello, 42)", CompositeKey(nil, []byte("hello"), int32Bytes(42)), 7666157718303755816},
		{"empty", []byte{}, 0},
	}
	for _, c := range cases {
		if got := Token(c.key); got != c.want {
			t.Errorf("%s: Token = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestCompositeKey(t *testing.T) {
	got := CompositeKey(nil, []byte("ab"), []byte{1})
	want := []byte{0, 2, 'a', 'b', 0, 0, 1, 1, 0}
	if string(got) != string(want) {
		t.Fatalf("CompositeKey = %v, want %v", got, want)
	}
	if one := CompositeKey(nil, []byte("x")); string(one) != "x" {
		t.Fatalf("single component must hash as its bytes, got %v", one)
	}
}
