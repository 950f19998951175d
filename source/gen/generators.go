package gen

import (
	"math"
	"strconv"

	"github.com/rekey/rekey/pipeline"
)

// rng is a SplitMix64 stream. Each row gets its own stream seeded from (seed, row index), so a
// row is a pure function of both and rows can be generated in any order.
type rng struct{ s uint64 }

func rowRNG(seedHash uint64, i int64) rng {
	return rng{s: pipeline.SplitMix64(seedHash ^ pipeline.SplitMix64(uint64(i)))}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit is uniform in [0, 1).
func (r *rng) unit() float64 { return float64(r.next()>>11) / (1 << 53) }

// below is uniform in [0, n).
func (r *rng) below(n uint64) uint64 {
	hi, _ := mul64(r.next(), n)
	return hi
}

func mul64(a, b uint64) (hi, lo uint64) {
	const mask32 = 1<<32 - 1
	a0, a1 := a&mask32, a>>32
	b0, b1 := b&mask32, b>>32
	w0 := a0 * b0
	t := a1*b0 + w0>>32
	w1, w2 := t&mask32, t>>32
	w1 += a0 * b1
	return a1*b1 + w2 + w1>>32, a * b
}

// choice picks among values with fixed weights through a 1024-slot table: one draw, one load.
type choice struct {
	values []string
	table  [1024]uint8
}

func newChoice(values []string, weights []float64) *choice {
	c := &choice{values: values}
	var total float64
	for _, w := range weights {
		total += w
	}
	slot, acc := 0, 0.0
	for i, w := range weights {
		acc += w
		end := int(float64(acc/total*1024) + 0.5) // float64(): no fused multiply-add, same on every CPU
		if i == len(weights)-1 {
			end = 1024
		}
		for ; slot < end; slot++ {
			c.table[slot] = uint8(i)
		}
	}
	return c
}

func (c *choice) index(r *rng) int   { return int(c.table[r.next()>>54]) }
func (c *choice) pick(r *rng) string { return c.values[c.index(r)] }

// zipfWeights returns 1/k^s for k = 1..n.
func zipfWeights(n int, s float64) []float64 {
	w := make([]float64, n)
	for k := range w {
		w[k] = 1 / math.Pow(float64(k+1), s)
	}
	return w
}

// generator makes row i of a named data set. fill writes the values of all columns into vals
// (generator order); a text value whose bytes it appended to arena is left as a placeholder
// (K KindText, S "", I = start<<32|end) and patched once the batch's arena is a string.
type generator struct {
	name      string
	columns   pipeline.SourceSchema
	arenaCols []int
	fill      func(r *rng, i int64, vals []pipeline.Value, arena []byte) []byte
}

var generators = map[string]*generator{
	"orders":       ordersGen(),
	"logs":         logsGen(),
	"transactions": transactionsGen(),
}

// Names lists the generators.
func Names() []string { return []string{"orders", "logs", "transactions"} }

const (
	// 2024-01-01T00:00:00Z in epoch milliseconds.
	epoch2024 = 1704067200000
	orderBase = 1000000000
	users     = 1000000
)

func placeholder(start, end int) pipeline.Value {
	return pipeline.Value{Num: int64(start)<<32 | int64(end), Kind: pipeline.KindText}
}

func ordersGen() *generator {
	channels := newChoice([]string{"taobao", "alipay", "wechat", "jd", "pdd"}, []float64{60, 12, 12, 10, 6})
	statuses := newChoice([]string{"PAID", "SHIPPED", "DELIVERED", "CANCELLED", "REFUNDED"}, []float64{30, 25, 35, 6, 4})
	cities := []string{"Shanghai", "Beijing", "Shenzhen", "Guangzhou", "Hangzhou", "Chengdu",
		"Chongqing", "Wuhan", "Nanjing", "Xian", "Suzhou", "Tianjin", "Changsha", "Zhengzhou",
		"Dongguan", "Qingdao", "Shenyang", "Ningbo", "Kunming", "Hefei", "Foshan", "Wuxi",
		"Xiamen", "Fuzhou", "Jinan", "Dalian", "Harbin", "Changchun", "Nanning", "Guiyang"}
	locations := newChoice(cities, zipfWeights(len(cities), 0.9))
	// Amount magnitude buckets, in cents: [100, 1000), [1000, 10000), ...
	buckets := newChoice([]string{"1", "10", "100", "1000"}, []float64{25, 45, 25, 5})
	// Users: a Zipf-like rank (exponent 0.8) over 1M users, by inverting the continuous CDF
	// (1 + u*(N^0.2-1))^5; the top 1% of users place about a third of the orders. Ranks are
	// scattered over 10-digit ids by an odd multiplier that is coprime with 10^10.
	n02 := math.Pow(users, 0.2)
	const idMod, idMul, idOff = 10000000000, 6364136223, 1234567891
	return &generator{
		name: "orders",
		columns: pipeline.SourceSchema{
			{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"},
			{Name: "channel", Type: "text"}, {Name: "ts", Type: "timestamp"},
			{Name: "status", Type: "text"}, {Name: "location", Type: "text"},
			{Name: "amount", Type: "decimal"},
		},
		arenaCols: []int{0, 6},
		fill: func(r *rng, i int64, vals []pipeline.Value, arena []byte) []byte {
			x := 1 + float64(r.unit()*(n02-1)) // float64(): no fused multiply-add, same on every CPU
			x2 := x * x
			rank := uint64(x2*x2*x) - 1 // 0 .. users-1
			if rank >= users {
				rank = users - 1
			}
			id := (rank*idMul + idOff) % idMod
			start := len(arena)
			arena = append(arena, 'u')
			arena = appendPadded(arena, id, 10)
			vals[0] = placeholder(start, len(arena))
			vals[1] = pipeline.Value{Num: orderBase + i, Kind: pipeline.KindInt}
			vals[2] = pipeline.Value{Str: channels.pick(r), Kind: pipeline.KindText}
			vals[3] = pipeline.Value{Num: epoch2024 + i*4 + int64(r.next()>>61), Kind: pipeline.KindInt}
			vals[4] = pipeline.Value{Str: statuses.pick(r), Kind: pipeline.KindText}
			vals[5] = pipeline.Value{Str: locations.pick(r), Kind: pipeline.KindText}
			lo := uint64(100)
			for b := buckets.index(r); b > 0; b-- {
				lo *= 10
			}
			arena, vals[6] = appendAmount(arena, lo+r.below(9*lo))
			return arena
		},
	}
}

func logsGen() *generator {
	hostNames := make([]string, 50)
	for k := range hostNames {
		hostNames[k] = "web-" + string([]byte{byte('0' + (k+1)/10), byte('0' + (k+1)%10)})
	}
	hosts := newChoice(hostNames, zipfWeights(len(hostNames), 0.8))
	events := []string{"http_request", "db_query", "cache_miss", "auth_login", "auth_logout",
		"payment", "queue_publish", "queue_consume", "gc_pause", "error"}
	eventChoice := newChoice(events, []float64{55, 20, 8, 5, 3, 3, 2, 2, 1, 1})
	levels := newChoice([]string{"INFO", "WARN", "DEBUG", "ERROR"}, []float64{85, 8, 4, 3})
	messages := [][]string{
		{"GET /api/orders 200", "GET /api/items 200", "POST /api/cart 201", "GET /api/user 304", "GET /api/search 500"},
		{"select orders by user", "update order status", "insert payment"},
		{"cache miss user:profile", "cache miss item:detail"},
		{"login ok", "login failed: bad password"},
		{"logout"},
		{"payment captured", "payment declined"},
		{"published order.created", "published order.paid"},
		{"consumed order.created", "consumed order.paid"},
		{"gc pause young", "gc pause full"},
		{"connection reset by peer", "upstream timeout"},
	}
	latency := newChoice([]string{"1", "10", "100", "1000"}, []float64{40, 45, 13, 2})
	return &generator{
		name: "logs",
		columns: pipeline.SourceSchema{
			{Name: "ts", Type: "timestamp"}, {Name: "hostname", Type: "text"},
			{Name: "log-event", Type: "text"}, {Name: "level", Type: "text"},
			{Name: "latency_ms", Type: "int"}, {Name: "message", Type: "text"},
		},
		fill: func(r *rng, i int64, vals []pipeline.Value, arena []byte) []byte {
			vals[0] = pipeline.Value{Num: epoch2024 + i*2 + int64(r.next()>>62), Kind: pipeline.KindInt}
			vals[1] = pipeline.Value{Str: hosts.pick(r), Kind: pipeline.KindText}
			ev := eventChoice.index(r)
			vals[2] = pipeline.Value{Str: events[ev], Kind: pipeline.KindText}
			vals[3] = pipeline.Value{Str: levels.pick(r), Kind: pipeline.KindText}
			lo := uint64(1)
			for b := latency.index(r); b > 0; b-- {
				lo *= 10
			}
			vals[4] = pipeline.Value{Num: int64(lo + r.below(9*lo)), Kind: pipeline.KindInt}
			m := messages[ev]
			vals[5] = pipeline.Value{Str: m[r.below(uint64(len(m)))], Kind: pipeline.KindText}
			return arena
		},
	}
}

// transactionsGen is the primary-key guide's transaction data: order numbers rising with time,
// sellers (20,000, a Zipf-like few selling most) and buyers (1M) scattered over their ids; the
// guide serves it with three tables, by seller, by buyer and by order number.
func transactionsGen() *generator {
	const sellers, buyers = 20000, 1000000
	sellerRank := newChoice([]string{"0", "1", "2", "3"}, []float64{40, 30, 20, 10}) // how far down the seller list
	statuses := newChoice([]string{"PAID", "SHIPPED", "DELIVERED", "REFUNDED"}, []float64{30, 30, 35, 5})
	return &generator{
		name: "transactions",
		columns: pipeline.SourceSchema{
			{Name: "order_number", Type: "bigint"}, {Name: "seller_id", Type: "text"},
			{Name: "buyer_id", Type: "text"}, {Name: "ts", Type: "timestamp"},
			{Name: "item_id", Type: "text"}, {Name: "quantity", Type: "int"},
			{Name: "amount", Type: "decimal"}, {Name: "status", Type: "text"},
		},
		arenaCols: []int{1, 2, 4, 6},
		fill: func(r *rng, i int64, vals []pipeline.Value, arena []byte) []byte {
			vals[0] = pipeline.Value{Num: orderBase + i, Kind: pipeline.KindInt}
			// sellers: band b holds the ranks [sellers/10^(3-b)/..]: the first 20 sell 40%, the
			// next 180 30%, ...
			band := sellerRank.index(r)
			lo, hi := uint64(0), uint64(20)
			for k := 0; k < band; k++ {
				lo, hi = hi, hi*10
			}
			hi = min(hi, sellers)
			seller := (lo + r.below(hi-lo)) * 7919 % sellers
			start := len(arena)
			arena = append(arena, 's')
			arena = appendPadded(arena, seller, 5)
			vals[1] = placeholder(start, len(arena))
			start = len(arena)
			arena = append(arena, 'b')
			arena = appendPadded(arena, r.below(buyers)*6364136223%10000000000, 10)
			vals[2] = placeholder(start, len(arena))
			vals[3] = pipeline.Value{Num: epoch2024 + i*4 + int64(r.next()>>61), Kind: pipeline.KindInt}
			start = len(arena)
			arena = append(arena, 'i')
			arena = appendPadded(arena, r.below(50000), 5)
			vals[4] = placeholder(start, len(arena))
			vals[5] = pipeline.Value{Num: int64(1 + r.below(4)), Kind: pipeline.KindInt}
			arena, vals[6] = appendAmount(arena, 100+r.below(99900))
			vals[7] = pipeline.Value{Str: statuses.pick(r), Kind: pipeline.KindText}
			return arena
		},
	}
}

// appendAmount appends cents as a decimal amount (12.50) and gives its arena placeholder.
func appendAmount(arena []byte, cents uint64) ([]byte, pipeline.Value) {
	start := len(arena)
	arena = strconv.AppendUint(arena, cents/100, 10)
	arena = append(arena, '.', byte('0'+cents/10%10), byte('0'+cents%10))
	return arena, pipeline.Value{Num: int64(start)<<32 | int64(len(arena)), Kind: pipeline.KindDecimal}
}

// appendPadded appends v in decimal, zero-padded to width digits.
func appendPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || i > len(buf)-width {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[i:]...)
}
