package kafka

import "testing"

// A fetch asks for about one batch of messages, sized by the last response's messages: every
// message of an uncompressed batch keeps the whole response it was read from until the batch is
// released, so a partition's fetched-but-unapplied memory stays near its batches' bytes, not
// 16 MiB a batch. After compressed batches only (their messages keep their decompressed bytes,
// the response is read into again) it asks for 8 MiB at least: fewer fetches for the broker.
func TestFetchAsksForAboutOneBatch(t *testing.T) {
	const limit = 16 << 20
	for _, c := range []struct {
		name                    string
		prev, n, msgs, batchLen int
		compressed              bool
		want                    int
	}{
		{"1 KiB messages, batches of 2,000", minFetchBytes, 4 << 20, 4096, 2000, false, 1024 * 2000 * 5 / 4},
		{"small messages: still a megabyte a fetch", minFetchBytes, 150 * 1000, 1000, 1024, false, minFetchBytes},
		{"small compressed messages: the response is not kept", minFetchBytes, 150 * 1000, 3000, 1024, true, compressedFetchBytes},
		{"huge messages: at most the limit", minFetchBytes, 64 << 20, 64, 1024, false, limit},
		{"huge compressed messages: at most the limit", minFetchBytes, 64 << 20, 64, 1024, true, limit},
		{"a fetch without messages keeps the size", 3 << 20, 0, 0, 1024, true, 3 << 20},
	} {
		if got := fetchSize(c.prev, c.n, c.msgs, c.batchLen, limit, c.compressed); got != c.want {
			t.Errorf("%s: fetchSize = %d, want %d", c.name, got, c.want)
		}
	}
}
