// Package kafkatest starts a Kafka cluster for tests: franz-go's kfake in process, or the real
// brokers named in the KAFKA_BROKERS environment variable (comma-separated host:port), so that
// the same tests run against both. Only tests import it.
package kafkatest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/internal/realpeers"
)

// Cluster is a running cluster.
type Cluster struct {
	Brokers []string
	Fake    *kfake.Cluster // nil against real brokers
	suffix  string
}

// Real tells whether the tests run against real brokers (KAFKA_BROKERS).
func Real() bool { return os.Getenv("KAFKA_BROKERS") != "" }

// Start returns the cluster for t: real brokers when KAFKA_BROKERS is set (opts are ignored),
// else a kfake cluster with short group sessions allowed, closed when the test ends.
func Start(t testing.TB, opts ...kfake.Opt) *Cluster {
	t.Helper()
	if env := os.Getenv("KAFKA_BROKERS"); env != "" {
		c := &Cluster{suffix: fmt.Sprintf("-%d", rand.Uint64()%1e9)}
		for _, b := range strings.Split(env, ",") {
			if b = strings.TrimSpace(b); b != "" {
				c.Brokers = append(c.Brokers, b)
			}
		}
		return c
	}
	realpeers.Missing(t, "KAFKA_BROKERS") // fails the test when the real peers are required
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100 * time.Millisecond)}, opts...)
	fc, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(fc.Close)
	return &Cluster{Brokers: fc.ListenAddrs(), Fake: fc}
}

// Topic returns a topic name unique to this cluster run (real brokers keep topics of earlier runs).
func (c *Cluster) Topic(name string) string { return name + c.suffix }

// Group returns a consumer group name unique to this cluster run: real brokers keep groups of
// earlier runs, with their members until those members' sessions time out.
func (c *Cluster) Group(name string) string { return name + c.suffix }

// CreateTopic creates a topic with n partitions and returns its name (see Topic).
func (c *Cluster) CreateTopic(t testing.TB, name string, partitions int) string {
	t.Helper()
	return c.CreateTopicWith(t, name, partitions, nil)
}

// CreateTopicWith creates a topic with n partitions and the topic configs given (such as
// cleanup.policy=compact) and returns its name (see Topic). Unless configs set retention.ms, the
// topic keeps its messages however old their timestamps: tests write messages stamped years
// ago, which a real broker's time retention (7 days) deletes at its next check, seconds later.
func (c *Cluster) CreateTopicWith(t testing.TB, name string, partitions int, configs map[string]string) string {
	t.Helper()
	name = c.Topic(name)
	cl := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 10 * time.Second}
	tc := kafkago.TopicConfig{Topic: name, NumPartitions: partitions, ReplicationFactor: 1}
	if _, ok := configs[RetentionConfig]; !ok {
		tc.ConfigEntries = append(tc.ConfigEntries, kafkago.ConfigEntry{ConfigName: RetentionConfig, ConfigValue: "-1"})
	}
	for k, v := range configs {
		tc.ConfigEntries = append(tc.ConfigEntries, kafkago.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	resp, err := cl.CreateTopics(context.Background(), &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{tc}})
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	if err := resp.Errors[name]; err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	// wait until the metadata shows every partition with a leader
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := kafkago.Dial("tcp", c.Brokers[0])
		if err == nil {
			parts, err := conn.ReadPartitions(name)
			conn.Close()
			if err == nil && len(parts) == partitions {
				return name
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: partitions not ready", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RetentionConfig is the topic config of time retention, which CreateTopic turns off.
const RetentionConfig = "retention.ms"

// ByPartition is a balancer that sends each message to its Partition field.
var ByPartition = kafkago.BalancerFunc(func(m kafkago.Message, partitions ...int) int { return m.Partition })

// Produce writes messages synchronously; each goes to its Partition field.
func (c *Cluster) Produce(t testing.TB, topic string, msgs ...kafkago.Message) {
	t.Helper()
	w := c.Writer(topic)
	defer w.Close()
	for len(msgs) > 0 {
		n := min(len(msgs), 10000)
		if err := w.WriteMessages(context.Background(), msgs[:n]...); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
		msgs = msgs[n:]
	}
}

// Writer returns a writer to topic that places messages by their Partition field.
func (c *Cluster) Writer(topic string) *kafkago.Writer {
	return &kafkago.Writer{
		Addr:         kafkago.TCP(c.Brokers...),
		Topic:        topic,
		Balancer:     ByPartition,
		BatchSize:    1000,
		BatchBytes:   4 << 20,
		BatchTimeout: time.Millisecond,
		RequiredAcks: kafkago.RequireAll,
	}
}

// Committed returns the group's committed offsets of topic by partition (absent: none).
func (c *Cluster) Committed(t testing.TB, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	cl := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 10 * time.Second}
	var ps []int
	for i := 0; i < partitions; i++ {
		ps = append(ps, i)
	}
	resp, err := cl.OffsetFetch(context.Background(), &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error == nil && p.CommittedOffset >= 0 {
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out
}

// DeleteRecords deletes the messages of a partition before offset, as retention would (Kafka's
// DeleteRecords admin request): the partition's earliest available offset becomes offset.
func (c *Cluster) DeleteRecords(t testing.TB, topic string, partition int, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = int32(partition), offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("delete records of %s/%d before %d: %v", topic, partition, offset, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil || rp.LowWatermark != offset {
				t.Fatalf("delete records of %s/%d before %d: low watermark %d, %v", topic, partition, offset, rp.LowWatermark, err)
			}
		}
	}
}

// DeleteGroup deletes an empty consumer group and its committed offsets (Kafka's DeleteGroups
// admin request): what the broker leaves of a group whose offsets expired after
// offsets.retention.minutes without a member.
func (c *Cluster) DeleteGroup(t testing.TB, group string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		t.Fatalf("delete group: %v", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("delete group %s: %v", group, err)
	}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			t.Fatalf("delete group %s: %v", group, err)
		}
	}
}

// Offsets lists the offsets a partition holds, from its first to its end: fewer than the
// messages produced once compaction (or DeleteRecords) removed some.
func (c *Cluster) Offsets(t testing.TB, topic string, partition int) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {int32(partition): kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lo, err := endOffset(ctx, cl, topic, partition)
	if err != nil {
		t.Fatalf("end offset of %s/%d: %v", topic, partition, err)
	}
	var out []int64
	for lo > 0 && (len(out) == 0 || out[len(out)-1] < lo-1) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("read %s/%d: %v (offsets so far: %d, end %d)", topic, partition, err, len(out), lo)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r.Offset) })
	}
	return out
}

// endOffset is the partition's end offset (ListOffsets, latest).
func endOffset(ctx context.Context, cl *kgo.Client, topic string, partition int) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = int32(partition), -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return 0, fmt.Errorf("no offset in the answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, err
	}
	return p.Offset, nil
}

// Producers returns two franz-go producers of topic, closed when the test ends: one
// transactional (BeginTransaction, EndTransaction), and one outside transactions.
func (c *Cluster) Producers(t testing.TB, topic string) (txn, plain *kgo.Client) {
	t.Helper()
	txn, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.TransactionalID(topic+"-producer"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.Close)
	plain, err = kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Close)
	return txn, plain
}

// AbortIncompressible produces n messages of 1,000 random bytes (the producer cannot compress
// them, so they take n KB of the log) in one transaction of txn (from Producers), and aborts it.
func AbortIncompressible(ctx context.Context, t testing.TB, txn *kgo.Client, n int) {
	t.Helper()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range n {
		junk := make([]byte, 1000)
		for i := range junk {
			junk[i] = byte(rnd.Uint32())
		}
		txn.Produce(ctx, &kgo.Record{Value: junk}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := txn.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}
