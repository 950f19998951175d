package collide

import (
	"fmt"
	"testing"
)

// The write-order time of a timeuuid is the millisecond that holds its instant: one written
// before 1970 rounds down, as an epoch does (a tick before the epoch is
// 1969-12-31T23:59:59.999, not 1970-01-01), so two timeuuids keep their order across it.
func TestTimeUUIDMillisRoundsDown(t *testing.T) {
	const epoch = 0x01B21DD213814000 // 100 ns ticks from 1582-10-15 to 1970-01-01
	uuid := func(ticks uint64) string {
		return fmt.Sprintf("%08x-%04x-1%03x-8000-000000000000", ticks&0xffffffff, ticks>>32&0xffff, ticks>>48&0xfff)
	}
	for _, c := range []struct {
		ticks uint64
		want  int64
	}{
		{epoch, 0},
		{epoch + 1, 0},
		{epoch + 9_999, 0},
		{epoch + 10_000, 1},
		{epoch - 1, -1},
		{epoch - 10_000, -1},
		{epoch - 10_001, -2},
		{epoch + 17_040_672_000_000_000, 1_704_067_200_000},
		{0, -12_219_292_800_000}, // 1582-10-15T00:00:00Z
	} {
		if got := timeUUIDMillis(uuid(c.ticks)); got != c.want {
			t.Errorf("%s (%d ticks): %d ms, want %d", uuid(c.ticks), c.ticks, got, c.want)
		}
	}
}
