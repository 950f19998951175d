package transform

import (
	"testing"
)

// A small dictionary compares a key of up to 8 bytes as one word with its length: every key
// must be found, and no other string, however close (the same length and first byte, a byte
// changed in the middle, a prefix, a key one byte longer), nor any key of the other dictionary's
// path (over 8 bytes).
func TestSmallDictionaryLookupByWord(t *testing.T) {
	keys := []string{"", "a", "ab", "abc", "abcd", "abcde", "abcdefgh", "abcdefghi"}
	d := &dictionary{name: "d"}
	for _, k := range keys {
		d.keys, d.vals = append(d.keys, k), append(d.vals, "<"+k+">")
		d.tags = append(d.tags, dictTag(k))
		var w uint64
		if len(k) <= 8 {
			w = shortWord(k)
		}
		d.words = append(d.words, w)
	}
	for _, k := range keys {
		if v, ok := d.lookup(k); !ok || v != "<"+k+">" {
			t.Errorf("lookup(%q) = %q, %v", k, v, ok)
		}
	}
	for _, k := range []string{"b", "aa", "abd", "abxd", "abxde", "abcdxfgh", "abcdefgx", "xbcdefgh", "abcdefghj", "abcdefg",
		"abcdabcd", "aaa", "abcdefgha"} {
		if v, ok := d.lookup(k); ok {
			t.Errorf("lookup(%q) found %q", k, v)
		}
	}
}
