package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A fetch response that arrives later than MaxWait (a loaded machine, a slow link) used to time
// out on a read deadline of MaxWait alone; the fetcher reconnected for ever, delivering nothing
// and reporting nothing (seen as TestRollSize hanging under -race on a busy 2-core machine).
func TestSlowFetchResponsesStillDeliver(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(1, "slow"))
	produceOrders(t, c, "slow", 1, 20)
	c.Fake.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		c.Fake.SleepControl(func() { time.Sleep(600 * time.Millisecond) }) // > MaxWait (250ms)
		return nil, nil, false
	})
	ctx, out := fetchFrom(t, c, "slow", kafka.FetchOptions{})
	got := 0
	for got < 20 {
		select {
		case b := <-out:
			got += len(b.Messages)
		case <-ctx.Done():
			t.Fatalf("%d of 20 messages fetched before the deadline: slow responses are never read", got)
		}
	}
}

// A partition's fetches ask for about one batch of messages once the first response has shown
// their size, not 16 MiB: the messages of a batch keep the response they were read from, so
// 16 MiB responses held by a slow consumer's queued batches took 550 MiB over 6 partitions
// (and three times the CPU in the collector).
func TestFetchesAskForAboutOneBatch(t *testing.T) {
	c, msgs := sizedTopic(t, "sized")
	c.Produce(t, "sized", msgs...)
	sizes := fetchSizes(c)
	drain(t, c, "sized", len(msgs))
	asked := sizes()
	if len(asked) < 2 {
		t.Fatalf("%d fetches for 6 MB: want several", len(asked))
	}
	for i, n := range asked[1:] {
		if n > 1<<20 { // 100 messages of 1 kB: the least a fetch asks for
			t.Fatalf("fetch %d asked for %d bytes (all asked: %v): want about one batch", i+1, n, asked)
		}
	}
}

// After a response of compressed batches only, a fetch asks for 8 MiB: their messages keep their
// batches' decompressed bytes, not the response, which the next fetch reads into again, so a
// larger fetch costs one buffer, and the broker serves fewer requests.
func TestFetchesAfterCompressedBatchesAskForMore(t *testing.T) {
	c, msgs := sizedTopic(t, "sized-lz4")
	w := c.Writer("sized-lz4")
	w.Compression = kafkago.Lz4
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	asked := fetchSizes(c)
	drain(t, c, "sized-lz4", len(msgs))
	wait.For(t, func() bool { return len(asked()) >= 2 }, "a fetch after the messages")
	if a := asked(); a[0] != 1<<20 || a[1] != 8<<20 {
		t.Fatalf("fetches asked for %v bytes: want 1 MiB, then 8 MiB", a)
	}
}

// While a partition holds more than a response brought, a fetch's batches are full: the part
// batch a response ends with waits for the next. Sent short, every other SQL statement of a
// replication applied half its rows.
func TestFetchSendsFullBatchesWhileBehind(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "behind", 1)
	var msgs []kafkago.Message
	for i := range 5000 {
		msgs = append(msgs, kafkago.Message{Key: []byte(strconv.Itoa(i)), Value: bytes.Repeat([]byte{'x'}, 1000)})
	}
	c.Produce(t, topic, msgs...)
	// 700 messages of 1 kB a batch, 1 MiB (the least) a fetch: responses end mid-batch
	ctx, out := fetchFrom(t, c, topic, kafka.FetchOptions{BatchLen: 700})
	var lens []int
	next := int64(0)
	for got := 0; got < len(msgs); {
		select {
		case b := <-out:
			for _, m := range b.Messages {
				if m.Offset != next {
					t.Fatalf("message at offset %d after %d", m.Offset, next-1)
				}
				next++
			}
			if len(b.Messages) > 0 {
				lens = append(lens, len(b.Messages))
			}
			got += len(b.Messages)
		case <-ctx.Done():
			t.Fatalf("%d of %d messages fetched (batches: %v)", got, len(msgs), lens)
		}
	}
	for i, n := range lens[:len(lens)-1] {
		if n != 700 {
			t.Fatalf("batch %d holds %d messages (all: %v): want 700 until the partition's end", i, n, lens)
		}
	}
}

// fetchFrom fetches partition 0 of topic from its start with o, for 20 seconds at most (ctx).
// sizedTopic starts kfake (its request control is needed) with topic of one partition, and
// returns 6,000 messages of 1 kB to produce to it.
func sizedTopic(t *testing.T, topic string) (*kafkatest.Cluster, []kafkago.Message) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(1, topic))
	var msgs []kafkago.Message
	for i := range 6000 {
		msgs = append(msgs, kafkago.Message{Key: []byte(strconv.Itoa(i)), Value: bytes.Repeat([]byte{'x'}, 1000)})
	}
	return c, msgs
}

// fetchSizes records the partition MaxBytes of every Fetch request kfake serves from now on.
func fetchSizes(c *kafkatest.Cluster) func() []int32 {
	var mu sync.Mutex
	var asked []int32
	c.Fake.ControlKey(kmsg.Fetch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, tp := range r.(*kmsg.FetchRequest).Topics {
			for _, p := range tp.Partitions {
				asked = append(asked, p.PartitionMaxBytes)
			}
		}
		return nil, nil, false
	})
	return func() []int32 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

// drain fetches partition 0 of topic in batches of 100 until n messages arrived.
func drain(t *testing.T, c *kafkatest.Cluster, topic string, n int) {
	t.Helper()
	ctx, out := fetchFrom(t, c, topic, kafka.FetchOptions{BatchLen: 100})
	for got := 0; got < n; {
		select {
		case b := <-out:
			got += len(b.Messages)
		case <-ctx.Done():
			t.Fatalf("%d of %d messages fetched", got, n)
		}
	}
}

func fetchFrom(t *testing.T, c *kafkatest.Cluster, topic string, o kafka.FetchOptions) (context.Context, <-chan kafka.FetchBatch) {
	t.Helper()
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := cfg.Dialer()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	out := make(chan kafka.FetchBatch, 64)
	go cfg.FetchPartition(ctx, dialer, 0, 0, o, out)
	return ctx, out
}

// A fetch from kafka-go's LastOffset starts at the partition's end, reading only the messages
// produced after it began: it started at the first offset, as FirstOffset does, reading the
// whole partition again.
func TestFetchFromLastOffsetStartsAtTheEnd(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "from-last", 1)
	c.Produce(t, topic, kafkago.Message{Value: []byte("old0")}, kafkago.Message{Value: []byte("old1")})
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := cfg.Dialer()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := cfg.StartFetch(ctx, dialer, 0, kafkago.LastOffset, kafka.FetchOptions{MaxWait: 50 * time.Millisecond})
	defer f.Stop()
	// a fetch that found nothing reports its position: the fetch has started
	b, ok := <-f.C
	if !ok {
		t.Fatalf("the fetch ended: %v", f.Err())
	}
	if len(b.Messages) > 0 {
		t.Fatalf("read %q at offset %d, produced before the fetch started at the last offset", b.Messages[0].Value, b.Messages[0].Offset)
	}
	if b.Next != 2 {
		t.Fatalf("a fetch from the last offset is at %d, want the partition's end, 2", b.Next)
	}
	c.Produce(t, topic, kafkago.Message{Value: []byte("new")})
	for b := range f.C {
		if len(b.Messages) == 0 {
			continue
		}
		if m := b.Messages[0]; m.Offset != 2 || string(m.Value) != "new" {
			t.Fatalf("read %q at offset %d, want \"new\" at 2", m.Value, m.Offset)
		}
		return
	}
	t.Fatalf("the fetch ended: %v", f.Err())
}

// A fetch the broker refuses for want of the topic's Read permission (TOPIC_AUTHORIZATION_FAILED:
// the client may describe the topic and list its offsets, not read it) ends the fetch with an
// error that says so, as Kafka's own consumer raises it: no retry can fix an ACL. The refusal
// was taken for a transient error: the fetch reconnected for ever, logging at Debug only, and a
// replication reported itself healthy while it read nothing.
func TestFetchRefusedByTheTopicsACLsFails(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(1, "guarded"))
	produceOrders(t, c, "guarded", 1, 5)
	refuseFetches(c, 29, nil) // TOPIC_AUTHORIZATION_FAILED
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/guarded", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := cfg.Dialer()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := cfg.StartFetch(ctx, dialer, 0, 0, kafka.FetchOptions{MaxWait: 50 * time.Millisecond})
	defer f.Stop()
	for b := range f.C {
		if len(b.Messages) > 0 {
			t.Fatalf("read %d messages of a partition the broker refuses", len(b.Messages))
		}
	}
	err = f.Err()
	if !errors.Is(err, kafkago.TopicAuthorizationFailed) {
		t.Fatalf("the fetch ended with %v (context: %v), want the broker's refusal, TOPIC_AUTHORIZATION_FAILED", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), "guarded/0") || !strings.Contains(err.Error(), "Read") {
		t.Errorf("the error names neither the partition nor the permission: %v", err)
	}
	t.Log(err)
}

// A partition whose fetches fail every time after the fetch connected to its leader (here
// KAFKA_STORAGE_ERROR: the leader's log directory failed) is reported at Warn, naming the
// broker's error, while the fetch retries: it retried for ever logging at Debug only (a warning
// came only when the leader could not be reached at all), and the partition's read stood still
// without a word.
func TestFetchFailingAfterEachConnectWarns(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(1, "failing"))
	produceOrders(t, c, "failing", 1, 5)
	var refusals atomic.Int32
	refuseFetches(c, 56, &refusals) // KAFKA_STORAGE_ERROR
	core, logs := observer.New(zap.WarnLevel)
	ctx, out := fetchFrom(t, c, "failing", kafka.FetchOptions{MaxWait: 50 * time.Millisecond, Logger: zap.New(core)})
	go func() {
		for range out {
		}
	}()
	// the fifth fetch is sent after the third and fourth failed: a warning after three failures
	// in a row is logged by then
	wait.For(t, func() bool { return refusals.Load() >= 5 || ctx.Err() != nil }, "five fetches")
	for _, e := range logs.All() {
		for _, f := range e.Context {
			if err, ok := f.Interface.(error); ok && errors.Is(err, kafkago.KafkaStorageError) {
				t.Log(e.Message, err)
				return
			}
		}
	}
	t.Fatalf("%d fetches failed with KAFKA_STORAGE_ERROR and no warning names it (warnings: %d)", refusals.Load(), logs.Len())
}

// refuseFetches makes kfake answer every fetch with code for each partition asked, counting the
// answers in count when it is not nil.
func refuseFetches(c *kafkatest.Cluster, code int16, count *atomic.Int32) {
	c.Fake.ControlKey(kmsg.Fetch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		if count != nil {
			count.Add(1)
		}
		req := r.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}
