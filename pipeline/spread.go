package pipeline

import "math/bits"

// SpreadPick is the k-th of n picks spread over positions [0, rows) (0 <= k < n <= rows): a
// position within the k-th of n equal strata, chosen by a fixed hash of k. Every stratum gives
// one pick, so the sample is spread over the whole input as a stride is; the position within it
// varies, so the sample does not line up with a key that cycles with the row number (every 5th
// row of sequential order numbers ends in 0 or 5 only). The same (k, n, rows) give the same
// position: a sample, and the region plan placed from it, is reproducible.
func SpreadPick(k, n int, rows int64) int64 {
	lo := int64(k) * rows / int64(n)
	hi := (int64(k) + 1) * rows / int64(n)
	if hi <= lo+1 {
		return lo
	}
	return lo + int64(SplitMix64(uint64(k))%uint64(hi-lo))
}

// SplitMix64 is the finaliser of the SplitMix64 generator: a cheap, well-mixed, fixed hash of x.
// Samplers hash a row's ordinal with it to pick rows independently of the ordinal's own digits;
// gen: seeds its rows' streams with it.
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// SpreadIndexes are the positions of a spread sample of n of rows (all of them when n >= rows),
// ascending: SpreadPick of each stratum.
func SpreadIndexes(rows int64, n int) []int64 {
	if n <= 0 || rows <= 0 {
		return nil
	}
	if int64(n) > rows {
		n = int(rows)
	}
	out := make([]int64, n)
	for k := range out {
		out[k] = SpreadPick(k, n, rows)
	}
	return out
}

// SampleLevel is the level of a row's ordinal: the trailing zero bits of its SplitMix64, so one
// ordinal in 2^L has level L or more. A sampler of unknown length keeps the rows of level at
// least L and raises L when it holds too many: bounded like every 2^L-th row, without lining up
// with the row number.
func SampleLevel(ord uint64) uint8 {
	return uint8(bits.TrailingZeros64(SplitMix64(ord) | 1<<63))
}
