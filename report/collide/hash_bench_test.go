package collide

import (
	"testing"

	"github.com/zeebo/xxh3"
)

// BenchmarkHashString keeps report/hash.go's own wyhash honest against the well-kept xxh3
// (already in the module graph) on the strings the report hashes per row: keys of 20-30 bytes
// and short column values, seeded so that fields chain. If xxh3 is as fast, use it.
func BenchmarkHashString(b *testing.B) {
	inputs := []string{"3f2a" + "user0012345|1000001234", "taobao", "2024-05-01T10:00:00.123Z", "city-123"}
	b.Run("rekey-wyhash", func(b *testing.B) {
		var h uint64
		for b.Loop() {
			for _, s := range inputs {
				h = hashString(s, h)
			}
		}
		sink = h
	})
	b.Run("xxh3-HashStringSeed", func(b *testing.B) {
		var h uint64
		for b.Loop() {
			for _, s := range inputs {
				h = xxh3.HashStringSeed(s, h)
			}
		}
		sink = h
	})
}

var sink uint64
