// Package kafkademo produces demo order messages (JSON rows with mappings/orders.yaml's columns,
// keyed by user) into a topic: the benchmark's data and the playground's.
package kafkademo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// Orders makes order messages: about 150 bytes of JSON each, keyed by user so that a user's
// orders share a partition. The same seed gives the same messages.
type Orders struct {
	rng  *rand.Rand
	next int64
}

// NewOrders starts a message sequence.
func NewOrders(seed uint64) *Orders { return &Orders{rng: rand.New(rand.NewPCG(seed, 2))} }

var (
	channels = []string{"taobao", "alipay", "wechat", "jd", "pdd", "web"}
	statuses = []string{"paid", "shipped", "created", "refunded"}
	base     = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)

// Next is the next message.
func (o *Orders) Next() kafkago.Message {
	i := o.next
	o.next++
	rng := o.rng
	user := fmt.Sprintf("user%07d", rng.IntN(500000))
	v := fmt.Sprintf(`{"userid":%q,"orderid":%d,"channel":%q,"ts":"%s","status":%q,"location":"city-%03d","amount":"%d.%02d"}`,
		user, 1000000000+i, channels[rng.IntN(len(channels))], time.UnixMilli(base+i*37).UTC().Format("2006-01-02T15:04:05.000Z"),
		statuses[rng.IntN(len(statuses))], rng.IntN(1000), rng.IntN(5000), rng.IntN(100))
	return kafkago.Message{Key: []byte(user), Value: []byte(v)}
}

// Writer is a batching writer to topic that spreads messages by key.
func Writer(brokers []string, topic string) *kafkago.Writer {
	return &kafkago.Writer{Addr: kafkago.TCP(brokers...), Topic: topic, Balancer: &kafkago.Hash{},
		BatchSize: 5000, BatchBytes: 8 << 20, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafkago.RequireOne,
		Compression: kafkago.Lz4}
}

// Produce writes the next n messages of o to w.
func (o *Orders) Produce(ctx context.Context, w *kafkago.Writer, n int64) error {
	batch := make([]kafkago.Message, 0, min(n, 10000))
	for i := int64(0); i < n; i++ {
		batch = append(batch, o.Next())
		if len(batch) == cap(batch) || i == n-1 {
			if err := w.WriteMessages(ctx, batch...); err != nil {
				return fmt.Errorf("produce: %w", err)
			}
			batch = batch[:0]
		}
	}
	return nil
}
